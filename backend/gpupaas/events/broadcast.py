"""Status fan-out: every API process reads every status event (a broadcast consumer of
gpupaas.status) and hands it to its own subscribers, by instance and by project.

Subscribers get queues; a slow subscriber's queue is bounded and, when full, it is told to catch
up (it re-reads the current state) instead of holding memory for everyone.

When the consumer may have missed events, every subscriber is told to catch up from the database
(`Resync`): when the consumer moved a partition to a safe point (events/bus.py, "Healing": a
broker that came back without its storage, a partition new to it) and when it is reconnected (the
status watchdog's doing, events/watchdog.py). The broadcaster keeps, per project, the last cursor
it heard, for the watchdog to compare with what the outbox says it published.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from gpupaas.core.metrics import Metrics
from gpupaas.events.bus import STATUS_TOPIC, Bus, Consumer, Reset

log = logging.getLogger("gpupaas.broadcast")
T = TypeVar("T")
QUEUE_SIZE = 256


@dataclass(frozen=True)
class StatusEvent:
    instance_id: str
    project_id: str
    shared_with: tuple[str, ...] | str  # project ids, or "ALL"
    status: str
    message: str | None
    version: int
    deleted: bool
    at: str
    # "compute" (a compute instance) or "service" (a GPU service instance; instance_id is its id).
    kind: str = "compute"
    # Its place in its project's stream (events/outbox.py `add_status`); None in events written
    # before streams had cursors.
    cursor: int | None = None
    # The subject's row when the event was written (events/rows.py), so that subscribers need not
    # read it again; None in events written before they carried it.
    row: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def parse(cls, payload: dict[str, Any]) -> StatusEvent:
        shared = payload.get("sharedWith") or ()
        return cls(
            instance_id=payload["instanceId"],
            project_id=payload["projectId"],
            shared_with=shared if isinstance(shared, str) else tuple(shared),
            status=payload["status"],
            message=payload.get("message"),
            version=int(payload["version"]),
            deleted=bool(payload.get("deleted")),
            at=payload["at"],
            kind=str(payload.get("kind") or "compute"),
            cursor=int(payload["cursor"]) if payload.get("cursor") is not None else None,
            row=payload["row"] if isinstance(payload.get("row"), dict) else None,
        )

    def visible_in(self, project_id: str) -> bool:
        return self.project_id == project_id or self.shared_with == "ALL" or project_id in self.shared_with


class Overflow:
    """Put in a queue that filled up: the subscriber lost events and must re-read the state."""


class Resync:
    """Put in every queue when this process's status consumer may have lost events (it was reset
    to a new position, or reconnected): subscribers catch up from the database."""


class Subscription:
    def __init__(self, key: str, scope: str = "project") -> None:
        self.key = key
        self.scope = scope  # "project" or "instance": which index of the broadcaster holds it
        self.queue: asyncio.Queue[StatusEvent | Overflow | Resync] = asyncio.Queue(maxsize=QUEUE_SIZE)

    def subscribers(self) -> int:
        """How many subscribers it stands for: a fan-out group (graphql/groups.py), its members."""
        return 1

    def offer(self, event: StatusEvent | Resync) -> None:
        try:
            self.queue.put_nowait(event)
        except asyncio.QueueFull:
            # Drop what is queued and say so once: the subscriber resynchronizes from the database.
            while not self.queue.empty():
                self.queue.get_nowait()
            self.queue.put_nowait(Overflow())


class StatusBroadcaster:
    # How many recent events' shared reads `once` keeps.
    SHARED_READS = 256

    def __init__(self, bus: Bus, *, metrics: Metrics | None = None) -> None:
        self.bus = bus
        self.metrics = metrics
        self._shared: OrderedDict[Hashable, asyncio.Future[Any]] = OrderedDict()
        self._by_instance: dict[str, set[Subscription]] = {}
        self._by_project: dict[str, set[Subscription]] = {}
        self._consumer: Consumer | None = None
        self._task: asyncio.Task[None] | None = None
        # What this process heard: per project, the last cursor; and since when its consumer has
        # been listening (it hears what is published after that, nothing from before).
        self.heard: dict[str, int] = {}
        self.listening_since: datetime | None = None
        self.last_heard_at: datetime | None = None
        self._reconnecting = asyncio.Lock()
        # Called with a user id when the topic says that user's credentials or rights changed
        # ({"type": "credentials", "userId": ...}, accounts.credentials_changed).
        self.credential_listeners: set[Callable[[str], None]] = set()

    def subscriptions(self) -> int:
        """Live status subscriptions (each websocket `subscription` of an instance or a project)."""
        indexes = (self._by_instance, self._by_project)
        return sum(
            s.subscribers() for index in indexes for subscriptions in index.values() for s in subscriptions
        )

    async def start(self) -> None:
        await self._listen()

    async def _listen(self) -> None:
        consumer = self.bus.consumer([STATUS_TOPIC], group=None, on_reset=self._consumer_reset)
        await consumer.start()
        self._consumer = consumer
        self.listening_since = datetime.now(UTC)  # it gets what is published from now on
        self._task = asyncio.create_task(self._run(consumer), name="status-broadcaster")

    async def _unlisten(self) -> None:
        task, consumer = self._task, self._consumer
        self._task = self._consumer = None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if consumer is not None:
            await consumer.stop()

    async def stop(self) -> None:
        await self._unlisten()

    @property
    def listening(self) -> bool:
        return self._task is not None and not self._task.done()

    async def reconnect(self) -> None:
        """A new consumer instead of the current one (positioned at the end: it hears what is
        published from now on), then every subscriber catches up from the database. Raises
        BusUnavailable when the broker does not take the new consumer (nothing listens then; the
        next call tries again)."""
        async with self._reconnecting:
            await self._unlisten()
            try:
                await self._listen()
            finally:
                # Whatever came meanwhile is in the database: also when no consumer listens now.
                self.resync()

    async def _consumer_reset(self, reset: Reset) -> None:
        """The consumer moved a partition on (the bus has logged it): what it skipped is read again
        from the database by every subscriber."""
        if self.metrics is not None:
            self.metrics.count_reset(reset.topic, reset.partition, reset.reason)
        self.resync()

    async def _run(self, consumer: Consumer) -> None:
        while True:
            try:
                messages = await consumer.getmany(timeout=1.0, max_records=500)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("reading status events failed; retrying")
                await asyncio.sleep(1.0)
                continue
            for message in messages:
                try:
                    payload = json.loads(message.value)
                    if isinstance(payload, dict) and payload.get("type") == "credentials":
                        self._credentials_changed(str(payload["userId"]))
                        continue
                    event = StatusEvent.parse(payload)
                except (ValueError, KeyError, TypeError):
                    log.warning(
                        "skipping a malformed status event at %s/%s", message.partition, message.offset
                    )
                    continue
                self._heard(event)
                self.dispatch(event)

    def _heard(self, event: StatusEvent) -> None:
        self.last_heard_at = datetime.now(UTC)
        if event.cursor is not None and event.cursor > self.heard.get(event.project_id, 0):
            self.heard[event.project_id] = event.cursor

    def _credentials_changed(self, user_id: str) -> None:
        for listener in list(self.credential_listeners):
            try:
                listener(user_id)
            except Exception:
                log.exception("a credentials listener failed")

    def dispatch(self, event: StatusEvent) -> None:
        for subscription in self._by_instance.get(event.instance_id, ()):
            subscription.offer(event)
        if self._by_project:
            targets = (
                self._by_project.keys()
                if event.shared_with == "ALL"
                else [event.project_id, *event.shared_with]
            )
            for project_id in list(targets):
                for subscription in self._by_project.get(project_id, ()):
                    subscription.offer(event)

    def resync(self) -> None:
        """Tells every subscriber to catch up from the database (see `Resync`)."""
        marker = Resync()
        for index in (self._by_instance, self._by_project):
            for subscriptions in list(index.values()):
                for subscription in list(subscriptions):
                    subscription.offer(marker)

    async def once(self, key: Hashable, load: Callable[[], Awaitable[T]]) -> T:
        """`load()`'s result for `key`, read once for all the subscribers that ask for it (the
        last SHARED_READS keys are kept): 1,000 subscribers of a project then cost one database
        read per event, not 1,000. Keys must name an immutable state, such as an instance at a
        version. A failed read is not kept."""
        future = self._shared.get(key)
        if future is not None and future.done():
            # The other subscribers of an event: no shield and no suspension (a failed read raises)
            return future.result()  # type: ignore[no-any-return]
        if future is None:
            future = asyncio.ensure_future(load())
            self._shared[key] = future
            while len(self._shared) > self.SHARED_READS:
                self._shared.popitem(last=False)

            def forget_failure(done: asyncio.Future[Any]) -> None:
                failed = done.cancelled() or done.exception() is not None
                if failed and self._shared.get(key) is done:
                    del self._shared[key]

            future.add_done_callback(forget_failure)
        result: T = await asyncio.shield(future)
        return result

    @contextlib.asynccontextmanager
    async def instance(self, instance_id: str) -> AsyncIterator[Subscription]:
        async with self._subscribed(Subscription(instance_id, "instance")) as subscription:
            yield subscription

    @contextlib.asynccontextmanager
    async def project(self, project_id: str) -> AsyncIterator[Subscription]:
        async with self._subscribed(Subscription(project_id, "project")) as subscription:
            yield subscription

    @contextlib.asynccontextmanager
    async def _subscribed(self, subscription: Subscription) -> AsyncIterator[Subscription]:
        self.attach(subscription)
        try:
            yield subscription
        finally:
            self.detach(subscription)

    def attach(self, subscription: Subscription) -> None:
        """`subscription` gets the events of its project or instance from now on (a fan-out group's
        hook: a subscriber parked in a group is detached, and attached again when it leaves)."""
        index = self._by_project if subscription.scope == "project" else self._by_instance
        index.setdefault(subscription.key, set()).add(subscription)

    def detach(self, subscription: Subscription) -> None:
        index = self._by_project if subscription.scope == "project" else self._by_instance
        members = index.get(subscription.key)
        if members is not None:
            members.discard(subscription)
            if not members:
                del index[subscription.key]
