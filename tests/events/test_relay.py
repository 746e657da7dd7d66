"""The outbox relay: no database lock held while the broker is slow, claims that expire, order."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from gpupaas.compute.states import DeploymentStatus
from gpupaas.events.bus import COMMANDS_TOPIC, STATUS_TOPIC
from gpupaas.events.memory import InProcessBus
from gpupaas.events.models import OutboxMessage
from gpupaas.events.relay import TOPICS, Relay
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
