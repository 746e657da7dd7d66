"""Consumers that heal (events/bus.py, "Healing"), on the real broker restarted with its memory
storage mid-stream: a broadcast consumer whose positions are beyond the re-created partitions' high
watermarks moves to their end, a group member to the earliest offset; each says so once per
partition (a warning with the topic, the partition and both offsets, and its `on_reset`). The
in-process bus reports a broadcast consumer that fell behind what it keeps the same way."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Awaitable, Callable

import pytest
from aiokafka import TopicPartition  # type: ignore[import-untyped]

from gpupaas.events.bus import (
    BEYOND_HIGH_WATERMARK,
    OUT_OF_RANGE,
    REASSIGNED,
    BusUnavailable,
    Consumer,
    Message,
    Reset,
)
from gpupaas.events.kafka import KafkaBus
from gpupaas.events.memory import InProcessBus
from tests.kafka_broker import TansuBroker, unique

PARTITIONS = 4  # what tansu gives a topic it creates by itself: the same count either way


async def eventually(check: Callable[[], Awaitable[bool]], what: str, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within}s waiting for {what}")
        await asyncio.sleep(0.02)


async def ensure_after_restart(bus: KafkaBus, topic: str) -> None:
    async def created() -> bool:
        try:
            await bus.ensure_topics([topic])
        except Exception:
            return False
        return True

    await eventually(created, "the restarted broker to take the topic")


async def publish_when_it_can(bus: KafkaBus, topic: str, key: str, value: bytes) -> None:
    async def published() -> bool:
        try:
            await bus.publish(topic, key, value)
        except BusUnavailable:
            return False
        return True

    await eventually(published, f"a publish of {value!r}")


async def read_until(consumer: Consumer, wanted: set[bytes], within: float = 30.0) -> list[Message]:
    got: list[Message] = []

    async def all_read() -> bool:
        got.extend(await consumer.getmany(timeout=0.05))
        return wanted <= {m.value for m in got}

    await eventually(all_read, f"{len(wanted)} messages", within)
    return got


def warnings_of(caplog: pytest.LogCaptureFixture, topic: str) -> dict[int, list[str]]:
    by_partition: dict[int, list[str]] = {}
    for record in caplog.records:
        text = record.getMessage()
        if record.name == "gpupaas.events.kafka" and record.levelno == logging.WARNING and topic in text:
            found = re.search(r"partition (\d+) of", text)
            assert found, text
            by_partition.setdefault(int(found.group(1)), []).append(text)
    return by_partition


async def test_a_broadcast_consumer_beyond_the_restarted_partitions_moves_to_their_end(
    own_broker: TansuBroker, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="gpupaas.events.kafka")
    bus = own_broker.bus(partitions=PARTITIONS, metadata_max_age_ms=500)
    await bus.start()
    resets: list[Reset] = []

    async def on_reset(reset: Reset) -> None:
        resets.append(reset)

    try:
        topic = unique("heal")
        await bus.ensure_topics([topic])
        consumer = bus.consumer([topic], group=None, on_reset=on_reset)
        await consumer.start()
        # given a consumer that has read 40 messages over every partition
        before = {f"old-{i}".encode() for i in range(40)}
        for i in range(40):
            await bus.publish(topic, f"key-{i}", f"old-{i}".encode())
        read = await read_until(consumer, before)
        positions = {m.partition: m.offset + 1 for m in read}
        assert set(positions) == set(range(PARTITIONS))
        # when the broker comes back empty and a few messages are published to it
        own_broker.restart()
        await ensure_after_restart(bus, topic)
        for i in range(3):
            await publish_when_it_can(bus, topic, f"key-{i}", f"lost-{i}".encode())

        # then the consumer finds each partition beyond its high watermark and moves to its end
        async def all_reset() -> bool:
            await consumer.getmany(timeout=0.05)
            return {r.partition for r in resets} == set(range(PARTITIONS))

        await eventually(all_reset, "every partition to be reset")
        for reset in resets:
            assert reset.topic == topic and reset.reason == BEYOND_HIGH_WATERMARK
            assert reset.position == positions[reset.partition]
            assert reset.high_watermark is not None and reset.high_watermark < reset.position
            assert reset.to == reset.high_watermark
        # and it reads what is published from then on
        after = {f"new-{i}".encode() for i in range(8)}
        for i in range(8):
            await publish_when_it_can(bus, topic, f"key-{i}", f"new-{i}".encode())
        assert not {m.value for m in await read_until(consumer, after)} & before
        # and each partition was reported once, its warning naming both offsets
        assert len(resets) == PARTITIONS
        warned = warnings_of(caplog, topic)
        assert sorted(warned) == list(range(PARTITIONS))
        for reset in resets:
            (text,) = warned[reset.partition]
            assert f"position {reset.position} " in text and f"high watermark {reset.high_watermark}" in text
            assert "beyond the high watermark" in text
    finally:
        await bus.stop()


async def test_a_broadcast_consumer_whose_topic_came_back_with_other_partitions_starts_them_at_their_end(
    own_broker: TansuBroker, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="gpupaas.events.kafka")
    bus = own_broker.bus(partitions=2, metadata_max_age_ms=500)
    await bus.start()
    resets: list[Reset] = []

    async def on_reset(reset: Reset) -> None:
        resets.append(reset)

    try:
        topic = unique("heal")
        await bus.ensure_topics([topic])
        consumer = bus.consumer([topic], group=None, on_reset=on_reset)
        await consumer.start()
        for i in range(10):
            await bus.publish(topic, f"key-{i}", f"old-{i}".encode())
        await read_until(consumer, {f"old-{i}".encode() for i in range(10)})
        # when the broker comes back empty and the topic is created again by the first publish
        # (tansu gives it 4 partitions, not 2)
        own_broker.restart()

        await publish_when_it_can(bus, topic, "key-0", b"lost")

        # then every partition of the new assignment starts at its end, each reported once
        async def reassigned() -> bool:
            await consumer.getmany(timeout=0.05)
            return len(consumer.assignment()) == 4 and {r.partition for r in resets} == set(range(4))

        await eventually(reassigned, "the new partitions to be positioned")
        assert all(r.reason == REASSIGNED and r.position is None and r.to == r.high_watermark for r in resets)
        after = {f"new-{i}".encode() for i in range(8)}
        for i in range(8):
            # (the producer may need a metadata refresh to learn the new partitions first)
            await publish_when_it_can(bus, topic, f"key-{i}", f"new-{i}".encode())
        await read_until(consumer, after)
        assert len(resets) == 4
        warned = warnings_of(caplog, topic)
        assert sorted(warned) == [0, 1, 2, 3] and all(len(lines) == 1 for lines in warned.values())
        assert all("is new to it" in lines[0] for lines in warned.values())
    finally:
        await bus.stop()


async def test_a_group_member_beyond_the_high_watermark_goes_back_to_the_earliest_offset(
    own_broker: TansuBroker, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="gpupaas.events.kafka")
    bus = own_broker.bus(partitions=2)
    await bus.start()
    resets: list[Reset] = []

    async def on_reset(reset: Reset) -> None:
        resets.append(reset)

    try:
        topic, group = unique("heal"), unique("heal-group")
        await bus.ensure_topics([topic])
        for i in range(6):
            await bus.publish(topic, f"key-{i}", f"cmd-{i}".encode())
        # given the group's committed offsets are far beyond what the partitions hold (as when a
        # member commits what it read before the broker lost its messages)
        first = bus.consumer([topic], group=group)
        await first.start()
        await first.commit([Message(topic, p, 49, None, b"") for p in range(2)])
        await first.stop()
        # when a member joins
        member = bus.consumer([topic], group=group, on_reset=on_reset)
        await member.start()
        # then it reads every message from the earliest offset, each partition reset once
        got = await read_until(member, {f"cmd-{i}".encode() for i in range(6)})
        assert len(got) == 6
        assert sorted((r.partition, r.position, r.to, r.reason) for r in resets) == [
            (0, 50, 0, BEYOND_HIGH_WATERMARK),
            (1, 50, 0, BEYOND_HIGH_WATERMARK),
        ]
        warned = warnings_of(caplog, topic)
        assert sorted(warned) == [0, 1] and all(len(lines) == 1 for lines in warned.values())
        assert all("moved to the earliest offset, offset 0" in lines[0] for lines in warned.values())
        await member.stop()
    finally:
        await bus.stop()


async def test_an_offset_the_broker_calls_out_of_range_is_healed_the_same_way(
    own_broker: TansuBroker, caplog: pytest.LogCaptureFixture
) -> None:
    """tansu never answers OFFSET_OUT_OF_RANGE (it answers no records), Kafka does: aiokafka then
    raises OffsetOutOfRangeError({partition: offset}) from getmany (the reset policy is "none").
    What getmany does with it: the partition is moved and reported as for a position beyond."""
    caplog.set_level(logging.WARNING, logger="gpupaas.events.kafka")
    bus = own_broker.bus(partitions=1)
    await bus.start()
    resets: list[Reset] = []

    async def on_reset(reset: Reset) -> None:
        resets.append(reset)

    try:
        topic = unique("heal")
        await bus.ensure_topics([topic])
        consumer = bus.consumer([topic], group=None, on_reset=on_reset)
        await consumer.start()
        await bus.publish(topic, "k", b"one")
        await read_until(consumer, {b"one"})
        from gpupaas.events.kafka import _KafkaConsumer

        assert isinstance(consumer, _KafkaConsumer)
        await consumer._heal(consumer._consumer, TopicPartition(topic, 0), 7, OUT_OF_RANGE)
        assert resets == [Reset(topic, 0, 7, 1, 1, OUT_OF_RANGE)]
        (text,) = warnings_of(caplog, topic)[0]
        assert "position 7 on partition 0" in text and "out of range (high watermark 1)" in text
        await bus.publish(topic, "k", b"two")
        assert [m.value for m in await read_until(consumer, {b"two"})] == [b"two"]
    finally:
        await bus.stop()


async def test_a_group_members_offset_moved_back_by_aiokafka_is_reported(
    own_broker: TansuBroker, caplog: pytest.LogCaptureFixture
) -> None:
    """Kafka answers OFFSET_OUT_OF_RANGE to a fetch before the log's start (retention deleted what
    the group had not read); aiokafka then resets the member to the earliest offset by itself (its
    policy for group members). The reset it makes there is the one `seek_to_beginning` asks for:
    the member sees its position move back without a seek of its own and reports it."""
    caplog.set_level(logging.WARNING, logger="gpupaas.events.kafka")
    bus = own_broker.bus(partitions=1)
    await bus.start()
    resets: list[Reset] = []

    async def on_reset(reset: Reset) -> None:
        resets.append(reset)

    try:
        topic = unique("heal")
        await bus.ensure_topics([topic])
        member = bus.consumer([topic], group=unique("heal-group"), on_reset=on_reset)
        await member.start()
        for i in range(5):
            await bus.publish(topic, "k", f"m{i}".encode())
        await read_until(member, {f"m{i}".encode() for i in range(5)})
        assert resets == []
        from gpupaas.events.kafka import _KafkaConsumer

        assert isinstance(member, _KafkaConsumer)
        await member._consumer.seek_to_beginning(TopicPartition(topic, 0))
        again = await read_until(member, {f"m{i}".encode() for i in range(5)})
        assert [m.offset for m in again] == [0, 1, 2, 3, 4]
        assert resets == [Reset(topic, 0, 5, 5, 0, OUT_OF_RANGE)]
        (text,) = warnings_of(caplog, topic)[0]
        assert "position 5 on partition 0" in text and "out of range (high watermark 5)" in text
        await member.stop()
    finally:
        await bus.stop()


async def test_an_in_process_broadcast_consumer_that_fell_behind_says_what_it_skipped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="gpupaas.events.memory")
    bus = InProcessBus(partitions=1, retention=5)
    await bus.start()
    resets: list[Reset] = []

    async def on_reset(reset: Reset) -> None:
        resets.append(reset)

    await bus.ensure_topics(["t"])
    consumer = bus.consumer(["t"], group=None, on_reset=on_reset)
    await consumer.start()
    for i in range(12):
        await bus.publish("t", None, str(i).encode())
    got = await consumer.getmany(timeout=0, max_records=100)
    assert [m.value for m in got] == [str(i).encode() for i in range(7, 12)]
    assert resets == [Reset("t", 0, 0, 12, 7, OUT_OF_RANGE)]
    (record,) = [r for r in caplog.records if r.name == "gpupaas.events.memory"]
    assert (
        "position 0 on partition 0" in record.getMessage() and "(7, high watermark 12)" in record.getMessage()
    )
    # nothing more to say while it keeps up
    await bus.publish("t", None, b"12")
    assert [m.value for m in await consumer.getmany(timeout=0)] == [b"12"]
    assert len(resets) == 1
    await bus.stop()
