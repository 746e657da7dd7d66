"""Following status live, for the status subscriptions of compute and service instances (one
object, or a project's): resumable from a cursor, with no gap and no duplicate.

Every status event has a cursor in its project's stream (events/outbox.py, events/replay.py). A
subscription registers with the process's status broadcaster first (what arrives meanwhile waits
in its queue), and only then reads the database:
- without `after`, a snapshot of the current state (source SNAPSHOT), at the stream's cursor;
- with `after`, the events since it, from the database (source REPLAY); when some of them are gone
  (older than the replay retention, or a cursor the stream never gave out) a snapshot instead,
  with `missedEvents` true.
Then live (source LIVE): an event at or before the cursor reached is a duplicate and is dropped; a
project-wide subscription that sees a later cursor than the next one reads the missing ones from
the database first (they are there: a project's events commit in cursor order), so events of one
project arrive in cursor order whatever partitions they took. A queue that overflowed, or a
consumer that was reset (the broadcaster's `Resync`), catches up from the database the same way.

What a change shows is read and built once per change for the process's subscribers who see alike
(`StatusBroadcaster.once`): one read instead of one per subscriber, and the same event object, so
that they share one execution of their selection too (graphql/fanout.py). Snapshots are each
subscriber's own. Once caught up, a subscription opened over our websocket handler parks in a
fan-out group, which applies the same rules to live events for all its members at once and hands
a member back here for anything else (graphql/groups.py).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Protocol, TypeVar

import strawberry

from gpupaas.core.errors import InvalidArgument, NotAuthenticated, NotFound
from gpupaas.events.broadcast import Overflow, Resync, StatusBroadcaster, StatusEvent, Subscription
from gpupaas.events.outbox import stream_cursor
from gpupaas.events.replay import REPLAY_LIMIT, events_between, replay
from gpupaas.graphql.context import Info
from gpupaas.graphql.fanout import visibility_of
from gpupaas.graphql.groups import Park, parking
from gpupaas.graphql.loaders import Loaders


@strawberry.enum(description="Where a status event comes from.")
class StatusEventSource(Enum):
    SNAPSHOT = strawberry.enum_value(
        "SNAPSHOT", description="the current state, when the subscription starts"
    )
    REPLAY = strawberry.enum_value(
        "REPLAY", description="a change since the `after` cursor, from the database"
    )
    LIVE = strawberry.enum_value("LIVE", description="a change as it happens")


@dataclass(frozen=True)
class Meta:
    """What a status event says of its place in the stream."""

    source: StatusEventSource
    cursor: int | None
    missed: bool = False

    @property
    def cursor_text(self) -> str | None:
        return str(self.cursor) if self.cursor is not None else None


LIVE = Meta(StatusEventSource.LIVE, None)


@dataclass(frozen=True)
class Snapshot:
    cursor: int
    missed: bool


class Resumed:
    """After the replay of a subscription that resumed from a cursor: live events follow."""


RESUMED = Resumed()


def parse_cursor(after: str | None) -> int | None:
    if after is None:
        return None
    text = after.strip()
    if not text.isdigit() or len(text) > 18:
        raise InvalidArgument(
            f"after: {after[:40]!r} is not a status cursor; pass the `cursor` of the last event you "
            "received, or leave `after` out for a snapshot"
        )
    return int(text)


async def stream(
    broadcaster: StatusBroadcaster,
    subscription: Subscription,
    project_id: str,
    after: int | None,
    *,
    instance_id: str | None = None,
    park: Park | None = None,
) -> AsyncIterator[Snapshot | Resumed | tuple[StatusEvent, StatusEventSource]]:
    """The project's stream as one subscription sees it (of one instance's events when given):
    a Snapshot or replayed events first, then live ones, in order, without duplicates.
    `subscription` must be registered before this is called. With `park`, whenever it has caught
    up it waits in its fan-out group, which moves its cursor on (graphql/groups.py)."""
    if after is None:
        last = await stream_cursor(project_id)
        yield Snapshot(last, False)
    else:
        resumed = await replay(project_id, after, instance_id=instance_id)
        last = resumed.head
        if not resumed.complete:
            yield Snapshot(last, True)
        for event in resumed.events:
            yield event, StatusEventSource.REPLAY
        yield RESUMED

    def between(start: int, end: int) -> Awaitable[list[StatusEvent]]:
        # the same read for every subscriber at the same place
        return broadcaster.once(
            ("between", project_id, instance_id, start, end),
            functools.partial(events_between, project_id, start, end, instance_id=instance_id),
        )

    while True:
        if park is not None and subscription.queue.empty():
            last = await park(last)
        item = await subscription.queue.get()
        if isinstance(item, (Overflow, Resync)):
            head = await stream_cursor(project_id)
            if head - last > REPLAY_LIMIT:
                yield Snapshot(head, True)
            elif head > last:
                for event in await between(last, head):
                    yield event, StatusEventSource.LIVE
            last = max(last, head)
            continue
        if item.cursor is None or item.project_id != project_id:
            yield item, StatusEventSource.LIVE  # an instance shared from another project's stream
            continue
        if item.cursor <= last:
            continue  # replayed, or in the snapshot's stream position already
        if instance_id is None and item.cursor > last + 1:
            for event in await between(last, item.cursor - 1):
                yield event, StatusEventSource.LIVE
        last = item.cursor
        yield item, StatusEventSource.LIVE


class Followed(Protocol):
    id: uuid.UUID
    project_id: uuid.UUID
    version: int
    status_message: str | None
    updated_at: datetime

    @property
    def status(self) -> Enum: ...


F = TypeVar("F", bound=Followed)
E = TypeVar("E")
Make = Callable[[F, str, str | None, datetime, Meta], E]


async def follow_events(
    info: Info,
    broadcaster: StatusBroadcaster,
    found: F,
    load: Callable[[], Awaitable[F | None]],
    make: Make[F, E],
    after: int | None,
) -> AsyncGenerator[E, None]:
    """`make(object, status, message, at, meta)`: for the snapshot or the replay first, then for
    each change, in order."""
    visibility = visibility_of(info.context.actor)
    key = str(found.id)

    async def changed(item: StatusEvent, meta: Meta) -> E | None:
        current = await load()
        if current is None:
            return None
        return make(current, item.status, item.message, datetime.fromisoformat(item.at), meta)

    def shown_as(event: StatusEvent, source: StatusEventSource) -> Awaitable[E | None]:
        # `load` reads as its caller may: those who see alike may share what it read.
        return broadcaster.once(
            ("follow", key, event.version, source, visibility, make),
            functools.partial(changed, event, Meta(source, event.cursor)),
        )

    async with broadcaster.instance(key) as subscription:
        last = {key: 0}  # the instance's version reached (a dict: its fan-out group moves it on)
        project_id = str(found.project_id)
        park = parking(
            broadcaster,
            subscription,
            project_id=project_id,
            kind="",
            versions=last,
            shown=lambda event: shown_as(event, StatusEventSource.LIVE),
        )
        async for item in stream(broadcaster, subscription, project_id, after, instance_id=key, park=park):
            if isinstance(item, Resumed):
                continue
            info.context.loaders = Loaders()  # fresh data for every event
            if isinstance(item, Snapshot):
                current = await load()
                if current is None:
                    return
                last[key] = current.version
                meta = Meta(StatusEventSource.SNAPSHOT, item.cursor, item.missed)
                yield make(
                    current, str(current.status.value), current.status_message, current.updated_at, meta
                )
                continue
            event, source = item
            if event.version <= last[key]:
                continue
            last[key] = event.version
            if event.deleted:
                return
            shown = await shown_as(event, source)
            if shown is None:
                return
            yield shown


async def follow_status(
    info: Info,
    load: Callable[[], Awaitable[F | None]],
    make: Make[F, E],
    *,
    missing: str,
    after: str | None = None,
) -> AsyncGenerator[E, None]:
    """A status subscription of one object: signed in, the object visible to the caller (`load`
    reads it as the caller may see it; `missing` when it cannot), then `follow_events`."""
    if info.context.actor.user is None:
        raise NotAuthenticated()
    cursor = parse_cursor(after)
    found = await load()
    broadcaster = info.context.broadcaster
    if found is None or broadcaster is None:
        raise NotFound(missing)
    async for event in follow_events(info, broadcaster, found, load, make, cursor):
        yield event


async def follow_project(
    info: Info,
    project: str,
    after: str | None,
    *,
    kind: str,
    find: Callable[[], Awaitable[uuid.UUID | None]],
    snapshot: Callable[[bool], Awaitable[list[F]]],
    of_event: Callable[[StatusEvent, Meta], Awaitable[E | None]],
    shown_to: Callable[[E], bool],
    make: Make[F, E],
) -> AsyncGenerator[E, None]:
    """A project-wide status subscription of `kind` ("compute" or "service"): signed in, the project
    one the caller sees (`find`: its id, or None), then `follow_stream`."""
    if info.context.actor.user is None:
        raise NotAuthenticated()
    cursor = parse_cursor(after)
    project_id = await find()
    broadcaster = info.context.broadcaster
    if project_id is None or broadcaster is None:
        raise NotFound(f'project "{project}" not found')

    async def shown(item: StatusEvent, meta: Meta) -> E | None:
        # Read and built once per event for every subscriber of this process: the same event
        # object, so that its subscribers who see alike share one execution of their selection
        # too (graphql/fanout.py).
        event = await broadcaster.once(
            (kind, "project-event", item.instance_id, item.version, meta),
            functools.partial(of_event, item, meta),
        )
        return event if event is not None and shown_to(event) else None

    async for event in follow_stream(
        info, broadcaster, str(project_id), cursor, kind=kind, snapshot=snapshot, shown=shown, make=make
    ):
        yield event


async def follow_stream(
    info: Info,
    broadcaster: StatusBroadcaster,
    project_id: str,
    after: int | None,
    *,
    kind: str,
    snapshot: Callable[[bool], Awaitable[list[F]]],
    shown: Callable[[StatusEvent, Meta], Awaitable[E | None]],
    make: Make[F, E],
) -> AsyncGenerator[E, None]:
    """The events of `kind` in a project's stream. `snapshot(shared_only)`: the objects the caller
    sees now (only those of other projects' streams, shared with this one, when the subscription
    resumed from its own stream's cursor); `shown(event, meta)`: the event as the caller may see
    it, or None."""
    context = info.context
    last: dict[str, int] = {}

    def snapshot_of(items: list[F], meta: Meta) -> list[E]:
        events = []
        for item in items:
            last[str(item.id)] = max(last.get(str(item.id), 0), item.version)
            events.append(make(item, str(item.status.value), item.status_message, item.updated_at, meta))
        return events

    def live(status: StatusEvent) -> Awaitable[E | None]:
        return shown(
            status, Meta(StatusEventSource.LIVE, status.cursor if status.project_id == project_id else None)
        )

    async with broadcaster.project(project_id) as subscription:
        # Per subscriber and event: what is here, and sending (at 1,000 subscribers, every
        # microsecond here is a millisecond of an event's delivery), until it parks in its group.
        snapshotted = False
        park = parking(broadcaster, subscription, project_id=project_id, kind=kind, versions=last, shown=live)
        async for item in stream(broadcaster, subscription, project_id, after, park=park):
            if isinstance(item, Snapshot):
                context.loaders = Loaders()
                meta = Meta(StatusEventSource.SNAPSHOT, item.cursor, item.missed)
                for event in snapshot_of(await snapshot(False), meta):
                    yield event
                snapshotted = True
                continue
            if isinstance(item, Resumed):
                if not snapshotted:
                    # resumed from our stream: the instances of other streams shared with this
                    # project, as they are now (their events are not in our stream)
                    context.loaders = Loaders()
                    for event in snapshot_of(await snapshot(True), Meta(StatusEventSource.SNAPSHOT, after)):
                        yield event
                continue
            status, source = item
            if status.kind != kind or status.deleted or status.version <= last.get(status.instance_id, 0):
                continue
            last[status.instance_id] = status.version
            context.loaders = Loaders()
            if not status.visible_in(project_id):
                continue
            meta = Meta(source, status.cursor if status.project_id == project_id else None)
            found = await shown(status, meta)
            if found is not None:
                yield found
