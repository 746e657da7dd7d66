"""The in-process bus: the embedded default (`gpupaas serve` with no Kafka settings).

Same semantics as Kafka inside one process (see events/bus.py): topics with partitions, consumer
groups whose members split the partitions and hand them over with rebalance callbacks, committed
offsets, broadcast consumers that start at the end. Consumers wait on an asyncio.Event that
`publish` sets, so a message reaches a waiting consumer at once.

Retention: messages live in memory and are lost when the process stops (the database outbox makes
that safe: unfinished work is found again from the database). So that a long-running server does
not grow without bound, a partition keeps at most `retention` messages, but a message is dropped
only once every consumer group that has ever read the topic has committed past it; so only the
status topic (read by broadcast consumers alone) is really trimmed. A broadcast consumer that
falls more than `retention` messages behind skips to the oldest message still kept, with a warning
and its `on_reset` callback (reason `out_of_range`), as a Kafka consumer does (events/bus.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from gpupaas.events.bus import (
    OUT_OF_RANGE,
    Assignment,
    BusUnavailable,
    Consumer,
    Message,
    RebalanceCallback,
    Reset,
    ResetCallback,
    partition_for,
)

log = logging.getLogger("gpupaas.events.memory")


class _Partition:
    __slots__ = ("messages", "start")

    def __init__(self) -> None:
        self.start = 0  # offset of messages[0]
        self.messages: list[Message] = []

    @property
    def end(self) -> int:
        return self.start + len(self.messages)

    def read(self, offset: int, limit: int) -> list[Message]:
        first = max(offset, self.start) - self.start
        return self.messages[first : first + limit]

    def trim_to(self, offset: int) -> None:
        drop = min(offset, self.end) - self.start
        if drop > 0:
            del self.messages[:drop]
            self.start += drop


@dataclass(eq=False)
class _Group:
    name: str
    members: list[_MemoryConsumer] = field(default_factory=list)  # in joining order
    committed: dict[tuple[str, int], int] = field(default_factory=dict)
    topics: set[str] = field(default_factory=set)  # every topic a member ever read (for retention)
    # Joins and leaves run one at a time: a rebalance awaits the members' callbacks.
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class InProcessBus:
    def __init__(self, partitions: int = 4, *, retention: int = 10_000) -> None:
        if partitions < 1:
            raise ValueError(f"partitions must be at least 1, not {partitions}")
        if retention < 1:
            raise ValueError(f"retention must be at least 1, not {retention}")
        self.partitions = partitions
        self.retention = retention
        self._topics: dict[str, list[_Partition]] = {}
        self._groups: dict[str, _Group] = {}
        self._consumers: set[_MemoryConsumer] = set()  # started, not yet stopped
        self._running = False

    async def start(self) -> None:
        self._running = True

    async def stop(self) -> None:
        self._running = False
        for consumer in list(self._consumers):
            await consumer.stop()

    async def ensure_topics(self, topics: Sequence[str]) -> None:
        for topic in topics:
            if topic not in self._topics:
                self._topics[topic] = [_Partition() for _ in range(self.partitions)]

    async def publish(
        self, topic: str, key: str | None, value: bytes, headers: Sequence[tuple[str, bytes]] = ()
    ) -> None:
        if not self._running:
            raise BusUnavailable(f"cannot publish to {topic}: the in-process bus is not running")
        partitions = self._topic(topic)
        number = partition_for(key, len(partitions))
        partition = partitions[number]
        partition.messages.append(Message(topic, number, partition.end, key, value, tuple(headers)))
        self._trim(topic, number, partition)
        for consumer in self._consumers:
            if (topic, number) in consumer.owned:
                consumer.wake()

    def consumer(
        self,
        topics: Sequence[str],
        *,
        group: str | None,
        on_assigned: RebalanceCallback | None = None,
        on_revoked: RebalanceCallback | None = None,
        on_reset: ResetCallback | None = None,
    ) -> Consumer:
        return _MemoryConsumer(self, tuple(topics), group, on_assigned, on_revoked, on_reset)

    # internals shared with _MemoryConsumer

    def _topic(self, topic: str) -> list[_Partition]:
        try:
            return self._topics[topic]
        except KeyError:
            # Kafka brokers often create unknown topics on first use (tansu does), with their own
            # partition count; refusing here finds a missing ensure_topics() in the embedded mode.
            raise BusUnavailable(f"unknown topic {topic!r}: call ensure_topics() first") from None

    def _trim(self, topic: str, number: int, partition: _Partition) -> None:
        excess = len(partition.messages) - self.retention
        if excess <= 0:
            return
        floor = partition.start + excess
        for group in self._groups.values():
            if topic in group.topics:
                floor = min(floor, group.committed.get((topic, number), partition.start))
        partition.trim_to(floor)

    async def _join(self, member: _MemoryConsumer, group_name: str) -> None:
        group = self._groups.setdefault(group_name, _Group(group_name))
        async with group.lock:
            group.topics.update(member.topics)
            await self._rebalance(group, joining=member)

    async def _leave(self, member: _MemoryConsumer, group_name: str) -> None:
        group = self._groups[group_name]
        async with group.lock:
            if member in group.members:
                group.members.remove(member)
                member.owned = set()
                member.wake()
                await self._rebalance(group)

    async def _rebalance(self, group: _Group, joining: _MemoryConsumer | None = None) -> None:
        # Eager, like Kafka's classic protocol: everyone stops reading and gives back what it held
        # (it may commit it in on_revoked), then the partitions are dealt out again and each
        # owner reads from the group's committed offset, so uncommitted messages come again.
        for member in group.members:
            member.paused = True
        for member in list(group.members):
            if member.owned:
                await member.callback(member.on_revoked, set(member.owned), "on_revoked")
        if joining is not None:
            group.members.append(joining)
        dealt: dict[_MemoryConsumer, Assignment] = {member: set() for member in group.members}
        # Round-robin over all partitions, among the members that read each topic.
        turn = 0
        wanted = sorted({topic for member in group.members for topic in member.topics})
        for topic in wanted:
            readers = [member for member in group.members if topic in member.topics]
            for number in range(len(self._topics[topic])):
                dealt[readers[turn % len(readers)]].add((topic, number))
                turn += 1
        for member, owned in dealt.items():
            member.owned = owned
            member.positions = {
                tp: max(group.committed.get(tp, 0), self._topics[tp[0]][tp[1]].start) for tp in owned
            }
            member.paused = False
            member.wake()
        for member, owned in dealt.items():
            await member.callback(member.on_assigned, set(owned), "on_assigned")


class _MemoryConsumer:
    def __init__(
        self,
        bus: InProcessBus,
        topics: tuple[str, ...],
        group: str | None,
        on_assigned: RebalanceCallback | None,
        on_revoked: RebalanceCallback | None,
        on_reset: ResetCallback | None = None,
    ) -> None:
        if not topics:
            raise ValueError("a consumer needs at least one topic")
        self.bus = bus
        self.topics = topics
        self.group = group
        self.on_assigned = on_assigned
        self.on_revoked = on_revoked
        self.on_reset = on_reset
        self._resets: list[Reset] = []  # found by _take, reported by getmany
        self.owned: Assignment = set()
        self.positions: dict[tuple[str, int], int] = {}
        self.paused = False  # during a rebalance
        self._event = asyncio.Event()
        self._state = "new"  # -> "running" -> "stopped"
        self._next = 0  # which owned partition getmany reads first (fairness)

    def wake(self) -> None:
        self._event.set()

    async def callback(self, callback: RebalanceCallback | None, tps: Assignment, name: str) -> None:
        if callback is None:
            return
        try:
            await callback(tps)
        except Exception:
            log.exception("%s callback of a consumer of %s failed", name, ", ".join(self.topics))

    async def start(self) -> None:
        if self._state != "new":
            raise BusUnavailable("a consumer is started once; make a new one")
        if not self.bus._running:
            raise BusUnavailable("the in-process bus is not running")
        for topic in self.topics:
            self.bus._topic(topic)  # raises for unknown topics
        self._state = "running"
        self.bus._consumers.add(self)
        if self.group is not None:
            await self.bus._join(self, self.group)
            return
        self.owned = {(topic, n) for topic in self.topics for n in range(len(self.bus._topics[topic]))}
        self.positions = {tp: self.bus._topics[tp[0]][tp[1]].end for tp in self.owned}
        await self.callback(self.on_assigned, set(self.owned), "on_assigned")

    async def stop(self) -> None:
        if self._state != "running":
            self._state = "stopped"
            return
        self._state = "stopped"
        self.bus._consumers.discard(self)
        self.wake()
        if self.group is not None:
            await self.bus._leave(self, self.group)
        self.owned = set()

    async def lag(self) -> dict[tuple[str, int], int] | None:
        return None  # one process: nothing waits on a broker

    def assignment(self) -> Assignment:
        return set(self.owned)

    async def getmany(self, timeout: float, max_records: int = 100) -> list[Message]:
        if self._state != "running":
            raise BusUnavailable(f"consumer of {', '.join(self.topics)} is not running")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            # Clear before looking: a publish after the look sets the event again, none is lost.
            self._event.clear()
            if self._state != "running":
                return []
            messages = self._take(max_records)
            remaining = deadline - loop.time()
            if messages or remaining <= 0:
                await self._report_resets()
                return messages
            try:
                async with asyncio.timeout(remaining):
                    await self._event.wait()
            except TimeoutError:
                messages = self._take(max_records) if self._state == "running" else []
                await self._report_resets()
                return messages

    async def _report_resets(self) -> None:
        resets, self._resets = self._resets, []
        for reset in resets:
            if self.on_reset is None:
                continue
            try:
                await self.on_reset(reset)
            except Exception:
                log.exception("on_reset callback of a consumer of %s failed", ", ".join(self.topics))

    def _take(self, max_records: int) -> list[Message]:
        if self.paused or not self.owned:
            return []
        owned = sorted(self.owned)
        start = self._next % len(owned)
        self._next += 1
        taken: list[Message] = []
        for tp in owned[start:] + owned[:start]:
            if len(taken) >= max_records:
                break
            partition = self.bus._topics[tp[0]][tp[1]]
            if self.positions[tp] < partition.start:
                self._skipped(tp, partition)
            batch = partition.read(self.positions[tp], max_records - len(taken))
            if batch:
                taken.extend(batch)
                self.positions[tp] = batch[-1].offset + 1
        return taken

    def _skipped(self, tp: tuple[str, int], partition: _Partition) -> None:
        """A broadcast consumer fell behind what the partition keeps: on to its oldest message."""
        position = self.positions[tp]
        log.warning(
            "consumer of %s: position %s on partition %s is before the oldest message kept (%s, high "
            "watermark %s): skipping to it; the messages between are lost to this consumer",
            tp[0],
            position,
            tp[1],
            partition.start,
            partition.end,
        )
        self.positions[tp] = partition.start
        self._resets.append(Reset(tp[0], tp[1], position, partition.end, partition.start, OUT_OF_RANGE))

    async def commit(self, messages: Sequence[Message]) -> None:
        if self.group is None:
            raise BusUnavailable("a broadcast consumer does not commit")
        if self._state != "running":
            raise BusUnavailable(f"consumer of {', '.join(self.topics)} is not running")
        offsets: dict[tuple[str, int], int] = {}
        for message in messages:
            tp = (message.topic, message.partition)
            offsets[tp] = max(offsets.get(tp, 0), message.offset + 1)
        lost = set(offsets) - self.owned
        if lost:
            raise BusUnavailable(
                f"commit refused: {sorted(lost)} no longer assigned to this member of {self.group!r} "
                "(a rebalance happened; the new owner gets those messages again)"
            )
        self.bus._groups[self.group].committed.update(offsets)
