"""Owners of GPU service instances, through the API: the creator owns it; only those who manage a
compute instance run services in it; only a service's owner and the project's admins start, stop,
restart or delete it and see its connect links' access params (the JupyterLab token), over HTTP
and over the websocket; admins give it to another member; the lists filter on "mine"; and with
GPUPAAS_MEMBERS_SEE_ALL_INSTANCES off a MEMBER sees only their own."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from gpupaas.app import create_app
from gpupaas.catalog.service.profiles import ResourcesIn
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.core.gpus import Vendor
from gpupaas.instance_templates.models import InstanceTemplate
from gpupaas.runtime import Runtime
from gpupaas.service_instances.models import ServiceInstance
from gpupaas.service_instances.states import ServiceStatus
from gpupaas.settings import Settings
from tests import ws
from tests.conftest import GraphQLClient, serving
from tests.factories import Person, make_instance, make_profile, make_project, make_user

CREATE = """mutation($c: ID!, $t: ID!, $n: String!) {
  createServiceInstance(input: {project: "ml", computeInstance: $c, template: $t, name: $n, gpuCount: 0}) {
    serviceInstance { id name owner { username } } userErrors { field message code }
  }
}"""
ONE = """query($id: ID!) { serviceInstance(id: $id) {
  name owner { username } connect { port url } actions { name allowed reason }
} }"""
LIST = """query($p: String!, $mine: Boolean) {
  serviceInstances(project: $p, mine: $mine) { totalCount edges { node { name owner { username } } } }
}"""
SERVICES = "query($id: ID!) { computeInstance(id: $id) { services { name owner { username } } } }"
ACT = "mutation($id: ID!) { %s(id: $id) { userErrors { code } } }"
TRANSFER = """mutation($id: ID!, $to: String!) {
  transferServiceInstance(id: $id, owner: $to) {
    serviceInstance { name owner { username } } userErrors { field message code }
  }
}"""
STATUS = "subscription($id: ID!) { serviceInstanceStatus(id: $id) { instance { connect { url } } } }"


@dataclass
class World:
    olivia: Person  # a MEMBER of "ml": owns the compute instance "box" and the service "lab" in it
    bob: Person  # another MEMBER of "ml"
    alice: Person  # ADMIN of "ml"
    box: str
    lab: str
    template: str  # built-in JupyterLab's id


@pytest.fixture
async def world(db: object, gql: GraphQLClient) -> World:
    olivia, bob, alice = [await make_user(n) for n in ("olivia", "bob", "alice")]
    ml = await make_project("ml", olivia=Role.MEMBER, bob=Role.MEMBER, alice=Role.ADMIN)
    resources = ResourcesIn(cpu="8", memory="64Gi", storage="200Gi", gpu_count=2, gpu_vendor=Vendor.NVIDIA)
    box = await make_instance(ml, await make_profile(ml, resources=resources), name="box", by=olivia)
    await ComputeInstance.filter(id=box.id).update(status=DeploymentStatus.SUCCESS)
    template = str((await InstanceTemplate.get(name="jupyterlab-pytorch")).id)
    made = await gql.data(CREATE, {"c": str(box.id), "t": template, "n": "lab"}, token=olivia.token)
    lab = made["createServiceInstance"]["serviceInstance"]
    # started: running, with the node port the cluster gave it
    await ServiceInstance.filter(id=lab["id"]).update(
        status=ServiceStatus.RUNNING, node_ports={"jupyter": 31234}
    )
    return World(olivia, bob, alice, str(box.id), lab["id"], template)


def link(body: dict[str, Any]) -> str:
    (found,) = body["serviceInstance"]["connect"]
    return str(found["url"])


async def test_the_creator_owns_it_and_only_the_box_s_managers_run_services_in_it(
    gql: GraphQLClient, world: World
) -> None:
    shown = await gql.data(ONE, {"id": world.lab}, token=world.bob.token)
    assert shown["serviceInstance"]["owner"] == {"username": "olivia"}
    refused = await gql(CREATE, {"c": world.box, "t": world.template, "n": "bobs"}, token=world.bob.token)
    assert refused["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert refused["errors"][0]["message"] == (
        'Only the owner or a project admin may run service instances in compute instance "box".'
    )
    made = await gql.data(
        CREATE, {"c": world.box, "t": world.template, "n": "admins"}, token=world.alice.token
    )
    assert made["createServiceInstance"]["serviceInstance"]["owner"] == {"username": "alice"}


async def test_only_the_owner_and_admins_get_the_token(gql: GraphQLClient, world: World) -> None:
    with_token = link(await gql.data(ONE, {"id": world.lab}, token=world.olivia.token))
    assert urlsplit(with_token).query.startswith("token=")
    assert link(await gql.data(ONE, {"id": world.lab}, token=world.alice.token)) == with_token
    # another member sees where it runs, not how to get in
    assert link(await gql.data(ONE, {"id": world.lab}, token=world.bob.token)) == "http://127.0.0.1:31234/"


async def test_the_status_subscription_keeps_the_token_from_other_members(
    settings: Settings, world: World
) -> None:
    runtime = Runtime(settings, run_worker=False)
    await runtime.start()
    try:
        async with serving(create_app(settings, migrate=False, runtime=runtime)) as url:
            for person, expected in ((world.bob, False), (world.olivia, True)):
                async with ws.connect(url, token=person.token) as session:
                    await session.subscribe(STATUS, {"id": world.lab})
                    first = await session.next_data(timeout=15)
                    (shown,) = first["serviceInstanceStatus"]["instance"]["connect"]
                    assert ("?token=" in shown["url"]) is expected, (person.username, shown)
    finally:
        await runtime.stop()


async def test_another_member_may_not_run_it(gql: GraphQLClient, world: World) -> None:
    for mutation in ("stopServiceInstance", "restartServiceInstance", "deleteServiceInstance"):
        body = await gql(ACT % mutation, {"id": world.lab}, token=world.bob.token)
        assert body["errors"][0]["extensions"]["code"] == "FORBIDDEN", mutation
        verb = mutation.removesuffix("ServiceInstance")
        assert (
            body["errors"][0]["message"]
            == f'Only the owner or a project admin may {verb} service instance "lab".'
        )
    assert (await ServiceInstance.get(id=world.lab)).status == ServiceStatus.RUNNING
    actions = (await gql.data(ONE, {"id": world.lab}, token=world.bob.token))["serviceInstance"]["actions"]
    assert not any(a["allowed"] for a in actions)
    for person in (world.olivia, world.alice):
        allowed = (await gql.data(ONE, {"id": world.lab}, token=person.token))["serviceInstance"]["actions"]
        assert {a["name"] for a in allowed if a["allowed"]} == {"STOP", "RESTART", "DELETE"}
    stopped = await gql.data(ACT % "stopServiceInstance", {"id": world.lab}, token=world.olivia.token)
    assert stopped["stopServiceInstance"]["userErrors"] == []


async def test_admins_give_a_service_instance_to_another_member(gql: GraphQLClient, world: World) -> None:
    refused = await gql(TRANSFER, {"id": world.lab, "to": "bob"}, token=world.olivia.token)
    assert refused["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert refused["errors"][0]["message"] == (
        'Only admins of project "ml" may give its service instances to another member.'
    )
    await make_user("zoe")
    payload = (await gql.data(TRANSFER, {"id": world.lab, "to": "zoe"}, token=world.alice.token))[
        "transferServiceInstance"
    ]
    assert payload["userErrors"][0]["field"] == ["owner"]
    assert payload["userErrors"][0]["message"].startswith('user "zoe" is not a member of project "ml"')
    payload = (await gql.data(TRANSFER, {"id": world.lab, "to": "bob"}, token=world.alice.token))[
        "transferServiceInstance"
    ]
    assert payload == {"serviceInstance": {"name": "lab", "owner": {"username": "bob"}}, "userErrors": []}
    # the token follows the owner; the link is the same
    assert "?token=" in link(await gql.data(ONE, {"id": world.lab}, token=world.bob.token))
    assert "?token=" not in link(await gql.data(ONE, {"id": world.lab}, token=world.olivia.token))


async def test_mine_and_owners_in_the_lists(gql: GraphQLClient, world: World) -> None:
    await gql.data(CREATE, {"c": world.box, "t": world.template, "n": "admins"}, token=world.alice.token)

    async def listed(person: Person, mine: bool | None) -> list[tuple[str, str]]:
        page = (await gql.data(LIST, {"p": "ml", "mine": mine}, token=person.token))["serviceInstances"]
        return [(e["node"]["name"], e["node"]["owner"]["username"]) for e in page["edges"]]

    assert await listed(world.bob, None) == [("admins", "alice"), ("lab", "olivia")]
    assert await listed(world.olivia, True) == [("lab", "olivia")]
    assert await listed(world.bob, True) == []


@pytest.fixture
async def private_gql(settings: Settings) -> AsyncIterator[GraphQLClient]:
    """The API with GPUPAAS_MEMBERS_SEE_ALL_INSTANCES=false."""
    app = create_app(replace(settings, members_see_all_instances=False), migrate=False)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    ) as http:
        yield GraphQLClient(http)


async def test_members_may_be_kept_from_seeing_each_others_services(
    gql: GraphQLClient, private_gql: GraphQLClient, world: World
) -> None:
    await gql.data(CREATE, {"c": world.box, "t": world.template, "n": "admins"}, token=world.alice.token)
    # olivia owns the compute instance, but not what the admin runs in it
    page = (await private_gql.data(LIST, {"p": "ml"}, token=world.olivia.token))["serviceInstances"]
    assert [e["node"]["name"] for e in page["edges"]] == ["lab"]
    services = (await private_gql.data(SERVICES, {"id": world.box}, token=world.olivia.token))[
        "computeInstance"
    ]
    assert services["services"] == [{"name": "lab", "owner": {"username": "olivia"}}]
    # bob sees none of it
    assert (await private_gql.data(LIST, {"p": "ml"}, token=world.bob.token))["serviceInstances"][
        "totalCount"
    ] == 0
    assert (await private_gql.data(ONE, {"id": world.lab}, token=world.bob.token))["serviceInstance"] is None
    assert (await private_gql.data(SERVICES, {"id": world.box}, token=world.bob.token))[
        "computeInstance"
    ] is None
    # the admin sees everything
    page = (await private_gql.data(LIST, {"p": "ml"}, token=world.alice.token))["serviceInstances"]
    assert page["totalCount"] == 2
