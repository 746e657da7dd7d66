"""Subscription fan-out (gpupaas/graphql/fanout.py), over real websockets through uvicorn, fed by the
deploy pipeline: subscribers who would get the same result share one execution per event, callers
who see differently never share, and every subscriber's frames carry its own operation id."""

from __future__ import annotations

import asyncio
import gc
import json
from typing import Any

from gpupaas.accounts.service import actor_for
from gpupaas.accounts.sharing import SharingMode
from gpupaas.compute import service as compute
from gpupaas.core.actor import Role
from gpupaas.graphql import fanout
from tests import ws
from tests.factories import make_instance, make_profile, make_project, make_user, platform_actor
from tests.graphql.conftest import Server, receive

EVENTS = """subscription($p: String!) {
  computeInstanceEvents(project: $p) { status instance { name project { name } } }
}"""
# Both fields' values depend on the caller: which share targets it sees, whether it sees services.
EVENTS_BY_CALLER = """subscription($p: String!) {
  computeInstanceEvents(project: $p) {
    status instance { name sharing { projects { name } } services { name } }
  }
}"""
STATUS = """subscription($id: ID!) { computeInstanceStatus(id: $id) { status instance { name } } }"""
DEPLOYED = ["WAITING", "IN_PROGRESS", "SUCCESS"]


async def test_identical_subscribers_share_one_execution_per_event(
    db: object, server: Server, executions: list[Any]
) -> None:
    alice = await make_user("alice")
    # another user who sees the same: shares too (admins see the same of every instance of their
    # project; members do not, since owners see more: test_members_share_with_themselves_only)
    bob = await make_user("bob")
    ml = await make_project("ml", alice=Role.ADMIN, bob=Role.ADMIN)
    instance = await make_instance(ml, await make_profile(ml), name="nb")
    variables = {"p": "ml"}
    async with (
        ws.connect(server.url, token=alice.token) as first,
        ws.connect(server.url, token=alice.token) as second,
        ws.connect(server.url, token=bob.token) as third,
    ):
        subscriptions = [
            (first, await first.subscribe(EVENTS, variables)),
            (first, await first.subscribe(EVENTS, variables)),  # two on one connection
            (second, await second.subscribe(EVENTS, variables)),
            (third, await third.subscribe(EVENTS, variables)),
        ]
        await server.subscribed(str(ml.id), 4)
        # each starts with a snapshot of the project's one instance
        for session in (first, second, third):
            await receive(session, 2 if session is first else 1)
        executions.clear()
        await compute.deploy(await actor_for(alice.user), str(instance.id))

        received: dict[str, list[dict[str, Any]]] = {sid: [] for _, sid in subscriptions}
        for session in (first, second, third):
            for message in await receive(session, 6 if session is first else 3):
                assert message["type"] == "next", message
                received[message["id"]].append(message["payload"])

    expected = [
        {
            "data": {
                "computeInstanceEvents": {"status": s, "instance": {"name": "nb", "project": {"name": "ml"}}}
            }
        }
        for s in DEPLOYED
    ]
    assert all(payloads == expected for payloads in received.values()), received
    # one execution per event for the four subscribers, not four
    assert len(executions) == len(DEPLOYED)
    assert len({id(root) for root in executions}) == len(DEPLOYED)


async def test_callers_who_see_differently_do_not_share(
    db: object, server: Server, executions: list[Any]
) -> None:
    alice = await make_user("alice")  # in the owning project: sees every share target, and services
    bob = await make_user("bob")  # in a project it is shared with: sees only that target, no services
    carol = await make_user("carol")  # sees as bob does: shares with bob
    ml = await make_project("ml", alice=Role.MEMBER)
    research = await make_project("research", alice=Role.MEMBER, bob=Role.ADMIN, carol=Role.ADMIN)
    await make_project("ops")
    instance = await make_instance(ml, await make_profile(ml), name="shared")
    root = await platform_actor()
    await compute.set_sharing(root, str(instance.id), SharingMode.SELECTED_PROJECTS, ["research", "ops"])

    async with (
        ws.connect(server.url, token=alice.token) as as_alice,
        ws.connect(server.url, token=bob.token) as as_bob,
        ws.connect(server.url, token=carol.token) as as_carol,
    ):
        sessions = (as_alice, as_bob, as_carol)
        for session in sessions:  # the same document and variables for all three
            await session.subscribe(EVENTS_BY_CALLER, {"p": "research"})
        await server.subscribed(str(research.id), 3)
        for session in sessions:
            await receive(session, 1)  # the snapshot of the one instance shared with research
        executions.clear()
        await compute.deploy(root, str(instance.id))
        seen = {session: await receive(session, 3) for session in sessions}

    def shown(messages: list[dict[str, Any]]) -> list[tuple[str, list[str], list[Any]]]:
        events = [m["payload"]["data"]["computeInstanceEvents"] for m in messages]
        return [
            (
                e["status"],
                [p["name"] for p in e["instance"]["sharing"]["projects"]],
                e["instance"]["services"],
            )
            for e in events
        ]

    assert shown(seen[as_alice]) == [(s, ["ops", "research"], []) for s in DEPLOYED]
    assert shown(seen[as_bob]) == [(s, ["research"], []) for s in DEPLOYED]
    assert shown(seen[as_carol]) == shown(seen[as_bob])
    # one execution per event for alice, one shared by bob and carol
    assert len(executions) == 2 * len(DEPLOYED)


