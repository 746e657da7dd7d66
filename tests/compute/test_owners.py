"""Owners of compute instances, through the API: the creator owns it; inside its project only the
owner and the project's admins change, deploy, destroy, delete, share it and see its sensitive
outputs; other members read the rest; project admins give it to another member; the lists filter
on "mine"; and with GPUPAAS_MEMBERS_SEE_ALL_INSTANCES off a MEMBER sees only their own."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

import httpx
import pytest
from tortoise.transactions import in_transaction

from gpupaas.app import create_app
from gpupaas.catalog.service import templates
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.run_kind import COMPUTE
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.events import outbox
from gpupaas.instance_templates.models import InstanceTemplate
from gpupaas.instance_templates.spec import spec_to_json
from gpupaas.runs import lifecycle as runs
from gpupaas.runs.models import DeploymentRun
from gpupaas.runs.states import RunAction, RunStatus
from gpupaas.runtime import Runtime
from gpupaas.service_instances.models import ServiceInstance
from gpupaas.service_instances.states import ServiceStatus
from gpupaas.settings import Settings
from tests import ws
from tests.conftest import GraphQLClient, serving
from tests.factories import (
    Person,
    make_instance,
    make_profile,
    make_project,
    make_template,
    make_user,
    make_version,
)

ONE = """query($id: ID!) { computeInstance(id: $id) {
  name owner { username } outputs { key value } actions { name allowed reason }
} }"""
LIST = """query($p: String!, $mine: Boolean) {
  computeInstances(project: $p, mine: $mine) { totalCount edges { node { name owner { username } } } }
}"""
CREATE = """mutation($p: ID!, $n: String!) {
  createComputeInstance(input: {project: "ml", profile: $p, name: $n}) {
    computeInstance { name owner { username } } userErrors { field message code }
  }
}"""
TRANSFER = """mutation($id: ID!, $to: String!) {
  transferComputeInstance(id: $id, owner: $to) {
    computeInstance { name owner { username } } userErrors { field message code }
  }
}"""
CHANGES = {
    "updateComputeInstance": 'mutation($id: ID!) { updateComputeInstance(input: {id: $id, description: "mine now"}) { userErrors { code } } }',
    "deployComputeInstance": "mutation($id: ID!) { deployComputeInstance(id: $id) { userErrors { code } } }",
    "destroyComputeInstance": "mutation($id: ID!) { destroyComputeInstance(id: $id) { userErrors { code } } }",
    "deleteComputeInstance": "mutation($id: ID!) { deleteComputeInstance(id: $id) { userErrors { code } } }",
    "setComputeInstanceSharing": "mutation($id: ID!) { setComputeInstanceSharing(id: $id, sharing: {mode: ALL_PROJECTS}) { userErrors { code } } }",
}

SECRET_YAML = """\
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
---
apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: "{{ instance.namespace }}"
stringData:
  password: "{{ inputs.password }}"
