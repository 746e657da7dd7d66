"""The outbox relay: publishes committed outbox rows to the bus in id order and marks them sent.

With the broker down, rows simply wait (the mutation that wrote them has already succeeded) and
the relay retries with backoff. On PostgreSQL several relays (one per `gpupaas serve`) share the
work: each claims rows with FOR UPDATE SKIP LOCKED. Sent rows are swept after a while.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import uuid
from datetime import UTC, datetime, timedelta

from tortoise.expressions import Q
from tortoise.transactions import in_transaction

from gpupaas.events import outbox
from gpupaas.events.bus import COMMANDS_TOPIC, DEAD_LETTER_TOPIC, STATUS_TOPIC, Bus, BusUnavailable
from gpupaas.events.models import OutboxMessage

log = logging.getLogger("gpupaas.relay")
TOPICS = (COMMANDS_TOPIC, STATUS_TOPIC, DEAD_LETTER_TOPIC)


class Relay:
    def __init__(
        self,
        bus: Bus,
        *,
        poll_seconds: float = 0.5,
        batch: int = 200,
        keep_sent: timedelta = timedelta(hours=1),
        keep_status: timedelta = timedelta(hours=24),
        max_backoff_seconds: float = 5.0,
        claim_for: timedelta = timedelta(seconds=60),
    ) -> None:
        self.bus = bus
        self.claim_for = claim_for
        self.name = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.poll_seconds = poll_seconds
        self.batch = batch
        self.keep_sent = keep_sent
        self.keep_status = keep_status
        self.max_backoff_seconds = max_backoff_seconds
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._last_sweep = datetime.now(UTC)

    async def start(self) -> None:
        outbox.register(self._wake)
        self._task = asyncio.create_task(self._run(), name="outbox-relay")

    async def stop(self) -> None:
        outbox.unregister(self._wake)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        backoff = 0.0
        while True:
            self._wake.clear()
            try:
                sent = await self.publish_pending()
                backoff = 0.0
                if sent >= self.batch:
                    continue  # more are waiting
                await self._sweep()
            except BusUnavailable as error:
                backoff = min(self.max_backoff_seconds, max(0.1, backoff * 2))
                log.warning("broker unavailable, outbox rows wait (retry in %.1fs): %s", backoff, error)
                await asyncio.sleep(backoff)
                # A broker that lost its state (a restart without storage) lost the topics too:
                # create them again, with our partition count, before anything auto-creates them.
                with contextlib.suppress(BusUnavailable):
                    await self.bus.ensure_topics(TOPICS)
                continue
            except Exception:
                log.exception("outbox relay failed; retrying")
                await asyncio.sleep(1.0)
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self.poll_seconds)

    async def publish_pending(self) -> int:
        """Publishes one batch of pending rows; returns how many were sent.

        Rows are claimed in a short transaction and published outside it: no database lock is
        held while the broker is slow or down (on SQLite that lock would stop every request).
        A claim expires, so rows claimed by a relay that died are taken by another. The rows
        published before a broker failure are marked sent before the failure is raised."""
        rows = await self._claim()
        failure: BusUnavailable | None = None
        sent: list[int] = []
        for row in rows:
            try:
                await self.bus.publish(row.topic, row.key, json.dumps(row.payload).encode())
            except BusUnavailable as error:
                failure = error
                await OutboxMessage.filter(id=row.id).update(attempts=row.attempts + 1, last_error=str(error))
                break
            sent.append(row.id)
        if sent:
            await OutboxMessage.filter(id__in=sent).update(sent_at=datetime.now(UTC), claimed_until=None)
        unsent = [row.id for row in rows if row.id not in set(sent)]
        if unsent:
            await OutboxMessage.filter(id__in=unsent, claimed_by=self.name).update(
                claimed_by=None, claimed_until=None
            )
        if failure is not None:
            raise failure
        return len(sent)

    async def _claim(self) -> list[OutboxMessage]:
        moment = datetime.now(UTC)
        async with in_transaction():
            rows: list[OutboxMessage] = (
                await OutboxMessage.filter(
                    Q(sent_at=None) & (Q(claimed_until=None) | Q(claimed_until__lte=moment))
                )
                .order_by("id")
                .limit(self.batch)
                .select_for_update(skip_locked=True)
            )
            if rows:
                await OutboxMessage.filter(id__in=[r.id for r in rows]).update(
                    claimed_by=self.name, claimed_until=moment + self.claim_for
                )
        return rows

    async def _sweep(self) -> None:
        moment = datetime.now(UTC)
        if moment - self._last_sweep < timedelta(minutes=1):
            return
        self._last_sweep = moment
        await self.sweep(moment)

    async def sweep(self, moment: datetime) -> None:
        """Deletes sent rows after `keep_sent`; status rows, which subscriptions replay from, after
        `keep_status` (the replay retention)."""
        await OutboxMessage.filter(sent_at__lte=moment - self.keep_sent, cursor=None).delete()
        await OutboxMessage.filter(sent_at__lte=moment - self.keep_status, cursor__not_isnull=True).delete()
