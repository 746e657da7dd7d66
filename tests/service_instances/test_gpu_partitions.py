"""GPU resources per vendor and model, and MIG partitions, through the API on the simulated cluster
with the example inventory (infra/simulated/inventory.yaml: an A100 node with MIG devices, Ascend
910B and 310P nodes): what a cluster advertises, templates and services that ask for a partition,
how partitions count against their compute instance's GPUs, and the simulated scheduler placing them
by the nodes' free devices."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

import httpx
import pytest

from gpupaas.app import create_app
from gpupaas.catalog.service.profiles import ResourcesIn
from gpupaas.clusters.models import Cluster
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.core.gpus import Vendor
from gpupaas.provisioning.models import SimulatedAllocation
from gpupaas.provisioning.render.schema import validate_manifest
from gpupaas.runtime import Runtime
from gpupaas.service_instances.models import ServiceInstance
from gpupaas.service_instances.run_kind import plan_of
from gpupaas.service_instances.states import ServiceStatus
from gpupaas.settings import Settings
from tests.conftest import GraphQLClient
from tests.factories import (
    Person,
    builtin_namespace_version,
    make_instance,
    make_profile,
    make_project,
    make_user,
)
from tests.workers.conftest import fast, wait_status

CHECK = """mutation($id: ID!) { checkCluster(id: $id) { cluster {
  gpuPartitions { resourceName profile gpuModel }
  gpuResources { resourceName vendor gpuModel partition count nodes }
} userErrors { message } } }"""
SEEN = "query { clusters { name gpuPartitions { resourceName gpuModel } } }"
BOX_CLUSTER = "query($id: ID!) { computeInstance(id: $id) { cluster { gpuPartitions { resourceName } } } }"
ADMIN_ONLY = "query($id: ID!) { computeInstance(id: $id) { cluster { gpuResources { resourceName } } } }"
TEMPLATE = """mutation($input: CreateInstanceTemplateInput!) { createInstanceTemplate(input: $input) {
  instanceTemplate { id gpuPartition } userErrors { field message code } } }"""
SERVICE = """mutation($input: CreateServiceInstanceInput!) { createServiceInstance(input: $input) {
  serviceInstance { id gpuCount gpuPartition status } userErrors { field message code } } }"""
ACT = "mutation($id: ID!) { %s(id: $id) { serviceInstance { status } userErrors { field message code } } }"


@dataclass
class World:
    gql: GraphQLClient
    admin: Person
    alice: Person  # a member of "ml"
    box: ComputeInstance  # 1 A100 GPU, deployed
    other: ComputeInstance  # another A100 GPU instance, deployed
    template: str  # a project template asking for nvidia.com/mig-1g.10gb


async def _deployed(
    project: Any, resources: ResourcesIn, name: str, by: Person, *, builtin: bool = False
) -> ComputeInstance:
    # `builtin`: the built-in gpu-namespace template, whose quota names the GPU resource.
    version = await builtin_namespace_version() if builtin else None
    profile = await make_profile(project, version, resources=resources, name=f"p-{name}")
    instance = await make_instance(project, profile, name=name, by=by, deploy=True)
    return await wait_status(instance.id, DeploymentStatus.SUCCESS, DeploymentStatus.FAILED)


@pytest.fixture
async def world(db: object, settings: Settings) -> AsyncIterator[World]:
    chosen = replace(fast(settings), simulated_inventory="infra/simulated/inventory.yaml")
    runtime = Runtime(chosen, run_worker=True)
    await runtime.start()
    app = create_app(chosen, migrate=False, runtime=runtime)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as http:
            gql = GraphQLClient(http)
            from gpupaas.bootstrap import seed

            await seed(runtime.drivers)
            admin = await make_user("root", platform_admin=True)
            alice = await make_user("alice")
            project = await make_project("ml", alice=Role.MEMBER)
            cluster = await Cluster.get(is_default=True)
            checked = await gql.data(CHECK, {"id": str(cluster.id)}, token=admin.token)
            assert checked["checkCluster"]["userErrors"] == []
            a100 = ResourcesIn(
                cpu="7",
                memory="70Gi",
                storage="70Gi",
                gpu_count=1,
                gpu_vendor=Vendor.NVIDIA,
                gpu_model="A100",
            )
            box = await _deployed(project, a100, "box", alice)
            other = await _deployed(project, a100, "other", alice)
            assert box.status == other.status == DeploymentStatus.SUCCESS, box.status_message
            made = await gql.data(
                TEMPLATE,
                {
                    "input": {
                        "project": "ml",
                        "name": "mig-lab",
                        "vendor": "NVIDIA",
                        "image": "python:3.12-slim",
                        "command": ["sleep", "infinity"],
                        "gpuPartition": "nvidia.com/mig-1g.10gb",
                    }
                },
                token=admin.token,  # project templates are written by project admins
            )
            assert made["createInstanceTemplate"]["userErrors"] == []
            template = made["createInstanceTemplate"]["instanceTemplate"]["id"]
            yield World(gql, admin, alice, box, other, template)
    finally:
        await runtime.stop()


async def create(w: World, box: ComputeInstance, name: str, **fields: Any) -> dict[str, Any]:
    data = {"project": "ml", "computeInstance": str(box.id), "template": w.template, "name": name, **fields}
    return (await w.gql.data(SERVICE, {"input": data}, token=w.alice.token))["createServiceInstance"]  # type: ignore[no-any-return]


async def settled(service_id: str) -> ServiceInstance:
    """The service once its run is over (the worker writes it to the database)."""
    moving = (ServiceStatus.PENDING, ServiceStatus.STARTING, ServiceStatus.STOPPING)
    async with asyncio.timeout(30):
        while True:
            found = await ServiceInstance.get(id=service_id)
            if found.status not in moving:
                return found
            await asyncio.sleep(0.01)


def errors(payload: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(".".join(e["field"] or []), e["code"], e["message"]) for e in payload["userErrors"]]


async def test_the_cluster_shows_its_gpu_resources_per_model_and_its_partitions(world: World) -> None:
    cluster = await Cluster.get(is_default=True)
    checked = (await world.gql.data(CHECK, {"id": str(cluster.id)}, token=world.admin.token))["checkCluster"]
    resources = {
        (r["resourceName"], r["gpuModel"]): (r["count"], r["partition"])
        for r in checked["cluster"]["gpuResources"]
    }
    assert resources[("huawei.com/Ascend910", "Ascend910B")] == (8, False)
    assert resources[("huawei.com/Ascend310P", "Ascend310P")] == (4, False)
    assert resources[("nvidia.com/gpu", "A100 80GB")] == (2, False)
    assert resources[("nvidia.com/mig-1g.10gb", "A100 80GB")] == (7, True)
    assert checked["cluster"]["gpuPartitions"] == [
        {"resourceName": "nvidia.com/mig-1g.10gb", "profile": "1g.10gb", "gpuModel": "A100 80GB"},
        {"resourceName": "nvidia.com/mig-3g.40gb", "profile": "3g.40gb", "gpuModel": "A100 80GB"},
    ]
    # A member sees the partitions of its instance's cluster (to choose one), not the counts.
    seen = await world.gql.data(BOX_CLUSTER, {"id": str(world.box.id)}, token=world.alice.token)
    assert len(seen["computeInstance"]["cluster"]["gpuPartitions"]) == 2
    refused = await world.gql(ADMIN_ONLY, {"id": str(world.box.id)}, token=world.alice.token)
    assert "Only platform admins see a cluster's gpuResources" in refused["errors"][0]["message"]


async def test_a_template_s_partition_is_checked_and_a_service_may_override_it(world: World) -> None:
    bad = await world.gql.data(
        TEMPLATE,
        {
            "input": {
                "project": "ml",
                "name": "bad",
                "vendor": "NVIDIA",
                "image": "x:1",
                "gpuPartition": "mig-1g.10gb",
            }
        },
        token=world.admin.token,
    )
    assert errors(bad["createInstanceTemplate"]) == [
        (
            "input.gpuPartition",
            "INVALID",
            'must be a MIG profile resource such as "nvidia.com/mig-1g.10gb" (nvidia.com/mig-<slices>g.<memory>gb, '
            'slices 1 to 7): did you mean "nvidia.com/mig-1g.10gb"?',
        )
    ]
    amd = await world.gql.data(
        TEMPLATE,
        {
            "input": {
                "project": "ml",
                "name": "amd",
                "vendor": "AMD",
                "image": "x:1",
                "gpuPartition": "nvidia.com/mig-1g.10gb",
            }
        },
        token=world.admin.token,
    )
    assert "only NVIDIA GPUs have partitions" in amd["createInstanceTemplate"]["userErrors"][0]["message"]

    # A partition the cluster's A100 nodes do not advertise: the message lists what they do.
    missing = await create(world, world.box, "big", gpuPartition="nvidia.com/mig-7g.80gb")
    assert errors(missing) == [
        (
            "input.gpuPartition",
            "INVALID",
            'cluster "Simulated cluster" has no A100 nodes that advertise nvidia.com/mig-7g.80gb: its A100 nodes have '
            "nvidia.com/mig-1g.10gb (A100 80GB, 7), nvidia.com/mig-3g.40gb (A100 80GB, 2) (as its last check saw "
            "them; checkCluster looks again)",
        )
    ]
    # "" asks for whole GPUs instead of the template's partition.
    whole = await create(world, world.box, "whole", gpuPartition="", start=False)
    assert whole["userErrors"] == [] and whole["serviceInstance"]["gpuPartition"] is None
    chosen = await create(world, world.box, "three", gpuPartition="nvidia.com/mig-3g.40gb", start=False)
    assert chosen["serviceInstance"]["gpuPartition"] == "nvidia.com/mig-3g.40gb"


async def test_partitions_count_as_their_share_of_the_instance_s_gpus_and_run(world: World) -> None:
    # given a service on one 1g.10gb device (1/7 of the box's one GPU) and one on six more
    one = await create(world, world.box, "one")
    assert one["userErrors"] == [] and one["serviceInstance"]["gpuPartition"] == "nvidia.com/mig-1g.10gb"
    six = await create(world, world.box, "six", gpuCount=6)
    assert six["userErrors"] == []
    # then both run, each pod asking for its devices (and its share of the instance's CPU and memory)
    for payload in (one, six):
        found = await settled(payload["serviceInstance"]["id"])
        assert found.status == ServiceStatus.RUNNING, found.status_message
    service = await ServiceInstance.get(id=six["serviceInstance"]["id"])
    instance = await ComputeInstance.get(id=world.box.id)
    plan = plan_of(service, instance, "ml", {}, values={}, running=True, restart=None)
    for manifest in plan.manifests:
        validate_manifest(manifest)
    deployment = next(m for m in plan.manifests if m["kind"] == "Deployment")
    resources = deployment["spec"]["template"]["spec"]["containers"][0]["resources"]
    assert resources["limits"]["nvidia.com/mig-1g.10gb"] == "6"
    assert (resources["limits"]["cpu"], resources["limits"]["memory"]) == ("6", "60Gi")  # 6/7 of 7 CPUs, 70Gi
    row = await SimulatedAllocation.get(instance_id=service.id)
    assert row.shares == [{"node": "a100-0", "partitions": {"nvidia.com/mig-1g.10gb": 6}}]

    # when one more device is asked of the box: all 7/7 of its GPU are taken
    more = await create(world, world.box, "more", template=world.template)
    assert errors(more) == [
        (
            "input.gpuCount",
            "QUOTA_EXCEEDED",
            'compute instance "box" has 1 GPU, 1 of them used by its other service instances: '
            "1 nvidia.com/mig-1g.10gb (1/7 of a GPU) requested, 0 free (stop another service instance, or ask for fewer)",
        )
    ]
    # and whole GPUs count with partitions: a whole GPU does not fit beside 1/7 either
    await world.gql.data(
        ACT % "stopServiceInstance", {"id": six["serviceInstance"]["id"]}, token=world.alice.token
    )
    assert (await settled(six["serviceInstance"]["id"])).status == ServiceStatus.STOPPED
    whole = await create(world, world.box, "whole", gpuPartition="", gpuCount=1)
    assert errors(whole)[0][1] == "QUOTA_EXCEEDED" and "1/7 of them used" in errors(whole)[0][2]


async def test_the_simulated_scheduler_places_partitions_by_the_nodes_free_devices(world: World) -> None:
    # given the A100 node's seven 1g.10gb devices all taken by the box's services
    taken = await create(world, world.box, "taken", gpuCount=7)
    assert (await settled(taken["serviceInstance"]["id"])).status == ServiceStatus.RUNNING
    # when another instance's service asks for one: the node has none left, as a scheduler says
    late = await create(world, world.other, "late")
    assert late["userErrors"] == []
    found = await settled(late["serviceInstance"]["id"])
    assert found.status == ServiceStatus.FAILED
    assert found.status_message is not None
    assert "Insufficient nvidia.com/mig-1g.10gb: 1 requested; free on nodes of GPU model A100: a100-0 0" in (
        found.status_message
    )
    # then once the first stops, the second starts on the freed device
    await world.gql.data(
        ACT % "stopServiceInstance", {"id": taken["serviceInstance"]["id"]}, token=world.alice.token
    )
    assert (await settled(taken["serviceInstance"]["id"])).status == ServiceStatus.STOPPED
    started = await world.gql.data(
        ACT % "startServiceInstance", {"id": str(found.id)}, token=world.alice.token
    )
    assert started["startServiceInstance"]["userErrors"] == []
    assert (await settled(str(found.id))).status == ServiceStatus.RUNNING


async def test_ascend_310p_and_910b_instances_ask_for_their_own_chip(world: World) -> None:
    project = await ComputeInstance.get(id=world.box.id).prefetch_related("project")
    boxes = {}
    for model in ("Ascend310P", "Ascend910B"):
        resources = ResourcesIn(
            cpu="8", memory="32Gi", storage="50Gi", gpu_count=2, gpu_vendor=Vendor.ASCEND, gpu_model=model
        )
        boxes[model] = await _deployed(project.project, resources, model.lower(), world.alice, builtin=True)
        assert boxes[model].status == DeploymentStatus.SUCCESS, boxes[model].status_message
    rows = {model: await SimulatedAllocation.get(instance_id=box.id) for model, box in boxes.items()}
    assert [share["node"] for share in rows["Ascend310P"].shares] == ["ascend-310p-0"]
    assert [share["node"] for share in rows["Ascend910B"].shares] == ["ascend-910b-0"]
    quotas = {
        model: next(o for o in row.objects if o["kind"] == "ResourceQuota")["spec"]["hard"]
        for model, row in rows.items()
    }
    assert any("huawei.com/Ascend310P" in key for key in quotas["Ascend310P"])
    assert not any("Ascend910" in key for key in quotas["Ascend310P"])
    assert any("huawei.com/Ascend910" in key for key in quotas["Ascend910B"])
