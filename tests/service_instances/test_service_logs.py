"""A service instance's container logs and events, and a compute instance's events, through the
real websocket (graphql-transport-ws) and the queries, on the simulated cluster: its start
command's lifecycle lines and a real cluster's events, live; who may read them; bad arguments."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import httpx
import pytest

from gpupaas.app import create_app
from gpupaas.bootstrap import seed
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.instance_templates.models import InstanceTemplate
from gpupaas.provisioning.drivers.simulated.driver import SimulatedDriver
from gpupaas.provisioning.inventory import DEFAULT_INVENTORY
from gpupaas.runtime import Runtime
from gpupaas.service_instances.models import ServiceInstance
from gpupaas.service_instances.states import ServiceStatus
from gpupaas.settings import Settings
from tests import ws
from tests.conftest import serving
from tests.factories import (
    Person,
    make_instance,
    make_profile,
    make_project,
    make_template,
    make_user,
    make_version,
)
from tests.workers.conftest import eventually, fast, wait_status

LOGS = """subscription($id: ID!, $tail: Int, $follow: Boolean, $previous: Boolean, $container: String) {
  serviceInstanceLogs(id: $id, tailLines: $tail, follow: $follow, previous: $previous, container: $container) {
    lines { at text pod container }
    containers
  }
}"""
EVENTS = """subscription($id: ID!) {
  serviceInstanceClusterEvents(id: $id) { name type reason message objectKind objectName count firstAt lastAt }
}"""
COMPUTE_EVENTS = """subscription($id: ID!) {
  computeInstanceClusterEvents(id: $id) { name type reason objectKind objectName }
}"""
DOWNLOAD = """query($id: ID!, $tail: Int) {
  serviceInstanceLogs(id: $id, tailLines: $tail) { text containers lines { text } }
}"""
EVENTS_NOW = "query($id: ID!) { serviceInstanceClusterEvents(id: $id) { reason objectKind } }"
COMPUTE_EVENTS_NOW = (
    "query($id: ID!) { computeInstanceClusterEvents(id: $id) { reason objectKind objectName } }"
)
STOP = "mutation($id: ID!) { stopServiceInstance(id: $id) { userErrors { message } } }"
CREATE = """mutation($input: CreateServiceInstanceInput!) {
  createServiceInstance(input: $input) { serviceInstance { id } userErrors { field message code } }
}"""

WORKLOAD = """\
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
  labels:
    team: "{{ inputs.team }}"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: trainer
  namespace: "{{ instance.namespace }}"
spec:
  replicas: 1
  selector: {matchLabels: {app: trainer}}
  template:
    metadata: {labels: {app: trainer}}
    spec:
      containers:
      - name: main
        image: "nvcr.io/nvidia/pytorch:24.01-py3"
