"""The lifecycle of a deployment run, the same for every kind of subject (`runs.kinds`): queue it
with its command, claim it with a lease, renew the lease, report progress, finish it, re-queue it
when its command or its worker was lost, and report drift of what it deployed.

Every status change writes, in one transaction, the subject, its run and outbox rows (a command for
the workers, a status event for subscribers): an accepted request is never lost, whatever restarts
afterwards. Concurrent writers on one subject cannot both win: the row is locked on PostgreSQL, and
on every database a status write is conditional on the version read (`write_status`).

The functions that take no transaction of their own (`queue`, `write_status`, `announce`, `locked`,
`remove`) run inside the caller's; the others open one. After a transaction that added outbox rows,
`outbox.notify()` wakes the relay (and the webhook dispatchers); `claim` and `finish`, a deploy's
hot path, open theirs with `outbox.transaction()`, which hands their rows to the relay instead.

A status write that reaches the kind's healthy or failed status also queues the project's webhook
deliveries for it (`webhooks.service.publish`), in the same transaction.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any, TypeVar, cast

from tortoise.expressions import F, Q
from tortoise.functions import Coalesce
from tortoise.transactions import in_transaction

from gpupaas.core.errors import ErrorCode, UserErrors
from gpupaas.core.ids import parse_id
from gpupaas.events import data_version, outbox, sql
from gpupaas.metering import meter
from gpupaas.runs.kinds import Claimed, RunKind, Subject
from gpupaas.runs.models import DeploymentRun
from gpupaas.runs.states import RunAction, RunStatus
from gpupaas.webhooks import service as webhooks
from gpupaas.webhooks.models import WebhookEvent

S = TypeVar("S", bound=Subject)

# The reaper looks at this many stale runs of a kind per pass.
REQUEUE_BATCH = 500


def now() -> datetime:
    return datetime.now(UTC)


# ---------------------------------------------------------------- subjects (in the caller's transaction)


async def locked(kind: RunKind[S], subject_id: uuid.UUID) -> S:
    """The subject's row, locked for this transaction on PostgreSQL (SQLite has one writer anyway)."""
    return cast(S, await kind.model.select_for_update().get(id=subject_id))


async def _locked_with_project(kind: RunKind[S], subject_id: uuid.UUID) -> S:
    """`locked`, with the subject's project read in the same statement (only the subject locked)."""
    table = kind.model._meta.db_table
    found = await kind.model.select_for_update(of=(table,)).select_related("project").get(id=subject_id)
    return cast(S, found)


async def write_status(
    kind: RunKind[S],
    subject: S,
    status: Enum,
    message: str | None,
    *,
    recovered: bool = False,
    **columns: Any,
) -> None:
    """The new status, conditional on the version the caller read: a concurrent change makes it a
    CONFLICT. `columns` are written in the same statement (a drift flag, the outputs). The usage
    meter follows the status in the same transaction (`_meter`); `recovered`: the cluster brought
    back what was deployed (drift), which is metered at the size last deployed."""
    if not await _write_status(kind, subject, status, message, recovered=recovered, **columns):
        raise UserErrors.one(
            ("id",),
            f"the {kind.noun} was changed by another request at the same moment: look again and retry",
            ErrorCode.CONFLICT,
        )


async def _write_status(
    kind: RunKind[S],
    subject: S,
    status: Enum,
    message: str | None,
    *,
    recovered: bool = False,
    unchanged: bool = False,
    **columns: Any,
) -> bool:
    """`write_status`, False instead of a CONFLICT. `unchanged`: only if the row is still as the
    caller read it, its `updated_at` too (every write moves one or the other; a sharing change
    moves only `updated_at`), so that `subject` may stand for a locked read of it."""
    version = subject.version
    previous = subject.status
    moment = now()
    condition: dict[str, Any] = {"id": subject.id, "version": version}
    if unchanged:
        condition["updated_at"] = subject.updated_at
    query = kind.model.filter(**condition).update(
        **{
            "status": status,
            "status_message": message,
            "version": version + 1,
            "updated_at": moment,
            "drifted": False,
            **columns,
        }
    )
    event = _webhook_event(kind, status)
    if event is not None:  # the same statement says whether the project has a webhook to tell
        written = await sql.updated_with(
            query, {"webhooks": webhooks.any_enabled_sql(kind.model._meta.db_table)}
        )
        if not written:
            return False
        any_enabled = bool(written[0][1]["webhooks"])
    elif not await query:
        return False
    for name, value in {"status": status, "status_message": message, "drifted": False, **columns}.items():
        setattr(subject, name, value)
    subject.version = version + 1
    subject.updated_at = moment
    await _meter(kind, subject, previous, moment, recovered)
    if event is not None:
        await _publish(subject, event, status, message, any_enabled)
    return True


