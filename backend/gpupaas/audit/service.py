"""Reading the audit log (rights, filters, cursor paging) and purging it after the retention.

Rights: platform admins read every entry; a project's admins read the entries of their project
(entries about users, clusters, global templates and sign-ins carry no project: platform admins
only); members and everybody else read nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from gpupaas.audit import recorder
from gpupaas.audit.models import AuditEntry, AuditOutcome
from gpupaas.core.actor import Actor, Owner, Role
from gpupaas.core.errors import Forbidden, InvalidArgument, NotFound
from gpupaas.core.hooks import Hook
from gpupaas.core.ids import parse_id
from gpupaas.core.pagination import Page, paginate

log = logging.getLogger("gpupaas.audit")

# The project of a name, whoever asks (bound by gpupaas.api.wiring: accounts sit above this package).
PROJECT_NAMED: Hook[Callable[[str], Awaitable[Owner | None]]] = Hook(
    "finding a project by name for the audit log"
)


@dataclass(frozen=True)
class AuditFilter:
    actor: str | None = None  # a username (or "cli", "system", "scheduler")
    project: str | None = None  # a project name
    object_type: str | None = None
    object_id: str | None = None
    action: str | None = None
    outcome: AuditOutcome | None = None
    since: datetime | None = None  # inclusive
    until: datetime | None = None  # exclusive


async def entries(actor: Actor, where: AuditFilter, first: int | None, after: str | None) -> Page[AuditEntry]:
    """A page of the entries the caller may read that match `where`, newest first."""
    actor.require_user()
    query = AuditEntry.all()
    if where.project is not None:
        project = await PROJECT_NAMED()(where.project) if len(where.project) <= 63 else None
        named = where.project[:63]
        if project is None and actor.is_platform_admin and await AuditEntry.exists(project_name=named):
            # A deleted project's entries stay, under the name they were written with.
            query = query.filter(project_name=named)
        else:
            if project is None or not actor.can_see(project):
                raise NotFound(f'project "{named}" not found')
            if not actor.is_admin_of(project.id):
                raise Forbidden(
                    f'Only admins of project "{project.name}" and platform admins may read its audit log.'
                )
            query = query.filter(project_id=project.id)
    elif not actor.is_platform_admin:
        administered = [pid for pid, role in actor.roles.items() if role == Role.ADMIN]
        if not administered:
            raise Forbidden("Only platform admins and project admins may read the audit log.")
        query = query.filter(project_id__in=administered)
    if where.since is not None and where.until is not None and where.since >= where.until:
        raise InvalidArgument("filter: since must be before until")
    if where.actor is not None:
        query = query.filter(actor_name=where.actor)
    if where.object_type is not None:
        query = query.filter(object_type=where.object_type)
    if where.object_id is not None:
        query = query.filter(object_id=str(parse_id(where.object_id) or where.object_id))
    if where.action is not None:
        query = query.filter(action=where.action)
    if where.outcome is not None:
        query = query.filter(outcome=where.outcome)
    if where.since is not None:
        query = query.filter(created_at__gte=where.since)
    if where.until is not None:
        query = query.filter(created_at__lt=where.until)
    return await paginate(query, first, after)


@dataclass(frozen=True)
class _Project:
    id: uuid.UUID
    name: str
    is_system: bool = False


async def project_of_object(object_id: str) -> Owner | None:
    """The project an object belongs to, as the latest entry about it with a project says (None:
    no entry names one, such as for an id that names nothing)."""
    row = (
        await AuditEntry.filter(object_id=object_id, project_id__not_isnull=True)
        .order_by("-created_at")
        .first()
        .values("project_id", "project_name")
    )
    if row is None:
        return None
    return _Project(id=row["project_id"], name=row["project_name"] or "")


# ---------------------------------------------------------------- retention


async def purge(now: datetime, retention_days: int) -> int:
    """Deletes the entries older than the retention; the number deleted. 0 days: kept forever."""
    if retention_days <= 0:
        return 0
    return await AuditEntry.filter(created_at__lt=now - timedelta(days=retention_days)).delete()


class AuditPurger:
    """Purges the audit log at start and then every `interval_seconds`, in every process that runs
    one (purging is idempotent: two processes purging at once delete each row once)."""

    def __init__(
        self,
        retention_days: int,
        *,
        interval_seconds: float = 3600.0,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        self.retention_days = retention_days
        self.interval_seconds = interval_seconds
        self._clock = clock
        self._task: asyncio.Task[None] | None = None

    def now(self) -> datetime:
        return (self._clock or recorder.clock)()

    async def run_once(self) -> int:
        deleted = await purge(self.now(), self.retention_days)
        if deleted:
            log.info("audit log: purged %d entries older than %d days", deleted, self.retention_days)
        return deleted

    async def _loop(self) -> None:
        while True:
            try:
                await self.run_once()
            except Exception:  # the database may be away for a while: try again at the next tick
                log.exception("audit log: purge failed")
            await asyncio.sleep(self.interval_seconds)

    async def start(self) -> None:
        if self.retention_days > 0 and self._task is None:
            self._task = asyncio.create_task(self._loop(), name="audit-purger")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