"""


@pytest.fixture
async def server(db: object, settings: Settings) -> AsyncIterator[str]:
    chosen = fast(settings)
    runtime = Runtime(
        chosen,
        run_worker=True,
        driver=SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=0.0, poll_seconds=0.02),
    )
    await runtime.start()
    await seed()
    try:
        async with serving(create_app(chosen, migrate=False, runtime=runtime)) as url:
            yield url
    finally:
        await runtime.stop()


async def post(url: str, person: Person, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    async with httpx.AsyncClient(base_url=url) as http:
        response = await http.post(
            "/graphql",
            json={"query": query, "variables": variables},
            headers={"authorization": f"Bearer {person.token}"},
        )
    body: dict[str, Any] = response.json()
    return body


async def data(url: str, person: Person, query: str, variables: dict[str, Any]) -> dict[str, Any]:
    body = await post(url, person, query, variables)
    assert "errors" not in body, body
    found: dict[str, Any] = body["data"]
    return found


async def running_service(url: str, alice: Person, project_name: str = "ml") -> tuple[Any, str]:
    project = await make_project(project_name, alice=Role.MEMBER)
    version = await make_version(await make_template(project), resources=WORKLOAD)
    box = await make_instance(
        project, await make_profile(project, version), name="box", deploy=True, by=alice
    )
    await wait_status(box.id, DeploymentStatus.SUCCESS)
    template = await InstanceTemplate.get(name="jupyterlab-pytorch")
    variables = {
        "project": project_name,
        "computeInstance": str(box.id),
        "template": str(template.id),
        "name": "nb",
    }
    created = (await data(url, alice, CREATE, {"input": variables}))["createServiceInstance"]
    assert created["userErrors"] == []
    service_id = created["serviceInstance"]["id"]

    async def is_running() -> bool:
        return (await ServiceInstance.get(id=service_id)).status == ServiceStatus.RUNNING

    await eventually(is_running, what="the service to run")
    return box, service_id


async def refusal(session: ws.Session, variables: dict[str, Any]) -> dict[str, Any]:
    """The error a logs subscription ends with at once (then it completes)."""
    sid = await session.subscribe(LOGS, variables)
    message = await session.receive()
    assert message["type"] == "next" and message["id"] == sid, message
    assert (await session.receive())["type"] == "complete"
    error: dict[str, Any] = message["payload"]["errors"][0]
    return error


async def lines_until(session: ws.Session, last: str) -> list[str]:
    seen: list[str] = []
    while last not in seen:
        chunk = (await session.next_data())["serviceInstanceLogs"]
        seen.extend(line["text"] for line in chunk["lines"])
    return seen


async def test_the_logs_stream_the_lifecycle_lines_live_and_end_with_the_container(server: str) -> None:
    alice = await make_user("alice")
    _, service_id = await running_service(server, alice)
    async with ws.connect(server, token=alice.token) as session:
        await session.subscribe(LOGS, {"id": service_id})
        chunk = (await session.next_data())["serviceInstanceLogs"]
        first = chunk["lines"]
        assert chunk["containers"] == ["main"]
        texts = [line["text"] for line in first]
        assert texts[0] == 'Pulling image "nvcr.io/nvidia/pytorch:25.01-py3"'
        assert texts[1:2] == ["Started container main"]
        assert texts[2].startswith("$ jupyter lab ") and texts[3] == "Ready: listening on 8888/TCP (jupyter)"
        assert first[0]["at"] and first[0]["container"] == "main" and first[0]["pod"].startswith("nb-")
        # The command reads its token from the pod's Secret: the log does not hold it.
        service = await ServiceInstance.get(id=service_id)
        assert service.generated and "--ServerApp.token=$(" in texts[2]

        await data(server, alice, STOP, {"id": service_id})
        later = await lines_until(session, "Exited with code 0")
        assert later[-2:] == ["Received SIGTERM: stopping", "Exited with code 0"]
        done = await session.receive()
        assert done["type"] == "complete", done  # the container stopped: its log ended


async def test_events_stream_live_and_a_download_holds_the_log(server: str) -> None:
    alice = await make_user("alice")
    box, service_id = await running_service(server, alice)
    async with ws.connect(server, token=alice.token) as session:
        await session.subscribe(EVENTS, {"id": service_id})
        seen: list[dict[str, Any]] = []
        while not any(e["reason"] == "Started" for e in seen):
            seen.append((await session.next_data())["serviceInstanceClusterEvents"])
        assert [(e["objectKind"], e["reason"]) for e in seen][:3] == [
            ("Deployment", "ScalingReplicaSet"),
            ("ReplicaSet", "SuccessfulCreate"),
            ("Pod", "Scheduled"),
        ]
        assert all(e["type"] == "NORMAL" and e["count"] == 1 and e["firstAt"] for e in seen)
        assert not any(e["objectName"] == "trainer" or e["objectName"].startswith("trainer-") for e in seen)

        download = (await data(server, alice, DOWNLOAD, {"id": service_id}))["serviceInstanceLogs"]
        assert download["text"].splitlines()[-1].endswith(" Ready: listening on 8888/TCP (jupyter)")
        assert download["text"].splitlines()[0].split(" ", 1)[0].startswith("20")  # its time first
        tail = (await data(server, alice, DOWNLOAD, {"id": service_id, "tail": 1}))["serviceInstanceLogs"]
        assert [line["text"] for line in tail["lines"]] == ["Ready: listening on 8888/TCP (jupyter)"]
        assert download["containers"] == tail["containers"] == ["main"]

        await data(server, alice, STOP, {"id": service_id})
        while not any(e["reason"] == "Killing" for e in seen):
            seen.append((await session.next_data())["serviceInstanceClusterEvents"])
        (killing,) = [e for e in seen if e["reason"] == "Killing"]
        assert killing["objectKind"] == "Pod" and killing["message"] == "Stopping container main"

    now = (await data(server, alice, EVENTS_NOW, {"id": service_id}))["serviceInstanceClusterEvents"]
    assert ("Pod", "Killing") in {(e["objectKind"], e["reason"]) for e in now}
    # The compute instance's own events: its Deployment's pod, not the service's.
    mine = (await data(server, alice, COMPUTE_EVENTS_NOW, {"id": str(box.id)}))[
        "computeInstanceClusterEvents"
    ]
    assert ("Deployment", "ScalingReplicaSet") in {(e["objectKind"], e["reason"]) for e in mine}
    assert {e["objectName"].split("-")[0] for e in mine} == {"trainer"}


async def test_a_compute_instances_events_arrive_as_it_deploys(server: str) -> None:
    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.MEMBER)
    version = await make_version(await make_template(project), resources=WORKLOAD)
    box = await make_instance(project, await make_profile(project, version), name="box", by=alice)
    async with ws.connect(server, token=alice.token) as session:
        await session.subscribe(COMPUTE_EVENTS, {"id": str(box.id)})
        from gpupaas.accounts.service import actor_for
        from gpupaas.compute import service as compute

        await compute.deploy(await actor_for(alice.user), str(box.id))
        seen: list[dict[str, Any]] = []
        while not any(e["reason"] == "Started" for e in seen):
            seen.append((await session.next_data())["computeInstanceClusterEvents"])
        assert ("Pod", "Scheduled") in {(e["objectKind"], e["reason"]) for e in seen}


async def test_who_may_read_them_and_bad_arguments(server: str, settings: Settings) -> None:
    alice, bob, admin, stranger = [await make_user(n) for n in ("alice", "bob", "boss", "stranger")]
    _, service_id = await running_service(server, alice)
    project_name = "ml"
    from gpupaas.accounts.models import Project
    from tests.factories import add_member

    project = await Project.get(name=project_name)
    await add_member(project, bob, Role.MEMBER)
    await add_member(project, admin, Role.ADMIN)

    # Another member sees the service and its events, but not its log (it may hold its token).
    assert (await data(server, bob, EVENTS_NOW, {"id": service_id}))["serviceInstanceClusterEvents"]
    refused = await post(server, bob, DOWNLOAD, {"id": service_id})
    assert refused["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert (
        'Only the owner of service instance "nb" and its project\'s admins read its logs'
        in refused["errors"][0]["message"]
    )
    assert (await data(server, admin, DOWNLOAD, {"id": service_id}))["serviceInstanceLogs"]["lines"]
    # Outside the project nothing is there.
    for query in (DOWNLOAD, EVENTS_NOW):
        missing = await post(server, stranger, query, {"id": service_id})
        assert missing["errors"][0]["extensions"]["code"] == "NOT_FOUND", missing
    async with ws.connect(server, token=bob.token) as session:
        assert (await refusal(session, {"id": service_id}))["extensions"]["code"] == "FORBIDDEN"
    async with ws.connect(server, token=alice.token) as session:
        for tail in (0, 10001):
            error = await refusal(session, {"id": service_id, "tail": tail})
            assert error["message"] == f"tailLines must be between 1 and 10000, not {tail}."
            assert error["extensions"]["code"] == "INVALID"
        error = await refusal(session, {"id": service_id, "previous": True})
        assert error["extensions"]["code"] == "UNAVAILABLE"
        assert 'previous terminated container "main" in pod "nb-' in error["message"]
        error = await refusal(session, {"id": service_id, "container": "Bad Name"})
        assert error["extensions"]["code"] == "INVALID" and "is not a container name" in error["message"]
        error = await refusal(session, {"id": service_id, "container": "sidecar"})
        assert (
            error["extensions"]["code"] == "UNAVAILABLE"
            and "container sidecar is not valid" in error["message"]
        )

    # Members who may not see each other's instances do not see its events either.
    hidden = replace(settings, members_see_all_instances=False)
    async with serving(create_app(hidden, migrate=False)) as other:
        missing = await post(other, bob, EVENTS_NOW, {"id": service_id})
        assert missing["errors"][0]["extensions"]["code"] == "NOT_FOUND"
