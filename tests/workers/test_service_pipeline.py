"""GPU service instances through the whole pipeline (outbox, bus, worker, simulated cluster), on the
in-process bus and on a real Kafka-protocol broker, watched over a real websocket."""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from gpupaas.bootstrap import seed
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.instance_templates.models import InstanceTemplate
from gpupaas.provisioning.models import SimulatedAllocation
from gpupaas.runs.models import DeploymentRun
from gpupaas.runs.states import RunStatus
from gpupaas.service_instances.models import ServiceInstance
from gpupaas.service_instances.states import ServiceStatus
from tests import ws
from tests.conftest import serving
from tests.factories import Person, make_instance, make_profile, make_project, make_user
from tests.workers.conftest import Pipeline, eventually, wait_status

STATUS = """subscription($id: ID!) {
  serviceInstanceStatus(id: $id) { status message instance { name status connect { port url } } }
}"""
CREATE = """mutation($input: CreateServiceInstanceInput!) {
  createServiceInstance(input: $input) {
    serviceInstance { id status gpuCount command connect { port url } }
    userErrors { field message code }
  }
}"""
ACT = """mutation($id: ID!) {
  %s(id: $id) { serviceInstance { id status } userErrors { field message code } }
}"""
DELETE = "mutation($id: ID!) { deleteServiceInstance(id: $id) { deletedId userErrors { code message } } }"
ONE = """query($id: ID!) {
  serviceInstance(id: $id) { status statusMessage connect { port url } computeInstance { name } }
}"""


@pytest.fixture
async def server(pipeline: Pipeline) -> AsyncIterator[str]:
    from gpupaas.app import create_app

    await seed()
    async with serving(create_app(pipeline.settings, migrate=False, runtime=pipeline.runtime)) as url:
        yield url


async def _post(url: str, person: Person, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=url) as http:
        response = await http.post(
            "/graphql",
            json={"query": query, "variables": variables},
            headers={"authorization": f"Bearer {person.token}"},
        )
    body: dict[str, Any] = response.json()
    assert "errors" not in body, body
    data: dict[str, Any] = body["data"]
    return data


async def _create(url: str, person: Person, box: object, template: str, name: str) -> dict[str, Any]:
    """createServiceInstance from a built-in template, as `person`."""
    found = await InstanceTemplate.get(name=template)
    variables = {"project": "ml", "computeInstance": str(box), "template": str(found.id), "name": name}
    return await _post(url, person, CREATE, {"input": variables})


async def _statuses_until(session: ws.Session, *final: str) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    while not seen or seen[-1]["status"] not in final:
        seen.append((await session.next_data())["serviceInstanceStatus"])
    return seen


async def _answers(url: str, status: int | None) -> bool:
    """Whether `url` answers with `status` (None: nothing listens there)."""
    try:
        async with httpx.AsyncClient(timeout=1) as http:
            response = await http.get(url)
    except (httpx.ConnectError, httpx.ReadError, httpx.ReadTimeout, httpx.RemoteProtocolError):
        # Refused, or reset/closed/never answered: a connection accepted while the endpoint was
        # closing (asyncio drops it). Nothing answers there.
        return status is None
    return response.status_code == status


async def _token_of(links: list[dict[str, str]]) -> str:
    (jupyter,) = [link for link in links if link["port"] == "jupyter"]
    parts = urlsplit(jupyter["url"])
    assert parts.scheme == "http" and parts.hostname == "127.0.0.1"
    assert 30000 <= (parts.port or 0) <= 32767  # the Service's node port
    (token,) = parse_qs(parts.query)["token"]
    return token


