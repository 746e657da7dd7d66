"""Recording: the audit scope of the current request or job, and `record()`.

Every mutation runs inside an `AuditScope` (the GraphQL layer opens one per mutation field; the
CLI, the scheduler and other jobs open their own with `acting_as`). A service that changes
something calls `await record(...)` *inside the transaction of the change*: one INSERT on the
transaction's connection (Tortoise routes it there through its context), so a change that rolls
back leaves no entry. Refusals are recorded by whoever opened the scope (`refused`), on their own,
after the work's transaction has rolled back.

`changes` is a field diff of two snapshots (`fields_of`), with secrets redacted: fields whose names
say they hold one (passwords, tokens, kubeconfigs, keys), values sealed at rest (core/crypto.py),
and any field a service names in `secret`.
"""

from __future__ import annotations

import contextlib
import logging
import re
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from enum import Enum
from typing import Any

from tortoise.models import Model

from gpupaas.audit.models import AuditActorKind, AuditEntry, AuditOutcome, CredentialKind
from gpupaas.core.actor import Actor, Owner, Principal
from gpupaas.core.crypto import is_sealed

log = logging.getLogger("gpupaas.audit")

REDACTED = "[redacted]"
# Field names (any part of them) that hold secrets, in snapshots and inputs alike.
SECRET_NAME = re.compile(r"password|secret|token|kubeconfig|private|credential|api_?key|sealed", re.I)
# Bookkeeping columns that change on their own and say nothing about what a caller changed.
NOT_CHANGES = frozenset({"created_at", "updated_at", "data_version"})
MESSAGE_MAX = 500


def _utc_now() -> datetime:
    return datetime.now(UTC)


# The clock entries are dated by (tests set their own).
clock: Callable[[], datetime] = _utc_now


@dataclass
class AuditScope:
    """Who acts in the current request or job, from where, with which credential, doing what."""

    kind: AuditActorKind
    name: str
    action: str
    user_id: uuid.UUID | None = None
    address: str | None = None
    credential_kind: CredentialKind = CredentialKind.NONE
    credential_id: uuid.UUID | None = None
    credential_name: str | None = None
    # Entries this scope has recorded (the GraphQL layer warns about a mutation that changed
    # something and recorded nothing; tests/audit/test_every_mutation.py fails on it).
    recorded: int = field(default=0)

    @classmethod
    def of_actor(cls, actor: Actor, action: str, address: str | None = None) -> AuditScope:
        user = actor.user
        credential = actor.credential
        return cls(
            kind=AuditActorKind.USER if user is not None else AuditActorKind.ANONYMOUS,
            name=user.username if user is not None else "anonymous",
            user_id=user.id if user is not None else None,
            action=action,
            address=address,
            credential_kind=CredentialKind(credential.kind)
            if credential is not None
            else CredentialKind.NONE,
            credential_id=credential.id if credential is not None else None,
            credential_name=credential.name if credential is not None else None,
        )


_scope: ContextVar[AuditScope | None] = ContextVar("gpupaas_audit_scope", default=None)


def current() -> AuditScope | None:
    return _scope.get()


@contextlib.contextmanager
def scoped(scope: AuditScope) -> Iterator[AuditScope]:
    """Runs the block in `scope`: what it records is attributed to it."""
    token = _scope.set(scope)
    try:
        yield scope
    finally:
        _scope.reset(token)


def acting_as(
    kind: AuditActorKind, action: str, name: str | None = None
) -> contextlib.AbstractContextManager[AuditScope]:
    """A scope for work no request asked for: the CLI, the scheduler, the platform itself."""
    return scoped(AuditScope(kind=kind, name=name or kind.value.lower(), action=action))


# ---------------------------------------------------------------- snapshots and diffs


