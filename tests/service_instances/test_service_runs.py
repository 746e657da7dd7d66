"""The steps of service instances' runs as the workers take them: claim, a delete that waits for the
run under way, the reaper, drift."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from gpupaas.bootstrap import seed
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.states import DeploymentStatus
from gpupaas.events.models import OutboxMessage
from gpupaas.instance_templates.models import InstanceTemplate
from gpupaas.provisioning.plan import Plan
from gpupaas.runs import lifecycle as runs
from gpupaas.runs.models import DeploymentRun
from gpupaas.runs.states import RunAction, RunStatus
from gpupaas.service_instances import service as instances
from gpupaas.service_instances.models import ServiceInstance
from gpupaas.service_instances.run_kind import SERVICES
from gpupaas.service_instances.states import Request, ServiceStatus
from gpupaas.settings import Settings
from tests.factories import make_instance, make_profile, make_project, platform_actor

KEY = "k" * 64
SETTINGS = Settings(database_url="sqlite://:memory:", secret_key=KEY)
LEASE = timedelta(seconds=30)


@pytest.fixture
async def service(db: object) -> ServiceInstance:
    await seed()
    project = await make_project("ml")
    box = await make_instance(project, await make_profile(project), name="box")
    await ComputeInstance.filter(id=box.id).update(status=DeploymentStatus.SUCCESS)
    template = await InstanceTemplate.get(name="jupyterlab-pytorch")
    data = instances.ServiceIn(
        project="ml", compute_instance=str(box.id), template=str(template.id), name="nb"
    )
    return await instances.create_service(await platform_actor(), data, secret_key=KEY)


def _deployment(plan: Plan) -> dict[str, Any]:
    return next(manifest for manifest in plan.manifests if manifest["kind"] == "Deployment")


async def commands(service: ServiceInstance) -> list[str]:
    rows = await OutboxMessage.filter(key=str(service.id), topic="gpupaas.commands").order_by("id")
    return [row.payload["action"] for row in rows]


async def test_a_delete_waits_for_the_start_under_way(service: ServiceInstance) -> None:
    start = await DeploymentRun.get(service_id=service.id)
    claimed = await runs.claim(SERVICES, str(start.id), "a", LEASE)
    assert claimed is not None and claimed.run.action == RunAction.START
    assert (await ServiceInstance.get(id=service.id)).status == ServiceStatus.STARTING
    # Plans are built from the claimed run: running, in the compute instance's namespace.
    plan = (await SERVICES.work(claimed, SETTINGS)).plan(None)
    assert plan.within == str(service.compute_instance_id) and _deployment(plan)["spec"]["replicas"] == 1

    await instances.delete_service(await platform_actor(), str(service.id))
    delete = await DeploymentRun.get(service_id=service.id, action=RunAction.DESTROY)
    assert await runs.claim(SERVICES, str(delete.id), "b", LEASE) is None  # the start holds it
    assert (await DeploymentRun.get(id=delete.id)).status == RunStatus.QUEUED

    # The start ends: the service stays DELETING, and the delete is published again.
    assert await runs.finish(
        SERVICES, start.id, "a", succeeded=True, message=None, outputs={"nodePort.jupyter": "31000"}
    )
    assert (await ServiceInstance.get(id=service.id)).status == ServiceStatus.DELETING
    assert await commands(service) == ["START", "DESTROY", "DESTROY"]

    claimed = await runs.claim(SERVICES, str(delete.id), "b", LEASE)
    assert claimed is not None
    assert await runs.finish(SERVICES, delete.id, "b", succeeded=True, message=None)
    assert not await ServiceInstance.exists(id=service.id)


async def test_a_run_is_claimed_once_and_finished_by_its_worker_only(service: ServiceInstance) -> None:
    start = await DeploymentRun.get(service_id=service.id)
    assert await runs.claim(SERVICES, str(start.id), "a", LEASE) is not None
    assert await runs.claim(SERVICES, str(start.id), "b", LEASE) is None  # redelivered
    assert not await runs.finish(SERVICES, start.id, "b", succeeded=True, message=None)
    assert await runs.finish(SERVICES, start.id, "a", succeeded=False, message="image pull back-off")
    found = await ServiceInstance.get(id=service.id)
    assert (found.status, found.status_message) == (ServiceStatus.FAILED, "image pull back-off")
    # A compute instance's run id is not a service run (and the other way round).
    assert await runs.claim(SERVICES, "not-an-id", "a", LEASE) is None


async def test_the_reaper_requeues_and_gives_up(service: ServiceInstance) -> None:
    start = await DeploymentRun.get(service_id=service.id)
    await DeploymentRun.filter(id=start.id).update(queued_at=start.queued_at - timedelta(minutes=5))  # type: ignore[operator]
    assert await runs.requeue_stale(SERVICES, queued_for=timedelta(seconds=30), max_attempts=3) == 1
    assert await commands(service) == ["START", "START"]

    assert await runs.claim(SERVICES, str(start.id), "a", timedelta(seconds=-1)) is not None  # dies
    await DeploymentRun.filter(id=start.id).update(attempts=3)
    assert await runs.requeue_stale(SERVICES, queued_for=timedelta(seconds=30), max_attempts=3) == 1
    found = await ServiceInstance.get(id=service.id)
    assert found.status == ServiceStatus.FAILED
    assert found.status_message is not None and "start it again to retry" in found.status_message


async def test_drift_fails_a_running_service_and_its_recovery_brings_it_back(
    service: ServiceInstance,
) -> None:
    assert not await runs.report_drift(SERVICES, str(service.id), True, "OOMKilled")  # PENDING: no news
    await ServiceInstance.filter(id=service.id).update(status=ServiceStatus.RUNNING)
    assert await runs.report_drift(SERVICES, str(service.id), True, "container main: OOMKilled")
    found = await ServiceInstance.get(id=service.id)
    assert (found.status, found.status_message) == (ServiceStatus.FAILED, "drift: container main: OOMKilled")
    assert await runs.report_drift(SERVICES, str(service.id), False, None)
    assert (await ServiceInstance.get(id=service.id)).status == ServiceStatus.RUNNING
    # A failed run is not undone by a pod that looks ready.
    await ServiceInstance.filter(id=service.id).update(status=ServiceStatus.FAILED, drifted=False)
    assert not await runs.report_drift(SERVICES, str(service.id), False, None)


async def test_stop_and_restart_build_their_plans(service: ServiceInstance) -> None:
    await ServiceInstance.filter(id=service.id).update(status=ServiceStatus.RUNNING)
    actor = await platform_actor()
    await instances.request(actor, str(service.id), Request.STOP)
    stop = await DeploymentRun.get(service_id=service.id, action=RunAction.STOP)
    claimed = await runs.claim(SERVICES, str(stop.id), "a", LEASE)
    assert claimed is not None
    assert _deployment((await SERVICES.work(claimed, SETTINGS)).plan(None))["spec"]["replicas"] == 0
    await runs.finish(SERVICES, stop.id, "a", succeeded=True, message=None, outputs={})
    assert (await ServiceInstance.get(id=service.id)).status == ServiceStatus.STOPPED
    # A plan cannot be built with another secret key: the run fails saying so.
    from gpupaas.provisioning.plan import PermanentError

    work = await SERVICES.work(claimed, Settings(database_url="sqlite://:memory:", secret_key="x" * 64))
    with pytest.raises(PermanentError, match="another GPUPAAS_SECRET_KEY"):
        work.plan(None)


async def test_a_start_that_a_delete_overtook_does_nothing(service: ServiceInstance) -> None:
    from gpupaas.events.memory import InProcessBus
    from gpupaas.provisioning.drivers.simulated.driver import SimulatedDriver
    from gpupaas.provisioning.inventory import DEFAULT_INVENTORY
    from gpupaas.provisioning.models import SimulatedAllocation
    from gpupaas.provisioning.registry import DriverRegistry
    from gpupaas.settings import Settings
    from gpupaas.workers.worker import Worker

    settings = Settings(database_url="sqlite://:memory:", secret_key=KEY)
    drivers = DriverRegistry(settings, simulated=SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=0))
    worker = Worker(InProcessBus(), drivers, name="w")
    start = await DeploymentRun.get(service_id=service.id)
    await instances.delete_service(await platform_actor(), str(service.id))  # before any worker ran
    await worker.handle_run(SERVICES, str(start.id))
    assert (await DeploymentRun.get(id=start.id)).status == RunStatus.CANCELED
    assert not await SimulatedAllocation.exists(instance_id=str(service.id))  # nothing was applied
    assert (await ServiceInstance.get(id=service.id)).status == ServiceStatus.DELETING
    assert await commands(service) == ["START", "DESTROY", "DESTROY"]  # the delete goes on
