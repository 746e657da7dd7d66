"""Live status over a real websocket through uvicorn (graphql-transport-ws), fed by the pipeline."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import websockets

from gpupaas.accounts.service import actor_for
from gpupaas.compute import service as compute
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from tests import ws
from tests.conftest import serving
from tests.factories import make_instance, make_profile, make_project, make_user, platform_actor
from tests.workers.conftest import Pipeline, wait_status

STATUS = """subscription($id: ID!) { computeInstanceStatus(id: $id) { status message instance { name status } } }"""
EVENTS = """subscription($p: String!) {
  computeInstanceEvents(project: $p) { status source cursor instance { name project { name } } }
}"""


@pytest.fixture
async def server(pipeline: Pipeline) -> AsyncIterator[str]:
    from gpupaas.app import create_app

    async with serving(create_app(pipeline.settings, migrate=False, runtime=pipeline.runtime)) as url:
        yield url


async def test_deploy_streams_waiting_in_progress_success(db: object, server: str) -> None:
    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.MEMBER)
    profile = await make_profile(project)
    instance = await make_instance(project, profile, name="nb", by=alice)
    async with ws.connect(server, token=alice.token) as session:
        await session.subscribe(STATUS, {"id": str(instance.id)})
        first = await session.next_data()
        assert first["computeInstanceStatus"]["status"] == "NOT_DEPLOYED"  # the current state comes first
        await compute.deploy(await actor_for(alice.user), str(instance.id))
        seen: list[str] = []
        while not seen or seen[-1] not in ("SUCCESS", "FAILED"):
            seen.append((await session.next_data())["computeInstanceStatus"]["status"])
        assert seen == ["WAITING", "IN_PROGRESS", "SUCCESS"]


async def test_the_stream_ends_when_the_instance_is_deleted(db: object, server: str) -> None:
    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.MEMBER)
    instance = await make_instance(project, await make_profile(project), name="nb", deploy=True, by=alice)
    await wait_status(instance.id, DeploymentStatus.SUCCESS)
    async with ws.connect(server, token=alice.token) as session:
        sid = await session.subscribe(STATUS, {"id": str(instance.id)})
        assert (await session.next_data())["computeInstanceStatus"]["status"] == "SUCCESS"
        await compute.delete(await actor_for(alice.user), str(instance.id))
        statuses = []
        while True:
            message = await session.receive()
            if message["type"] == "complete":
                assert message["id"] == sid
                break
            statuses.append(message["payload"]["data"]["computeInstanceStatus"]["status"])
        assert statuses == ["DESTROYING"]


async def test_project_events_include_shared_instances(db: object, server: str) -> None:
    bob = await make_user("bob")
    own = await make_project("research", bob=Role.MEMBER)
    other = await make_project("ml")
    mine = await make_instance(own, await make_profile(own), name="mine")
    theirs = await make_instance(other, await make_profile(other), name="theirs")
    hidden = await make_instance(other, await make_profile(other), name="hidden")
    from gpupaas.accounts.sharing import SharingMode

    await compute.set_sharing(
        await platform_actor(), str(theirs.id), SharingMode.SELECTED_PROJECTS, ["research"]
    )
    async with ws.connect(server, token=bob.token) as session:
        await session.subscribe(EVENTS, {"p": "research"})
        # live once its snapshot (its own instance and the shared one) is in: deploys come after
        snapshot = [(await session.next_data())["computeInstanceEvents"] for _ in range(2)]
        assert {e["source"] for e in snapshot} == {"SNAPSHOT"}
        root = await platform_actor()
        for instance in (hidden, theirs, mine):
            await compute.deploy(root, str(instance.id))
        for instance in (hidden, theirs, mine):
            await wait_status(instance.id, DeploymentStatus.SUCCESS)
        names: dict[str, list[str]] = {}
        while sum(len(v) for v in names.values()) < 6:
            event = await session.next_change("computeInstanceEvents")
            names.setdefault(event["instance"]["name"], []).append(event["status"])
        assert names == {
            "theirs": ["WAITING", "IN_PROGRESS", "SUCCESS"],
            "mine": ["WAITING", "IN_PROGRESS", "SUCCESS"],
        }


async def test_subscriptions_need_a_caller_who_may_see(db: object, server: str) -> None:
    await make_user("alice")
    carol = await make_user("carol")
    project = await make_project("ml", alice=Role.MEMBER)
    await make_project("other", carol=Role.MEMBER)
    instance = await make_instance(project, await make_profile(project))
    # a bad token is refused at connection_init
    with pytest.raises(websockets.exceptions.ConnectionClosed) as closed:
        async with ws.connect(server, token="gpp_not-a-token") as session:
            await session.receive()
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 4403
    # anonymous: UNAUTHENTICATED; someone of another project: as if it did not exist
    for token, code in ((None, "UNAUTHENTICATED"), (carol.token, "NOT_FOUND")):
        async with ws.connect(server, token=token) as session:
            await session.subscribe(STATUS, {"id": str(instance.id)})
            message = await session.receive()
            assert message["type"] == "next", message
            assert message["payload"]["data"] is None
            assert message["payload"]["errors"][0]["extensions"]["code"] == code


async def test_the_session_cookie_signs_subscriptions_in(db: object, server: str) -> None:
    import httpx

    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.MEMBER)
    instance = await make_instance(project, await make_profile(project))
    async with httpx.AsyncClient(base_url=server) as http:
        login = await http.post(
            "/graphql",
            json={
                "query": 'mutation { login(username: "alice", password: "correct horse battery") { user { username } } }'
            },
        )
        cookie = login.cookies["gpupaas_session"]
    assert login.json()["data"]["login"]["user"]["username"] == alice.username
    async with ws.connect(server, cookie=cookie) as session:
        await session.subscribe(STATUS, {"id": str(instance.id)})
        assert (await session.next_data())["computeInstanceStatus"]["instance"]["name"] == instance.name
