"""One row per audited change or refusal. No foreign keys: an entry outlives the user, project and
object it names, so it keeps their ids and names as they were."""

from __future__ import annotations

from enum import Enum
from typing import Any
from uuid import uuid4

from tortoise import fields
from tortoise.models import Model


class AuditOutcome(str, Enum):
    SUCCESS = "SUCCESS"  # the change was made (written in its transaction)
    REFUSED = "REFUSED"  # rights, validation or state said no; nothing changed
    FAILED = "FAILED"  # an unexpected error; nothing changed


class AuditActorKind(str, Enum):
    USER = "USER"  # a signed-in user, through a session or an API token
    ANONYMOUS = "ANONYMOUS"  # nobody signed in (a failed login, a refused call)
    CLI = "CLI"  # `gpupaas create-user` and the like, on the server
    SYSTEM = "SYSTEM"  # the platform itself (workers, start-up)
    SCHEDULER = "SCHEDULER"  # schedules and auto-stop


class CredentialKind(str, Enum):
    SESSION = "SESSION"
    TOKEN = "TOKEN"
    NONE = "NONE"


class AuditEntry(Model):
    id = fields.UUIDField(primary_key=True, default=uuid4)
    created_at = fields.DatetimeField(db_index=True)
    actor_kind = fields.CharEnumField(AuditActorKind, max_length=16)
    actor_id = fields.UUIDField(null=True, db_index=True)
    actor_name = fields.CharField(max_length=128)
    address = fields.CharField(max_length=64, null=True)
    credential_kind = fields.CharEnumField(CredentialKind, max_length=16, default=CredentialKind.NONE)
    credential_id = fields.UUIDField(null=True)
    credential_name = fields.CharField(max_length=128, null=True)
    action = fields.CharField(max_length=64, db_index=True)
    object_type = fields.CharField(max_length=64, null=True)
    object_id = fields.CharField(max_length=64, null=True, db_index=True)
    object_name = fields.CharField(max_length=255, null=True)
    project_id = fields.UUIDField(null=True, db_index=True)
    project_name = fields.CharField(max_length=63, null=True)
    outcome = fields.CharEnumField(AuditOutcome, max_length=16)
    error_code = fields.CharField(max_length=32, null=True)
    error_message = fields.CharField(max_length=500, null=True)
    # {field: {"from": old, "to": new}} for the fields that changed, secrets redacted.
    changes: fields.JSONField[dict[str, Any]] = fields.JSONField(default=dict)

    class Meta:
        table = "audit_entries"
