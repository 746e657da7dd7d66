"""The outbox relay: publishes committed outbox rows to the bus in id order and marks them sent.

With the broker down, rows simply wait (the mutation that wrote them has already succeeded) and
the relay retries with backoff. On PostgreSQL several relays (one per `gpupaas serve`) share the
work: each claims rows with FOR UPDATE SKIP LOCKED. Sent rows are swept after a while.

Two statements a batch: one claims the pending rows and returns them (`UPDATE ... RETURNING`), one
marks what was published sent. The marks of batches that follow each other closely (a deploy
commits three times within milliseconds) are written together, `mark_delay` after the last one:
until then the rows stay claimed, so no relay publishes them again, and a relay that dies first
leaves them to be published again once its claim expires (at least once, as before).

The relay is woken by `outbox.notify()` after each commit of this process; the poll is for rows
written where no relay runs (a CLI command) and for claims of relays that died, so it can be slow.
The rows of an `outbox.transaction()` (a deploy's hot path) need no claim: they were written
claimed by this relay and are handed to it once committed (`hand`), published first, in the order
they were committed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import uuid
from collections import deque
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from gpupaas.events import outbox, sql
from gpupaas.events.bus import COMMANDS_TOPIC, DEAD_LETTER_TOPIC, STATUS_TOPIC, Bus, BusUnavailable
from gpupaas.events.models import OutboxMessage

log = logging.getLogger("gpupaas.relay")
TOPICS = (COMMANDS_TOPIC, STATUS_TOPIC, DEAD_LETTER_TOPIC)

_CLAIM = (
    "UPDATE outbox SET claimed_by = ?, claimed_until = ? WHERE id IN (SELECT id FROM outbox "
    "WHERE sent_at IS NULL AND (claimed_until IS NULL OR claimed_until <= ?) ORDER BY id LIMIT ?{lock}) "
    "RETURNING *"
)


class Relay:
    def __init__(
        self,
        bus: Bus,
        *,
        poll_seconds: float = 2.0,
        batch: int = 200,
        keep_sent: timedelta = timedelta(hours=1),
        keep_status: timedelta = timedelta(hours=24),
        max_backoff_seconds: float = 5.0,
        claim_for: timedelta = timedelta(seconds=60),
        mark_delay: float = 0.05,
    ) -> None:
        self.bus = bus
        self.claim_for = claim_for
        self.name = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self.poll_seconds = poll_seconds
        self.batch = batch
        self.keep_sent = keep_sent
        self.keep_status = keep_status
        self.max_backoff_seconds = max_backoff_seconds
        self.mark_delay = mark_delay
        # Published, not yet marked sent (still claimed by this relay), and since when.
        self._unmarked: list[int] = []
        self._unmarked_since = 0.0
        self._wake = asyncio.Event()
        # Whether to claim pending rows on the next pass (woken by `notify`, or the poll), and the
        # rows handed over by `outbox.transaction()`, claimed already, to publish first.
        self._claim_due = True
        self._handed: deque[OutboxMessage] = deque()
        self._task: asyncio.Task[None] | None = None
        self._last_sweep = datetime.now(UTC)

    async def start(self) -> None:
        outbox.register_relay(self)
        self._task = asyncio.create_task(self._run(), name="outbox-relay")

    async def stop(self) -> None:
        outbox.unregister_relay(self)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        try:  # what was published is not published again by another relay after the claim expires
            await self._mark_sent()
            await self._give_back([row.id for row in self._handed])  # and the rest at once
            self._handed.clear()
        except Exception:
            log.exception("could not mark published outbox rows sent; they will be published again")

    # What `outbox.transaction()` needs of the relay of its process (outbox.LocalRelay).

    def claim_until(self) -> datetime:
        """Until when rows written for this relay stay its own."""
        return datetime.now(UTC) + self.claim_for

    def hand(self, rows: Sequence[OutboxMessage]) -> None:
        """Committed rows written claimed by this relay: published on its next pass, claim-free."""
        self._handed.extend(rows)
        self._wake.set()

    def wake(self) -> None:
        """Rows were committed unclaimed (`outbox.notify()`): claim and publish them now."""
        self._claim_due = True
        self._wake.set()

    async def _run(self) -> None:
        backoff = 0.0
        while True:
            self._wake.clear()
            try:
                await self._publish_handed()
                sent = 0
                if self._claim_due:
                    self._claim_due = False
                    sent = await self._publish_batch()
                backoff = 0.0
                if sent >= self.batch:
                    self._claim_due = True
                    continue  # more are waiting
                if await self._linger():
                    continue  # more came meanwhile: publish them first, mark them all together
                await self._sweep()
            except BusUnavailable as error:
                self._claim_due = True  # what was given back is claimed again, once it is up
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
                self._claim_due = True  # what was given back is claimed again
                await asyncio.sleep(1.0)
                continue
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=self.poll_seconds)
            except TimeoutError:
                self._claim_due = True

    async def _linger(self) -> bool:
        """Rows published but not marked sent: wait up to `mark_delay` for more (True: woken, the
        marks wait for the next batch, unless they have waited `batch` rows or 10 x `mark_delay`
        already), else mark them sent now."""
        if not self._unmarked:
            return False
        loop = asyncio.get_running_loop()
        overdue = loop.time() - self._unmarked_since >= 10 * self.mark_delay
        if not overdue and len(self._unmarked) < self.batch:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=self.mark_delay)
            if self._wake.is_set():
                return True
        await self._mark_sent()
        return False

    async def publish_pending(self) -> int:
        """Publishes one batch of pending rows and marks them sent; returns how many were sent."""
        try:
            return await self._publish_handed() + await self._publish_batch()
        finally:
            await self._mark_sent()

    async def _publish_batch(self) -> int:
        """Claims and publishes one batch; returns how many were published (marked later).

        Rows are claimed in one statement and published outside any transaction: no database lock
        is held while the broker is slow or down (on SQLite that lock would stop every request).
        A claim expires, so rows claimed by a relay that died are taken by another. The rows
        published before a broker failure stay to be marked sent; the others are given back."""
        return await self._publish(await self._claim())

    async def _publish_handed(self) -> int:
        """Publishes the rows handed over (`hand`), in the order they came; returns how many."""
        if not self._handed:
            return 0
        rows = list(self._handed)
        self._handed.clear()
        return await self._publish(rows)

    async def _publish(self, rows: list[OutboxMessage]) -> int:
        for index, row in enumerate(rows):
            try:
                await self.bus.publish(row.topic, row.key, json.dumps(row.payload).encode())
            except BusUnavailable as error:
                await OutboxMessage.filter(id=row.id).update(attempts=row.attempts + 1, last_error=str(error))
                # The rest are given back, with any handed over meanwhile: claimed again later.
                await self._give_back([r.id for r in rows[index:]] + [r.id for r in self._handed])
                self._handed.clear()
                await self._mark_sent()
                raise
            except Exception:
                # Anything else (the loop logs it and carries on): the rest are given back too, so
                # that they are claimed again at once, not when their claim expires.
                await self._give_back([r.id for r in rows[index:]])
                raise
            if not self._unmarked:
                self._unmarked_since = asyncio.get_running_loop().time()
            self._unmarked.append(row.id)
        return len(rows)

    async def _give_back(self, ids: list[int]) -> None:
        """Rows this relay claimed and will not publish: any relay may claim them now."""
        if ids:
            await OutboxMessage.filter(id__in=ids, claimed_by=self.name).update(
                claimed_by=None, claimed_until=None
            )

    async def _mark_sent(self) -> None:
        if not self._unmarked:
            return
        ids, self._unmarked = self._unmarked, []
        await OutboxMessage.filter(id__in=ids).update(sent_at=datetime.now(UTC), claimed_until=None)

    async def _claim(self) -> list[OutboxMessage]:
        """The oldest pending rows (unsent, and unclaimed or their claim expired), claimed by this
        relay and returned in one statement, in id order."""
        moment = datetime.now(UTC)
        lock = "" if sql.dialect(OutboxMessage) == "sqlite" else " FOR UPDATE SKIP LOCKED"
        values = [self.name, moment + self.claim_for, moment, self.batch]
        rows = await sql.objects(OutboxMessage, _CLAIM.format(lock=lock), values)
        return sorted(rows, key=lambda row: row.id)

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