async def test_jupyterlab_runs_stops_and_starts_with_the_same_token(db: object, server: str) -> None:
    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.MEMBER)
    box = await make_instance(project, await make_profile(project), name="box", deploy=True, by=alice)
    await wait_status(box.id, DeploymentStatus.SUCCESS)
    created = await _create(server, alice, box.id, "jupyterlab-pytorch", "notebook")
    payload = created["createServiceInstance"]
    assert payload["userErrors"] == []
    service = payload["serviceInstance"]
    assert service["gpuCount"] == 1
    assert any("{{generated_token}}" in item for item in service["command"])  # shown as written

    async with ws.connect(server, token=alice.token) as session:
        await session.subscribe(STATUS, {"id": service["id"]})
        seen = await _statuses_until(session, "RUNNING", "FAILED")
        statuses = [event["status"] for event in seen]
        # The first event is the current state, which may already be past PENDING.
        assert statuses[-1] == "RUNNING", seen
        assert statuses == sorted(statuses, key=["PENDING", "STARTING", "RUNNING"].index)
        token = await _token_of(seen[-1]["instance"]["connect"])
        assert len(token) == 32 and int(token, 16) >= 0
        link = seen[-1]["instance"]["connect"][0]["url"]
        # The simulated cluster answers at the link, checking the token as JupyterLab would, from
        # the moment RUNNING is shown.
        assert await _answers(link, 200)
        assert await _answers(link.replace(token, "0" * 32), 403)

        stopped = await _post(server, alice, ACT % "stopServiceInstance", {"id": service["id"]})
        assert stopped["stopServiceInstance"]["serviceInstance"]["status"] == "STOPPING"
        seen = await _statuses_until(session, "STOPPED", "FAILED")
        assert [event["status"] for event in seen] == ["STOPPING", "STOPPED"]
        assert seen[-1]["instance"]["connect"] == []  # a stopped service shows no Connect link
        await eventually(lambda: _answers(link, None), what="the stopped service's link to close")

        # Stopped: the pod is gone and its GPU is free again, the Service keeps its node port.
        row = await SimulatedAllocation.get(instance_id=service["id"])
        assert row.gpu_count == 0
        deployment = next(obj for obj in row.objects if obj["kind"] == "Deployment")
        assert deployment["spec"]["replicas"] == 0

        started = await _post(server, alice, ACT % "startServiceInstance", {"id": service["id"]})
        assert started["startServiceInstance"]["serviceInstance"]["status"] == "PENDING"
        seen = await _statuses_until(session, "RUNNING", "FAILED")
        assert [event["status"] for event in seen] == ["PENDING", "STARTING", "RUNNING"]
        assert await _token_of(seen[-1]["instance"]["connect"]) == token  # the same token
        assert await _answers(link, 200)  # the started service's link answers again at once

        restarted = await _post(server, alice, ACT % "restartServiceInstance", {"id": service["id"]})
        assert restarted["restartServiceInstance"]["userErrors"] == []
        seen = await _statuses_until(session, "RUNNING", "FAILED")
        assert [event["status"] for event in seen] == ["PENDING", "STARTING", "RUNNING"]
        row = await SimulatedAllocation.get(instance_id=service["id"])
        deployment = next(obj for obj in row.objects if obj["kind"] == "Deployment")
        assert deployment["spec"]["template"]["metadata"]["annotations"]  # a new pod was rolled out
        assert await _token_of(seen[-1]["instance"]["connect"]) == token

        # The pod's command reads the token of the link from the service's Secret: the Deployment
        # holds none, the Secret's data holds it (as a cluster keeps a Secret).
        container = deployment["spec"]["template"]["spec"]["containers"][0]
        assert "--ServerApp.token=$(GPUPAAS_GENERATED_TOKEN)" in container["command"]
        assert token not in json.dumps(row.objects)
        secret = next(obj for obj in row.objects if obj["kind"] == "Secret")
        assert base64.b64decode(secret["data"]["generated_token"]).decode() == token

        deleted = await _post(server, alice, DELETE, {"id": service["id"]})
        assert deleted["deleteServiceInstance"]["deletedId"] == service["id"]
        while True:
            message = await session.receive()
            if message["type"] == "complete":
                break
            assert message["payload"]["data"]["serviceInstanceStatus"]["status"] == "DELETING"

    async def gone() -> bool:
        return not await ServiceInstance.exists(id=service["id"])

    await eventually(gone, what="the service instance to be removed")
    assert not await SimulatedAllocation.exists(instance_id=service["id"])
    # The compute instance and its own objects are untouched.
    assert await SimulatedAllocation.exists(instance_id=str(box.id))
    assert (await wait_status(box.id, DeploymentStatus.SUCCESS)).status == DeploymentStatus.SUCCESS


async def test_a_failing_start_is_failed_with_the_reason_and_can_be_stopped(db: object, server: str) -> None:
    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.MEMBER)
    box = await make_instance(
        project,
        await make_profile(project),
        name="box",
        deploy=True,
        annotations=[("simulated.gpupaas.io/service-fail", "apply")],
        by=alice,
    )
    await wait_status(box.id, DeploymentStatus.SUCCESS)
    created = await _create(server, alice, box.id, "pytorch", "t")
    service_id = created["createServiceInstance"]["serviceInstance"]["id"]

    async def failed() -> bool:
        found = await ServiceInstance.get(id=service_id)
        return found.status == ServiceStatus.FAILED

    await eventually(failed, what="the service instance to fail")
    one = (await _post(server, alice, ONE, {"id": service_id}))["serviceInstance"]
    assert "image pull back-off" in one["statusMessage"]
    stopped = await _post(server, alice, ACT % "stopServiceInstance", {"id": service_id})
    assert stopped["stopServiceInstance"]["userErrors"] == []


async def test_delete_during_a_start_waits_for_it_and_removes_everything(db: object, server: str) -> None:
    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.MEMBER)
    box = await make_instance(project, await make_profile(project), name="box", deploy=True, by=alice)
    await wait_status(box.id, DeploymentStatus.SUCCESS)
    created = await _create(server, alice, box.id, "jupyterlab-pytorch", "nb")
    service_id = created["createServiceInstance"]["serviceInstance"]["id"]
    # Deleted at once, while its start is queued or under way: delete never waits for the caller.
    deleted = await _post(server, alice, DELETE, {"id": service_id})
    assert deleted["deleteServiceInstance"]["deletedId"] == service_id
    again = await _post(server, alice, DELETE, {"id": service_id})  # idempotent
    assert again["deleteServiceInstance"]["userErrors"] == []

    async def gone() -> bool:
        return not await ServiceInstance.exists(id=service_id)

    await eventually(gone, what="the service instance to be removed")
    assert not await SimulatedAllocation.exists(instance_id=service_id)
    assert not await DeploymentRun.exists(service_id=service_id, status=RunStatus.RUNNING)
