"""The status watchdog of an API process: live status must not go silent.

Every few seconds it asks the outbox for the newest status event that was published (marked sent by
a relay) at least `seconds` ago, after this process's status consumer started listening (plus a
grace: a relay marks rows sent just after it published them, so a row marked sent right after the
consumer started may have been published before). If the
broadcaster has not heard that event (nor a later one of its project) the consumer is deaf: the
process reports itself not ready (`/readyz` answers 503 with the reason under `statusEvents`),
logs a warning, reconnects the consumer (a new one, at the end) and tells every subscriber to catch
up from the database; `gpupaas_status_consumer_reconnects_total` counts it. It is ready again once
the new consumer hears an event, or once `seconds` have passed since the reconnect with nothing
published that it missed.

One query per check, on the outbox's (sent_at, id) index, whatever the number of rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from gpupaas.core.metrics import Metrics
from gpupaas.events.broadcast import StatusBroadcaster
from gpupaas.events.bus import STATUS_TOPIC, BusUnavailable
from gpupaas.events.models import OutboxMessage

log = logging.getLogger("gpupaas.watchdog")
Clock = Callable[[], datetime]


def _utcnow() -> datetime:
    return datetime.now(UTC)


class StatusWatchdog:
    def __init__(
        self,
        broadcaster: StatusBroadcaster,
        seconds: float,
        *,
        metrics: Metrics | None = None,
        clock: Clock = _utcnow,
    ) -> None:
        self.broadcaster = broadcaster
        self.seconds = seconds
        self.metrics = metrics
        self.clock = clock
        # Why this process is not ready (None: it is).
        self.problem: str | None = None
        self._reconnected_at: datetime | None = None
        self._task: asyncio.Task[None] | None = None

    @property
    def interval(self) -> float:
        return max(0.1, min(5.0, self.seconds / 4))

    async def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="status-watchdog")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.check()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("status watchdog check failed; retrying")

    async def missed(self) -> str | None:
        """What says the consumer is deaf: the newest status event published `seconds` ago or more
        (after it started listening) that it has not heard; None when there is none."""
        broadcaster = self.broadcaster
        listening = since = broadcaster.listening_since
        if listening is None or since is None:
            return "no status consumer is listening"
        since += timedelta(seconds=min(2.0, self.seconds / 2))
        cutoff = self.clock() - timedelta(seconds=self.seconds)
        if cutoff <= since:
            return None
        row = (
            await OutboxMessage.filter(
                sent_at__gt=since, sent_at__lte=cutoff, topic=STATUS_TOPIC, cursor__not_isnull=True
            )
            .order_by("-sent_at", "-id")
            .first()
            .values("project_id", "cursor", "sent_at")
        )
        if row is None:
            return None
        project_id, cursor = str(row["project_id"]), int(row["cursor"])
        if broadcaster.heard.get(project_id, 0) >= cursor:
            return None
        heard = broadcaster.last_heard_at
        return (
            f"no status event received for {self.seconds:g}s though the outbox published one at "
            f"{row['sent_at'].isoformat()} (project {project_id}, cursor {cursor}); last event heard "
            f"{heard.isoformat() if heard else 'never'}, listening since {listening.isoformat()}"
        )

    async def check(self) -> None:
        """One look: deaf -> not ready and reconnect; after a reconnect, ready again once an event
        is heard or `seconds` have passed with nothing missed."""
        broadcaster = self.broadcaster
        problem = await self.missed() if broadcaster.listening else "the status consumer is not running"
        now = self.clock()
        if problem is None:
            if self.problem is not None and self._reconnected_at is not None:
                heard = broadcaster.last_heard_at
                if (heard is not None and heard > self._reconnected_at) or (
                    now - self._reconnected_at >= timedelta(seconds=self.seconds)
                ):
                    log.warning("status events are heard again: ready")
                    self.problem = self._reconnected_at = None
            return
        self.problem = problem
        # (after a reconnect `missed` looks only at what was published since, so a problem found
        # then is a new one)
        await self._reconnect(problem)

    async def _reconnect(self, problem: str) -> None:
        log.warning("status consumer is deaf (%s): not ready; reconnecting it", problem)
        if self.metrics is not None:
            self.metrics.status_reconnects.inc()
        self._reconnected_at = self.clock()
        try:
            await self.broadcaster.reconnect()
        except BusUnavailable as error:
            log.warning("could not reconnect the status consumer: %s", error)
