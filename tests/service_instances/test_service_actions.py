"""`ServiceInstance.actions`: what the caller may do now, and why not. Checked against the mutations
themselves: in every status, in a deployed and in a failed compute instance, as the service
instance's owner (a MEMBER), as another MEMBER and as a project ADMIN, an action is allowed exactly
when its mutation is accepted, and a refusal's reason is the message the mutation answers (a delete
while DELETING is the one exception: the mutation is then a no-op, and the action is not offered)."""

from __future__ import annotations

import pytest

from gpupaas.bootstrap import seed
from gpupaas.catalog.service.profiles import ResourcesIn
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.core.gpus import Vendor
from gpupaas.instance_templates.models import InstanceTemplate
from gpupaas.instance_templates.spec import spec_to_json
from gpupaas.runs.models import DeploymentRun
from gpupaas.runs.states import RunAction
from gpupaas.service_instances.models import ServiceInstance
from gpupaas.service_instances.states import ServiceStatus
from tests.conftest import GraphQLClient
from tests.factories import Person, make_instance, make_profile, make_project, make_user

ACTIONS = "query($id: ID!) { serviceInstance(id: $id) { actions { name allowed reason } } }"
MUTATIONS = {
    "START": "startServiceInstance",
    "STOP": "stopServiceInstance",
    "RESTART": "restartServiceInstance",
    "DELETE": "deleteServiceInstance",
}
MUTATION = "mutation($id: ID!) { %s(id: $id) { userErrors { message code } } }"


async def _refusal(gql: GraphQLClient, person: Person, field: str, service_id: str) -> str | None:
    """None when the mutation is accepted; otherwise its message (a user error or a GraphQL error),
    with the service instance's name as "<name>" (each probe is a fresh one of its own name)."""
    body = await gql(MUTATION % field, {"id": service_id}, token=person.token)
    if body.get("errors"):
        message = str(body["errors"][0]["message"])
    else:
        problems = body["data"][field]["userErrors"]
        message = str(problems[0]["message"]) if problems else ""
    if not message:
        return None
    named = (await ServiceInstance.get(id=service_id)).name
    return message.replace(f'"{named}"', '"<name>"')


@pytest.mark.parametrize("compute_status", [DeploymentStatus.SUCCESS, DeploymentStatus.FAILED])
@pytest.mark.parametrize("status", list(ServiceStatus))
async def test_actions_agree_with_the_mutations(
    db: object, gql: GraphQLClient, status: ServiceStatus, compute_status: DeploymentStatus
) -> None:
    await seed()
    owner, bob, admin = [await make_user(name) for name in ("olivia", "bob", "alice")]
    project = await make_project("ml", olivia=Role.MEMBER, bob=Role.MEMBER, alice=Role.ADMIN)
    resources = ResourcesIn(cpu="8", memory="64Gi", storage="200Gi", gpu_count=2, gpu_vendor=Vendor.NVIDIA)
    profile = await make_profile(project, resources=resources)
    template = await InstanceTemplate.get(name="jupyterlab-pytorch")
    made = iter(range(100))

    async def service_in(state: ServiceStatus) -> str:
        service = await ServiceInstance.create(
            project=project,
            owner_id=owner.user.id,
            compute_instance_id=box.id,
            template=template,
            template_name=template.name,
            name=f"lab-{next(made)}",
            display_name="lab",
            spec=spec_to_json(template.spec()),
            gpu_count=1,
            status=state,
        )
        # it has run before: a delete goes through the cluster, not at once
        await DeploymentRun.create(
            instance_id=box.id, service_id=service.id, action=RunAction.START, status="SUCCEEDED"
        )
        return str(service.id)

    for person in (owner, bob, admin):
        # a compute instance of olivia's for each caller: the GPUs that starts take add up
        box = await make_instance(project, profile, name=f"box-{person.username}", by=owner)
        await ComputeInstance.filter(id=box.id).update(status=compute_status)
        probe = await service_in(status)
        probe_name = (await ServiceInstance.get(id=probe)).name
        listed = (await gql.data(ACTIONS, {"id": probe}, token=person.token))["serviceInstance"]["actions"]
        assert [a["name"] for a in listed] == list(MUTATIONS)
        for action in listed:
            fresh = await service_in(status)
            refusal = await _refusal(gql, person, MUTATIONS[action["name"]], fresh)
            reason = action["reason"]
            shown = reason.replace(f'"{probe_name}"', '"<name>"') if reason else None
            if person is bob:  # another member's: never, and says who may
                verb = action["name"].lower()
                assert shown == f'Only the owner or a project admin may {verb} service instance "<name>".'
                assert refusal == shown
            elif action["name"] == "DELETE" and status == ServiceStatus.DELETING:
                assert refusal is None  # deleting again is a no-op
                assert action == {"name": "DELETE", "allowed": False, "reason": action["reason"]}
                assert "being deleted" in action["reason"]
                continue
            assert action["allowed"] is (refusal is None), (person.username, action, refusal)
            assert shown == refusal, (person.username, action)
