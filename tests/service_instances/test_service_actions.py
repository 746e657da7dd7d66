"""`ServiceInstance.actions`: what the caller may do now, and why not. Checked against the mutations
themselves: in every status, in a deployed and in a failed compute instance, an action is allowed
exactly when its mutation is accepted, and a refusal's reason is the message the mutation answers
(a delete while DELETING is the one exception: the mutation is then a no-op, and the action is not
offered)."""

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
from tests.factories import make_instance, make_profile, make_project, make_user

ACTIONS = "query($id: ID!) { serviceInstance(id: $id) { actions { name allowed reason } } }"
MUTATIONS = {
    "START": "startServiceInstance",
    "STOP": "stopServiceInstance",
    "RESTART": "restartServiceInstance",
    "DELETE": "deleteServiceInstance",
}
MUTATION = "mutation($id: ID!) { %s(id: $id) { userErrors { message code } } }"


@pytest.mark.parametrize("compute_status", [DeploymentStatus.SUCCESS, DeploymentStatus.FAILED])
@pytest.mark.parametrize("status", list(ServiceStatus))
async def test_actions_agree_with_the_mutations(
    db: object, gql: GraphQLClient, status: ServiceStatus, compute_status: DeploymentStatus
) -> None:
    await seed()
    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.MEMBER)
    resources = ResourcesIn(cpu="8", memory="64Gi", storage="200Gi", gpu_count=2, gpu_vendor=Vendor.NVIDIA)
    box = await make_instance(project, await make_profile(project, resources=resources), name="box")
    await ComputeInstance.filter(id=box.id).update(status=compute_status)
    template = await InstanceTemplate.get(name="jupyterlab-pytorch")
    made = iter(range(100))

    async def service_in(state: ServiceStatus) -> str:
        service = await ServiceInstance.create(
            project=project,
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

    probe = await service_in(status)
    listed = (await gql.data(ACTIONS, {"id": probe}, token=alice.token))["serviceInstance"]["actions"]
    assert [a["name"] for a in listed] == list(MUTATIONS)
    for action in listed:
        fresh = await service_in(status)
        field = MUTATIONS[action["name"]]
        body = await gql.data(MUTATION % field, {"id": fresh}, token=alice.token)
        problems = body[field]["userErrors"]
        refusal = problems[0]["message"] if problems else None
        if action["name"] == "DELETE" and status == ServiceStatus.DELETING:
            assert refusal is None  # deleting again is a no-op
            assert action == {"name": "DELETE", "allowed": False, "reason": action["reason"]}
            assert "being deleted" in action["reason"]
            continue
        assert action["allowed"] is (refusal is None), (action, refusal)
        assert action["reason"] == refusal, action
