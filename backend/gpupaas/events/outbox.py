"""Writing to the outbox, inside the caller's transaction, and waking the relay after commit.

The services add rows with `add()` while their transaction is open; once it has committed they
call `notify()` so that an in-process relay publishes at once instead of at its next poll.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from gpupaas.events.bus import COMMANDS_TOPIC, STATUS_TOPIC
from gpupaas.events.models import OutboxMessage, StatusStream

_waiters: set[asyncio.Event] = set()


async def add(topic: str, key: str | None, payload: dict[str, Any]) -> OutboxMessage:
    message: OutboxMessage = await OutboxMessage.create(topic=topic, key=key, payload=payload)
    return message


async def add_command(instance_id: str, payload: dict[str, Any]) -> OutboxMessage:
    return await add(COMMANDS_TOPIC, instance_id, payload)


async def add_status(instance_id: str, payload: dict[str, Any]) -> OutboxMessage:
    """A status event of `payload["projectId"]`'s stream, with the stream's next cursor in its
    payload (`cursor`) and on its row, for subscriptions that resume from a cursor. Inside the
    caller's transaction: the stream stays locked until it commits (see `StatusStream`)."""
    message = await _status_row(instance_id, payload)
    await message.save()
    return message


async def add_command_and_status(
    command_key: str, command: dict[str, Any], status_key: str, status: dict[str, Any]
) -> None:
    """`add_command` then `add_status`, the two rows in one INSERT (the command first: the relay
    publishes in id order, so a worker may take the run before subscribers hear of it, as before)."""
    rows = [OutboxMessage(topic=COMMANDS_TOPIC, key=command_key, payload=command)]
    rows.append(await _status_row(status_key, status))
    await OutboxMessage.bulk_create(rows)


async def _status_row(instance_id: str, payload: dict[str, Any]) -> OutboxMessage:
    project_id = str(payload["projectId"])
    cursor = await next_cursor(project_id)
    return OutboxMessage(
        topic=STATUS_TOPIC,
        key=instance_id,
        payload={**payload, "cursor": cursor},
        project_id=project_id,
        cursor=cursor,
    )


_NEXT_CURSOR = (
    'INSERT INTO status_streams (project_id, "cursor") VALUES ({p}, 1) '
    'ON CONFLICT (project_id) DO UPDATE SET "cursor" = status_streams."cursor" + 1 RETURNING "cursor"'
)


async def next_cursor(project_id: str) -> int:
    """Moves the project's stream on by one and returns its new cursor (1 for its first event): one
    statement, atomic on SQLite and PostgreSQL alike."""
    connection = StatusStream._meta.db
    value: object = uuid.UUID(project_id)
    if connection.capabilities.dialect == "sqlite":  # stored as text there; asyncpg numbers parameters
        sql, value = _NEXT_CURSOR.format(p="?"), str(value)
    else:
        sql = _NEXT_CURSOR.format(p="$1")
    rows = await connection.execute_query_dict(sql, [value])
    return int(rows[0]["cursor"])


async def stream_cursor(project_id: str) -> int:
    """The cursor of the project's last committed status event (0 before its first)."""
    stream = await StatusStream.get_or_none(project_id=project_id)
    return int(stream.cursor) if stream is not None else 0


def notify() -> None:
    """New rows were committed: wake the relays of this process."""
    for event in _waiters:
        event.set()


def register(event: asyncio.Event) -> None:
    _waiters.add(event)


def unregister(event: asyncio.Event) -> None:
    _waiters.discard(event)
