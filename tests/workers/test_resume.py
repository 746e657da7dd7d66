"""Resumable status subscriptions over a real websocket: a cursor on every event, `after:` replays
exactly what came since, in order, then goes live; a cursor past the retention gets a snapshot."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gpupaas.accounts.service import actor_for
from gpupaas.compute import service as compute
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.events.models import OutboxMessage
from tests import ws
from tests.conftest import serving
from tests.factories import make_instance, make_profile, make_project, make_user
from tests.workers.conftest import Pipeline, wait_status

FIELDS = "status source cursor missedEvents instance { name }"
STATUS = f"subscription($id: ID!, $after: String) {{ computeInstanceStatus(id: $id, after: $after) {{ {FIELDS} }} }}"
EVENTS = f"subscription($p: String!, $after: String) {{ computeInstanceEvents(project: $p, after: $after) {{ {FIELDS} }} }}"


@pytest.fixture
async def server(pipeline: Pipeline) -> AsyncIterator[str]:
    from gpupaas.app import create_app

    async with serving(create_app(pipeline.settings, migrate=False, runtime=pipeline.runtime)) as url:
        yield url


def _seen(events: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(e["instance"]["name"], e["status"], e["source"]) for e in events]


async def test_after_a_cursor_a_subscriber_gets_exactly_what_it_missed(db: object, server: str) -> None:
    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.MEMBER)
    profile = await make_profile(project)
    nb = await make_instance(project, profile, name="nb", by=alice)
    other = await make_instance(project, profile, name="other", by=alice)
    actor = await actor_for(alice.user)
    async with ws.connect(server, token=alice.token) as session:
        await session.subscribe(EVENTS, {"p": "ml"})
        snapshot = [(await session.next_data())["computeInstanceEvents"] for _ in range(2)]
        assert _seen(snapshot) == [("nb", "NOT_DEPLOYED", "SNAPSHOT"), ("other", "NOT_DEPLOYED", "SNAPSHOT")]
        assert len({e["cursor"] for e in snapshot}) == 1 and not any(e["missedEvents"] for e in snapshot)
        base = int(snapshot[0]["cursor"])  # the stream's place (creating the instances was in it)
        await compute.deploy(actor, str(nb.id))
        first = (await session.next_data())["computeInstanceEvents"]
        assert (first["status"], first["source"], first["cursor"]) == ("WAITING", "LIVE", str(base + 1))
    # gone (a socket that dropped): what happens now, it does not see
    await wait_status(nb.id, DeploymentStatus.SUCCESS)
    await compute.deploy(actor, str(other.id))
    await wait_status(other.id, DeploymentStatus.SUCCESS)
    async with ws.connect(server, token=alice.token) as session:
        await session.subscribe(EVENTS, {"p": "ml", "after": first["cursor"]})
        replayed = [(await session.next_data())["computeInstanceEvents"] for _ in range(5)]
        assert _seen(replayed) == [
            ("nb", "IN_PROGRESS", "REPLAY"),
            ("nb", "SUCCESS", "REPLAY"),
            ("other", "WAITING", "REPLAY"),
            ("other", "IN_PROGRESS", "REPLAY"),
            ("other", "SUCCESS", "REPLAY"),
        ]
        assert [e["cursor"] for e in replayed] == [str(base + n) for n in range(2, 7)]
        # then live, with no gap and no repeat
        await compute.destroy(actor, str(nb.id))
        live = (await session.next_data())["computeInstanceEvents"]
        assert (live["instance"]["name"], live["source"], live["cursor"]) == ("nb", "LIVE", str(base + 7))
    # one instance's subscription replays that instance's events only
    async with ws.connect(server, token=alice.token) as session:
        await session.subscribe(STATUS, {"id": str(other.id), "after": str(base + 4)})
        events = [(await session.next_data())["computeInstanceStatus"] for _ in range(2)]
        assert _seen(events) == [("other", "IN_PROGRESS", "REPLAY"), ("other", "SUCCESS", "REPLAY")]


async def test_a_cursor_past_the_retention_gets_a_snapshot_that_says_so(db: object, server: str) -> None:
    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.MEMBER)
    nb = await make_instance(project, await make_profile(project), name="nb", by=alice, deploy=True)
    await wait_status(nb.id, DeploymentStatus.SUCCESS)
    head = await OutboxMessage.filter(project_id=project.id).order_by("-cursor").first()
    assert head is not None and head.cursor is not None
    await OutboxMessage.filter(project_id=project.id, cursor__lte=2).delete()  # swept
    for query, variables, field in (
        (STATUS, {"id": str(nb.id), "after": "1"}, "computeInstanceStatus"),
        (EVENTS, {"p": "ml", "after": "1"}, "computeInstanceEvents"),
        (EVENTS, {"p": "ml", "after": "9999"}, "computeInstanceEvents"),  # never given out
    ):
        async with ws.connect(server, token=alice.token) as session:
            await session.subscribe(query, variables)
            event = (await session.next_data())[field]
            assert (event["status"], event["source"], event["missedEvents"], event["cursor"]) == (
                "SUCCESS",
                "SNAPSHOT",
                True,
                str(head.cursor),
            )
    async with ws.connect(server, token=alice.token) as session:
        await session.subscribe(STATUS, {"id": str(nb.id), "after": "yesterday"})
        message = await session.receive()
        assert message["type"] == "next" and message["payload"]["data"] is None
        error = message["payload"]["errors"][0]
        assert error["extensions"]["code"] == "INVALID"
        assert "is not a status cursor" in error["message"]