async def _meter(kind: RunKind[S], subject: S, previous: Enum, moment: datetime, recovered: bool) -> None:
    """The usage meter after a status change (see `RunKind.meter_starts`): nothing to do unless the
    new status starts the meter or the old one may have had it running."""
    if subject.status in kind.meter_starts:
        holding = kind.holding(subject)
        if holding is not None:
            await (meter.resume if recovered else meter.hold)(subject.id, holding, moment)
    elif subject.status not in kind.meter_keeps and previous in kind.meter_keeps:
        await meter.release(subject.id, moment)


def _webhook_event(kind: RunKind[S], status: Enum) -> WebhookEvent | None:
    """The webhook event of reaching `status`: the healthy or the failed one's, none for the others."""
    if status == kind.healthy:
        return kind.success_event
    if status == kind.failed:
        return kind.failed_event
    return None


async def _publish(
    subject: S, event: WebhookEvent, status: Enum, message: str | None, any_enabled: bool
) -> None:
    """Queues the webhook event; `any_enabled`: whether the project has an enabled webhook, as the
    status write found it."""
    data = {
        "id": str(subject.id),
        "name": subject.name,
        "status": status.value,
        "message": message,
        "drifted": subject.drifted,
    }
    await webhooks.publish(subject.project_id, event, data, any_enabled=any_enabled)


async def announce(kind: RunKind[S], subject: S, *, deleted: bool = False) -> None:
    """A status event for subscribers."""
    await outbox.add_status(str(subject.id), await kind.status_event(subject, deleted=deleted))


async def remove(kind: RunKind[S], subject: S) -> None:
    """The subject is gone: subscribers learn it (a last event, one version on), then the row goes
    (its runs with it). Its meter stops: the usage intervals stay, as history."""
    if subject.status in kind.meter_keeps:
        await meter.release(subject.id, now())
    subject.version += 1
    await announce(kind, subject, deleted=True)
    await subject.delete()
    await data_version.bump()  # a project's instanceCount, which the response cache may hold


async def queue(
    kind: RunKind[S],
    subject: S,
    action: RunAction,
    *,
    delete_after: bool = False,
    reason: str | None = None,
    announced: bool = False,
) -> DeploymentRun:
    """A new QUEUED run of the subject and its command; `reason`: why, when no person asked for it
    (the scheduler's "auto-stop after 4h"). `announced`: with the subject's status event too
    (`announce`), both outbox rows in one statement."""
    run: DeploymentRun = await DeploymentRun.create(
        **kind.run_fields(subject), action=action, delete_after=delete_after, queued_at=now(), reason=reason
    )
    key, payload = kind.command(run)
    if announced:
        status = await kind.status_event(subject, deleted=False)
        await outbox.add_command_and_status(key, payload, str(subject.id), status)
    else:
        await outbox.add_command(key, payload)
    return run


# ---------------------------------------------------------------- the steps a worker takes


async def _take(kind: RunKind[S], run_id: uuid.UUID, worker: str, lease: timedelta) -> DeploymentRun | None:
    """The run, now RUNNING under `worker`'s lease, when it is the kind's and was queued, or its
    worker stopped renewing the lease; None otherwise. One conditional UPDATE that returns the row:
    of two workers that race for it, one takes it."""
    moment = now()
    taken: list[DeploymentRun] = await sql.updated(
        DeploymentRun.filter(
            Q(id=run_id)
            & (Q(status=RunStatus.QUEUED) | Q(status=RunStatus.RUNNING, lease_expires_at__lte=moment)),
            **kind.runs_filter(),
        ).update(
            status=RunStatus.RUNNING,
            lease_owner=worker,
            lease_expires_at=moment + lease,
            started_at=Coalesce("started_at", moment),
            attempts=F("attempts") + 1,
        )
    )
    return taken[0] if taken else None


async def _busy(kind: RunKind[S], run_id: uuid.UUID) -> bool:
    """Whether another run of the run's subject is under way (for kinds that run one at a time)."""
    queued = await DeploymentRun.get_or_none(id=run_id)
    if queued is None or not kind.owns(queued):
        return False
    return (
        await DeploymentRun.filter(
            **kind.subject_runs(kind.subject_id(queued)),
            status=RunStatus.RUNNING,
            lease_expires_at__gt=now(),
        )
        .exclude(id=run_id)
        .exists()
    )


