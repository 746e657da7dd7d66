"""The endpoints that answer at simulated services' Connect links: which services are served."""

from __future__ import annotations

import asyncio
import functools
import socket
from dataclasses import replace

import httpx

from gpupaas.bootstrap import seed
from gpupaas.clusters.models import Cluster
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.states import DeploymentStatus
from gpupaas.instance_templates.models import InstanceTemplate
from gpupaas.provisioning.drivers.simulated.driver import SimulatedDriver
from gpupaas.provisioning.drivers.simulated.endpoints import SimulatedEndpoints
from gpupaas.provisioning.inventory import DEFAULT_INVENTORY
from gpupaas.provisioning.registry import ClusterDriver
from gpupaas.runs.models import DeploymentRun
from gpupaas.runtime import Runtime
from gpupaas.service_instances import service as instances
from gpupaas.service_instances.endpoints import wanted_endpoints
from gpupaas.service_instances.models import ServiceInstance
from gpupaas.service_instances.states import ServiceStatus
from gpupaas.settings import Settings
from tests.conftest import QueryCounter
from tests.factories import make_instance, make_profile, make_project, platform_actor
from tests.workers.conftest import eventually, fast, wait_status

KEY = "k" * 64


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def test_running_services_of_simulated_clusters_are_served(db: object) -> None:
    await seed()
    project = await make_project("ml")
    box = await make_instance(project, await make_profile(project), name="box")
    await ComputeInstance.filter(id=box.id).update(status=DeploymentStatus.SUCCESS)
    template = await InstanceTemplate.get(name="jupyterlab-pytorch")
    data = instances.ServiceIn(
        project="ml", compute_instance=str(box.id), template=str(template.id), name="nb"
    )
    service = await instances.create_service(await platform_actor(), data, secret_key=KEY)
    port = _free_port()
    await ServiceInstance.filter(id=service.id).update(node_ports={"jupyter": port})
    assert await wanted_endpoints(KEY) == {}  # PENDING: nothing answers yet

    await ServiceInstance.filter(id=service.id).update(status=ServiceStatus.RUNNING)
    token = (
        instances.resolved_spec(KEY, await ServiceInstance.get(id=service.id)).ports[0].access_params[0][1]
    )
    endpoints = SimulatedEndpoints(functools.partial(wanted_endpoints, KEY))
    try:
        await endpoints.reconcile()
        assert endpoints.ports == [port]
        async with httpx.AsyncClient() as http:
            assert (await http.get(f"http://127.0.0.1:{port}/?token={token}")).status_code == 200
            assert (await http.get(f"http://127.0.0.1:{port}/?token=nope")).status_code == 403
        # Stopped: closed.
        await ServiceInstance.filter(id=service.id).update(status=ServiceStatus.STOPPED)
        await endpoints.reconcile()
        assert endpoints.ports == []
        # On a real cluster the service answers itself: nothing is opened here.
        await ServiceInstance.filter(id=service.id).update(status=ServiceStatus.RUNNING)
        await Cluster.filter(is_default=True).update(driver=ClusterDriver.KUBERNETES)
        await endpoints.reconcile()
        assert endpoints.ports == []
        # A port another program holds is skipped, and taken once it is free.
        await Cluster.filter(is_default=True).update(driver=ClusterDriver.SIMULATED)
        with socket.socket() as busy:
            busy.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past the closed one's TIME_WAIT
            busy.bind(("127.0.0.1", port))
            busy.listen()
            await endpoints.reconcile()
            assert endpoints.ports == []
        await endpoints.reconcile()
        assert endpoints.ports == [port]
    finally:
        await endpoints.stop()
    assert endpoints.ports == []


async def _start_jupyterlab() -> ServiceInstance:
    """A JupyterLab service started in a deployed compute instance of project "ml"."""
    project = await make_project("ml")
    box = await make_instance(project, await make_profile(project), name="box", deploy=True)
    await wait_status(box.id, DeploymentStatus.SUCCESS)
    template = await InstanceTemplate.get(name="jupyterlab-pytorch")
    data = instances.ServiceIn(
        project="ml", compute_instance=str(box.id), template=str(template.id), name="nb"
    )
    return await instances.create_service(await platform_actor(), data, secret_key=KEY)


async def test_running_means_the_connect_link_answers(db: object, settings: Settings) -> None:
    # given a worker on the simulated cluster with its endpoints (no delays; the endpoints' own
    # reconcile loop looks up to 1 s after a commit: only the driver's open before RUNNING is in time)
    chosen = replace(fast(settings), simulated_endpoints=True, secret_key=KEY)
    runtime = Runtime(chosen, run_worker=True, driver=SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=0.0))
    await runtime.start()
    try:
        # when a service is started and its status turns RUNNING
        service = await _start_jupyterlab()
        async with asyncio.timeout(30):
            while (found := await ServiceInstance.get(id=service.id)).status != ServiceStatus.RUNNING:
                assert found.status in (ServiceStatus.PENDING, ServiceStatus.STARTING), found.status_message
                await asyncio.sleep(0.005)
        # then its Connect link answers at once
        cluster = await Cluster.get(is_default=True)
        (link,) = await instances.connect(KEY, found, cluster, access_params=True)
        async with httpx.AsyncClient() as http:
            assert (await http.get(link.url)).status_code == 200
    finally:
        await runtime.stop()


async def test_endpoints_follow_the_commits_of_their_process_not_a_poll(
    db: object, settings: Settings, count_queries: QueryCounter
) -> None:
    """The endpoints look at what is wanted after a commit of their process (outbox.notify()) and
    every `poll` seconds otherwise: an idle process does not query for them every second, and a
    deleted service's link stops answering without waiting for the poll."""
    chosen = replace(fast(settings), simulated_endpoints=True, secret_key=KEY)
    runtime = Runtime(chosen, run_worker=True, driver=SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=0.0))
    assert runtime.endpoints is not None
    runtime.endpoints.interval = 0.05
    runtime.endpoints.poll = 3600.0  # only a commit here can make them look again
    await runtime.start()
    try:
        service = await _start_jupyterlab()
        endpoints = runtime.endpoints

        async def running() -> bool:
            return (await ServiceInstance.get(id=service.id)).status == ServiceStatus.RUNNING

        async def served() -> bool:
            return bool(endpoints.ports)

        async def settled() -> bool:  # its run's last commit is done: nothing else wakes them
            return not await DeploymentRun.exists(service_id=service.id, finished_at=None)

        await eventually(running, what="the service to run")
        await eventually(served, what="its endpoints to open")
        await eventually(settled, what="the service's run to finish")
        opened = endpoints.ports

        async def closed() -> bool:
            return not any(port in endpoints.ports for port in opened)

        # when nothing is committed for a while, nothing asks what is wanted
        await asyncio.sleep(0.3)
        count_queries.statements.clear()
        await asyncio.sleep(1.0)
        assert not [s for s in count_queries.statements if "service_instances" in s], count_queries.statements
        # when the service is deleted (a commit of this process), its endpoint closes soon after
        await instances.delete_service(await platform_actor(), str(service.id))
        await eventually(closed, timeout=20, what="the deleted service's endpoint to close")
    finally:
        await runtime.stop()
