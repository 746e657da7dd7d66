"""The outbox relay: no database lock held while the broker is slow, claims that expire, order."""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from gpupaas.compute.states import DeploymentStatus
from gpupaas.events import outbox
from gpupaas.events.bus import COMMANDS_TOPIC, STATUS_TOPIC
from gpupaas.events.memory import InProcessBus
from gpupaas.events.models import OutboxMessage
from gpupaas.events.relay import TOPICS, Relay
from tests.conftest import QueryCounter
from tests.factories import make_instance, make_profile, make_project
from tests.workers.conftest import eventually


class StalledBus(InProcessBus):
    """A broker that does not answer until released (our own bus interface, the real in-process bus)."""

    def __init__(self) -> None:
        super().__init__()
        self.stalled = asyncio.Event()
        self.release = asyncio.Event()

    async def publish(
        self, topic: str, key: str | None, value: bytes, headers: Sequence[tuple[str, bytes]] = ()
    ) -> None:
        self.stalled.set()
        await self.release.wait()
        await super().publish(topic, key, value, headers)


async def test_a_stalled_broker_does_not_hold_up_requests(db: object) -> None:
    bus = StalledBus()
    await bus.start()
    await bus.ensure_topics(TOPICS)
    relay = Relay(bus, poll_seconds=0.05)
    await relay.start()
    try:
        project = await make_project("ml")
        profile = await make_profile(project)
        await make_instance(project, profile, deploy=True)
        await asyncio.wait_for(bus.stalled.wait(), 30)
        # while the relay waits for the broker, requests still write to the database
        other = await asyncio.wait_for(make_instance(project, profile, deploy=True), 30)
        assert other.status == DeploymentStatus.WAITING
        bus.release.set()

        async def all_sent() -> bool:
            return not await OutboxMessage.filter(sent_at=None).exists()

        await eventually(all_sent, what="the outbox to drain")
    finally:
        bus.release.set()
        await relay.stop()
        await bus.stop()


async def test_claims_of_a_dead_relay_expire(db: object) -> None:
    bus = InProcessBus()
    await bus.start()
    await bus.ensure_topics(TOPICS)
    moment = datetime.now(UTC)
    dead = await OutboxMessage.create(
        topic=STATUS_TOPIC,
        key="a",
        payload={"n": 1},
        claimed_by="dead",
        claimed_until=moment - timedelta(seconds=1),
    )
    busy = await OutboxMessage.create(
        topic=STATUS_TOPIC,
        key="b",
        payload={"n": 2},
        claimed_by="alive",
        claimed_until=moment + timedelta(minutes=1),
    )
    free = await OutboxMessage.create(topic=COMMANDS_TOPIC, key="c", payload={"n": 3})
    consumer = bus.consumer([STATUS_TOPIC, COMMANDS_TOPIC], group="readers")
    await consumer.start()
    try:
        assert await Relay(bus).publish_pending() == 2
        sent = {m.id for m in await OutboxMessage.filter(sent_at__not_isnull=True)}
        assert sent == {dead.id, free.id}
        assert busy.id not in sent  # another live relay is publishing it
        received = await consumer.getmany(timeout=1)
        assert sorted(m.key or "" for m in received) == ["a", "c"]
    finally:
        await consumer.stop()
        await bus.stop()


async def test_a_batch_costs_two_statements_whatever_its_size(
    db: object, count_queries: QueryCounter
) -> None:
    # Given 30 pending rows (one of them claimed by a relay that died),
    bus = InProcessBus()
    await bus.start()
    await bus.ensure_topics(TOPICS)
    moment = datetime.now(UTC)
    for n in range(29):
        await OutboxMessage.create(topic=COMMANDS_TOPIC, key=f"k{n % 3}", payload={"n": n})
    await OutboxMessage.create(
        topic=COMMANDS_TOPIC, key="k0", payload={"n": 29}, claimed_by="dead", claimed_until=moment
    )
    consumer = bus.consumer([COMMANDS_TOPIC], group="readers")
    await consumer.start()
    try:
        # when a relay publishes them,
        count_queries.statements.clear()
        assert await Relay(bus).publish_pending() == 30
        # then one statement claimed them all and one marked them sent,
        assert len(count_queries.statements) == 2, count_queries.statements
        assert not await OutboxMessage.exists(sent_at=None)
        # and each key's rows came in the order they were written.
        received = await consumer.getmany(timeout=1, max_records=100)
        by_key: dict[str, list[int]] = {}
        for message in received:
            by_key.setdefault(message.key or "", []).append(json.loads(message.value)["n"])
        assert sorted(n for ns in by_key.values() for n in ns) == list(range(30))
        assert all(ns == sorted(ns) for ns in by_key.values())
    finally:
        await consumer.stop()
        await bus.stop()


async def test_marks_of_batches_that_follow_closely_are_written_together(
    db: object, count_queries: QueryCounter
) -> None:
    # Given a running relay that waits up to a second for more before it marks what it published,
    bus = InProcessBus()
    await bus.start()
    await bus.ensure_topics(TOPICS)
    relay = Relay(bus, mark_delay=1.0)
    await relay.start()
    try:
        count_queries.statements.clear()
        # when three commits follow each other within that time,
        for n in range(3):
            await OutboxMessage.create(topic=COMMANDS_TOPIC, key="k", payload={"n": n})
            outbox.notify()
            await eventually(functools.partial(_claimed, n), what=f"row {n} to be claimed")

        async def all_sent() -> bool:
            return not await OutboxMessage.exists(sent_at=None)

        await eventually(all_sent, what="the rows to be marked sent")
        # then each was claimed on its own, and all three marked sent in one statement.
        marks = [
            s for s in count_queries.statements if s.startswith("UPDATE") and "sent_at" in s.split("WHERE")[0]
        ]
        assert len(marks) == 1, count_queries.statements
    finally:
        await relay.stop()
        await bus.stop()


async def _claimed(n: int) -> bool:
    """Row `n` was claimed by a relay (it keeps its claimant once sent)."""
    payloads = await OutboxMessage.filter(claimed_by__not_isnull=True).values_list("payload", flat=True)
    return any(isinstance(p, dict) and p.get("n") == n for p in payloads)
