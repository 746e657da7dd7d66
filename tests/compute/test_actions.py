"""`ComputeInstance.actions`: what the caller may do now, and why not. Checked against the mutations
themselves: in every status, with and without service instances, as a member of the instance's
project and as a member of a project it is shared with, an action is allowed exactly when its
mutation is accepted, and a refusal's reason is the message the mutation answers."""

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
from tests.factories import Person, make_instance, make_profile, make_project, make_user

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


async def _instance(project: Any, profile: Any, status: DeploymentStatus, with_service: bool) -> str:
    instance = await make_instance(project, profile)
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
    """None when the mutation is accepted; otherwise its message (a user error or a GraphQL error)."""
    text, field = MUTATIONS[name]
    body = await gql(text, {"id": instance_id}, token=person.token)
    if body.get("errors"):
        return str(body["errors"][0]["message"])
    problems = body["data"][field]["userErrors"]
    return str(problems[0]["message"]) if problems else None


@pytest.mark.parametrize("with_service", [False, True])
@pytest.mark.parametrize("status", list(DeploymentStatus))
async def test_actions_agree_with_the_mutations(
    db: object, gql: GraphQLClient, status: DeploymentStatus, with_service: bool
) -> None:
    await seed()
    alice, bob = await make_user("alice"), await make_user("bob")
    project = await make_project("ml", alice=Role.MEMBER)
    await make_project("other", bob=Role.MEMBER)
    profile = await make_profile(project)
    for person in (alice, bob):
        # given an instance in this status, shared read-only with bob's project
        probe = await _instance(project, profile, status, with_service)
        await ComputeInstance.filter(id=probe).update(sharing_mode="ALL_PROJECTS")
        listed = (await gql.data(ACTIONS, {"id": probe}, token=person.token))["computeInstance"]["actions"]
        assert [a["name"] for a in listed] == list(MUTATIONS)
        for action in listed:
            # when the action is asked of a fresh instance in the same state
            fresh = await _instance(project, profile, status, with_service)
            await ComputeInstance.filter(id=fresh).update(sharing_mode="ALL_PROJECTS")
            refusal = await _refusal(gql, person, action["name"], fresh)
            # then the mutation does what `actions` said, with the same reason
            assert action["allowed"] is (refusal is None), (person.username, action, refusal)
            assert action["reason"] == refusal, (person.username, action)


async def test_reasons_say_what_to_do(db: object, gql: GraphQLClient) -> None:
    await seed()
    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.MEMBER)
    profile = await make_profile(project)
    saved = await _instance(project, profile, DeploymentStatus.NOT_DEPLOYED, with_service=False)
    busy = await _instance(project, profile, DeploymentStatus.IN_PROGRESS, with_service=False)
    running = await _instance(project, profile, DeploymentStatus.SUCCESS, with_service=True)

    async def reasons(instance_id: str) -> dict[str, str | None]:
        body = await gql.data(ACTIONS, {"id": instance_id}, token=alice.token)
        return {a["name"]: a["reason"] for a in body["computeInstance"]["actions"]}

    assert (await reasons(saved))["DESTROY"] == (
        "cannot destroy an instance that is NOT_DEPLOYED: nothing is deployed"
    )
    assert (await reasons(saved))["DEPLOY"] is None
    assert "wait until the current run finishes" in str((await reasons(busy))["DELETE"])
    assert "delete them first" in str((await reasons(running))["DESTROY"])
    assert (await reasons(running))["DEPLOY"] is None
