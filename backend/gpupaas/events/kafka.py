"""The Kafka bus: events/bus.py's interface on any Kafka-protocol broker, through aiokafka 0.14.

This is the only module that imports aiokafka; everything else sees `Bus`, `Consumer`, `Message`
and `BusUnavailable`. aiokafka's errors become `BusUnavailable` with a message that says what
failed, and every call that talks to the broker is bounded by `request_timeout_ms`.

Broker quirks handled here (seen on tansu, the broker of our tests; harmless on Kafka):
- A broadcast consumer cannot trust ListOffsets(latest) (`seek_to_end`, `end_offsets`): tansu
  answers with too small an offset once a produce request carried several records. So after
  `seek_to_end` it reads the partitions' high watermark from a real fetch response and seeks there.
- tansu does not answer a waiting fetch when data arrives, so a consumer sees about half of
  `fetch_max_wait_ms` as latency: keep it small (10 ms by default; 1 ms halves the latency again
  at the cost of idle polling). A short wait means a fetch every few milliseconds while nothing
  happens, though (an idle process used 8-11% of a core, tansu 10-19%): a consumer that has
  received nothing for `IDLE_AFTER_SECONDS` long-polls with `idle_fetch_max_wait_ms` (500 ms, as
  Kafka's own default) until a fetch brings a record again. A real Kafka answers a waiting fetch as
  soon as a record arrives, so there the long poll costs no latency at all; on tansu the first
  record after a quiet spell waits for the fetch in flight (up to `idle_fetch_max_wait_ms`).
- tansu holds a JoinGroup for half the session timeout, so the first assignment and every
  rebalance take about `session_timeout_ms / 2` plus a heartbeat interval (5-8 s with the
  defaults; tests use a 2 s session timeout and a 200 ms heartbeat for ~1-2 s).
- tansu numbers a group's first generation 0 and aiokafka sends LeaveGroup only from generation 1
  on: when the only member of a group that never rebalanced stops, the next member to join waits
  for the old one's session to expire (about `session_timeout_ms` more).
- Idempotent producing (InitProducerId) fails on tansu: pass `idempotence=False` there.
- tansu with memory storage comes back from a restart empty: the topics are re-created from
  offset 0 and a fetch beyond the new high watermark answers no records and no error, so a
  consumer would wait there for ever. Every consumer compares its position with the high watermark
  of each fetch response and moves to its safe point when it is beyond (events/bus.py, "Healing").
  A broadcast consumer gives aiokafka the offset reset policy "none", so that an offset the broker
  calls out of range (Kafka does) and a partition new to it reach this module instead of being
  moved in silence. A group member keeps "earliest" (its safe point, and a new member prefetches
  from it at once); an out-of-range reset by aiokafka shows as its position moving back without a
  seek of ours, and is reported as such.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from typing import Any

from aiokafka import (  # type: ignore[import-untyped]
    AIOKafkaConsumer,
    AIOKafkaProducer,
    ConsumerRebalanceListener,
    TopicPartition,
)
from aiokafka.admin import AIOKafkaAdminClient, NewTopic  # type: ignore[import-untyped]
from aiokafka.errors import (  # type: ignore[import-untyped]
    ConsumerStoppedError,
    KafkaError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
    TopicAlreadyExistsError,
    for_code,
)

from gpupaas.events.bus import (
    BEYOND_HIGH_WATERMARK,
    OUT_OF_RANGE,
    REASSIGNED,
    Assignment,
    BusUnavailable,
    Consumer,
    Message,
    RebalanceCallback,
    Reset,
    ResetCallback,
)

log = logging.getLogger("gpupaas.events.kafka")

# A consumer that has received nothing for this long long-polls (`idle_fetch_max_wait_ms`).
IDLE_AFTER_SECONDS = 2.0


def _describe(error: BaseException) -> str:
    if isinstance(error, TimeoutError):
        return "no answer in time"
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _tps(partitions: Any) -> Assignment:
    return {(tp.topic, tp.partition) for tp in partitions}


class KafkaBus:
    def __init__(
        self,
        bootstrap_servers: str,
        *,
        client_id: str,
        idempotence: bool = True,
        partitions: int = 6,
        replication_factor: int = 1,
        fetch_max_wait_ms: int = 10,
        idle_fetch_max_wait_ms: int = 500,
        request_timeout_ms: int = 10_000,
        session_timeout_ms: int = 10_000,
        heartbeat_interval_ms: int = 3_000,
        assignment_timeout: float = 30.0,
        linger_ms: int = 0,
        metadata_max_age_ms: int = 30_000,
    ) -> None:
        """`request_timeout_ms` bounds publish, ensure_topics and commit. `session_timeout_ms`:
        how long the group waits for a silent member before giving its partitions away.
        `assignment_timeout` (seconds): how long a group consumer's start() waits for its
        assignment. `linger_ms` 0: the relay awaits each publish, so lingering only adds latency
        (concurrent publishes are still batched while a request is in flight).
        `idle_fetch_max_wait_ms`: the fetch wait of a consumer that has received nothing for
        `IDLE_AFTER_SECONDS` (see the module's docstring; not above `fetch_max_wait_ms`: always
        `fetch_max_wait_ms`)."""
        self.bootstrap_servers = bootstrap_servers
        self.client_id = client_id
        self.idempotence = idempotence
        self.partitions = partitions
        self.replication_factor = replication_factor
        self.fetch_max_wait_ms = fetch_max_wait_ms
        self.idle_fetch_max_wait_ms = max(idle_fetch_max_wait_ms, fetch_max_wait_ms)
        self.request_timeout_ms = request_timeout_ms
        # How soon a changed partition count (a topic re-created after a broker restart, or grown by
        # an operator) is noticed: consumers rebalance onto the new partitions after this.
        self.metadata_max_age_ms = metadata_max_age_ms
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.assignment_timeout = assignment_timeout
        self.linger_ms = linger_ms
        self._producer: Any = None
        self._admin: Any = None
        self._consumers: set[_KafkaConsumer] = set()

    @property
    def _timeout(self) -> float:
        return self.request_timeout_ms / 1000

    async def start(self) -> None:
        if self._producer is not None:
            return
        producer = AIOKafkaProducer(
            bootstrap_servers=self.bootstrap_servers,
            client_id=self.client_id,
            acks="all",
            enable_idempotence=self.idempotence,
            linger_ms=self.linger_ms,
            request_timeout_ms=self.request_timeout_ms,
            metadata_max_age_ms=self.metadata_max_age_ms,
        )
        admin = AIOKafkaAdminClient(
            bootstrap_servers=self.bootstrap_servers,
            client_id=f"{self.client_id}-admin",
            request_timeout_ms=self.request_timeout_ms,
        )
        try:
            async with asyncio.timeout(self._timeout):
                await producer.start()
                await admin.start()
        except (KafkaError, OSError, TimeoutError) as error:
            await producer.stop()
            await admin.close()
            raise BusUnavailable(
                f"cannot reach Kafka at {self.bootstrap_servers}: {_describe(error)}"
            ) from error
        self._producer, self._admin = producer, admin

    async def stop(self) -> None:
        for consumer in list(self._consumers):
            await consumer.stop()
        producer, admin = self._producer, self._admin
        self._producer = self._admin = None
        if producer is not None:
            try:
                await producer.stop()
            except KafkaError as error:
                log.warning("stopping the Kafka producer: %s", _describe(error))
        if admin is not None:
            await admin.close()

    async def ensure_topics(self, topics: Sequence[str]) -> None:
        if self._admin is None:
            raise BusUnavailable("the Kafka bus is not started")
        if not topics:
            return
        new = [NewTopic(topic, self.partitions, self.replication_factor) for topic in topics]
        try:
            async with asyncio.timeout(self._timeout):
                response = await self._admin.create_topics(new)
        except (KafkaError, TimeoutError) as error:
            raise BusUnavailable(f"cannot create topics {', '.join(topics)}: {_describe(error)}") from error
        failures = []
        for topic, code, *rest in response.topic_errors:
            error_type = for_code(code)
            # Already there (created earlier, or by another process just now) is what we want.
            if code != 0 and error_type is not TopicAlreadyExistsError:
                failures.append(f"{topic}: {error_type.__name__} {rest[0] if rest else ''}".strip())
        if failures:
            raise BusUnavailable(f"cannot create topics: {'; '.join(failures)}")

    async def publish(
        self, topic: str, key: str | None, value: bytes, headers: Sequence[tuple[str, bytes]] = ()
    ) -> None:
        if self._producer is None:
            raise BusUnavailable(f"cannot publish to {topic}: the Kafka bus is not started")
        raw_key = key.encode() if key is not None else None
        try:
            # aiokafka bounds this by request_timeout_ms already (NodeNotReadyError or
            # KafkaTimeoutError after it); the outer bound is a backstop for metadata waits.
            async with asyncio.timeout(2 * self._timeout + 1):
                await self._producer.send_and_wait(topic, value, key=raw_key, headers=list(headers))
        except (KafkaError, TimeoutError) as error:
            raise BusUnavailable(
                f"cannot publish to {topic} at {self.bootstrap_servers}: {_describe(error)}"
            ) from error

    def consumer(
        self,
        topics: Sequence[str],
        *,
        group: str | None,
        on_assigned: RebalanceCallback | None = None,
        on_revoked: RebalanceCallback | None = None,
        on_reset: ResetCallback | None = None,
    ) -> Consumer:
        if not topics:
            raise ValueError("a consumer needs at least one topic")
        return _KafkaConsumer(self, tuple(topics), group, on_assigned, on_revoked, on_reset)


class _Listener(ConsumerRebalanceListener):  # type: ignore[misc]
    """Hands aiokafka's rebalance callbacks on as sets of (topic, partition)."""

    def __init__(self, owner: _KafkaConsumer) -> None:
        self.owner = owner

    async def on_partitions_revoked(self, revoked: Any) -> None:
        # aiokafka calls this with nothing before the first join: not a revocation.
        if revoked and self.owner.on_revoked is not None:
            await self.owner.on_revoked(_tps(revoked))

    async def on_partitions_assigned(self, assigned: Any) -> None:
        if self.owner.on_assigned is not None:
            await self.owner.on_assigned(_tps(assigned))