async def test_members_share_with_themselves_only(db: object, server: Server, executions: list[Any]) -> None:
    # alice owns the instance, bob is another member: what they may do with it differs
    alice, bob = await make_user("alice"), await make_user("bob")
    ml = await make_project("ml", alice=Role.MEMBER, bob=Role.MEMBER)
    instance = await make_instance(ml, await make_profile(ml), name="nb", by=alice)
    query = """subscription($p: String!) {
      computeInstanceEvents(project: $p) { status instance { owner { username } actions { name allowed } } }
    }"""
    async with (
        ws.connect(server.url, token=alice.token) as as_alice,
        ws.connect(server.url, token=bob.token) as as_bob,
    ):
        await as_alice.subscribe(query, {"p": "ml"})
        await as_alice.subscribe(query, {"p": "ml"})  # alice twice: shares with herself
        await as_bob.subscribe(query, {"p": "ml"})
        await server.subscribed(str(ml.id), 3)
        await receive(as_alice, 2)  # the snapshots
        await receive(as_bob, 1)
        executions.clear()
        await compute.deploy(await actor_for(alice.user), str(instance.id))
        seen = {"alice": await receive(as_alice, 6), "bob": await receive(as_bob, 3)}

    def allowed(messages: list[dict[str, Any]]) -> set[tuple[str, bool]]:
        events = [m["payload"]["data"]["computeInstanceEvents"]["instance"] for m in messages]
        assert {e["owner"]["username"] for e in events} == {"alice"}
        return {(a["name"], a["allowed"]) for e in events for a in e["actions"] if a["name"] == "SHARE"}

    assert allowed(seen["alice"]) == {("SHARE", True)}
    assert allowed(seen["bob"]) == {("SHARE", False)}
    # one execution per event for alice's two subscriptions, one for bob's
    assert len(executions) == 2 * len(DEPLOYED)


async def test_frames_carry_each_subscribers_own_id(
    db: object, server: Server, executions: list[Any]
) -> None:
    alice = await make_user("alice")
    ml = await make_project("ml", alice=Role.MEMBER)
    instance = await make_instance(ml, await make_profile(ml), name="nb", by=alice)
    # ids the splice must encode as JSON does: quotes, backslashes, non-ASCII
    ids = ['one "quoted"', "two\\é\n"]
    async with ws.connect(server.url, token=alice.token) as session:
        for sid in ids:
            message = {
                "id": sid,
                "type": "subscribe",
                "payload": {"query": STATUS, "variables": {"id": str(instance.id)}},
            }
            await session.ws.send(json.dumps(message))
        frames: list[str] = []
        while len(frames) < 2:  # the current state first, each subscriber's own
            frames.append(str(await asyncio.wait_for(session.ws.recv(), 15)))
        await server.subscribed(str(instance.id), 2, by="instance")
        await compute.deploy(await actor_for(alice.user), str(instance.id))
        while len(frames) < 2 + 2 * len(DEPLOYED):
            frames.append(str(await asyncio.wait_for(session.ws.recv(), 15)))

    messages = [json.loads(frame) for frame in frames]
    # byte for byte what strawberry's handler would have sent
    assert frames == [json.dumps(m, separators=(",", ":")) for m in messages]
    for sid in ids:
        mine = [m for m in messages if m["id"] == sid]
        assert [m["type"] for m in mine] == ["next"] * 4
        assert [m["payload"]["data"]["computeInstanceStatus"]["status"] for m in mine] == [
            "NOT_DEPLOYED",
            *DEPLOYED,
        ]
    # each subscriber's first state is its own; each change is executed once for both
    assert len(executions) == 2 + len(DEPLOYED)


def test_a_shared_result_lives_as_long_as_its_event() -> None:
    class Event:
        pass

    results = fanout.SharedResults()
    event = Event()
    built: list[int] = []

    class Executor:
        def __init__(self, root: object) -> None:
            built.append(id(root))

        def execute_operation(self, serially: bool | None = None) -> Any:
            from graphql import ExecutionResult

            return ExecutionResult({"x": 1}, None)

    shared = results.executor_for(event, "key", Executor)
    assert results.executor_for(event, "key", Executor) is shared
    assert results.executor_for(event, "other key", Executor) is not shared
    data = shared.execute_operation(False).data
    assert results.text_of(data, lambda d: json.dumps(d)) == '{"x": 1}'
    assert built == [id(event), id(event)]  # once per key
    del event, shared
    gc.collect()
    assert results.by_root == {} and results.by_data == {}
    # what cannot be tracked is executed by its own subscriber
    assert not isinstance(results.executor_for((1, 2), "key", Executor), fanout.SharedEvent)


def test_the_splice_is_what_json_would_make() -> None:
    def encode(value: object) -> str:
        return json.dumps(value, separators=(",", ":"))

    class Event:
        pass

    event = Event()

    class Executor:
        def __init__(self, root: object) -> None:
            pass

        def execute_operation(self, serially: bool | None = None) -> Any:
            from graphql import ExecutionResult

            return ExecutionResult({"e": {"s": 'é"\\', "n": None, "l": [1.5, True]}}, None)

    data = fanout.SHARED.executor_for(event, "key", Executor).execute_operation(False).data
    for sid in ("1", 'a"b', "ü\n"):
        message = {"id": sid, "type": "next", "payload": {"data": data}}
        assert fanout.encode_message(message, encode) == encode(message)
    # with errors, or not a shared result: encoded as it is
    with_errors = {"id": "1", "type": "next", "payload": {"data": data, "errors": [{"message": "x"}]}}
    assert fanout.encode_message(with_errors, encode) == encode(with_errors)
    unshared = {"id": "1", "type": "next", "payload": {"data": {"e": 1}}}
    assert fanout.encode_message(unshared, encode) == encode(unshared)
