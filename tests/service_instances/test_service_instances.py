"""Service instances through the API (no worker runs here: statuses move only by requests, or are set
directly where a test needs one): creation and its checks, GPU quota, every wrong state, the
generated token, connect links, visibility, and the compute instance's side."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from gpupaas.bootstrap import seed
from gpupaas.catalog.service.profiles import ResourcesIn
from gpupaas.clusters.models import Cluster
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.core.gpus import Vendor
from gpupaas.events.models import OutboxMessage
from gpupaas.instance_templates.models import InstanceTemplate
from gpupaas.runs.models import DeploymentRun
from gpupaas.runs.states import RunAction
from gpupaas.service_instances.models import ServiceInstance
from gpupaas.service_instances.states import ServiceStatus
from tests.conftest import GraphQLClient
from tests.factories import Person, make_instance, make_profile, make_project, make_user

FIELDS = """
id name displayName image imagePullPolicy command containerDisk mountPath gpuCount status statusMessage
ports { name port protocol accessParams { key value } } env { key value }
template { name } templateName computeInstance { name } project { name } connect { port url }
"""
CREATE = (
    "mutation($input: CreateServiceInstanceInput!) { createServiceInstance(input: $input) {"
    f" serviceInstance {{ {FIELDS} }} userErrors {{ field message code }} }} }}"
)
ACT = "mutation($id: ID!) { %s(id: $id) { serviceInstance { id status } userErrors { field message code } } }"
DELETE = (
    "mutation($id: ID!) { deleteServiceInstance(id: $id) { deletedId userErrors { field message code } } }"
)
ONE = f"query($id: ID!) {{ serviceInstance(id: $id) {{ {FIELDS} }} }}"
LIST = """query($p: String!, $c: ID, $first: Int, $after: String) {
  serviceInstances(project: $p, computeInstance: $c, first: $first, after: $after) {
    totalCount edges { cursor node { name } } pageInfo { hasNextPage endCursor }
  }
}"""


@dataclass
class World:
    alice: Person  # a member of "ml"
    box: ComputeInstance  # deployed, 2 NVIDIA GPUs
    templates: dict[str, str]  # built-in name -> id


@pytest.fixture
async def world(db: object) -> World:
    await seed()
    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.MEMBER)
    resources = ResourcesIn(cpu="8", memory="64Gi", storage="200Gi", gpu_count=2, gpu_vendor=Vendor.NVIDIA)
    box = await make_instance(project, await make_profile(project, resources=resources), name="box", by=alice)
    await ComputeInstance.filter(id=box.id).update(status=DeploymentStatus.SUCCESS)
    box = await ComputeInstance.get(id=box.id)
    templates = {t.name: str(t.id) for t in await InstanceTemplate.filter(built_in=True)}
    return World(alice=alice, box=box, templates=templates)


async def create(gql: GraphQLClient, w: World, token: str | None = None, **fields: Any) -> dict[str, Any]:
    data = {"project": "ml", "computeInstance": str(w.box.id), "template": w.templates["jupyterlab-pytorch"]}
    data.update(fields)
    body = await gql.data(CREATE, {"input": data}, token=token or w.alice.token)
    return body["createServiceInstance"]  # type: ignore[no-any-return]


def errors(payload: dict[str, Any]) -> list[tuple[str, str]]:
    return [(".".join(e["field"] or []), e["code"]) for e in payload["userErrors"]]


async def act(gql: GraphQLClient, w: World, mutation: str, service_id: str) -> dict[str, Any]:
    return (await gql.data(ACT % mutation, {"id": service_id}, token=w.alice.token))[mutation]  # type: ignore[no-any-return]


async def set_status(service_id: str, status: ServiceStatus) -> None:
    await ServiceInstance.filter(id=service_id).update(status=status)


# ---------------------------------------------------------------- create


async def test_create_copies_the_template_and_queues_a_start(gql: GraphQLClient, world: World) -> None:
    payload = await create(gql, world, name="notebook", displayName="My notebook")
    assert payload["userErrors"] == []
    service = payload["serviceInstance"]
    template = await InstanceTemplate.get(name="jupyterlab-pytorch")
    assert service["status"] == "PENDING"
    assert service["gpuCount"] == 1  # a GPU template: one GPU unless told
    assert service["image"] == template.image
    assert service["command"] == template.command  # shown as written, placeholders and all
    assert service["ports"][0]["accessParams"] == [{"key": "token", "value": "{{generated_token}}"}]
    assert service["template"] == {"name": "jupyterlab-pytorch"}
    assert service["computeInstance"] == {"name": "box"}
    assert service["connect"] == []  # no node port before its first start
    run = await DeploymentRun.get(service_id=service["id"])
    assert run.action == RunAction.START and run.instance_id == world.box.id
    commands = await OutboxMessage.filter(key=service["id"], topic="gpupaas.commands")
    assert [c.payload["type"] for c in commands] == ["service-run"]

    # Later edits of the template do not change the instance's copy.
    await InstanceTemplate.filter(id=template.id).update(image="other:1")
    again = (await gql.data(ONE, {"id": service["id"]}, token=world.alice.token))["serviceInstance"]
    assert again["image"] == service["image"]
    # Nor does deleting the template: the instance keeps its spec and its template's name.
    await InstanceTemplate.filter(id=template.id).delete()
    again = (await gql.data(ONE, {"id": service["id"]}, token=world.alice.token))["serviceInstance"]
    assert again["template"] is None and again["templateName"] == "jupyterlab-pytorch"


async def test_create_with_the_callers_command_env_ports_and_gpus(gql: GraphQLClient, world: World) -> None:
    payload = await create(
        gql,
        world,
        name="custom",
        template=world.templates["pytorch"],
        gpuCount=2,
        command=["python", "-m", "http.server", "8080"],
        env=[{"key": "MODE", "value": "fast"}],
        ports=[{"name": "http", "port": 8080}],
        start=False,
    )
    assert payload["userErrors"] == []
    service = payload["serviceInstance"]
    assert service["status"] == "STOPPED"  # start: false
    assert service["gpuCount"] == 2
    assert service["command"] == ["python", "-m", "http.server", "8080"]
    assert service["env"] == [{"key": "MODE", "value": "fast"}]
    # the template's SSH access stays, and with it its SSH port
    assert service["ports"] == [
        {"name": "http", "port": 8080, "protocol": "TCP", "accessParams": []},
        {"name": "SSH", "port": 22, "protocol": "TCP", "accessParams": []},
    ]
    assert not await DeploymentRun.exists(service_id=service["id"])


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"name": "Not A Name"}, [("input.name", "INVALID")]),
        ({"name": "x" * 54}, [("input.name", "INVALID")]),
        ({"name": "ok", "displayName": "x" * 500}, [("input.displayName", "INVALID")]),
        ({"name": "ok", "gpuCount": -1}, [("input.gpuCount", "INVALID")]),
        ({"name": "ok", "gpuCount": 3}, [("input.gpuCount", "QUOTA_EXCEEDED")]),
        ({"name": "ok", "template": "pytorch-rocm"}, [("input.gpuCount", "INVALID")]),
        ({"name": "ok", "template": "ubuntu", "gpuCount": 1}, [("input.gpuCount", "INVALID")]),
        ({"name": "ok", "command": ["run", "{{generated_password}}"]}, [("input.command.1", "INVALID")]),
        ({"name": "ok", "command": ["run", "{{token}}"]}, [("input.command.1", "INVALID")]),
        ({"name": "ok", "env": [{"key": "1BAD", "value": "v"}]}, [("input.env.0.key", "INVALID")]),
        ({"name": "ok", "ports": [{"name": "web", "port": 70000}]}, [("input.ports.0.port", "INVALID")]),
        ({"name": "ok", "template": "nope"}, [("input.template", "NOT_FOUND")]),
        ({"name": "ok", "computeInstance": "nope"}, [("input.computeInstance", "NOT_FOUND")]),
    ],
)
async def test_create_refuses_bad_input_with_the_field(
    gql: GraphQLClient, world: World, fields: dict[str, Any], expected: list[tuple[str, str]]
) -> None:
    template = fields.get("template")
    if template in world.templates:
        fields["template"] = world.templates[template]
    payload = await create(gql, world, **fields)
    assert payload["serviceInstance"] is None
    assert errors(payload) == expected, payload["userErrors"]
    assert all(e["message"] for e in payload["userErrors"])
    assert await ServiceInstance.all().count() == 0


async def test_unknown_placeholders_are_refused_with_what_is_known(gql: GraphQLClient, world: World) -> None:
    payload = await create(gql, world, name="x", env=[{"key": "PASSWORD", "value": "{{generated_password}}"}])
    (error,) = payload["userErrors"]
    assert 'unknown placeholder "generated_password"' in error["message"]
    assert "{{generated_token}}" in error["message"]


async def test_create_needs_a_deployed_compute_instance(gql: GraphQLClient, world: World) -> None:
    await ComputeInstance.filter(id=world.box.id).update(status=DeploymentStatus.FAILED)
    payload = await create(gql, world, name="nb")
    assert errors(payload) == [("input.computeInstance", "INVALID_STATE")]
    assert "SUCCESS" in payload["userErrors"][0]["message"]


async def test_names_are_unique_per_compute_instance(gql: GraphQLClient, world: World) -> None:
    assert (await create(gql, world, name="nb", gpuCount=0))["userErrors"] == []
    assert errors(await create(gql, world, name="nb", gpuCount=0)) == [("input.name", "TAKEN")]
    project = await world.box.project
    second = await make_instance(project, await make_profile(project), name="second", by=world.alice)
    await ComputeInstance.filter(id=second.id).update(status=DeploymentStatus.SUCCESS)
    assert (await create(gql, world, name="nb", computeInstance=str(second.id)))["userErrors"] == []


# ---------------------------------------------------------------- GPU quota


async def test_gpus_must_fit_what_the_compute_instance_has_left(gql: GraphQLClient, world: World) -> None:
    first = (await create(gql, world, name="a", gpuCount=2))["serviceInstance"]
    payload = await create(gql, world, name="b", gpuCount=1)
    assert errors(payload) == [("input.gpuCount", "QUOTA_EXCEEDED")]
    assert "2 of them used" in payload["userErrors"][0]["message"]
    # Without GPUs it fits; created STOPPED it is not counted until it starts.
    assert (await create(gql, world, name="c", gpuCount=0))["userErrors"] == []
    later = (await create(gql, world, name="d", gpuCount=1, start=False))["serviceInstance"]
    assert later["status"] == "STOPPED"
    refused = await act(gql, world, "startServiceInstance", later["id"])
    assert errors(refused) == [("id", "QUOTA_EXCEEDED")]
    # A stopped service gives its GPUs back.
    await set_status(first["id"], ServiceStatus.STOPPED)
    assert (await act(gql, world, "startServiceInstance", later["id"]))["userErrors"] == []


# ---------------------------------------------------------------- lifecycle and wrong states


@pytest.mark.parametrize(
    ("status", "mutation", "allowed", "after"),
    [
        (ServiceStatus.STOPPED, "startServiceInstance", True, "PENDING"),
        (ServiceStatus.FAILED, "startServiceInstance", True, "PENDING"),
        (ServiceStatus.RUNNING, "startServiceInstance", False, None),
        (ServiceStatus.PENDING, "startServiceInstance", False, None),
        (ServiceStatus.RUNNING, "stopServiceInstance", True, "STOPPING"),
        (ServiceStatus.FAILED, "stopServiceInstance", True, "STOPPING"),
        (ServiceStatus.STOPPED, "stopServiceInstance", False, None),
        (ServiceStatus.STARTING, "stopServiceInstance", False, None),
        (ServiceStatus.RUNNING, "restartServiceInstance", True, "PENDING"),
        (ServiceStatus.STOPPED, "restartServiceInstance", False, None),
        (ServiceStatus.STOPPING, "restartServiceInstance", False, None),
        (ServiceStatus.DELETING, "startServiceInstance", False, None),
        (ServiceStatus.DELETING, "stopServiceInstance", False, None),
    ],
)
async def test_requests_follow_the_state_machine(
    gql: GraphQLClient,
    world: World,
    status: ServiceStatus,
    mutation: str,
    allowed: bool,
    after: str | None,
) -> None:
    service = (await create(gql, world, name="nb", start=False))["serviceInstance"]
    await set_status(service["id"], status)
    payload = await act(gql, world, mutation, service["id"])
    if allowed:
        assert payload["userErrors"] == []
        assert payload["serviceInstance"]["status"] == after
        run = await DeploymentRun.filter(service_id=service["id"]).order_by("-created_at").first()
        assert run is not None and run.action.value == mutation.removesuffix("ServiceInstance").upper()
    else:
        assert errors(payload) == [("id", "INVALID_STATE")]
        assert status.value in payload["userErrors"][0]["message"]
        assert (await ServiceInstance.get(id=service["id"])).status == status


async def test_start_and_restart_need_a_deployed_compute_instance(gql: GraphQLClient, world: World) -> None:
    service = (await create(gql, world, name="nb", start=False))["serviceInstance"]
    await ComputeInstance.filter(id=world.box.id).update(status=DeploymentStatus.FAILED)
    assert errors(await act(gql, world, "startServiceInstance", service["id"])) == [("id", "INVALID_STATE")]
    await set_status(service["id"], ServiceStatus.RUNNING)
    assert errors(await act(gql, world, "restartServiceInstance", service["id"])) == [("id", "INVALID_STATE")]
    # Stopping frees the GPUs whatever the compute instance's state.
    assert (await act(gql, world, "stopServiceInstance", service["id"]))["userErrors"] == []


async def test_delete_from_any_status_and_twice(gql: GraphQLClient, world: World) -> None:
    never_started = (await create(gql, world, name="a", start=False))["serviceInstance"]
    deleted = (await gql.data(DELETE, {"id": never_started["id"]}, token=world.alice.token))[
        "deleteServiceInstance"
    ]
    assert deleted == {"deletedId": never_started["id"], "userErrors": []}
    assert not await ServiceInstance.exists(id=never_started["id"])  # nothing on the cluster: gone at once

    for status in (ServiceStatus.PENDING, ServiceStatus.RUNNING, ServiceStatus.FAILED, ServiceStatus.STOPPED):
        service = (await create(gql, world, name=f"s-{status.value.lower()}", gpuCount=0))["serviceInstance"]
        await set_status(service["id"], status)
        first = (await gql.data(DELETE, {"id": service["id"]}, token=world.alice.token))[
            "deleteServiceInstance"
        ]
        assert first["userErrors"] == []
        assert (await ServiceInstance.get(id=service["id"])).status == ServiceStatus.DELETING
        second = (await gql.data(DELETE, {"id": service["id"]}, token=world.alice.token))[
            "deleteServiceInstance"
        ]
        assert second == {"deletedId": service["id"], "userErrors": []}  # idempotent
        runs = await DeploymentRun.filter(service_id=service["id"], action=RunAction.DESTROY)
        assert len(runs) == 1 and runs[0].delete_after


# ---------------------------------------------------------------- the token and connect links


async def test_the_token_is_generated_once_encrypted_and_in_the_link(
    gql: GraphQLClient, world: World
) -> None:
    one = (await create(gql, world, name="a", gpuCount=1))["serviceInstance"]
    two = (await create(gql, world, name="b", gpuCount=1))["serviceInstance"]
    rows = {row.name: row for row in await ServiceInstance.all()}
    for row in rows.values():
        assert row.generated and "generated_token" not in row.generated  # encrypted at rest
    # The worker stores the node ports after a start; here they are set as it would.
    await ServiceInstance.filter(id=one["id"]).update(node_ports={"jupyter": 31234})
    await ServiceInstance.filter(id=two["id"]).update(node_ports={"jupyter": 31235})
    links = {}
    for service in (one, two):
        found = (await gql.data(ONE, {"id": service["id"]}, token=world.alice.token))["serviceInstance"]
        (link,) = found["connect"]
        assert link["port"] == "jupyter"
        links[service["id"]] = link["url"]
    url = urlsplit(links[one["id"]])
    assert (url.scheme, url.hostname, url.port, url.path) == ("http", "127.0.0.1", 31234, "/")
    token = parse_qs(url.query)["token"][0]
    assert len(token) == 32 and all(c in "0123456789abcdef" for c in token)
    assert token not in rows["a"].generated and token not in str(rows["a"].spec)
    assert parse_qs(urlsplit(links[two["id"]]).query)["token"][0] != token  # one value per instance

    # Stop and start keep it.
    await set_status(one["id"], ServiceStatus.RUNNING)
    await act(gql, world, "stopServiceInstance", one["id"])
    await set_status(one["id"], ServiceStatus.STOPPED)
    await act(gql, world, "startServiceInstance", one["id"])
    found = (await gql.data(ONE, {"id": one["id"]}, token=world.alice.token))["serviceInstance"]
    assert found["connect"][0]["url"] == links[one["id"]]

    # The cluster's access address decides the host; none means no links.
    await Cluster.filter(is_default=True).update(access_address="https://gpu.example.com")
    found = (await gql.data(ONE, {"id": one["id"]}, token=world.alice.token))["serviceInstance"]
    assert found["connect"][0]["url"].startswith("https://gpu.example.com:31234/?token=")
    await Cluster.filter(is_default=True).update(access_address=None)
    found = (await gql.data(ONE, {"id": one["id"]}, token=world.alice.token))["serviceInstance"]
    assert found["connect"] == []


# ---------------------------------------------------------------- reading and rights


async def test_lists_and_the_compute_instances_services(gql: GraphQLClient, world: World) -> None:
    for name in ("a", "b", "c"):
        await create(gql, world, name=name, gpuCount=0)
    page = (await gql.data(LIST, {"p": "ml", "first": 2}, token=world.alice.token))["serviceInstances"]
    assert page["totalCount"] == 3 and [e["node"]["name"] for e in page["edges"]] == ["c", "b"]
    rest = (
        await gql.data(LIST, {"p": "ml", "after": page["pageInfo"]["endCursor"]}, token=world.alice.token)
    )["serviceInstances"]
    assert [e["node"]["name"] for e in rest["edges"]] == ["a"]
    by_box = (await gql.data(LIST, {"p": "ml", "c": str(world.box.id)}, token=world.alice.token))[
        "serviceInstances"
    ]
    assert by_box["totalCount"] == 3
    query = "query($id: ID!) { computeInstance(id: $id) { services { name status } } }"
    services = (await gql.data(query, {"id": str(world.box.id)}, token=world.alice.token))["computeInstance"]
    assert [s["name"] for s in services["services"]] == ["c", "b", "a"]


async def test_other_projects_see_nothing(gql: GraphQLClient, world: World) -> None:
    service = (await create(gql, world, name="nb"))["serviceInstance"]
    carol = await make_user("carol")
    other = await make_project("other", carol=Role.MEMBER)
    assert (await gql.data(ONE, {"id": service["id"]}, token=carol.token))["serviceInstance"] is None
    for mutation in ("startServiceInstance", "stopServiceInstance", "restartServiceInstance"):
        payload = (await gql.data(ACT % mutation, {"id": service["id"]}, token=carol.token))[mutation]
        assert errors(payload) == [("id", "NOT_FOUND")]
    # Nor can they run services in another project's compute instance, or use its templates.
    payload = await create(gql, world, token=carol.token, project="other", name="x")
    assert errors(payload) == [("input.computeInstance", "NOT_FOUND")]
    own = await make_instance(other, await make_profile(other), name="own", by=carol)
    await ComputeInstance.filter(id=own.id).update(status=DeploymentStatus.SUCCESS)
    from gpupaas.instance_templates import service as templates
    from tests.factories import platform_actor

    private = await templates.create_template(
        await platform_actor(), "ml", templates.TemplateIn(name="private", vendor=Vendor.CPU, image="ubuntu")
    )
    payload = await create(
        gql,
        world,
        token=carol.token,
        project="other",
        computeInstance=str(own.id),
        template=str(private.id),
        name="x",
    )
    assert errors(payload) == [("input.template", "NOT_FOUND")]


async def test_a_compute_instance_with_services_is_not_destroyed_or_deleted(
    gql: GraphQLClient, world: World
) -> None:
    await create(gql, world, name="nb")
    for mutation in ("destroyComputeInstance", "deleteComputeInstance"):
        query = f"mutation($id: ID!) {{ {mutation}(id: $id) {{ userErrors {{ field message code }} }} }}"
        payload = (await gql.data(query, {"id": str(world.box.id)}, token=world.alice.token))[mutation]
        assert [e["code"] for e in payload["userErrors"]] == ["INVALID_STATE"]
        assert "nb" in payload["userErrors"][0]["message"]
    assert (await ComputeInstance.get(id=world.box.id)).status == DeploymentStatus.SUCCESS
