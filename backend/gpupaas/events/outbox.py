"""Writing to the outbox, inside the caller's transaction, and publishing it once committed.

The services add rows with `add()` while their transaction is open; once it has committed they
call `notify()` so that an in-process relay publishes at once instead of at its next poll: the
relay then claims what is pending (one statement) and publishes it.

The hot path (a deploy's request, a worker's claim and finish of its run) saves that claim: it opens
its transaction with `transaction()`, whose rows are written already claimed by this process's
relay and handed to it, in memory, once the transaction has committed (`Relay.hand`). A process
that dies before its relay published them leaves them claimed until the claim expires; another
relay (or this one, restarted) publishes them then, as it does the rows of a relay that died.

Every row is one `INSERT ... RETURNING`. A status event's row takes its project's next cursor in
the same statement: on PostgreSQL the stream's row is moved on (and locked until commit) by a
data-modifying CTE; on SQLite, which has one writer at a time, the INSERT reads the stream's cursor
and a trigger (migration 0030) moves the stream on to the cursor inserted.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import uuid
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from tortoise.backends.base.client import TransactionalDBClient
from tortoise.transactions import in_transaction

from gpupaas.events import sql
from gpupaas.events.bus import COMMANDS_TOPIC, STATUS_TOPIC
from gpupaas.events.models import OutboxMessage, StatusStream


class LocalRelay(Protocol):
    """What `transaction()` needs of this process's relay (events/relay.py `Relay`)."""

    name: str

    def claim_until(self) -> datetime: ...

    def hand(self, rows: Sequence[OutboxMessage]) -> None: ...

    def wake(self) -> None: ...


_waiters: set[asyncio.Event] = set()
_relays: list[LocalRelay] = []
# Inside `transaction()`: the relay its rows are claimed for, and the rows written so far.
_handing: contextvars.ContextVar[tuple[LocalRelay, list[OutboxMessage]] | None] = contextvars.ContextVar(
    "gpupaas_outbox_handing", default=None
)


async def add(topic: str, key: str | None, payload: dict[str, Any]) -> OutboxMessage:
    return (await _insert([(topic, key, payload)]))[0]


async def add_command(instance_id: str, payload: dict[str, Any]) -> OutboxMessage:
    return await add(COMMANDS_TOPIC, instance_id, payload)


async def add_status(instance_id: str, payload: dict[str, Any]) -> OutboxMessage:
    """A status event of `payload["projectId"]`'s stream, with the stream's next cursor in its
    payload (`cursor`) and on its row, for subscriptions that resume from a cursor. Inside the
    caller's transaction: the stream stays locked until it commits (see `StatusStream`)."""
    return (await _insert([], status=(instance_id, payload)))[0]


async def add_command_and_status(
    command_key: str, command: dict[str, Any], status_key: str, status: dict[str, Any]
) -> None:
    """`add_command` then `add_status`, the two rows in one INSERT (the command first: the relay
    publishes in that order, so a worker may take the run before subscribers hear of it)."""
    await _insert([(COMMANDS_TOPIC, command_key, command)], status=(status_key, status))


_COLUMNS = ", ".join(
    f'"{name}"'
    for name in (
        "topic",
        "key",
        "payload",
        "created_at",
        "attempts",
        "claimed_by",
        "claimed_until",
        "project_id",
        "cursor",
    )
)
# A status row's cursor, and its payload with it. SQLite: the stream's next one (the trigger of
# migration 0030 moves the stream on to it). PostgreSQL: the one the CTE `stream` moved it on to.
_SQLITE_NEXT = '(SELECT COALESCE(MAX("cursor"), 0) + 1 FROM status_streams WHERE project_id = ?)'
_SQLITE_STATUS = f"(?, ?, json_set(?, '$.cursor', {_SQLITE_NEXT}), ?, 0, ?, ?, ?, {_SQLITE_NEXT})"
_PG_STREAM = (
    'WITH stream AS (INSERT INTO status_streams (project_id, "cursor") VALUES (?, 1) ON CONFLICT '
    '(project_id) DO UPDATE SET "cursor" = status_streams."cursor" + 1 RETURNING "cursor") '
)
_PG_CURSOR = '(SELECT "cursor" FROM stream)'
_PG_STATUS = (
    f"(?, ?, ?::text::jsonb || jsonb_build_object('cursor', {_PG_CURSOR}), ?, 0, ?, ?, ?, {_PG_CURSOR})"
)


