"""Writing to the outbox, inside the caller's transaction, and waking the relay after commit.

The services add rows with `add()` while their transaction is open; once it has committed they
call `notify()` so that an in-process relay publishes at once instead of at its next poll.
"""

from __future__ import annotations

import asyncio
from typing import Any

from gpupaas.events.bus import COMMANDS_TOPIC, STATUS_TOPIC
from gpupaas.events.models import OutboxMessage

_waiters: set[asyncio.Event] = set()


async def add(topic: str, key: str | None, payload: dict[str, Any]) -> OutboxMessage:
    message: OutboxMessage = await OutboxMessage.create(topic=topic, key=key, payload=payload)
    return message


async def add_command(instance_id: str, payload: dict[str, Any]) -> OutboxMessage:
    return await add(COMMANDS_TOPIC, instance_id, payload)


async def add_status(instance_id: str, payload: dict[str, Any]) -> OutboxMessage:
    return await add(STATUS_TOPIC, instance_id, payload)


def notify() -> None:
    """New rows were committed: wake the relays of this process."""
    for event in _waiters:
        event.set()


def register(event: asyncio.Event) -> None:
    _waiters.add(event)


def unregister(event: asyncio.Event) -> None:
    _waiters.discard(event)
