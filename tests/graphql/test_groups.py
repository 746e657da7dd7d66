"""Fan-out groups (gpupaas/graphql/groups.py) and the websocket outlet (gpupaas/api/websocket.py),
over real websockets through uvicorn: caught-up status subscriptions park in one group per stream
and selection, which executes each event once and writes its frame to every member's socket; a
member leaves on `complete`, is handed back to its own path when the group cannot decide for it,
and a socket that stops reading is closed without holding the others back."""

from __future__ import annotations

import json
import secrets
import socket
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import pytest
import websockets

from gpupaas.accounts.service import actor_for
from gpupaas.api.websocket import CLOSE_TOO_SLOW
from gpupaas.compute import service as compute
from gpupaas.core.actor import Role
from gpupaas.events.broadcast import StatusEvent
from gpupaas.graphql.groups import Group
from tests import ws
from tests.factories import make_instance, make_profile, make_project, make_user
from tests.graphql.conftest import Serve, Server, receive

EVENTS = """subscription($p: String!) {
  computeInstanceEvents(project: $p) { status message instance { name } }
}"""
STATUS = """subscription($id: ID!) { computeInstanceStatus(id: $id) { status instance { name } } }"""
DEPLOYED = ["WAITING", "IN_PROGRESS", "SUCCESS"]
DESTROYED = ["DESTROYING", "NOT_DEPLOYED"]


def statuses(messages: list[dict[str, Any]], field: str = "computeInstanceEvents") -> list[str]:
    assert all(m["type"] == "next" for m in messages), messages
    return [m["payload"]["data"][field]["status"] for m in messages]


async def drain(session: ws.Session) -> None:
    """Reads until the connection closes (raises ConnectionClosed)."""
    while True:
        await session.receive(timeout=15)


async def test_caught_up_subscribers_park_in_one_group_that_executes_each_event_once(
    db: object, server: Server, executions: list[Any]
) -> None:
    alice = await make_user("alice")
    ml = await make_project("ml", alice=Role.ADMIN)
    instance = await make_instance(ml, await make_profile(ml), name="nb")
    broadcaster = server.runtime.broadcaster
    assert broadcaster is not None
    async with (
        ws.connect(server.url, token=alice.token) as first,
        ws.connect(server.url, token=alice.token) as second,
    ):
        ids = [await first.subscribe(EVENTS, {"p": "ml"}) for _ in range(2)]
        ids.append(await second.subscribe(EVENTS, {"p": "ml"}))
        assert statuses([*await receive(first, 2), *await receive(second, 1)]) == ["NOT_DEPLOYED"] * 3
        await server.until(lambda: server.parked() == 3, "the subscriptions did not park")
        [group] = server.groups()
        assert broadcaster.subscriptions() == 3  # the gauge counts a group's members
        assert len(broadcaster._by_project[str(ml.id)]) == 1  # the broadcaster wakes the group only
        executions.clear()

        await compute.deploy(await actor_for(alice.user), str(instance.id))
        received: dict[str, list[dict[str, Any]]] = {sid: [] for sid in ids}
        for message in [*await receive(first, 6), *await receive(second, 3)]:
            received[message["id"]].append(message)

    assert {sid: statuses(messages) for sid, messages in received.items()} == dict.fromkeys(ids, DEPLOYED)
    # one execution per event for the three, and by the group
    assert len(executions) == len(DEPLOYED)
    assert group.executions == len(DEPLOYED)