"""
# What a worker would have rendered after a deploy.
RENDERED = {
    "namespace": "ml-nb",
    "login": "s3cr3t",
    "link": "https://lab.example.com/?token=t0k3n",
    "secret": "czNjcjN0",
}


@dataclass
class World:
    olivia: Person  # a MEMBER of "ml", owns "nb"
    bob: Person  # another MEMBER of "ml"
    alice: Person  # ADMIN of "ml"
    carol: Person  # a MEMBER of "ml" too, to give instances to
    dave: Person  # in no project
    profile: Any
    nb: str  # olivia's instance, deployed, with outputs (some sensitive)


@pytest.fixture
async def world(db: object) -> World:
    olivia, bob, alice, carol, dave = [
        await make_user(n) for n in ("olivia", "bob", "alice", "carol", "dave")
    ]
    ml = await make_project("ml", olivia=Role.MEMBER, bob=Role.MEMBER, alice=Role.ADMIN, carol=Role.MEMBER)
    version = await make_version(
        await make_template(ml),
        resources=SECRET_YAML,
        inputs=[
            templates.InputDefinitionIn(name="password", type="STRING", default="s3cr3t", sensitive=True),
        ],
        outputs=[
            templates.OutputDefinitionIn(name="namespace", value="{{ instance.namespace }}"),
            templates.OutputDefinitionIn(name="login", value="password {{ inputs.password }}"),
            templates.OutputDefinitionIn(
                name="link", value="https://lab.example.com/?token={{ generated.token }}"
            ),
            templates.OutputDefinitionIn(name="secret", value="{{ objects.Secret.data.password }}"),
        ],
    )
    profile = await make_profile(ml, version)
    nb = await make_instance(ml, profile, name="nb", by=olivia)
    await ComputeInstance.filter(id=nb.id).update(status=DeploymentStatus.SUCCESS, outputs=RENDERED)
    return World(olivia, bob, alice, carol, dave, profile, str(nb.id))


async def test_the_creator_owns_what_they_launch(gql: GraphQLClient, world: World) -> None:
    made = (await gql.data(CREATE, {"p": str(world.profile.id), "n": "bobs"}, token=world.bob.token))[
        "createComputeInstance"
    ]
    assert made == {"computeInstance": {"name": "bobs", "owner": {"username": "bob"}}, "userErrors": []}
    shown = (await gql.data(ONE, {"id": world.nb}, token=world.bob.token))["computeInstance"]
    assert shown["owner"] == {"username": "olivia"}


async def test_another_member_reads_but_may_not_change_it(gql: GraphQLClient, world: World) -> None:
    for field, text in CHANGES.items():
        # when bob, a member who does not own it, asks
        body = await gql(text, {"id": world.nb}, token=world.bob.token)
        # then it is refused, saying who may
        assert body["errors"][0]["extensions"]["code"] == "FORBIDDEN", field
        verb = {"setComputeInstanceSharing": "share"}.get(field, field.removesuffix("ComputeInstance"))
        assert (
            body["errors"][0]["message"]
            == f'Only the owner or a project admin may {verb} compute instance "nb".'
        )
    instance = await ComputeInstance.get(id=world.nb)
    # nothing changed: not shared with every project (which would show its outputs everywhere)
    assert (instance.status, instance.sharing_mode.value, instance.description) == ("SUCCESS", "NONE", None)
    actions = (await gql.data(ONE, {"id": world.nb}, token=world.bob.token))["computeInstance"]["actions"]
    assert not any(a["allowed"] for a in actions)


@pytest.mark.parametrize("who", ["olivia", "alice"])
async def test_the_owner_and_admins_change_it(gql: GraphQLClient, world: World, who: str) -> None:
    person = getattr(world, who)
    for field in ("updateComputeInstance", "setComputeInstanceSharing", "destroyComputeInstance"):
        body = await gql.data(CHANGES[field], {"id": world.nb}, token=person.token)
        assert body[field]["userErrors"] == [], (who, field)
    instance = await ComputeInstance.get(id=world.nb)
    assert (instance.status, instance.sharing_mode.value, instance.description) == (
        "DESTROYING",
        "ALL_PROJECTS",
        "mine now",
    )


async def test_sensitive_outputs_are_only_for_the_owner_and_admins(gql: GraphQLClient, world: World) -> None:
    def outputs(body: dict[str, Any]) -> dict[str, str]:
        return {o["key"]: o["value"] for o in body["computeInstance"]["outputs"]}

    for person in (world.olivia, world.alice):
        assert outputs(await gql.data(ONE, {"id": world.nb}, token=person.token)) == RENDERED
    # another member, and another project it is shared with, see the rest masked
    masked = {"namespace": "ml-nb", "login": "********", "link": "********", "secret": "********"}
    assert outputs(await gql.data(ONE, {"id": world.nb}, token=world.bob.token)) == masked
    await make_project("other", dave=Role.ADMIN)
    await ComputeInstance.filter(id=world.nb).update(sharing_mode="ALL_PROJECTS")
    assert outputs(await gql.data(ONE, {"id": world.nb}, token=world.dave.token)) == masked


async def test_mine_lists_only_the_callers_own(gql: GraphQLClient, world: World) -> None:
    await make_instance(await world.profile.project, world.profile, name="bobs", by=world.bob)

    async def listed(person: Person, mine: bool | None) -> list[tuple[str, str]]:
        page = (await gql.data(LIST, {"p": "ml", "mine": mine}, token=person.token))["computeInstances"]
        return [(e["node"]["name"], e["node"]["owner"]["username"]) for e in page["edges"]]

    assert await listed(world.bob, None) == [("bobs", "bob"), ("nb", "olivia")]
    assert await listed(world.bob, True) == [("bobs", "bob")]
    assert await listed(world.olivia, True) == [("nb", "olivia")]
    assert await listed(world.alice, True) == []  # admins own what they launch, like anyone


async def test_admins_give_an_instance_to_another_member(gql: GraphQLClient, world: World) -> None:
    template = await InstanceTemplate.get(name="ubuntu")
    box = await ComputeInstance.get(id=world.nb)

    async def service(name: str, owner: Person | None) -> ServiceInstance:
        return await ServiceInstance.create(
            project_id=box.project_id,
            owner_id=owner.user.id if owner else None,
            compute_instance_id=box.id,
            template=template,
            template_name=template.name,
            name=name,
            display_name=name,
            # the template's spec, as a launched service copies it (ubuntu declares SSH access)
            spec=spec_to_json(template.spec()),
            status=ServiceStatus.RUNNING,
        )

    olivias, admins = await service("lab", world.olivia), await service("monitor", world.alice)
    # only admins give instances away: not another member, not even its owner
    for person in (world.bob, world.olivia):
        refused = await gql(TRANSFER, {"id": world.nb, "to": "carol"}, token=person.token)
        assert refused["errors"][0]["extensions"]["code"] == "FORBIDDEN"
        assert (
            refused["errors"][0]["message"]
            == 'Only admins of project "ml" may give its instances to another member.'
        )
    # to someone who is a member of the project
    payload = (await gql.data(TRANSFER, {"id": world.nb, "to": "dave"}, token=world.alice.token))[
        "transferComputeInstance"
    ]
    assert payload["userErrors"] == [
        {
            "field": ["owner"],
            "message": 'user "dave" is not a member of project "ml": add them to the project first '
            "(setProjectMember), then give them the instance",
            "code": "INVALID",
        }
    ]
    payload = (await gql.data(TRANSFER, {"id": world.nb, "to": "nobody"}, token=world.alice.token))[
        "transferComputeInstance"
    ]
    assert payload["userErrors"] == [
        {
            "field": ["owner"],
            "message": 'no user named "nobody": give the instance to a member of the project',
            "code": "NOT_FOUND",
        }
    ]
    assert (await ComputeInstance.get(id=world.nb)).owner_id == world.olivia.user.id
    # then carol owns it, and what olivia ran in it
    payload = (await gql.data(TRANSFER, {"id": world.nb, "to": "carol"}, token=world.alice.token))[
        "transferComputeInstance"
    ]
    assert payload == {"computeInstance": {"name": "nb", "owner": {"username": "carol"}}, "userErrors": []}
    assert (await ServiceInstance.get(id=olivias.id)).owner_id == world.carol.user.id
    assert (await ServiceInstance.get(id=admins.id)).owner_id == world.alice.user.id
    # the service that moved lets carol's SSH keys in from now on, not olivia's: its keys are
    # applied again (no new pod); alice's service keeps its owner and its keys
    applies = DeploymentRun.filter(action=RunAction.APPLY_SSH_KEYS, status=RunStatus.QUEUED)
    assert [run.service_id for run in await applies] == [olivias.id]
    # carol manages it now; olivia no longer does
    olivia_sees = (await gql.data(ONE, {"id": world.nb}, token=world.olivia.token))["computeInstance"]
    carol_sees = (await gql.data(ONE, {"id": world.nb}, token=world.carol.token))["computeInstance"]
    assert not any(a["allowed"] for a in olivia_sees["actions"])
    assert {a["name"] for a in carol_sees["actions"] if a["allowed"]} == {"UPDATE", "DEPLOY", "SHARE"}


async def test_an_instance_without_an_owner_is_for_admins_only(gql: GraphQLClient, world: World) -> None:
    await ComputeInstance.filter(id=world.nb).update(owner_id=None)  # as migration 0012 leaves old rows
    shown = (await gql.data(ONE, {"id": world.nb}, token=world.olivia.token))["computeInstance"]
    assert shown["owner"] is None
    assert shown["actions"][0] == {
        "name": "UPDATE",
        "allowed": False,
        "reason": 'Compute instance "nb" has no owner: only a project admin may update it.',
    }
    admin_sees = (await gql.data(ONE, {"id": world.nb}, token=world.alice.token))["computeInstance"]
    assert admin_sees["actions"][0]["allowed"]


# ---------------------------------------------------------------- members who see only their own


@pytest.fixture
async def private_gql(settings: Settings) -> AsyncIterator[GraphQLClient]:
    """The API with GPUPAAS_MEMBERS_SEE_ALL_INSTANCES=false."""
    app = create_app(replace(settings, members_see_all_instances=False), migrate=False)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    ) as http:
        yield GraphQLClient(http)


async def test_members_may_be_kept_from_seeing_each_others_instances(
    private_gql: GraphQLClient, world: World
) -> None:
    gql = private_gql
    await make_instance(await world.profile.project, world.profile, name="bobs", by=world.bob)

    async def names(person: Person) -> list[str]:
        page = (await gql.data(LIST, {"p": "ml"}, token=person.token))["computeInstances"]
        return [e["node"]["name"] for e in page["edges"]]

    assert await names(world.bob) == ["bobs"]
    assert await names(world.olivia) == ["nb"]
    assert await names(world.alice) == ["bobs", "nb"]  # admins see every instance
    # another member's is reported as if it did not exist
    assert (await gql.data(ONE, {"id": world.nb}, token=world.bob.token))["computeInstance"] is None
    assert (await gql.data(ONE, {"id": world.nb}, token=world.olivia.token))["computeInstance"][
        "name"
    ] == "nb"


EVENTS = (
    "subscription($p: String!) { computeInstanceEvents(project: $p) { status source instance { name } } }"
)


async def _changed(instance_id: uuid.UUID) -> None:
    """A change of the instance, as any request makes one: a new version and its status event."""
    async with in_transaction():
        instance = await runs.locked(COMPUTE, instance_id)
        instance.version += 1
        await instance.save(update_fields=["version"])
        await runs.announce(COMPUTE, instance)
    outbox.notify()


async def test_live_events_of_hidden_instances_reach_only_their_owner_and_admins(
    settings: Settings, world: World
) -> None:
    hidden = replace(settings, members_see_all_instances=False)
    runtime = Runtime(hidden, run_worker=False)
    await runtime.start()
    try:
        bobs = await make_instance(await world.profile.project, world.profile, name="bobs", by=world.bob)
        async with (
            serving(create_app(hidden, migrate=False, runtime=runtime)) as url,
            ws.connect(url, token=world.bob.token) as as_bob,
            ws.connect(url, token=world.alice.token) as as_admin,
        ):
            await as_bob.subscribe(EVENTS, {"p": "ml"})
            await as_admin.subscribe(EVENTS, {"p": "ml"})
            broadcaster = runtime.broadcaster
            assert broadcaster is not None
            ml = str((await world.profile.project).id)
            deadline = time.monotonic() + 10
            while len(broadcaster._by_project.get(ml, ())) < 2:  # until both are registered
                assert time.monotonic() < deadline, "the subscriptions were not registered"
                await asyncio.sleep(0.01)
            # Each starts with its snapshot; a change made before a subscription had read it would
            # be in the snapshot and (no duplicates) not sent again, so the changes come after.
            snapshots = [(await as_admin.next_data(15))["computeInstanceEvents"] for _ in "ab"]
            assert sorted((e["source"], e["instance"]["name"]) for e in snapshots) == [
                ("SNAPSHOT", "bobs"),
                ("SNAPSHOT", "nb"),
            ]
            [bobs_snapshot] = [(await as_bob.next_data(15))["computeInstanceEvents"]]
            assert (bobs_snapshot["source"], bobs_snapshot["instance"]["name"]) == ("SNAPSHOT", "bobs")
            await _changed(uuid.UUID(world.nb))  # olivia's
            await _changed(bobs.id)
            names = [
                (await as_admin.next_change("computeInstanceEvents", timeout=15))["instance"]["name"]
                for _ in "ab"
            ]
            assert sorted(names) == ["bobs", "nb"]
            # Bob gets his own; had olivia's reached him, it would come before his next change's.
            await _changed(bobs.id)
            seen = [
                (await as_bob.next_change("computeInstanceEvents", timeout=15))["instance"]["name"]
                for _ in "ab"
            ]
            assert seen == ["bobs", "bobs"]
    finally:
        await runtime.stop()
