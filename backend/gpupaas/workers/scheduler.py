"""The scheduler: in every process that runs a worker, it sends the warnings before auto-stops,
stops or destroys instances whose time limit is due, and runs the projects' schedules.

The database is the truth: due times are stored (`stop_at`, `Schedule.next_run_at`), never kept in
memory, so a restart or another worker picks up where one left off. Several workers may run it at
once; each thing due is acted on by the one worker whose conditional UPDATE claims it first:
- a warning: the instance's version moves on only where `stop_warned_at` is still empty;
- an auto-stop: `stop_claimed_until` (a lease) is set only where it is empty or expired and the
  due time is the one read; the stop itself then moves the instance out of its running status;
- a schedule: `next_run_at` moves to the next run only where it still holds the due time read.
It acts through the same service calls a person's stop or destroy makes (as the system actor
`schedules.service.SCHEDULER`), with the reason as the run's reason and the status message.

The clock is injected (`clock`): tests move it, never sleep.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from tortoise.expressions import Q
from tortoise.transactions import in_transaction

from gpupaas.compute import service as compute
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.run_kind import COMPUTE
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core import logs
from gpupaas.core.errors import ErrorCode, Forbidden, UserErrors
from gpupaas.events import outbox
from gpupaas.runs.kinds import RunKind
from gpupaas.schedules import service as schedules
from gpupaas.schedules.models import Schedule, ScheduleTarget
from gpupaas.schedules.warnings import emit_auto_stop_warning
from gpupaas.service_instances import service as services
from gpupaas.service_instances.models import ServiceInstance
from gpupaas.service_instances.run_kind import SERVICES
from gpupaas.service_instances.states import Request as ServiceRequest
from gpupaas.service_instances.states import ServiceStatus

log = logging.getLogger("gpupaas.scheduler")

# How many rows of each kind one pass looks at (the rest wait for the next pass).
BATCH = 200


def utc_now() -> datetime:
    return datetime.now(UTC)


async def _destroy(instance_id: str, reason: str) -> None:
    await compute.destroy(schedules.SCHEDULER, instance_id, reason=reason)


async def _stop(service_id: str, reason: str) -> None:
    await services.request(schedules.SCHEDULER, service_id, ServiceRequest.STOP, reason=reason)


@dataclass(frozen=True)
class _Limited:
    """A kind of instance with time limits: its run kind, the statuses in which a due limit stops
    it (running, or failed after it ran: a failed pod may still hold its GPUs), and how."""

    kind: RunKind[Any]
    statuses: tuple[Any, ...]
    act: Callable[[str, str], Awaitable[None]]


LIMITED = (
    _Limited(COMPUTE, (DeploymentStatus.SUCCESS, DeploymentStatus.FAILED), _destroy),
    _Limited(SERVICES, (ServiceStatus.RUNNING, ServiceStatus.FAILED), _stop),
)


@dataclass
class Tick:
    """What one pass did."""

    warned: int = 0
    stopped: int = 0
    refused: int = 0
    schedules_run: int = 0


def _refusal(error: Exception) -> str:
    if isinstance(error, UserErrors):
        return "; ".join(p.message for p in error.problems)
    return str(error)


def _conflict(error: Exception) -> bool:
    return isinstance(error, UserErrors) and any(p.code == ErrorCode.CONFLICT for p in error.problems)


class Scheduler:
    def __init__(
        self,
        *,
        warning_minutes: int,
        interval_seconds: float,
        lease: timedelta = timedelta(minutes=5),
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self.warning = timedelta(minutes=warning_minutes)
        self.interval = interval_seconds
        self.lease = lease
        self.clock = clock
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="scheduler")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _loop(self) -> None:
        # The first pass one interval after start: nothing due is lost by waiting (due times are
        # stored), and a process that starts and stops at once does no work.
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except Exception:  # a database hiccup must not end the loop: the next pass retries
                log.exception("scheduler pass failed")

    async def tick(self) -> Tick:
        """One pass: warnings, then due auto-stops, then due schedules."""
        done = Tick()
        moment = self.clock()
        for limited in LIMITED:
            done.warned += await self._warn(limited, moment)
            stopped, refused = await self._stop_due(limited, moment)
            done.stopped += stopped
            done.refused += refused
        done.schedules_run += await self._run_schedules(moment)
        return done

    # ------------------------------------------------------------ warnings

    async def _warn(self, limited: _Limited, moment: datetime) -> int:
        if self.warning <= timedelta(0):
            return 0
        model = limited.kind.model
        rows: Sequence[Any] = await model.filter(
            status__in=list(limited.statuses),
            stop_at__gt=moment,
            stop_at__lte=moment + self.warning,
            stop_warned_at__isnull=True,
        ).limit(BATCH)
        count = 0
        for row in rows:
            async with in_transaction():
                claimed = await model.filter(
                    id=row.id, version=row.version, stop_warned_at__isnull=True, stop_at=row.stop_at
                ).update(stop_warned_at=moment, version=row.version + 1)
                if not claimed:
                    continue  # another worker warned, or the instance changed: the next pass looks again
                row.version += 1
                row.stop_warned_at = moment
                await emit_auto_stop_warning(
                    limited.kind, row, stop_at=row.stop_at, reason=row.stop_reason or "time limit", now=moment
                )
            count += 1
        if count:
            outbox.notify()
        return count

    # ------------------------------------------------------------ auto-stops

    async def _stop_due(self, limited: _Limited, moment: datetime) -> tuple[int, int]:
        model = limited.kind.model
        free = Q(stop_claimed_until__isnull=True) | Q(stop_claimed_until__lte=moment)
        rows: Sequence[Any] = (
            await model.filter(free, status__in=list(limited.statuses), stop_at__lte=moment)
            .order_by("stop_at")
            .limit(BATCH)
        )
        stopped = refused = 0
        for row in rows:
            claimed = await model.filter(free, id=row.id, stop_at=row.stop_at).update(
                stop_claimed_until=moment + self.lease
            )
            if not claimed:
                continue  # another worker holds it
            reason = row.stop_reason or "time limit reached"
            try:
                await limited.act(str(row.id), reason)
            except (UserErrors, Forbidden) as error:
                if _conflict(error):
                    # Changed at the same moment: let the next pass try again.
                    await model.filter(id=row.id).update(stop_claimed_until=None)
                    continue
                # Refused (a compute instance that runs service instances): say so, and stop trying.
                message = f"{reason}, but not carried out: {_refusal(error)}"
                await model.filter(id=row.id).update(
                    stop_at=None, stop_claimed_until=None, stop_refused=message
                )
                with logs.bound(instance_id=row.id):
                    log.info("auto-stop of %s %s refused: %s", limited.kind.noun, row.id, message)
                refused += 1
                continue
            # Stopping or destroying now: not due any more (a finished stop disarms it anyway).
            await model.filter(id=row.id).update(stop_at=None, stop_claimed_until=None)
            stopped += 1
        return stopped, refused

    # ------------------------------------------------------------ schedules

    async def _run_schedules(self, moment: datetime) -> int:
        count = 0
        for schedule in await Schedule.filter(next_run_at__lte=moment).order_by("next_run_at").limit(BATCH):
            upcoming = schedules.first_run(schedule, moment)
            claimed = await Schedule.filter(id=schedule.id, next_run_at=schedule.next_run_at).update(
                next_run_at=upcoming, last_run_at=moment
            )
            if not claimed:
                continue  # another worker runs it
            result = await self._act_on(schedule)
            await Schedule.filter(id=schedule.id).update(last_result=result)
            count += 1
        return count

    async def _act_on(self, schedule: Schedule) -> str:
        reason = schedules.schedule_reason(schedule)
        act: Callable[[str, str], Awaitable[None]]
        if schedule.applies_to == ScheduleTarget.SERVICE_INSTANCES:
            targets: list[tuple[str, str]] = [
                (str(i), n)
                for i, n in await ServiceInstance.filter(
                    project_id=schedule.project_id, status=ServiceStatus.RUNNING
                ).values_list("id", "name")
            ]
            act, done_word, noun = _stop, "stopped", "service instance"
        else:
            targets = [
                (str(i), n)
                for i, n in await ComputeInstance.filter(
                    project_id=schedule.project_id,
                    status__in=[DeploymentStatus.SUCCESS, DeploymentStatus.FAILED],
                ).values_list("id", "name")
            ]
            act, done_word, noun = _destroy, "destroyed", "compute instance"
        done: list[str] = []
        refused: list[str] = []
        for target_id, name in targets:
            try:
                await act(target_id, reason)
                done.append(name)
            except (UserErrors, Forbidden) as error:
                refused.append(f"{name} ({_refusal(error)})")
        result = f"{done_word} {len(done)} {noun}{'' if len(done) == 1 else 's'}"
        if done:
            result += ": " + ", ".join(sorted(done)[:20])
        if refused:
            result += f"; not {done_word}: " + "; ".join(refused[:10])
        return result