async def test_complete_inside_a_group_ends_that_subscription_only(db: object, server: Server) -> None:
    alice = await make_user("alice")
    ml = await make_project("ml", alice=Role.ADMIN)
    instance = await make_instance(ml, await make_profile(ml), name="nb")
    actor = await actor_for(alice.user)
    broadcaster = server.runtime.broadcaster
    assert broadcaster is not None
    async with (
        ws.connect(server.url, token=alice.token) as session,
        ws.connect(server.url, token=alice.token) as other,
    ):
        leaving = await session.subscribe(EVENTS, {"p": "ml"})
        staying = await session.subscribe(EVENTS, {"p": "ml"})
        theirs = await other.subscribe(EVENTS, {"p": "ml"})
        await receive(session, 2)
        await receive(other, 1)
        await server.until(lambda: server.parked() == 3, "the subscriptions did not park")

        await session.ws.send(json.dumps({"id": leaving, "type": "complete"}))
        await server.until(lambda: server.parked() == 2, "the completed subscription stayed in its group")
        assert broadcaster.subscriptions() == 2
        await compute.deploy(actor, str(instance.id))
        mine, others = await receive(session, 3), await receive(other, 3)
        await compute.destroy(actor, str(instance.id))
        mine += await receive(session, 2)
        others += await receive(other, 2)

    # the socket's frames come in order: any for the completed one would be among them
    assert {m["id"] for m in mine} == {staying} and statuses(mine) == DEPLOYED + DESTROYED
    assert {m["id"] for m in others} == {theirs} and statuses(others) == DEPLOYED + DESTROYED


async def test_an_instance_deleted_ends_its_parked_subscriptions_with_complete(
    db: object, server: Server
) -> None:
    alice = await make_user("alice")
    ml = await make_project("ml", alice=Role.ADMIN)
    instance = await make_instance(ml, await make_profile(ml), name="nb")
    broadcaster = server.runtime.broadcaster
    assert broadcaster is not None
    async with ws.connect(server.url, token=alice.token) as session:
        ids = [await session.subscribe(STATUS, {"id": str(instance.id)}) for _ in range(2)]
        await receive(session, 2)  # the current state, each its own
        await server.until(lambda: server.parked() == 2, "the subscriptions did not park")
        assert [group.scope for group in server.groups()] == ["instance"]

        await compute.delete(await actor_for(alice.user), str(instance.id))
        ends = await receive(session, 2)
        assert sorted((m["id"], m["type"]) for m in ends) == sorted((sid, "complete") for sid in ids)
        await server.until(lambda: not server.groups(), "the group outlived its members")
        assert broadcaster.subscriptions() == 0


async def test_a_resync_hands_every_member_back_and_they_park_again(db: object, server: Server) -> None:
    alice = await make_user("alice")
    ml = await make_project("ml", alice=Role.ADMIN)
    instance = await make_instance(ml, await make_profile(ml), name="nb")
    broadcaster = server.runtime.broadcaster
    assert broadcaster is not None
    async with (
        ws.connect(server.url, token=alice.token) as first,
        ws.connect(server.url, token=alice.token) as second,
    ):
        for session in (first, second):
            await session.subscribe(EVENTS, {"p": "ml"})
            await receive(session, 1)
        await server.until(lambda: server.parked() == 2, "the subscriptions did not park")
        [before] = server.groups()

        broadcaster.resync()  # what a reset consumer does: each catches up from the database alone
        await server.until(lambda: before.closed, "the group did not hand its members back")
        await server.until(lambda: server.parked() == 2, "the members did not park again")
        [after] = server.groups()
        await compute.deploy(await actor_for(alice.user), str(instance.id))
        seen = [await receive(session, 3) for session in (first, second)]

    assert after is not before
    assert [statuses(messages) for messages in seen] == [DEPLOYED, DEPLOYED]  # no gap, no duplicate
    assert after.executions == len(DEPLOYED)