async def claim(kind: RunKind[S], run_id: str, worker: str, lease: timedelta) -> Claimed[S] | None:
    """Takes a queued run, or a running one whose worker stopped renewing its lease, and moves its
    subject to the started status. None when the run is finished, unknown, another kind's, held by
    a live worker, or (one at a time) waiting for another run of its subject: redelivered
    commands do nothing, and a waiting run is published again when the one before it ends."""
    rid = parse_id(run_id)
    if rid is None:
        return None
    async with outbox.transaction():  # its rows go to this process's relay, claim-free
        if kind.one_at_a_time and await _busy(kind, rid):
            return None
        run = await _take(kind, rid, worker, lease)
        if run is None:
            return None
        started = kind.started(run.action)
        written = await _start(kind, kind.subject_id(run), started)
        if written is not None:
            subject, returned = written
            await announce(kind, subject)
            return Claimed(run=run, subject=subject, project_name=returned.pop(_PROJECT), returned=returned)
        subject = await _locked_with_project(kind, kind.subject_id(run))
        project = subject.project  # type: ignore[attr-defined]  # both kinds' models have it
        superseded = kind.superseded(subject, run)
        if not superseded and subject.status != started:
            await write_status(kind, subject, started, None)
            await announce(kind, subject)
    return Claimed(run=run, subject=subject, project_name=project.name, superseded=superseded)


_PROJECT = "__project_name"


async def _start(kind: RunKind[S], subject_id: uuid.UUID, started: Enum) -> tuple[S, dict[str, Any]] | None:
    """The subject moved to its started status by one conditional `UPDATE ... RETURNING`, which
    also returns its project's name and the kind's `claim_returning`, when nothing but that write
    is to be done: the kind never supersedes a run, the started status is neither healthy nor
    failed (no webhook) and leaves the meter as it is, and the subject is not in it already. None:
    the subject is to be read first (it is in the started status already, or the kind needs it)."""
    if kind.may_supersede or _webhook_event(kind, started) is not None or started in kind.meter_starts:
        return None
    query = kind.model.filter(id=subject_id).exclude(status=started)
    if started not in kind.meter_keeps:  # from a status that keeps the meter going, it would end it
        query = query.exclude(status__in=list(kind.meter_keeps))
    table = kind.model._meta.db_table
    returning = {
        _PROJECT: f'SELECT name FROM projects WHERE projects.id = "{table}".project_id',  # noqa: S608  # ours
        **kind.claim_returning(sql.dialect(kind.model)),
    }
    moment = now()
    written = await sql.updated_with(
        query.update(
            status=started, status_message=None, version=F("version") + 1, updated_at=moment, drifted=False
        ),
        returning,
    )
    if not written:
        return None
    subject, returned = written[0]
    return cast(S, subject), returned


async def renew_lease(run_id: uuid.UUID, worker: str, lease: timedelta) -> bool:
    """The worker is alive: extend its lease. False when the run is no longer its own."""
    renewed = await DeploymentRun.filter(id=run_id, lease_owner=worker, status=RunStatus.RUNNING).update(
        lease_expires_at=now() + lease
    )
    return bool(renewed)


async def report_progress(run_id: uuid.UUID, worker: str, message: str) -> None:
    await DeploymentRun.filter(id=run_id, lease_owner=worker, status=RunStatus.RUNNING).update(
        message=message
    )


async def _republish_waiting(kind: RunKind[S], subject_id: uuid.UUID) -> None:
    """The subject's queued runs, published again: one may have been skipped while another ran."""
    for run in await DeploymentRun.filter(**kind.subject_runs(subject_id), status=RunStatus.QUEUED):
        await DeploymentRun.filter(id=run.id).update(queued_at=now())
        key, payload = kind.command(run)
        await outbox.add_command(key, payload)


# Told (action, outcome, seconds) when a run ends: core/metrics.py Metrics.observe_run.
RunObserver = Callable[[str, str, float], None]


