"""GraphQL for the audit log: the `auditLog` query, and `AuditedMutation`, the field extension the
schema puts on every mutation (api/schema.py) so that none can run outside an audit scope.

For each mutation the extension opens the scope (who, from which address, with which credential,
the mutation's name as the action) in which the service's `record()` calls write their entries,
inside the change's transaction. What the service refuses (a payload with userErrors, or a
FORBIDDEN / UNAUTHENTICATED / NOT_FOUND error) is recorded here as REFUSED, on its own; an
unexpected error as FAILED.
"""

from __future__ import annotations

import json
import logging
import re
from datetime import datetime
from typing import Any

import strawberry
from strawberry.extensions import FieldExtension
from strawberry.extensions.field_extension import AsyncExtensionResolver

from gpupaas.audit import addresses, recorder, service
from gpupaas.audit.models import AuditActorKind, AuditEntry, AuditOutcome, CredentialKind
from gpupaas.core.errors import Forbidden, InvalidArgument, NotAuthenticated, NotFound
from gpupaas.graphql.connections import Connection, cursor_of
from gpupaas.graphql.context import Context, Info

log = logging.getLogger("gpupaas.audit")

AuditOutcomeEnum = strawberry.enum(AuditOutcome, name="AuditOutcome")
AuditActorKindEnum = strawberry.enum(AuditActorKind, name="AuditActorKind")
CredentialKindEnum = strawberry.enum(CredentialKind, name="CredentialKind")


@strawberry.type(name="AuditChange", description="One field an audited action changed; values as JSON text.")
class AuditChangeType:
    field: str
    before: str | None = strawberry.field(description="The value before, as JSON; null: it had none.")
    after: str | None = strawberry.field(description="The value after, as JSON; null: it has none.")


def _json(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True)


@strawberry.type(name="AuditEntry")
class AuditEntryType:
    id: strawberry.ID
    at: datetime
    actor_kind: AuditActorKind
    actor_name: str = strawberry.field(description="The username, or cli, system, scheduler, anonymous.")
    actor_id: strawberry.ID | None
    address: str | None
    credential_kind: CredentialKind
    credential_id: strawberry.ID | None
    credential_name: str | None = strawberry.field(description="The API token's name (never its secret).")
    action: str = strawberry.field(description="The mutation, such as deployComputeInstance.")
    object_type: str | None
    object_id: strawberry.ID | None
    object_name: str | None
    project: str | None = strawberry.field(description="The project's name, when the object has one.")
    outcome: AuditOutcome
    error_code: str | None
    error_message: str | None
    changes: list[AuditChangeType] = strawberry.field(description='Secrets show as "[redacted]".')

    @classmethod
    def of(cls, entry: AuditEntry) -> AuditEntryType:
        return cls(
            id=strawberry.ID(str(entry.id)),
            at=entry.created_at,
            actor_kind=entry.actor_kind,
            actor_name=entry.actor_name,
            actor_id=strawberry.ID(str(entry.actor_id)) if entry.actor_id else None,
            address=entry.address,
            credential_kind=entry.credential_kind,
            credential_id=strawberry.ID(str(entry.credential_id)) if entry.credential_id else None,
            credential_name=entry.credential_name,
            action=entry.action,
            object_type=entry.object_type,
            object_id=strawberry.ID(entry.object_id) if entry.object_id else None,
            object_name=entry.object_name,
            project=entry.project_name,
            outcome=entry.outcome,
            error_code=entry.error_code,
            error_message=entry.error_message,
            changes=[
                AuditChangeType(field=name, before=_json(change.get("from")), after=_json(change.get("to")))
                for name, change in (entry.changes or {}).items()
            ],
        )


@strawberry.input
class AuditLogFilter:
    actor: str | None = strawberry.field(default=None, description="A username, or cli, system, scheduler.")
    project: str | None = strawberry.field(default=None, description="A project's name.")
    object_type: str | None = None
    object_id: strawberry.ID | None = None
    action: str | None = None
    outcome: AuditOutcome | None = None
    since: datetime | None = strawberry.field(default=None, description="From this moment (inclusive).")
    until: datetime | None = strawberry.field(default=None, description="Before this moment (exclusive).")


