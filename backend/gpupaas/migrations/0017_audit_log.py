"""The audit log (issue 15): one row per audited change or refusal; no foreign keys, so that an
entry outlives the user, project and object it names (audit/models.py)."""

from tortoise import migrations
from tortoise.migrations import operations as ops
from gpupaas.audit.models import AuditActorKind, AuditOutcome, CredentialKind
from orjson import loads
from tortoise.fields.data import JSON_DUMPS
from uuid import uuid4
from tortoise import fields


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0016_usage_meter")]

    initial = False

    operations = [
        ops.CreateModel(
            name="AuditEntry",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                ("created_at", fields.DatetimeField(db_index=True, auto_now=False, auto_now_add=False)),
                (
                    "actor_kind",
                    fields.CharEnumField(
                        description="USER: USER\nANONYMOUS: ANONYMOUS\nCLI: CLI\nSYSTEM: SYSTEM\nSCHEDULER: SCHEDULER",
                        enum_type=AuditActorKind,
                        max_length=16,
                    ),
                ),
                ("actor_id", fields.UUIDField(null=True, db_index=True)),
                ("actor_name", fields.CharField(max_length=128)),
                ("address", fields.CharField(null=True, max_length=64)),
                (
                    "credential_kind",
                    fields.CharEnumField(
                        default=CredentialKind.NONE,
                        description="SESSION: SESSION\nTOKEN: TOKEN\nNONE: NONE",
                        enum_type=CredentialKind,
                        max_length=16,
                    ),
                ),
                ("credential_id", fields.UUIDField(null=True)),
                ("credential_name", fields.CharField(null=True, max_length=128)),
                ("action", fields.CharField(db_index=True, max_length=64)),
                ("object_type", fields.CharField(null=True, max_length=64)),
                ("object_id", fields.CharField(null=True, db_index=True, max_length=64)),
                ("object_name", fields.CharField(null=True, max_length=255)),
                ("project_id", fields.UUIDField(null=True, db_index=True)),
                ("project_name", fields.CharField(null=True, max_length=63)),
                (
                    "outcome",
                    fields.CharEnumField(
                        description="SUCCESS: SUCCESS\nREFUSED: REFUSED\nFAILED: FAILED",
                        enum_type=AuditOutcome,
                        max_length=16,
                    ),
                ),
                ("error_code", fields.CharField(null=True, max_length=32)),
                ("error_message", fields.CharField(null=True, max_length=500)),
                ("changes", fields.JSONField(default=dict, encoder=JSON_DUMPS, decoder=loads)),
            ],
            options={"table": "audit_entries", "app": "gpupaas", "pk_attr": "id"},
            bases=["Model"],
        ),
    ]