async def finish(
    kind: RunKind[S],
    run_id: uuid.UUID,
    worker: str,
    *,
    succeeded: bool,
    message: str | None,
    outputs: dict[str, str] | None = None,
    applied: list[dict[str, Any]] | None = None,
    canceled: bool = False,
    observe: RunObserver | None = None,
    claimed: S | None = None,
) -> bool:
    """Ends the run (keeping the objects the driver applied) and moves its subject on, or removes
    it after a delete. A run its subject went on without ends without a status change
    (`canceled`: it did nothing). False when another worker took the run meanwhile (its lease had
    expired): that worker's result stands. `observe` is told the run's action, outcome and
    duration once it is committed (the worker's metrics). `claimed`: the subject as `claim` gave
    it (saves reading it again when nothing changed it since)."""
    ending = RunStatus.SUCCEEDED if succeeded else RunStatus.FAILED
    run_columns: dict[str, Any] = {
        "status": RunStatus.CANCELED if canceled else ending,
        "message": message,
        "lease_expires_at": None,
    }
    if applied is not None:
        run_columns["applied"] = applied
    async with outbox.transaction():  # its rows go to this process's relay, claim-free
        # Ended only while it is still this worker's: one conditional UPDATE that returns the row.
        ended = now()
        found: list[DeploymentRun] = await sql.updated(
            DeploymentRun.filter(id=run_id, status=RunStatus.RUNNING, lease_owner=worker).update(
                **run_columns, finished_at=ended
            )
        )
        if not found:
            return False
        run = found[0]
        removed = succeeded and not canceled and run.delete_after
        status = kind.succeeded(run.action) if succeeded else kind.failed_after(run.action)
        # The subject as the claim left it, if nothing changed it since: written without reading
        # it again (the write is conditional on that); otherwise locked and read as it is now.
        if (
            claimed is not None
            and not removed
            and not kind.superseded(claimed, run)
            and await _write_status(
                kind,
                claimed,
                status,
                message,
                unchanged=True,
                **kind.result_fields(claimed, run, succeeded, outputs),
            )
        ):
            subject = claimed
            await announce(kind, subject)
        else:
            subject = await locked(kind, kind.subject_id(run))
            if removed:
                await remove(kind, subject)
            elif not kind.superseded(subject, run):
                columns = kind.result_fields(subject, run, succeeded, outputs)
                await write_status(kind, subject, status, message, **columns)
                await announce(kind, subject)
        if kind.one_at_a_time and not removed:
            await _republish_waiting(kind, subject.id)
    if observe is not None:
        started = run.started_at or ended
        observe(run.action.value, run.status.value.lower(), (ended - started).total_seconds())
    return True


async def requeue_stale(kind: RunKind[S], *, queued_for: timedelta, max_attempts: int) -> int:
    """The database is the truth: a run of the kind whose command seems lost (QUEUED too long), or
    whose worker died (RUNNING with an expired lease), is queued again; past `max_attempts` it
    fails with a reason, and so does its subject."""
    moment = now()
    count = 0
    stale = await DeploymentRun.filter(
        Q(status=RunStatus.QUEUED, queued_at__lte=moment - queued_for)
        | Q(status=RunStatus.RUNNING, lease_expires_at__lte=moment),
        **kind.runs_filter(),
    ).limit(REQUEUE_BATCH)
    for run in stale:
        async with in_transaction():
            fresh = await DeploymentRun.select_for_update().get_or_none(id=run.id)
            if fresh is None or fresh.status != run.status or fresh.lease_expires_at != run.lease_expires_at:
                continue
            if fresh.status == RunStatus.RUNNING and fresh.attempts >= max_attempts:
                fresh.status = RunStatus.FAILED
                fresh.message = (
                    f"the worker stopped responding {fresh.attempts} times; gave up ({kind.retry_hint})"
                )
                fresh.finished_at = moment
                await fresh.save(update_fields=["status", "message", "finished_at"])
                subject = await locked(kind, kind.subject_id(fresh))
                if not kind.superseded(subject, fresh):
                    await write_status(kind, subject, kind.failed_after(fresh.action), fresh.message)
                    await announce(kind, subject)
                if kind.one_at_a_time:
                    await _republish_waiting(kind, subject.id)
            else:
                await DeploymentRun.filter(id=fresh.id).update(queued_at=moment)
                key, payload = kind.command(fresh)
                await outbox.add_command(key, payload)
            count += 1
    if count:
        outbox.notify()
    return count


# ---------------------------------------------------------------- drift


async def report_drift(kind: RunKind[S], subject_id: str, failed: bool, reason: str | None) -> bool:
    """The cluster changed under a deployed subject (its pod died, or came back): the healthy status
    turns FAILED with the reason, and a subject FAILED by drift turns healthy again. True when the
    status changed."""
    sid = parse_id(subject_id)
    if sid is None:
        return False
    async with in_transaction():
        found = await kind.model.select_for_update().get_or_none(id=sid)
        if found is None:
            return False
        subject = cast(S, found)
        if failed and subject.status == kind.healthy:
            await write_status(
                kind, subject, kind.failed, f"drift: {reason or kind.drift_reason}", drifted=True
            )
        elif not failed and subject.status == kind.failed and subject.drifted:
            await write_status(kind, subject, kind.healthy, None, recovered=True)
        else:
            return False
        await announce(kind, subject)
    outbox.notify()
    return True
