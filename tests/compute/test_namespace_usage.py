"""A compute instance's namespace usage through GraphQL (namespaceUsage), on the simulated cluster:
its ResourceQuota's hard limits and what its services use of them, and its volume claims, whose
they are and those kept after their service was deleted."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from gpupaas.app import create_app
from gpupaas.bootstrap import seed
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
from tests.conftest import GraphQLClient
from tests.factories import (
    Person,
    builtin_namespace_version,
    make_instance,
    make_profile,
    make_project,
    make_user,
)
from tests.workers.conftest import eventually, fast, wait_status

USAGE = """query($id: ID!) { computeInstance(id: $id) { namespaceUsage { namespace problem
  quotas { name uses { resource hard used } }
  volumeClaims { name size storageClass phase serviceId keptFrom keep } } } }"""
SERVICE = """mutation($input: CreateServiceInstanceInput!) { createServiceInstance(input: $input) {
  serviceInstance { id } userErrors { field message code } } }"""
ACT = "mutation($id: ID!) { %s(id: $id) { userErrors { message } } }"


@dataclass
class World:
    gql: GraphQLClient
    alice: Person  # a member of ml, the box's owner
    box: ComputeInstance  # 8 CPU, 64Gi, 200Gi, 2 NVIDIA GPUs; the built-in namespace template
    template: str  # jupyterlab-pytorch


@pytest.fixture
async def world(db: object, settings: Settings) -> AsyncIterator[World]:
    runtime = Runtime(fast(settings), run_worker=True)
    await runtime.start()
    app = create_app(fast(settings), migrate=False, runtime=runtime)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as http:
            await seed(runtime.drivers)
            alice = await make_user("alice")
            project = await make_project("ml", alice=Role.MEMBER)
            builtin = await builtin_namespace_version()
            resources = ResourcesIn(
                cpu="8", memory="64Gi", storage="200Gi", gpu_count=2, gpu_vendor=Vendor.NVIDIA
            )
            profile = await make_profile(project, builtin, resources=resources)
            box = await make_instance(project, profile, name="box", by=alice, deploy=True)
            box = await wait_status(box.id, DeploymentStatus.SUCCESS, DeploymentStatus.FAILED)
            assert box.status == DeploymentStatus.SUCCESS, box.status_message
            template = await InstanceTemplate.get(name="jupyterlab-pytorch")
            yield World(GraphQLClient(http), alice, box, str(template.id))
    finally:
        await runtime.stop()


async def _usage(w: World, box: str | None = None) -> Any:
    data = await w.gql.data(USAGE, {"id": box or str(w.box.id)}, token=w.alice.token)
    return data["computeInstance"]["namespaceUsage"]


async def _settled(service_id: str, *statuses: ServiceStatus) -> None:
    async def reached() -> bool:
        found = await ServiceInstance.get_or_none(id=service_id)
        return (found.status if found else None) in statuses

    await eventually(reached, timeout=30, what=f"service {service_id} to reach {statuses}")


def _uses(usage: Any) -> dict[str, tuple[str, str]]:
    (quota,) = usage["quotas"]
    assert quota["name"] == "compute"
    return {u["resource"]: (u["used"], u["hard"]) for u in quota["uses"]}


async def test_the_quota_s_use_and_the_claims_follow_the_services(world: World) -> None:
    w = world
    # given a deployed compute instance with nothing in it: its quota's hard limits, nothing used
    empty = await _usage(w)
    assert empty["problem"] is None and empty["volumeClaims"] == []
    assert empty["namespace"].startswith("ml-box-")
    uses = _uses(empty)
    assert uses["requests.storage"] == ("0", "200Gi") and uses["requests.cpu"] == ("0", "8")

    # when a service runs with a new 30Gi volume kept on delete and 2 CPUs
    data = {
        "project": "ml",
        "computeInstance": str(w.box.id),
        "template": w.template,
        "name": "lab",
        "storage": {"mode": "NEW_VOLUME", "size": "30Gi", "reclaim": "KEEP"},
        "resources": {"cpuRequest": "2", "cpuLimit": "2"},
    }
    made = (await w.gql.data(SERVICE, {"input": data}, token=w.alice.token))["createServiceInstance"]
    assert made["userErrors"] == []
    lab = made["serviceInstance"]["id"]
    await _settled(lab, ServiceStatus.RUNNING)

    # then the quota counts its claim and its pod, and the claim is the service's
    running = await _usage(w)
    uses = _uses(running)
    assert uses["requests.storage"] == ("30Gi", "200Gi")
    assert uses["requests.cpu"] == ("2", "8") and uses["limits.cpu"] == ("2", "8")
    assert uses["pods"][0] == "1"
    assert running["volumeClaims"] == [
        {
            "name": "lab-workspace",
            "size": "30Gi",
            "storageClass": None,
            "phase": "Bound",
            "serviceId": lab,
            "keptFrom": None,
            "keep": True,
        }
    ]

    # when it is deleted / then its pod no longer counts, and its claim stays, no service's
    await w.gql.data(ACT % "deleteServiceInstance", {"id": lab}, token=w.alice.token)

    async def gone() -> bool:
        return not await ServiceInstance.exists(id=lab)

    await eventually(gone, timeout=30, what="the service to be deleted")
    after = await _usage(w)
    uses = _uses(after)
    assert uses["requests.storage"] == ("30Gi", "200Gi") and uses["requests.cpu"] == ("0", "8")
    (claim,) = after["volumeClaims"]
    assert (claim["name"], claim["serviceId"], claim["keptFrom"], claim["keep"]) == (
        "lab-workspace",
        None,
        "lab",
        False,
    )


async def test_a_compute_instance_not_deployed_has_no_usage(world: World) -> None:
    project = await make_project("other", alice=Role.MEMBER)
    profile = await make_profile(project)
    idle = await make_instance(project, profile, name="idle", by=world.alice)
    assert await _usage(world, str(idle.id)) is None
