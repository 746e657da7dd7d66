"""`outbox.transaction()`: the rows of a deploy's hot path go to this process's relay in memory once
committed, written already claimed by it, so the relay publishes them without claiming them; rows
of a transaction that rolled back are never published; inside another transaction, or with the
broker down, rows fall back to the claim, as every other row does."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import pytest
from tortoise.transactions import in_transaction

from gpupaas.events import outbox
from gpupaas.events.bus import COMMANDS_TOPIC, STATUS_TOPIC, BusUnavailable
from gpupaas.events.memory import InProcessBus
from gpupaas.events.models import OutboxMessage
from gpupaas.events.relay import TOPICS, Relay
from tests.conftest import QueryCounter
from tests.factories import make_project
from tests.workers.conftest import eventually

CLAIM = "UPDATE outbox SET claimed_by"


class RecordingBus(InProcessBus):
    """The real in-process bus, which says what it was given, and refuses while `down` > 0."""

    def __init__(self) -> None:
        super().__init__()
        self.published: list[tuple[str, str | None]] = []
        self.down = 0
        self.broken = 0  # fails this many times with an error that is not BusUnavailable

    async def publish(
        self, topic: str, key: str | None, value: bytes, headers: Sequence[tuple[str, bytes]] = ()
    ) -> None:
        if self.down > 0:
            self.down -= 1
            raise BusUnavailable("the broker is down (test)")
        if self.broken > 0:
            self.broken -= 1
            raise RuntimeError("the client broke (test)")
        self.published.append((topic, key))
        await super().publish(topic, key, value, headers)


@pytest.fixture
async def bus() -> AsyncIterator[RecordingBus]:
    bus = RecordingBus()
    await bus.start()
    await bus.ensure_topics(TOPICS)
    yield bus
    await bus.stop()


@pytest.fixture
async def relay(bus: RecordingBus) -> AsyncIterator[Relay]:
    # The poll far away: whatever is published here was handed over or claimed after a notify.
    relay = Relay(bus, poll_seconds=3600, mark_delay=0.01, max_backoff_seconds=0.1)
    await relay.start()
    yield relay
    await relay.stop()


async def _all_sent() -> bool:
    return not await OutboxMessage.exists(sent_at=None)


async def _status(project_id: str, n: int) -> None:
    await outbox.add_status(f"i{n}", {"type": "status", "projectId": project_id, "n": n})


async def test_committed_rows_are_published_in_order_without_a_claim(
    db: object, bus: RecordingBus, relay: Relay, count_queries: QueryCounter
) -> None:
    project = await make_project("ml")
    count_queries.statements.clear()
    # When a transaction writes a command and a status event, then another a status event,
    async with outbox.transaction():
        await outbox.add_command_and_status(
            "k1", {"n": 1}, "i1", {"type": "status", "projectId": str(project.id)}
        )
    async with outbox.transaction():
        await _status(str(project.id), 2)
    await eventually(_all_sent, what="the rows to be published and marked sent")
    # then the relay published them in the order they were committed, and never claimed them:
    assert bus.published == [(COMMANDS_TOPIC, "k1"), (STATUS_TOPIC, "i1"), (STATUS_TOPIC, "i2")]
    assert not [s for s in count_queries.statements if s.startswith(CLAIM)], count_queries.statements
    rows = await OutboxMessage.all().order_by("id")
    assert {row.claimed_by for row in rows} == {relay.name}
    # the status events took their stream's cursors, on their rows and in their payloads.
    assert [(row.cursor, row.payload.get("cursor")) for row in rows] == [(None, None), (1, 1), (2, 2)]
    assert await outbox.stream_cursor(str(project.id)) == 2


async def test_a_transaction_that_rolls_back_hands_over_nothing(
    db: object, bus: RecordingBus, relay: Relay
) -> None:
    project = await make_project("ml")

    async def refused() -> None:
        async with outbox.transaction():
            await _status(str(project.id), 1)
            raise RuntimeError("refused")

    with pytest.raises(RuntimeError):
        await refused()
    async with outbox.transaction():
        await _status(str(project.id), 2)
    await eventually(_all_sent, what="the committed row to be published")
    # Only the committed event was published; its cursor is the stream's first (the rolled-back
    # one moved nothing on).
    assert bus.published == [(STATUS_TOPIC, "i2")]
    assert [row.cursor for row in await OutboxMessage.all()] == [1]


async def test_inside_another_transaction_rows_wait_for_the_outer_commit(
    db: object, bus: RecordingBus, relay: Relay
) -> None:
    project = await make_project("ml")

    async def outer_fails() -> None:
        async with in_transaction():
            async with outbox.transaction():
                await _status(str(project.id), 1)
            raise RuntimeError("the outer one fails")

    with pytest.raises(RuntimeError):
        await outer_fails()
    async with in_transaction():
        async with outbox.transaction():
            await _status(str(project.id), 2)
        # Not handed over (the outer transaction may yet roll back): written for any relay to claim.
        assert [row.claimed_by for row in await OutboxMessage.all()] == [None]
    outbox.notify()
    await eventually(_all_sent, what="the row to be claimed and published")
    assert bus.published == [(STATUS_TOPIC, "i2")]


async def test_with_the_broker_down_handed_rows_are_given_back_and_sent_later(
    db: object, bus: RecordingBus, relay: Relay
) -> None:
    project = await make_project("ml")
    bus.down = 2
    async with outbox.transaction():
        await outbox.add_command_and_status(
            "k1", {"n": 1}, "i1", {"type": "status", "projectId": str(project.id)}
        )
    await eventually(_all_sent, what="the rows to be published once the broker answers")
    assert bus.published == [(COMMANDS_TOPIC, "k1"), (STATUS_TOPIC, "i1")]
    assert (await OutboxMessage.get(key="k1")).attempts >= 1


async def test_any_other_publish_failure_gives_the_handed_rows_back_for_the_next_claim(
    db: object, bus: RecordingBus, relay: Relay
) -> None:
    """Not only a broker that is down: whatever fails a handed row's publish, it and the rows after
    it are given back, and the relay's next claim (not their claim's expiry, 60 s on) sends them."""
    project = await make_project("ml")
    bus.broken = 1
    async with outbox.transaction():
        await outbox.add_command_and_status(
            "k1", {"n": 1}, "i1", {"type": "status", "projectId": str(project.id)}
        )
    await eventually(_all_sent, timeout=10, what="the rows to be published at the next claim")
    assert bus.published == [(COMMANDS_TOPIC, "k1"), (STATUS_TOPIC, "i1")]


async def test_a_relay_that_stops_gives_back_what_it_was_handed(db: object, bus: RecordingBus) -> None:
    project = await make_project("ml")
    relay = Relay(bus)
    outbox.register_relay(relay)  # this process's relay, its loop not running
    try:
        async with outbox.transaction():
            await _status(str(project.id), 1)
        assert [row.claimed_by for row in await OutboxMessage.all()] == [relay.name]
    finally:
        await relay.stop()
    # Any relay may claim it now, instead of after the claim expires.
    row = await OutboxMessage.get()
    assert (row.claimed_by, row.claimed_until, row.sent_at) == (None, None, None)
