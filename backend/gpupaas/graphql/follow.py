"""Following one object's status live, for the status subscriptions of compute and service
instances: register with the process's status broadcaster first and read the current state second,
so that no change between the two is lost; events carry the object's version, and a subscriber
never goes backwards. Ends when the object is deleted or can no longer be seen.

What a change shows is read and built once per change for the process's subscribers who see alike
(`StatusBroadcaster.once`): one read instead of one per subscriber, and the same event object, so
that they share one execution of their selection too (graphql/fanout.py). The first state, and the
state re-read after an overflow, are each subscriber's own.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from datetime import datetime
from enum import Enum
from typing import Protocol, TypeVar

from gpupaas.core.errors import NotAuthenticated, NotFound
from gpupaas.events.broadcast import Overflow, StatusBroadcaster, StatusEvent
from gpupaas.graphql.context import Info
from gpupaas.graphql.fanout import visibility_of
from gpupaas.graphql.loaders import Loaders


class Followed(Protocol):
    id: uuid.UUID
    version: int
    status_message: str | None
    updated_at: datetime

    @property
    def status(self) -> Enum: ...


F = TypeVar("F", bound=Followed)
E = TypeVar("E")


async def follow_events(
    info: Info,
    broadcaster: StatusBroadcaster,
    key: str,
    load: Callable[[], Awaitable[F | None]],
    make: Callable[[F, str, str | None, datetime], E],
) -> AsyncGenerator[E, None]:
    """`make(object, status, message, at)`: for the current state first, then for each change, in
    order."""
    visibility = visibility_of(info.context.actor)

    async def changed(item: StatusEvent) -> E | None:
        current = await load()
        if current is None:
            return None
        return make(current, item.status, item.message, datetime.fromisoformat(item.at))

    async with broadcaster.instance(key) as subscription:
        current = await load()
        if current is None:
            return
        last = current.version
        yield make(current, str(current.status.value), current.status_message, current.updated_at)
        while True:
            item = await subscription.queue.get()
            info.context.loaders = Loaders()  # fresh data for every event
            if isinstance(item, Overflow):
                current = await load()
                if current is None:
                    return
                if current.version > last:
                    last = current.version
                    yield make(current, str(current.status.value), current.status_message, current.updated_at)
                continue
            if item.version <= last:
                continue
            last = item.version
            if item.deleted:
                return
            # `load` reads as its caller may: those who see alike may share what it read.
            event = await broadcaster.once(
                ("follow", key, item.version, visibility, make), functools.partial(changed, item)
            )
            if event is None:
                return
            yield event


async def follow_status(
    info: Info,
    load: Callable[[], Awaitable[F | None]],
    make: Callable[[F, str, str | None, datetime], E],
    *,
    missing: str,
) -> AsyncGenerator[E, None]:
    """A status subscription of one object: signed in, the object visible to the caller (`load`
    reads it as the caller may see it; `missing` when it cannot), then `follow_events`."""
    if info.context.actor.user is None:
        raise NotAuthenticated()
    found = await load()
    broadcaster = info.context.broadcaster
    if found is None or broadcaster is None:
        raise NotFound(missing)
    async for event in follow_events(info, broadcaster, str(found.id), load, make):
        yield event