@strawberry.type
class AuditQuery:
    @strawberry.field(
        description="The audit log, newest first: platform admins read all of it, project admins their "
        "projects' entries."
    )
    async def audit_log(
        self,
        info: Info,
        filter: AuditLogFilter | None = None,
        first: int | None = None,
        after: str | None = None,
    ) -> Connection[AuditEntryType]:
        f = filter or AuditLogFilter()
        where = service.AuditFilter(
            actor=f.actor,
            project=f.project,
            object_type=f.object_type,
            object_id=str(f.object_id) if f.object_id is not None else None,
            action=f.action,
            outcome=f.outcome,
            since=f.since,
            until=f.until,
        )
        page = await service.entries(info.context.actor, where, first, after)
        return Connection[AuditEntryType].of(page, AuditEntryType.of, cursor_of)


# ---------------------------------------------------------------- every mutation, audited

_REFUSALS: dict[type[Exception], str] = {
    NotAuthenticated: "UNAUTHENTICATED",
    Forbidden: "FORBIDDEN",
    NotFound: "NOT_FOUND",
    InvalidArgument: "INVALID",
}
_VERB = re.compile(r"^[a-z]+")
_ASPECT = re.compile(r"(Sharing|State)$")


def object_type_of(mutation: str) -> str | None:
    """What a mutation acts on, from its name: deployComputeInstance -> ComputeInstance."""
    if mutation in ("login", "logout"):
        return "Session"
    rest = _ASPECT.sub("", _VERB.sub("", mutation))
    return rest or None


def request_address(context: Context) -> str | None:
    request = context.request
    peer = request.client.host if request.client is not None else None
    trusted = addresses.networks(context.settings.trusted_proxies)
    return addresses.client_address(peer, request.headers.get("x-forwarded-for"), trusted)


def _named(kwargs: dict[str, Any]) -> tuple[str | None, str | None]:
    """The object id and the project name a mutation's arguments give, if any."""
    given = kwargs.get("input")
    object_id = kwargs.get("id") or getattr(given, "id", None)
    project = getattr(given, "project", None)
    return (str(object_id)[:64] if object_id else None), (project[:63] if isinstance(project, str) else None)


class AuditedMutation(FieldExtension):
    """Runs a mutation in an audit scope and records its refusals (api/schema.py adds it to all)."""

    async def resolve_async(
        self, next_: AsyncExtensionResolver, source: Any, info: Info, **kwargs: Any
    ) -> Any:
        context = info.context
        name = info.field_name
        scope = recorder.AuditScope.of_actor(context.actor, name, request_address(context))
        object_id, project_name = _named(kwargs)

        async def refused(code: str, message: str, outcome: AuditOutcome = AuditOutcome.REFUSED) -> None:
            try:
                project = await service.PROJECT_NAMED()(project_name) if project_name else None
                if project is None and object_id is not None:
                    # The project of the object, as its own entries name it: its admins see who tried.
                    project = await service.project_of_object(object_id)
                await recorder.refused(
                    scope,
                    code,
                    message,
                    outcome=outcome,
                    object_type=object_type_of(name),
                    object_id=object_id,
                    project=project,
                    project_name=project_name,
                )
            except Exception:  # the database may be what failed: the caller gets the first error
                log.exception("could not record the refusal of %s", name)

        with recorder.scoped(scope):
            try:
                result = await next_(source, info, **kwargs)
            except tuple(_REFUSALS) as error:
                code = next(c for kind, c in _REFUSALS.items() if isinstance(error, kind))
                await refused(code, str(error))
                raise
            except Exception:
                await refused("INTERNAL", "Unexpected error.", AuditOutcome.FAILED)
                raise
        problems = getattr(result, "user_errors", None)
        if problems:
            first = problems[0]
            await refused(
                str(getattr(first.code, "value", first.code)), "; ".join(p.message for p in problems)
            )
        elif scope.recorded == 0:
            # Changed nothing (logging out without a session), or a service forgot to record:
            # tests/audit/test_every_mutation.py tells the two apart.
            log.debug("mutation %s recorded no audit entry", name)
        return result
