"""Status streams: every status event has a cursor in its project's stream, from the database,
without holes, in commit order; the relay keeps status rows for the replay retention; a replay says
when what it should hold was swept."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from tortoise.transactions import in_transaction

from gpupaas.events import outbox
from gpupaas.events.bus import STATUS_TOPIC
from gpupaas.events.memory import InProcessBus
from gpupaas.events.models import OutboxMessage
from gpupaas.events.relay import Relay
from gpupaas.events.replay import replay
from tests.factories import make_instance, make_profile, make_project


def _status(instance_id: str, project_id: str, version: int) -> dict[str, object]:
    return {
        "type": "status",
        "instanceId": instance_id,
        "projectId": project_id,
        "sharedWith": [],
        "status": "WAITING",
        "message": None,
        "version": version,
        "deleted": False,
        "at": datetime.now(UTC).isoformat(),
    }


async def test_each_project_has_its_own_stream_without_holes(db: object) -> None:
    ml, cv = await make_project("ml"), await make_project("cv")
    for project in (ml, cv, ml):
        await make_instance(project, await make_profile(project), deploy=True)
    for project, count in ((ml, 2), (cv, 1)):
        rows = await OutboxMessage.filter(topic=STATUS_TOPIC, project_id=project.id).order_by("id")
        assert [row.cursor for row in rows] == list(range(1, count + 1))
        # the cursor travels in the event itself
        assert [row.payload["cursor"] for row in rows] == [row.cursor for row in rows]
        assert await outbox.stream_cursor(str(project.id)) == count


async def test_concurrent_writers_get_distinct_cursors_and_a_rollback_gives_its_back(db: object) -> None:
    project = await make_project("ml")
    pid = str(project.id)

    async def write(version: int) -> None:
        async with in_transaction():
            await outbox.add_status(f"i-{version}", _status(f"i-{version}", pid, version))

    await asyncio.gather(*(write(v) for v in range(1, 21)))

    class Abandon(Exception):
        pass

    try:
        async with in_transaction():
            await outbox.add_status("i-x", _status("i-x", pid, 99))
            raise Abandon()
    except Abandon:
        pass
    await write(21)
    rows = await OutboxMessage.filter(project_id=project.id)
    cursors = sorted(row.cursor for row in rows if row.cursor is not None)
    assert cursors == list(range(1, 22))  # the abandoned event's cursor was given out again


async def test_status_rows_are_kept_for_replay_then_swept(db: object) -> None:
    project = await make_project("ml")
    pid = str(project.id)
    for version in range(1, 5):
        await outbox.add_status("i-1", _status("i-1", pid, version))
    await outbox.add("gpupaas.commands", "i-1", {"type": "deploy"})
    bus = InProcessBus()
    await bus.start()
    try:
        relay = Relay(bus, keep_sent=timedelta(hours=1), keep_status=timedelta(hours=24))
        await bus.ensure_topics(["gpupaas.commands", STATUS_TOPIC])
        assert await relay.publish_pending() == 5
        moment = datetime.now(UTC)
        # two hours on: the command row goes, the status rows stay for subscriptions that resume
        await relay.sweep(moment + timedelta(hours=2))
        assert await OutboxMessage.filter(cursor=None).count() == 0
        resumed = await replay(pid, 1)
        assert resumed.complete and resumed.head == 4
        assert [event.version for event in resumed.events] == [2, 3, 4]
        assert [event.cursor for event in resumed.events] == [2, 3, 4]
        # of one instance only
        assert (await replay(pid, 3, instance_id="i-2")).events == ()
        # a cursor the stream never gave out, or one from before what is kept, is no replay
        assert not (await replay(pid, 7)).complete
        await OutboxMessage.filter(project_id=project.id, cursor=2).delete()
        assert not (await replay(pid, 1)).complete
        assert (await replay(pid, 2)).complete
        # a day on: swept
        await relay.sweep(moment + timedelta(hours=25))
        assert await OutboxMessage.filter(project_id=project.id).count() == 0
        gone = await replay(pid, 3)
        assert not gone.complete and gone.events == () and gone.head == 4
        assert (await replay(pid, 4)).complete  # nothing after it was missed
    finally:
        await bus.stop()
