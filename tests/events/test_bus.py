"""The bus contract (events/bus.py), run on both buses: the in-process bus and KafkaBus on a real
Kafka-protocol broker (tansu, see tests/kafka_broker.py). Plus what only one of them has: the
in-process bus's retention and partitioner, and Kafka with its broker stopped and restarted.

Each test uses topic and group names of its own. Nothing sleeps to let things settle: consumers'
start() returns once assigned, and anything else is polled with a deadline.
"""

from __future__ import annotations

import asyncio
import socket
import time
import zlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import pytest

from gpupaas.events.bus import Assignment, Bus, BusUnavailable, Consumer, Message, partition_for
from gpupaas.events.memory import InProcessBus
from tests.kafka_broker import TansuBroker, unique

PARTITIONS = 4  # both buses below


@dataclass
class Buses:
    """Makes the buses of a test: on Kafka each is a separate client, as separate processes
    would have; in-process there is only one bus to share."""

    kind: str
    broker: TansuBroker | None = None
    made: list[Bus] = field(default_factory=list)

    async def new(self) -> Bus:
        bus: Bus
        if self.kind == "memory":
            if self.made:
                return self.made[0]
            bus = InProcessBus(partitions=PARTITIONS)
        else:
            assert self.broker is not None
            bus = self.broker.bus(client_id=f"test-{len(self.made)}")
        await bus.start()
        self.made.append(bus)
        return bus


@pytest.fixture(params=["memory", "kafka"])
async def buses(request: pytest.FixtureRequest) -> AsyncIterator[Buses]:
    broker = request.getfixturevalue("kafka_broker") if request.param == "kafka" else None
    made = Buses(request.param, broker)
    try:
        yield made
    finally:
        for bus in made.made:
            await bus.stop()


async def wait_until(check: Callable[[], bool], what: str, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within}s waiting for {what}")
        await asyncio.sleep(0.02)


async def collect(consumer: Consumer, count: int, within: float = 20.0) -> list[Message]:
    got: list[Message] = []
    deadline = time.monotonic() + within
    while len(got) < count:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AssertionError(f"got {len(got)} of {count} messages: {[m.value for m in got]}")
        got += await consumer.getmany(timeout=min(remaining, 1.0))
    return got


def values(messages: list[Message]) -> list[str]:
    return [m.value.decode() for m in messages]


def every_partition(*topics: str) -> Assignment:
    return {(topic, n) for topic in topics for n in range(PARTITIONS)}


