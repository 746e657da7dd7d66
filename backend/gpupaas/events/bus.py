"""The message bus interface: what the relay, the workers and the status broadcaster talk to.

Two implementations share these semantics: `events.memory.InProcessBus` (the embedded default:
one process, nothing to install) and `events.kafka.KafkaBus` (production: any Kafka-protocol
broker; the only module that imports aiokafka). The contract:

- Topics have partitions; a message's key picks its partition, so one key's messages keep their
  order. Topics exist only after `ensure_topics` (every process calls it at start-up; it is
  idempotent and safe when processes race).
- `publish` returns once the broker has the message (Kafka: acks=all) and raises `BusUnavailable`
  when it cannot say that within a bounded time.
- A *group* consumer is one member of a consumer group: the group's partitions are split among its
  started members, and when one joins or leaves they are split again (rebalance). A member reads
  from its group's committed offset (or the earliest message) and commits by hand only, so what it
  read but did not commit is delivered again to whoever owns the partition next: delivery is at
  least once and handlers must tolerate repeats.
- A *broadcast* consumer (group None) reads every partition of its topics and gets every message
  published after its `start()` returned, none from before; it never commits.

Rebalance callbacks (`on_assigned`, `on_revoked`) receive sets of (topic, partition). On each
rebalance a member's `on_revoked` gets what it held (skipped when it held nothing; it may still
commit those partitions inside the callback), then `on_assigned` gets its new assignment (possibly
empty). A member that stops does not get `on_revoked` for itself. A broadcast consumer's
`on_assigned` is called once, when `start()` has positioned it. Exceptions raised by callbacks are
logged, not propagated (as aiokafka does).

Healing: a consumer whose position on a partition is no longer valid (beyond the partition's high
watermark, as when a broker that lost its storage re-created the topic from offset 0; or answered
out of range by the broker; or fallen behind what the in-process bus keeps) moves to a safe point by
itself and says so once per partition: a warning with the topic, the partition and both offsets,
and its `on_reset` callback with a `Reset`. A group member moves to the earliest offset (commands
are idempotent: nothing is lost, a repeat does nothing); a broadcast consumer on (Kafka: to the
end; the in-process bus: to its oldest kept message), and what it missed is the caller's to read
again from the database. A broadcast consumer whose partitions
change under it (the topic re-created with another partition count) starts the new ones at their
end and reports them the same way (reason `reassigned`). `getmany` calls `on_reset` before it
returns the messages read after the reset.
"""

from __future__ import annotations

import zlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

COMMANDS_TOPIC = "gpupaas.commands"
STATUS_TOPIC = "gpupaas.status"
DEAD_LETTER_TOPIC = "gpupaas.dead-letter"
WORKERS_GROUP = "gpupaas-workers"


class BusUnavailable(Exception):
    """The bus cannot do what was asked now (broker down or unreachable, bus or consumer not
    running, a commit for a partition this member no longer owns). The message says which."""


@dataclass(frozen=True)
class Message:
    topic: str
    partition: int
    offset: int
    key: str | None
    value: bytes
    headers: tuple[tuple[str, bytes], ...] = ()


Assignment = set[tuple[str, int]]
RebalanceCallback = Callable[[Assignment], Awaitable[None]]

# Why a consumer's position was moved (the `reason` label of gpupaas_kafka_consumer_resets_total).
BEYOND_HIGH_WATERMARK = "beyond_high_watermark"
OUT_OF_RANGE = "out_of_range"
REASSIGNED = "reassigned"


@dataclass(frozen=True)
class Reset:
    """A consumer's position on one partition was moved to a safe point (see the module's
    docstring): from `position` (None when it had none) to `to`; `high_watermark` is the
    partition's as the broker last said (None when unknown)."""

    topic: str
    partition: int
    position: int | None
    high_watermark: int | None
    to: int
    reason: str


ResetCallback = Callable[[Reset], Awaitable[None]]


class Consumer(Protocol):
    async def start(self) -> None:
        """Group member: returns once the group has given it its partitions (possibly none when
        the group has more members than partitions); raises BusUnavailable if that does not happen
        within the bus's bounded wait. Broadcast: returns once positioned at the end of every
        partition. A consumer is started once; after `stop()` make a new one."""
        ...

    async def stop(self) -> None:
        """Leaves the group (the others get the partitions). Idempotent. A `getmany` waiting at
        the time returns []."""
        ...

    # `timeout` is how long to wait for a first message (aiokafka's getmany(timeout_ms)), not a
    # deadline for the call, hence the noqa.
    async def getmany(self, timeout: float, max_records: int = 100) -> list[Message]:
        """Up to max_records messages in offset order per partition; [] after `timeout` seconds
        without any. Raises BusUnavailable when the consumer is not running."""
        ...

    async def commit(self, messages: Sequence[Message]) -> None:
        """Group members only: commits, per partition, the offset after the last of `messages`.
        Raises BusUnavailable if a partition is no longer this member's (a rebalance happened:
        the messages will be delivered again to the new owner) or the broker does not answer."""
        ...

    def assignment(self) -> Assignment: ...

    async def lag(self) -> dict[tuple[str, int], int] | None:
        """Per assigned (topic, partition): messages on the broker this member has not read yet
        (the partition's high watermark minus its position), for the partitions it has fetched
        from; None where the bus does not measure it (the in-process bus)."""
        ...


class Bus(Protocol):
    async def start(self) -> None: ...

    async def stop(self) -> None:
        """Stops the bus and every consumer made by it that is still running."""
        ...

    async def ensure_topics(self, topics: Sequence[str]) -> None: ...

    async def publish(
        self, topic: str, key: str | None, value: bytes, headers: Sequence[tuple[str, bytes]] = ()
    ) -> None: ...

    def consumer(
        self,
        topics: Sequence[str],
        *,
        group: str | None,
        on_assigned: RebalanceCallback | None = None,
        on_revoked: RebalanceCallback | None = None,
        on_reset: ResetCallback | None = None,
    ) -> Consumer: ...


def partition_for(key: str | None, partitions: int) -> int:
    """The in-process bus's partitioner: CRC-32 of the UTF-8 key (stable across processes and
    restarts, unlike `hash()`). Messages without a key all go to partition 0, which keeps them in
    publish order. Kafka uses its own partitioner; nothing may rely on the two agreeing."""
    if partitions < 1:
        raise ValueError(f"partitions must be at least 1, not {partitions}")
    if key is None:
        return 0
    return zlib.crc32(key.encode("utf-8", "surrogatepass")) % partitions
