"""Following one object's status live, for the status subscriptions of compute and service
instances: register with the process's status broadcaster first and read the current state second,
so that no change between the two is lost; events carry the object's version, and a subscriber
never goes backwards. Ends when the object is deleted or can no longer be seen."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from datetime import datetime
from enum import Enum
from typing import Protocol, TypeVar

from gpupaas.events.broadcast import Overflow, StatusBroadcaster
from gpupaas.graphql.context import Info
from gpupaas.graphql.dataloaders import Loaders


class Followed(Protocol):
    version: int
    status_message: str | None
    updated_at: datetime

    @property
    def status(self) -> Enum: ...


F = TypeVar("F", bound=Followed)


async def follow(
    info: Info, broadcaster: StatusBroadcaster, key: str, load: Callable[[], Awaitable[F | None]]
) -> AsyncGenerator[tuple[F, str, str | None, datetime], None]:
    """(object, status, message, at): the current state first, then one per change, in order."""
    async with broadcaster.instance(key) as subscription:
        current = await load()
        if current is None:
            return
        last = current.version
        yield current, str(current.status.value), current.status_message, current.updated_at
        while True:
            item = await subscription.queue.get()
            info.context.loaders = Loaders()  # fresh data for every event
            if isinstance(item, Overflow):
                current = await load()
                if current is None:
                    return
                if current.version > last:
                    last = current.version
                    yield current, str(current.status.value), current.status_message, current.updated_at
                continue
            if item.version <= last:
                continue
            last = item.version
            if item.deleted:
                return
            current = await load()
            if current is None:
                return
            yield current, item.status, item.message, datetime.fromisoformat(item.at)