async def _insert(
    rows: list[tuple[str, str | None, dict[str, Any]]], status: tuple[str, dict[str, Any]] | None = None
) -> list[OutboxMessage]:
    """`rows` (topic, key, payload), then the status event `status` (key, payload) if any, in one
    INSERT that returns them, in that order (by id)."""
    handing = _handing.get()
    claimed_by, claimed_until = (handing[0].name, handing[0].claim_until()) if handing else (None, None)
    moment = datetime.now(UTC)
    encode = OutboxMessage._meta.fields_map["payload"].encoder  # type: ignore[attr-defined]
    values: list[Any] = []
    tuples: list[str] = []
    for topic, key, payload in rows:
        tuples.append("(?, ?, ?, ?, 0, ?, ?, NULL, NULL)")
        values += [topic, key, encode(payload), moment, claimed_by, claimed_until]
    head = ""
    if status is not None:
        key, payload = status
        project = uuid.UUID(str(payload["projectId"]))
        text = encode({name: value for name, value in payload.items() if name != "cursor"})
        if sql.dialect(OutboxMessage) == "sqlite":
            tuples.append(_SQLITE_STATUS)
            values += [STATUS_TOPIC, key, text, project, moment, claimed_by, claimed_until, project, project]
        else:
            head = _PG_STREAM
            values = [project, *values]
            tuples.append(_PG_STATUS)
            values += [STATUS_TOPIC, key, text, moment, claimed_by, claimed_until, project]
    # Only this module's constants: every value is a parameter.
    statement = f"{head}INSERT INTO outbox ({_COLUMNS}) VALUES {', '.join(tuples)} RETURNING *"  # noqa: S608
    found = sorted(await sql.objects(OutboxMessage, statement, values), key=lambda row: row.id)
    if handing:
        handing[1].extend(found)
    return found


@contextlib.asynccontextmanager
async def transaction() -> AsyncIterator[None]:
    """`in_transaction()` whose outbox rows go to this process's relay once it has committed (see
    the module's doc); then the other waiters are woken, as by `notify()`, which the caller need not
    call. Inside another transaction, or in a process without a relay, it is only a (nested)
    `in_transaction()` and the rows wait for a claim, as `add()`'s do."""
    relay = _relays[0] if _relays else None
    outer = isinstance(OutboxMessage._meta.db, TransactionalDBClient)
    if relay is None or outer:  # (inside another `transaction()`, `outer` too)
        async with in_transaction():
            yield
        if not outer:
            notify()
        return
    written: list[OutboxMessage] = []
    token = _handing.set((relay, written))
    try:
        async with in_transaction():
            yield
    finally:
        _handing.reset(token)
    if written:
        relay.hand(written)
    _wake_waiters()


async def stream_cursor(project_id: str) -> int:
    """The cursor of the project's last committed status event (0 before its first)."""
    stream = await StatusStream.get_or_none(project_id=project_id)
    return int(stream.cursor) if stream is not None else 0


def notify() -> None:
    """New rows were committed: wake the relays of this process (they claim what is pending) and
    whatever else waits for a commit (webhook dispatchers, the simulated cluster's endpoints)."""
    for relay in _relays:
        relay.wake()
    _wake_waiters()


def _wake_waiters() -> None:
    for event in _waiters:
        event.set()


def register(event: asyncio.Event) -> None:
    _waiters.add(event)


def unregister(event: asyncio.Event) -> None:
    _waiters.discard(event)


def register_relay(relay: LocalRelay) -> None:
    if relay not in _relays:
        _relays.append(relay)


def unregister_relay(relay: LocalRelay) -> None:
    if relay in _relays:
        _relays.remove(relay)
