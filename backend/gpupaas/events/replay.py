"""Reading a project's status stream back from the database, for subscriptions that resume from a
cursor (`after:`) or that catch up after a gap, an overflow or a consumer reset.

A project's cursors have no holes: the stream's counter moves in the transaction that writes the
event (a rolled-back event takes its cursor back), and its events commit in cursor order. So when
a subscriber holds the event at cursor n, every earlier one is in the outbox; and the rows between
two cursors that are missing there were swept, past the replay retention.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpupaas.events.broadcast import StatusEvent
from gpupaas.events.models import OutboxMessage
from gpupaas.events.outbox import stream_cursor

# A resume that would replay more than this many events gets a snapshot instead.
REPLAY_LIMIT = 5000


@dataclass(frozen=True)
class Replay:
    head: int  # the stream's cursor when read: everything up to it is in `events` (if complete)
    events: tuple[StatusEvent, ...]
    complete: bool  # False: events between `after` and `head` are gone (or `after` is unknown)


async def events_between(
    project_id: str, after: int, upto: int | None = None, *, instance_id: str | None = None
) -> list[StatusEvent]:
    """The project's status events with a cursor in (after, upto], in cursor order (of one
    instance, or of all)."""
    query = OutboxMessage.filter(project_id=project_id, cursor__gt=after)
    if upto is not None:
        query = query.filter(cursor__lte=upto)
    if instance_id is not None:
        query = query.filter(key=instance_id)
    rows = await query.order_by("cursor").limit(REPLAY_LIMIT).values_list("payload", flat=True)
    return [StatusEvent.parse(payload) for payload in rows]  # type: ignore[arg-type]


async def replay(project_id: str, after: int, *, instance_id: str | None = None) -> Replay:
    """What happened in the project's stream since `after`: complete when every cursor after it is
    still kept (and `after` is one the stream has given out)."""
    head = await stream_cursor(project_id)
    if after > head or head - after > REPLAY_LIMIT:
        return Replay(head, (), False)
    if after == head:
        return Replay(head, (), True)
    kept = await OutboxMessage.filter(project_id=project_id, cursor__gt=after, cursor__lte=head).count()
    if kept != head - after:
        return Replay(head, (), False)
    events = await events_between(project_id, after, head, instance_id=instance_id)
    return Replay(head, tuple(events), True)