def plain(value: Any) -> Any:
    """A JSON value for a snapshot: ids and times as text, enums as their value, secrets sealed
    at rest redacted wherever they sit."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return REDACTED if is_sealed(value) else value
    if isinstance(value, Enum):
        return plain(value.value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, uuid.UUID | Decimal):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): REDACTED if SECRET_NAME.search(str(k)) else plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(v) for v in value]
    return str(value)


def fields_of(obj: Model, *, omit: Iterable[str] = ()) -> dict[str, Any]:
    """A snapshot of a model's own columns (foreign keys as their `*_id`), as JSON values."""
    skip = NOT_CHANGES | set(omit)
    return {
        name: plain(getattr(obj, name))
        for name in obj._meta.fields_db_projection
        if name not in skip and name != obj._meta.pk_attr
    }


def diff(
    before: Mapping[str, Any] | None, after: Mapping[str, Any] | None, secret: Iterable[str] = ()
) -> dict[str, dict[str, Any]]:
    """The fields that differ, as {field: {"from": old, "to": new}}; secrets show as redacted (a
    change of one still shows that it changed)."""
    old, new = dict(before or {}), dict(after or {})
    hidden = set(secret)
    changes: dict[str, dict[str, Any]] = {}
    for name in sorted(old.keys() | new.keys()):
        was, now = plain(old.get(name)), plain(new.get(name))
        if was == now and (before is not None and after is not None):
            continue
        if was is None and now is None:
            continue
        if name in hidden or SECRET_NAME.search(name):
            was = None if was is None else REDACTED
            now = None if now is None else REDACTED
        changes[name] = {"from": was, "to": now}
    return changes


# ---------------------------------------------------------------- recording


async def record(
    object_type: str,
    object_id: uuid.UUID | str | None,
    object_name: str | None = None,
    *,
    project: Owner | None = None,
    before: Mapping[str, Any] | None = None,
    after: Mapping[str, Any] | None = None,
    secret: Iterable[str] = (),
    action: str | None = None,
    user: Principal | None = None,
) -> None:
    """Records a change made by the current scope: call it inside the change's transaction.

    `before`/`after`: snapshots (`fields_of`) of the object; a creation has no `before`, a deletion
    no `after`. `user`: who acts when the scope does not know yet (a login). Outside any scope
    (a job that opened none) the platform itself is the actor."""
    scope = current()
    if scope is None:
        scope = AuditScope(kind=AuditActorKind.SYSTEM, name="system", action=action or object_type)
    scope.recorded += 1
    kind, name, user_id = scope.kind, scope.name, scope.user_id
    if user is not None:
        kind, name, user_id = AuditActorKind.USER, user.username, user.id
    await AuditEntry.create(
        created_at=clock(),
        actor_kind=kind,
        actor_id=user_id,
        actor_name=name,
        address=scope.address,
        credential_kind=scope.credential_kind,
        credential_id=scope.credential_id,
        credential_name=scope.credential_name,
        action=action or scope.action,
        object_type=object_type,
        object_id=str(object_id) if object_id is not None else None,
        object_name=object_name,
        project_id=project.id if project is not None else None,
        project_name=project.name if project is not None else None,
        outcome=AuditOutcome.SUCCESS,
        changes=diff(before, after, secret),
    )


async def refused(
    scope: AuditScope,
    code: str,
    message: str,
    *,
    outcome: AuditOutcome = AuditOutcome.REFUSED,
    object_type: str | None = None,
    object_id: str | None = None,
    project: Owner | None = None,
    project_name: str | None = None,
) -> None:
    """Records that the scope's action was refused (or failed): on its own, after the work's
    transaction rolled back, so nothing of the attempt but this entry remains."""
    scope.recorded += 1
    await AuditEntry.create(
        created_at=clock(),
        actor_kind=scope.kind,
        actor_id=scope.user_id,
        actor_name=scope.name,
        address=scope.address,
        credential_kind=scope.credential_kind,
        credential_id=scope.credential_id,
        credential_name=scope.credential_name,
        action=scope.action,
        object_type=object_type,
        object_id=object_id,
        project_id=project.id if project is not None else None,
        project_name=project.name if project is not None else project_name,
        outcome=outcome,
        error_code=code,
        error_message=message[:MESSAGE_MAX],
    )
