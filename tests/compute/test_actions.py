"""`ComputeInstance.actions`: what the caller may do now, and why not. Checked against the mutations
themselves: in every status, with and without service instances, as the instance's owner (a
MEMBER), as another MEMBER of its project, as a project ADMIN and as a member of a project it is
shared with, an action is allowed exactly when its mutation is accepted, and a refusal's reason is
the message the mutation answers."""

from __future__ import annotations

from typing import Any

import pytest

from gpupaas.bootstrap import seed
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.instance_templates.models import InstanceTemplate
from gpupaas.service_instances.models import ServiceInstance
from tests.conftest import GraphQLClient
from tests.factories import Person, add_member, make_instance, make_profile, make_project, make_user

ACTIONS = "query($id: ID!) { computeInstance(id: $id) { actions { name allowed reason } } }"
MUTATIONS = {
    "UPDATE": (
        'mutation($id: ID!) { updateComputeInstance(input: {id: $id, description: "x"}) {'
        " userErrors { message code } } }",
        "updateComputeInstance",
    ),
    "DEPLOY": (
        "mutation($id: ID!) { deployComputeInstance(id: $id) { userErrors { message code } } }",
        "deployComputeInstance",
    ),
    "DESTROY": (
        "mutation($id: ID!) { destroyComputeInstance(id: $id) { userErrors { message code } } }",
        "destroyComputeInstance",
    ),
    "DELETE": (
        "mutation($id: ID!) { deleteComputeInstance(id: $id) { userErrors { message code } } }",
        "deleteComputeInstance",
    ),
    "SHARE": (
        "mutation($id: ID!) { setComputeInstanceSharing(id: $id, sharing: {mode: NONE}) {"
        " userErrors { message code } } }",
        "setComputeInstanceSharing",
    ),
}


async def _instance(
    project: Any, profile: Any, status: DeploymentStatus, with_service: bool, owner: Person | None = None
) -> str:
    instance = await make_instance(project, profile, by=owner)
    await ComputeInstance.filter(id=instance.id).update(status=status)
    if with_service:
        template = await InstanceTemplate.get(name="jupyterlab-pytorch")
        await ServiceInstance.create(
            project=project,
            compute_instance_id=instance.id,
            template=template,
            template_name=template.name,
            name="lab",
            display_name="lab",
            spec={},
            gpu_count=0,
        )
    return str(instance.id)


async def _refusal(gql: GraphQLClient, person: Person, name: str, instance_id: str) -> str | None:
    """None when the mutation is accepted; otherwise its message (a user error or a GraphQL error),
    with the instance's name as "<name>" (each probe is a fresh instance of its own name)."""
    text, field = MUTATIONS[name]
    body = await gql(text, {"id": instance_id}, token=person.token)
    if body.get("errors"):
        message = str(body["errors"][0]["message"])
    else:
        problems = body["data"][field]["userErrors"]
        message = str(problems[0]["message"]) if problems else ""
    named = (await ComputeInstance.get(id=instance_id)).name if message else ""
    return message.replace(f'"{named}"', '"<name>"') if message else None


@pytest.mark.parametrize("with_service", [False, True])
@pytest.mark.parametrize("status", list(DeploymentStatus))
async def test_actions_agree_with_the_mutations(
    db: object, gql: GraphQLClient, status: DeploymentStatus, with_service: bool
) -> None:
    await seed()
    owner, bob, admin, carol = [await make_user(n) for n in ("olivia", "bob", "alice", "carol")]
    project = await make_project("ml", olivia=Role.MEMBER, bob=Role.MEMBER, alice=Role.ADMIN)
    await make_project("other", carol=Role.MEMBER)
    profile = await make_profile(project)
    allowed_by_rights = {"olivia": True, "alice": True, "bob": False, "carol": False}
    for person in (owner, bob, admin, carol):
        # given olivia's instance in this status, shared read-only with carol's project
        probe = await _instance(project, profile, status, with_service, owner=owner)
        await ComputeInstance.filter(id=probe).update(sharing_mode="ALL_PROJECTS")
        listed = (await gql.data(ACTIONS, {"id": probe}, token=person.token))["computeInstance"]["actions"]
        assert [a["name"] for a in listed] == list(MUTATIONS)
        for action in listed:
            # when the action is asked of a fresh instance in the same state
            fresh = await _instance(project, profile, status, with_service, owner=owner)
            await ComputeInstance.filter(id=fresh).update(sharing_mode="ALL_PROJECTS")
            refusal = await _refusal(gql, person, action["name"], fresh)
            # then the mutation does what `actions` said, with the same reason
            assert action["allowed"] is (refusal is None), (person.username, action, refusal)
            reason = action["reason"]
            probe_name = (await ComputeInstance.get(id=probe)).name
            shown = reason.replace(f'"{probe_name}"', '"<name>"') if reason else None
            assert shown == refusal, (person.username, action)
            if not allowed_by_rights[person.username]:
                assert not action["allowed"]


async def test_reasons_say_what_to_do(db: object, gql: GraphQLClient) -> None:
    await seed()
    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.MEMBER)
    profile = await make_profile(project)
    saved = await _instance(project, profile, DeploymentStatus.NOT_DEPLOYED, with_service=False, owner=alice)
    busy = await _instance(project, profile, DeploymentStatus.IN_PROGRESS, with_service=False, owner=alice)
    running = await _instance(project, profile, DeploymentStatus.SUCCESS, with_service=True, owner=alice)
    unowned = await _instance(project, profile, DeploymentStatus.SUCCESS, with_service=False, owner=alice)
    await ComputeInstance.filter(id=unowned).update(owner_id=None)  # as before owners existed

    async def reasons(instance_id: str) -> dict[str, str | None]:
        body = await gql.data(ACTIONS, {"id": instance_id}, token=alice.token)
        return {a["name"]: a["reason"] for a in body["computeInstance"]["actions"]}

    assert (await reasons(saved))["DESTROY"] == (
        "cannot destroy an instance that is NOT_DEPLOYED: nothing is deployed"
    )
    assert (await reasons(saved))["DEPLOY"] is None
    assert "wait until the current run finishes" in str((await reasons(busy))["DELETE"])
    assert "delete them first" in str((await reasons(running))["DESTROY"])
    # another member's instance, and one without an owner: who may, and what to ask
    bob = await make_user("bob")
    await add_member(project, bob, Role.MEMBER)
    name = (await ComputeInstance.get(id=saved)).name
    bobs = {
        a["name"]: a["reason"]
        for a in (await gql.data(ACTIONS, {"id": saved}, token=bob.token))["computeInstance"]["actions"]
    }
    assert bobs["DEPLOY"] == f'Only the owner or a project admin may deploy compute instance "{name}".'
    assert bobs["SHARE"] == f'Only the owner or a project admin may share compute instance "{name}".'
    name = (await ComputeInstance.get(id=unowned)).name
    assert (await reasons(unowned))["DESTROY"] == (
        f'Compute instance "{name}" has no owner: only a project admin may destroy it.'
    )
    assert (await reasons(running))["DEPLOY"] is None