async def test_a_subscriber_that_stops_reading_is_closed_and_the_others_get_every_event(
    db: object, serve: Serve
) -> None:
    async with serve(ws_send_buffer=4) as server:  # a small outgoing buffer: a quick test
        alice = await make_user("alice")
        ml = await make_project("ml", alice=Role.ADMIN)
        instance = await make_instance(ml, await make_profile(ml), name="nb")
        broadcaster = server.runtime.broadcaster
        assert broadcaster is not None
        # a client that reads little: a small receive window, one frame queued in its library
        address = urlsplit(server.url)
        raw = socket.socket()
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        raw.connect((address.hostname, address.port))
        raw.setblocking(False)
        async with (
            ws.connect(server.url, token=alice.token, sock=raw, max_queue=1) as slow,
            ws.connect(server.url, token=alice.token) as reader,
        ):
            await slow.subscribe(EVENTS, {"p": "ml"})
            await reader.subscribe(EVENTS, {"p": "ml"})
            await receive(slow, 1)
            await receive(reader, 1)
            await server.until(lambda: server.parked() == 2, "the subscriptions did not park")

            # then it stops reading, while events of 32 KB each come, a batch at a time (random
            # text: the test server compresses frames, permessage-deflate)
            version, sent, received = instance.version + 100, [], list[dict[str, Any]]()

            def batch(count: int) -> None:
                nonlocal version
                for _ in range(count):
                    version += 1
                    message = f"{version} {secrets.token_urlsafe(24_000)}"
                    at = datetime.now(UTC).isoformat()
                    event = StatusEvent(
                        str(instance.id), str(ml.id), (), "WAITING", message, version, False, at
                    )
                    broadcaster.dispatch(event)
                    sent.append(version)

            while server.parked() == 2:
                assert len(sent) < 2000, "the slow subscriber was never closed"
                batch(20)
                while len(received) < len(sent):
                    received.append(await reader.receive(timeout=15))
            batch(20)  # and after it was dropped
            while len(received) < len(sent):
                received.append(await reader.receive(timeout=15))

            messages = [m["payload"]["data"]["computeInstanceEvents"]["message"] for m in received]
            assert [int(text.split()[0]) for text in messages] == sent
            # reading again, the slow client finds what was sent before the drop, then the close
            with pytest.raises(websockets.ConnectionClosed) as closed:
                await drain(slow)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == CLOSE_TOO_SLOW


async def test_a_gap_in_the_cursors_hands_the_member_back_to_read_what_is_missing(
    db: object, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = await make_user("alice")
    ml = await make_project("ml", alice=Role.ADMIN)
    instance = await make_instance(ml, await make_profile(ml), name="nb")
    broadcaster = server.runtime.broadcaster
    assert broadcaster is not None
    async with ws.connect(server.url, token=alice.token) as session:
        await session.subscribe(EVENTS, {"p": "ml"})
        await receive(session, 1)
        await server.until(lambda: server.parked() == 1, "the subscription did not park")
        [group] = server.groups()
        # the process's consumer misses the deploy's first event (as a partition read late would)
        dispatch, dropped = broadcaster.dispatch, list[StatusEvent]()

        def losing_the_first(event: StatusEvent) -> None:
            if not dropped:
                dropped.append(event)
                return
            dispatch(event)

        monkeypatch.setattr(broadcaster, "dispatch", losing_the_first)
        await compute.deploy(await actor_for(alice.user), str(instance.id))
        seen = await receive(session, 3)
        await server.until(lambda: server.parked() == 1, "the member did not park again")

    assert [e.status for e in dropped] == ["WAITING"]
    # the resolver read the one it missed from the database, and kept the order
    assert statuses(seen) == DEPLOYED
    assert group.closed  # it left its group at the gap, then parked in a new one


async def test_a_group_that_fails_hands_its_members_back_without_losing_the_event(
    db: object, server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = await make_user("alice")
    ml = await make_project("ml", alice=Role.ADMIN)
    instance = await make_instance(ml, await make_profile(ml), name="nb")
    async with ws.connect(server.url, token=alice.token) as session:
        for _ in range(2):
            await session.subscribe(EVENTS, {"p": "ml"})
        await receive(session, 2)
        await server.until(lambda: server.parked() == 2, "the subscriptions did not park")
        execute, failed = Group.execute, list[object]()

        async def failing_once(self: Group, operation: Any, root: object) -> str | None:
            if not failed:
                failed.append(root)
                raise RuntimeError("a bug in the group")
            return await execute(self, operation, root)

        monkeypatch.setattr(Group, "execute", failing_once)
        await compute.deploy(await actor_for(alice.user), str(instance.id))
        seen = await receive(session, 6)
        await server.until(lambda: server.parked() == 2, "the members did not park again")

    assert len(failed) == 1
    by_id: dict[str, list[dict[str, Any]]] = {}
    for message in seen:
        by_id.setdefault(message["id"], []).append(message)
    # each member's own resolver took the event over: nothing lost, nothing doubled
    assert [statuses(messages) for messages in by_id.values()] == [DEPLOYED, DEPLOYED]