class Recorder:
    """Rebalance callbacks that write down what they were given."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Assignment]] = []

    async def assigned(self, tps: Assignment) -> None:
        self.calls.append(("assigned", tps))

    async def revoked(self, tps: Assignment) -> None:
        self.calls.append(("revoked", tps))

    def of(self, kind: str) -> list[Assignment]:
        return [tps for name, tps in self.calls if name == kind]


async def test_one_key_keeps_its_order_and_partition(buses: Buses) -> None:
    bus = await buses.new()
    topic = unique("order")
    await bus.ensure_topics([topic])
    for i in range(30):
        await bus.publish(topic, f"key-{i % 3}", f"{i % 3}:{i}".encode())
    # A new group starts from the earliest message.
    consumer = bus.consumer([topic], group=unique("group"))
    await consumer.start()
    assert consumer.assignment() == every_partition(topic)
    got = await collect(consumer, 30)
    for k in range(3):
        mine = [m for m in got if m.key == f"key-{k}"]
        assert values(mine) == [f"{k}:{i}" for i in range(k, 30, 3)]
        assert len({m.partition for m in mine}) == 1
        offsets = [m.offset for m in mine]
        assert offsets == sorted(offsets)
    assert {m.topic for m in got} == {topic}


async def test_headers_empty_values_and_no_key_round_trip(buses: Buses) -> None:
    bus = await buses.new()
    topic = unique("headers")
    await bus.ensure_topics([topic])
    consumer = bus.consumer([topic], group=None)
    await consumer.start()
    headers = (("trace", b"\x00\xff binary"), ("trace", b"repeated"), ("empty", b""))
    await bus.publish(topic, None, b"", headers)
    await bus.publish(topic, "k\u00e9y", b"\x00\x01", ())
    got = await collect(consumer, 2)
    first, second = sorted(got, key=lambda m: m.value)
    assert (first.key, first.value, first.headers) == (None, b"", headers)
    assert (second.key, second.value, second.headers) == ("k\u00e9y", b"\x00\x01", ())


async def test_ensure_topics_is_idempotent_and_safe_when_racing(buses: Buses) -> None:
    one, two = await buses.new(), await buses.new()
    first, second = unique("race-a"), unique("race-b")
    await asyncio.gather(one.ensure_topics([first, second]), two.ensure_topics([second, first]))
    await one.ensure_topics([first])
    await two.ensure_topics([])
    consumer = one.consumer([first, second], group=None)
    await consumer.start()
    assert consumer.assignment() == every_partition(first, second)
    await two.publish(second, "k", b"hello")
    assert values(await collect(consumer, 1)) == ["hello"]


async def test_members_split_partitions_and_uncommitted_messages_move_to_who_stays(buses: Buses) -> None:
    bus_a, bus_b = await buses.new(), await buses.new()
    topic, group = unique("split"), unique("workers")
    await bus_a.ensure_topics([topic])
    rec_a, rec_b = Recorder(), Recorder()
    a = bus_a.consumer([topic], group=group, on_assigned=rec_a.assigned, on_revoked=rec_a.revoked)
    await a.start()
    assert a.assignment() == every_partition(topic)
    assert rec_a.calls == [("assigned", every_partition(topic))]
    sent = [f"m{i}" for i in range(40)]
    for i, value in enumerate(sent):
        await bus_a.publish(topic, f"key-{i}", value.encode())

    b = bus_b.consumer([topic], group=group, on_assigned=rec_b.assigned, on_revoked=rec_b.revoked)
    await b.start()
    await wait_until(
        lambda: (
            bool(a.assignment())
            and bool(b.assignment())
            and a.assignment().isdisjoint(b.assignment())
            and a.assignment() | b.assignment() == every_partition(topic)
        ),
        "the two members to split the partitions",
    )
    assert rec_b.of("assigned")[-1] == b.assignment()
    assert every_partition(topic) in rec_a.of("revoked")
    assert rec_a.of("assigned")[-1] == a.assignment()

    got_a: list[Message] = []
    got_b: list[Message] = []
    deadline = time.monotonic() + 20
    while len(got_a) + len(got_b) < len(sent):
        assert time.monotonic() < deadline, (values(got_a), values(got_b))
        got_a += await a.getmany(timeout=0.05)
        got_b += await b.getmany(timeout=0.05)
    assert sorted(values(got_a) + values(got_b)) == sorted(sent)
    assert {(m.topic, m.partition) for m in got_a} <= a.assignment()
    assert {(m.topic, m.partition) for m in got_b} <= b.assignment()
    assert got_b, "b's partitions got none of 40 keys"

    await a.commit(got_a)
    with pytest.raises(BusUnavailable):
        await a.commit(got_b[:1])  # not a's partition

    # b leaves without committing: a gets b's partitions and b's messages again, not its own.
    await b.stop()
    await wait_until(lambda: a.assignment() == every_partition(topic), "a to get every partition back")
    again = await collect(a, len(got_b))
    assert sorted(values(again)) == sorted(values(got_b))
    assert rec_a.of("assigned")[-1] == every_partition(topic)
    assert rec_b.of("revoked") == []  # a member that stops is not told


async def test_a_new_member_resumes_after_the_committed_offset(buses: Buses) -> None:
    bus = await buses.new()
    topic, group = unique("resume"), unique("workers")
    await bus.ensure_topics([topic])
    for i in range(10):
        await bus.publish(topic, "one-key", f"{i}".encode())
    first = bus.consumer([topic], group=group)
    await first.start()
    got = await collect(first, 10)
    assert values(got) == [str(i) for i in range(10)]
    await first.commit(got[:6])
    await first.stop()
    with pytest.raises(BusUnavailable):
        await first.getmany(timeout=0)

    second = (await buses.new()).consumer([topic], group=group)
    await second.start()
    rest = await collect(second, 4)
    assert values(rest) == ["6", "7", "8", "9"]
    assert [m.offset for m in rest] == [m.offset for m in got[6:]]


async def test_broadcast_consumers_get_everything_after_their_start_and_nothing_before(buses: Buses) -> None:
    one, two = await buses.new(), await buses.new()
    topic = unique("status")
    await one.ensure_topics([topic])
    # Concurrent publishes share produce requests: tansu then answers "latest offset" too low,
    # which the Kafka bus must not trust.
    await asyncio.gather(*(one.publish(topic, f"key-{i}", f"before-{i}".encode()) for i in range(30)))
    for i in range(5):
        await one.publish(topic, "same", f"before-seq-{i}".encode())
    seen: list[Assignment] = []

    async def on_assigned(tps: Assignment) -> None:
        seen.append(tps)

    x = one.consumer([topic], group=None, on_assigned=on_assigned)
    y = two.consumer([topic], group=None)
    await x.start()
    await y.start()
    assert x.assignment() == y.assignment() == every_partition(topic)
    assert seen == [every_partition(topic)]

    after = [f"after-{i}" for i in range(20)]
    for i, value in enumerate(after):
        await two.publish(topic, f"key-{i}", value.encode())
    # Within a partition the older messages would come first, so they would be among these.
    for consumer in (x, y):
        got = await collect(consumer, len(after))
        assert sorted(values(got)) == sorted(after)
    # And nothing else comes: end markers published now, on keys that reach every partition, are
    # the next each consumer gets (a partition delivers in offset order).
    ends = [f"end-{i}" for i in range(16)]
    for value in ends:
        await two.publish(topic, value, value.encode())
    for consumer in (x, y):
        got = await collect(consumer, len(ends))
        assert sorted(values(got)) == sorted(ends)
        assert {(m.topic, m.partition) for m in got} == every_partition(topic)
    with pytest.raises(BusUnavailable):
        await x.commit(got[:1])


async def test_a_waiting_getmany_returns_as_soon_as_a_message_arrives(buses: Buses) -> None:
    bus = await buses.new()
    topic = unique("wake")
    await bus.ensure_topics([topic])
    consumer = bus.consumer([topic], group=None)
    await consumer.start()
    waiting = asyncio.create_task(consumer.getmany(timeout=15))
    await asyncio.sleep(0)  # let it start waiting
    started = time.monotonic()
    await bus.publish(topic, "k", b"ping")
    got = await waiting
    assert values(got) == ["ping"]
    assert time.monotonic() - started < 2


async def test_a_stopped_bus_refuses_to_publish(buses: Buses) -> None:
    bus = await buses.new()
    topic = unique("stopped")
    await bus.ensure_topics([topic])
    consumer = bus.consumer([topic], group=None)
    await consumer.start()
    await bus.stop()  # stops its consumers too
    with pytest.raises(BusUnavailable, match="cannot publish"):
        await bus.publish(topic, "k", b"x")
    with pytest.raises(BusUnavailable):
        await consumer.getmany(timeout=0)


# Kafka only


async def test_publish_fails_in_bounded_time_while_the_broker_is_down_then_recovers(
    kafka_broker: TansuBroker,
) -> None:
    bus = kafka_broker.bus(client_id="fault")
    await bus.start()
    topic = unique("fault")
    try:
        await bus.ensure_topics([topic])
        await bus.publish(topic, "k", b"before")
        kafka_broker.stop()
        try:
            started = time.monotonic()
            with pytest.raises(BusUnavailable, match=f"cannot publish to {topic}"):
                await bus.publish(topic, "k", b"lost")
            assert time.monotonic() - started < 8  # request_timeout_ms is 2 s
            with pytest.raises(BusUnavailable, match="cannot create topics"):
                await bus.ensure_topics([topic])
        finally:
            kafka_broker.start()
        # Memory storage starts empty: the topic must be made again (every process does this at
        # start-up). The clients reconnect on their own.
        await bus.ensure_topics([topic])
        consumer = bus.consumer([topic], group=None)
        await consumer.start()
        await bus.publish(topic, "k", b"after")
        got = await collect(consumer, 1)
        assert values(got) == ["after"]
    finally:
        await bus.stop()


async def test_an_idle_kafka_consumer_long_polls_and_records_bring_the_short_wait_back(
    kafka_broker: TansuBroker,
) -> None:
    # Given a consumer whose fetches wait 10 ms while records come and 400 ms once idle,
    bus = kafka_broker.bus(client_id="pace", fetch_max_wait_ms=10, idle_fetch_max_wait_ms=400)
    await bus.start()
    topic = unique("pace")
    try:
        await bus.ensure_topics([topic])
        consumer = bus.consumer([topic], group=None)
        await consumer.start()

        def fetch_wait() -> int:
            wait: int = consumer._consumer._fetcher._fetch_max_wait_ms  # type: ignore[attr-defined]
            return wait

        assert fetch_wait() == 10  # just started: records are likely
        # when it has received nothing for a while, its fetches long-poll,
        deadline = time.monotonic() + 20
        while fetch_wait() != 400:
            assert time.monotonic() < deadline, "the consumer never went to its idle fetch wait"
            assert await consumer.getmany(timeout=0.5) == []
        # and a record brings the short wait back (it is still delivered: on tansu after the
        # fetch in flight).
        await bus.publish(topic, "k", b"wake")
        assert values(await collect(consumer, 1)) == ["wake"]
        assert fetch_wait() == 10
    finally:
        await bus.stop()


async def test_kafka_bus_fails_fast_when_the_broker_is_unreachable() -> None:
    from gpupaas.events.kafka import KafkaBus

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens there
    bus = KafkaBus(f"127.0.0.1:{port}", client_id="nowhere", request_timeout_ms=2_000)
    with pytest.raises(BusUnavailable, match="cannot reach Kafka"):
        await bus.start()
    consumer = bus.consumer(["nowhere"], group="g")
    with pytest.raises(BusUnavailable, match="cannot start the consumer of nowhere"):
        await consumer.start()
    assert consumer.assignment() == set()


# In-process bus only


async def test_in_process_bus_refuses_unknown_topics() -> None:
    bus = InProcessBus()
    await bus.start()
    with pytest.raises(BusUnavailable, match="ensure_topics"):
        await bus.publish("missing", "k", b"x")
    with pytest.raises(BusUnavailable, match="ensure_topics"):
        await bus.consumer(["missing"], group=None).start()


async def test_in_process_group_with_more_members_than_partitions() -> None:
    bus = InProcessBus(partitions=1)
    await bus.start()
    await bus.ensure_topics(["t"])
    first = bus.consumer(["t"], group="g")
    second = bus.consumer(["t"], group="g")
    await first.start()
    await second.start()
    assert (first.assignment(), second.assignment()) == ({("t", 0)}, set())
    await bus.publish("t", "k", b"1")
    assert values(await first.getmany(timeout=1)) == ["1"]
    assert await second.getmany(timeout=0) == []
    await first.stop()  # uncommitted: the other member reads it again
    assert second.assignment() == {("t", 0)}
    assert values(await second.getmany(timeout=1)) == ["1"]


async def test_in_process_retention_keeps_what_a_group_has_not_committed() -> None:
    bus = InProcessBus(partitions=1, retention=5)
    await bus.start()
    await bus.ensure_topics(["commands", "status"])
    worker = bus.consumer(["commands"], group="workers")
    watcher = bus.consumer(["status"], group=None)
    await worker.start()
    await watcher.start()
    for i in range(20):
        await bus.publish("commands", "k", f"{i}".encode())
        await bus.publish("status", "k", f"{i}".encode())
    # No group reads status: a broadcast consumer that fell behind skips to what is kept.
    assert values(await watcher.getmany(timeout=0)) == ["15", "16", "17", "18", "19"]
    # Nothing uncommitted is dropped.
    got = await collect(worker, 20)
    assert values(got) == [str(i) for i in range(20)]
    await worker.commit(got)
    await bus.publish("commands", "k", b"20")
    late = bus.consumer(["commands"], group="late-group")
    await late.start()
    assert [m.offset for m in await late.getmany(timeout=0)] == [16, 17, 18, 19, 20]


def test_partition_for_is_stable_and_in_range() -> None:
    assert partition_for("instance-1", 6) == zlib.crc32(b"instance-1") % 6
    assert partition_for(None, 6) == 0
    assert {partition_for(f"k{i}", 4) for i in range(100)} == {0, 1, 2, 3}
    with pytest.raises(ValueError, match="at least 1"):
        partition_for("k", 0)