async def _close(consumer: Any) -> None:
    try:
        await consumer.stop()
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        # aiokafka 0.14: when the broker has gone, Fetcher.close() cancels a fetch task that sleeps
        # in its retry backoff and lets that CancelledError out, skipping the rest of stop().
        await consumer._client.close()
    except KafkaError as error:
        log.warning("stopping a Kafka consumer: %s", _describe(error))


class _KafkaConsumer:
    def __init__(
        self,
        bus: KafkaBus,
        topics: tuple[str, ...],
        group: str | None,
        on_assigned: RebalanceCallback | None,
        on_revoked: RebalanceCallback | None,
        on_reset: ResetCallback | None = None,
    ) -> None:
        self.bus = bus
        self.topics = topics
        self.group = group
        self.on_assigned = on_assigned
        self.on_revoked = on_revoked
        self.on_reset = on_reset
        # Per partition: aiokafka's state object of it and the position last seen there (a
        # position that moves back in the same state without a seek of ours was reset by aiokafka).
        self._seen: dict[Any, tuple[Any, int]] = {}
        self._consumer: Any = None
        self._state = "new"  # -> "running" -> "stopped"
        # Until when it fetches with the short wait (it received a record less than
        # IDLE_AFTER_SECONDS ago, or started that recently); then it long-polls.
        self._busy_until = 0.0

    def _describe_self(self) -> str:
        kind = f"group {self.group!r}" if self.group is not None else "broadcast"
        return f"consumer of {', '.join(self.topics)} ({kind})"

    async def start(self) -> None:
        if self._state != "new":
            raise BusUnavailable("a consumer is started once; make a new one")
        bus = self.bus
        # A JoinGroup may wait up to the rebalance timeout (= session timeout) for the other
        # members, so the requests of a group consumer must be allowed to take longer than that.
        request_timeout = max(bus.request_timeout_ms, bus.session_timeout_ms + 5_000)
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bus.bootstrap_servers,
            client_id=bus.client_id,
            group_id=self.group,
            enable_auto_commit=False,
            # See the module's docstring: a broadcast consumer's positions are ours to move.
            auto_offset_reset="earliest" if self.group is not None else "none",
            fetch_max_wait_ms=bus.fetch_max_wait_ms,
            request_timeout_ms=request_timeout,
            session_timeout_ms=bus.session_timeout_ms,
            heartbeat_interval_ms=bus.heartbeat_interval_ms,
            metadata_max_age_ms=bus.metadata_max_age_ms,
        )
        if self.group is not None:
            consumer.subscribe(list(self.topics), listener=_Listener(self))
        else:
            consumer.subscribe(list(self.topics))
        self._consumer = consumer
        self._state = "running"
        self._busy_until = asyncio.get_running_loop().time() + IDLE_AFTER_SECONDS
        bus._consumers.add(self)
        try:
            if self.group is not None:
                # aiokafka's start() joins the group and waits, without a bound, for the assignment.
                async with asyncio.timeout(bus.assignment_timeout):
                    await consumer.start()
            else:
                async with asyncio.timeout(bus._timeout):
                    await consumer.start()
                    for tp in await self._seek_to_end(consumer):
                        self._remember(consumer, tp)
        except (KafkaError, OSError, TimeoutError) as error:
            await self.stop()
            what = (
                f"no partitions assigned within {bus.assignment_timeout:g}s"
                if isinstance(error, TimeoutError) and self.group is not None
                else _describe(error)
            )
            raise BusUnavailable(f"cannot start the {self._describe_self()}: {what}") from error
        if self.group is None and self.on_assigned is not None:
            try:
                await self.on_assigned(self.assignment())
            except Exception:
                log.exception("on_assigned callback of the %s failed", self._describe_self())

    async def _seek_to_end(self, consumer: Any, partitions: list[Any] | None = None) -> dict[Any, int]:
        """Moves to the high watermark of `partitions` (all assigned ones by default); returns it."""
        partitions = list(consumer.assignment()) if partitions is None else partitions
        if not partitions:
            return {}
        # ListOffsets(latest) gives a start that is right on Kafka and too early on tansu; the
        # high watermark of a fetch response is right on both. Records read meanwhile are older
        # than that watermark, so they are dropped by the seek.
        await consumer.seek_to_end(*partitions)
        while missing := [tp for tp in partitions if consumer.highwater(tp) is None]:
            # The fetcher may have found them without a position before the seek: said once.
            with contextlib.suppress(NoOffsetForPartitionError):
                await consumer.getmany(*missing, timeout_ms=20)
        ends = {tp: consumer.highwater(tp) for tp in partitions}
        for tp, end in ends.items():
            consumer.seek(tp, end)
        return ends

    async def stop(self) -> None:
        consumer = self._consumer
        self._state = "stopped"
        self._consumer = None
        self.bus._consumers.discard(self)
        if consumer is not None:
            await _close(consumer)

    def assignment(self) -> Assignment:
        if self._consumer is None:
            return set()
        return _tps(self._consumer.assignment())

    async def lag(self) -> dict[tuple[str, int], int] | None:
        """The high watermark of each assigned partition (from the last fetch response: tansu's
        ListOffsets is wrong, see above) minus this member's position. A partition not fetched
        from yet, or whose position is not known within the second all of them get (being
        reset), is left out."""
        consumer = self._consumer
        if self._state != "running" or consumer is None:
            return {}
        lags: dict[tuple[str, int], int] = {}
        # One second for them all: a scrape must not wait a second per partition being reset.
        deadline = asyncio.get_running_loop().time() + 1.0
        for tp in list(consumer.assignment()):
            try:
                highwater = consumer.highwater(tp)
                if highwater is None:
                    continue
                async with asyncio.timeout_at(deadline):
                    position = await consumer.position(tp)
            except (KafkaError, TimeoutError, AssertionError):  # revoked meanwhile (aiokafka asserts)
                continue
            lags[(tp.topic, tp.partition)] = max(highwater - position, 0)
        return lags

    async def getmany(self, timeout: float, max_records: int = 100) -> list[Message]:
        consumer = self._consumer
        if self._state != "running" or consumer is None:
            raise BusUnavailable(f"the {self._describe_self()} is not running")
        try:
            batches = await consumer.getmany(timeout_ms=max(0, int(timeout * 1000)), max_records=max_records)
        except ConsumerStoppedError:
            if self._state == "stopped":
                return []
            raise BusUnavailable(f"the {self._describe_self()} was stopped") from None
        except OffsetOutOfRangeError as error:
            # {partition: the offset the broker refused}
            for tp, offset in dict(error.args[0] if error.args else {}).items():
                await self._heal(consumer, tp, offset, OUT_OF_RANGE)
            return []
        except NoOffsetForPartitionError as error:
            await self._position_missing(consumer, error.args[0] if error.args else None)
            return []
        except KafkaError as error:
            raise BusUnavailable(f"reading as the {self._describe_self()}: {_describe(error)}") from error
        firsts = {tp: records[0].offset for tp, records in batches.items() if records}
        self._pace(consumer, bool(firsts))
        await self._check_positions(consumer, firsts)
        return [
            Message(
                topic=record.topic,
                partition=record.partition,
                offset=record.offset,
                key=record.key.decode(errors="replace") if record.key is not None else None,
                value=record.value if record.value is not None else b"",
                headers=tuple((name, bytes(value or b"")) for name, value in record.headers),
            )
            for records in batches.values()
            for record in records
        ]

    def _pace(self, consumer: Any, received: bool) -> None:
        """The short fetch wait while records come, the long one once none came for
        IDLE_AFTER_SECONDS. aiokafka reads its fetch wait for every fetch request it builds (0.14:
        `Fetcher._fetch_max_wait_ms`), so the next fetch has the new one."""
        bus = self.bus
        if bus.idle_fetch_max_wait_ms == bus.fetch_max_wait_ms:
            return
        moment = asyncio.get_running_loop().time()
        if received:
            self._busy_until = moment + IDLE_AFTER_SECONDS
        wait = bus.fetch_max_wait_ms if moment < self._busy_until else bus.idle_fetch_max_wait_ms
        fetcher = getattr(consumer, "_fetcher", None)
        if fetcher is not None and getattr(fetcher, "_fetch_max_wait_ms", wait) != wait:
            fetcher._fetch_max_wait_ms = wait

    async def _check_positions(self, consumer: Any, read_from: dict[Any, int]) -> None:
        """A position beyond its partition's high watermark (from the last fetch response) can only
        mean that the partition lost messages under us (a broker that came back without its
        storage, a topic deleted and re-created): heal it. A group member's position that moved
        back by itself was reset by aiokafka on the broker's OFFSET_OUT_OF_RANGE: report it (seen
        in the first offset `read_from` each partition in this batch, or in its position)."""
        try:
            assignment = consumer._subscription.subscription.assignment  # aiokafka 0.14's state
            partitions = list(consumer.assignment())
        except AttributeError:  # unassigned meanwhile (a rebalance)
            return
        for tp in partitions:
            try:
                state = assignment.state_value(tp)
            except (KeyError, AttributeError):
                continue
            if state is None or not state.has_valid_position:
                continue
            position = state.position
            seen = self._seen.get(tp)
            self._seen[tp] = (state, position)
            if state.highwater is not None and position > state.highwater:
                await self._heal(consumer, tp, position, BEYOND_HIGH_WATERMARK)
                continue
            to = min(position, read_from.get(tp, position))
            if seen is not None and seen[0] is state and to < seen[1]:
                was, highwater = seen[1], state.highwater
                self._warn(tp, was, highwater, OUT_OF_RANGE, to)
                await self._report(Reset(tp.topic, tp.partition, was, highwater, to, OUT_OF_RANGE))

    def _remember(self, consumer: Any, tp: Any) -> None:
        """After a seek of ours: where the partition is now is not a move to report."""
        try:
            state = consumer._subscription.subscription.assignment.state_value(tp)
        except (KeyError, AttributeError):
            return
        if state is not None and state.has_valid_position:
            self._seen[tp] = (state, state.position)
        else:
            self._seen.pop(tp, None)

    async def _heal(self, consumer: Any, tp: Any, position: int, reason: str) -> None:
        """Moves one partition to the safe point (a group member: the earliest offset; broadcast:
        the end), then warns and reports it (`on_reset`)."""
        try:
            highwater = consumer.highwater(tp)
            async with asyncio.timeout(self.bus._timeout):
                if self.group is not None:
                    await consumer.seek_to_beginning(tp)
                    to = await consumer.position(tp)
                elif highwater is not None and reason == BEYOND_HIGH_WATERMARK:
                    consumer.seek(tp, highwater)
                    to = highwater
                else:
                    to = (await self._seek_to_end(consumer, [tp]))[tp]
        except (KafkaError, TimeoutError, AssertionError) as error:
            # Revoked meanwhile, or the broker gone again: the next fetch finds it again.
            log.warning(
                "%s: could not move partition %s of %s off offset %s (%s): %s",
                self._describe_self(),
                tp.partition,
                tp.topic,
                position,
                reason,
                _describe(error),
            )
            return
        self._remember(consumer, tp)
        self._warn(tp, position, highwater, reason, to)
        await self._report(Reset(tp.topic, tp.partition, position, highwater, to, reason))

    def _warn(self, tp: Any, position: int, highwater: int | None, reason: str, to: int) -> None:
        where = "the earliest offset" if self.group is not None else "the end"
        log.warning(
            "%s: position %s on partition %s of %s is %s (high watermark %s): the partition lost "
            "messages (a broker restarted without its storage?); moved to %s, offset %s",
            self._describe_self(),
            position,
            tp.partition,
            tp.topic,
            "beyond the high watermark" if reason == BEYOND_HIGH_WATERMARK else "out of range",
            highwater,
            where,
            to,
        )

    async def _position_missing(self, consumer: Any, tp: Any) -> None:
        """A broadcast consumer's partition without a position: one that its assignment gained (the
        topic came back with another partition count), started at its end and reported. (A group
        member's starts at the earliest offset without asking: its reset policy says so.)"""
        if tp is None:
            return
        try:
            async with asyncio.timeout(self.bus._timeout):
                to = (await self._seek_to_end(consumer, [tp]))[tp]
        except (KafkaError, TimeoutError, AssertionError) as error:
            log.warning(
                "%s: could not position partition %s of %s: %s",
                self._describe_self(),
                tp.partition,
                tp.topic,
                _describe(error),
            )
            return
        self._remember(consumer, tp)
        log.warning(
            "%s: partition %s of %s is new to it (the topic's partitions changed): reading it from "
            "its end, offset %s; what was published to it before is not read",
            self._describe_self(),
            tp.partition,
            tp.topic,
            to,
        )
        await self._report(Reset(tp.topic, tp.partition, None, to, to, REASSIGNED))

    async def _report(self, reset: Reset) -> None:
        if self.on_reset is None:
            return
        try:
            await self.on_reset(reset)
        except Exception:
            log.exception("on_reset callback of the %s failed", self._describe_self())

    async def commit(self, messages: Sequence[Message]) -> None:
        if self.group is None:
            raise BusUnavailable("a broadcast consumer does not commit")
        consumer = self._consumer
        if self._state != "running" or consumer is None:
            raise BusUnavailable(f"the {self._describe_self()} is not running")
        offsets: dict[Any, int] = {}
        for message in messages:
            tp = TopicPartition(message.topic, message.partition)
            offsets[tp] = max(offsets.get(tp, 0), message.offset + 1)
        if not offsets:
            return
        try:
            async with asyncio.timeout(self.bus._timeout):
                await consumer.commit(offsets)
        except (KafkaError, TimeoutError) as error:
            raise BusUnavailable(
                f"commit refused for the {self._describe_self()}: {_describe(error)} "
                "(after a rebalance the new owner gets those messages again)"
            ) from error
