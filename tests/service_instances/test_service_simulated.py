"""Service instances on the simulated cluster: no capacity of their own, their compute instance's GPU
quota, node ports, phases, stop (no pod, no GPUs), failures, and the namespace taking them along."""

from __future__ import annotations

import uuid

import pytest

from gpupaas.instance_templates.builtins import BUILTIN_INSTANCE_TEMPLATES
from gpupaas.instance_templates.spec import resolve
from gpupaas.provisioning.builtins import builtin_template
from gpupaas.provisioning.drivers.base import Observed, Phase
from gpupaas.provisioning.drivers.simulated.driver import SimulatedDriver
from gpupaas.provisioning.inventory import DEFAULT_INVENTORY
from gpupaas.provisioning.models import SimulatedAllocation
from gpupaas.provisioning.plan import PermanentError, Plan, build_plan
from gpupaas.service_instances.plan import build_service_plan
from tests.conftest import Database
from tests.service_instances.ssh_setup import ssh_setup

COMPUTE = str(uuid.uuid4())
RESOURCES = {
    "cpu": "8",
    "memory": "64Gi",
    "storage": "100Gi",
    "gpuCount": 2,
    "gpuVendor": "NVIDIA",
    "gpuModel": None,
}
TEMPLATES = {t.name: t for t in BUILTIN_INSTANCE_TEMPLATES}


def compute_plan() -> Plan:
    builtin = builtin_template("gpu-namespace")
    assert builtin is not None
    return build_plan(
        instance_id=COMPUTE,
        instance_name="box",
        project="ml",
        profile_name="h100",
        allocation="SHARED",
        resources=RESOURCES,
        template_resources=builtin.resources,
        input_definitions=builtin.inputs,
        input_values={d.name: d.default for d in builtin.inputs if d.default is not None},
        outputs=builtin.outputs,
        labels={},
        annotations={},
    )


def service_plan(
    name: str = "nb", *, gpus: int = 1, running: bool = True, service_id: str | None = None, **changes: object
) -> Plan:
    changes.setdefault("ssh", ssh_setup(TEMPLATES[str(changes.get("template", "jupyterlab-pytorch"))].spec))
    return build_service_plan(
        service_id=service_id or str(uuid.uuid5(uuid.NAMESPACE_DNS, name)),
        name=name,
        spec=resolve(
            TEMPLATES[str(changes.pop("template", "jupyterlab-pytorch"))].spec, {"generated_token": "ab" * 16}
        ),
        gpu_count=gpus,
        compute_id=COMPUTE,
        compute_name="box",
        project="ml",
        compute_resources=RESOURCES,
        profile_name="h100",
        running=running,
        **changes,  # type: ignore[arg-type]
    )


class Recorder:
    def __init__(self) -> None:
        self.messages: list[str] = []

    async def __call__(self, message: str) -> None:
        self.messages.append(message)


@pytest.fixture
async def cluster(db: Database) -> SimulatedDriver:
    driver = SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=0)
    await driver.apply(compute_plan())
    return driver


async def test_a_service_runs_in_its_compute_instance_without_capacity_of_its_own(
    cluster: SimulatedDriver,
) -> None:
    before = await cluster.cluster_state()
    progress = Recorder()
    applied = await cluster.apply(service_plan(), progress)
    assert await cluster.cluster_state() == before  # nothing more is taken from the nodes
    port = int(applied.outputs["nodePort.jupyter"])
    assert 30000 <= port <= 32767
    assert [ref.kind for ref in applied.objects] == ["PersistentVolumeClaim", "Deployment", "Service"]
    assert progress.messages[0].startswith("Scheduling nb in namespace ml-box-")
    assert any(m.startswith('Pulling image "') for m in progress.messages)
    assert "Creating namespace" not in " ".join(progress.messages)
    assert await cluster.observe(service_plan()) == Observed(Phase.READY)
    # A second service gets another node port.
    other = await cluster.apply(service_plan("other"))
    assert other.outputs["nodePort.jupyter"] != applied.outputs["nodePort.jupyter"]


async def test_gpus_beyond_the_quota_are_refused_as_a_real_quota_would(cluster: SimulatedDriver) -> None:
    await cluster.apply(service_plan("a", gpus=2))
    with pytest.raises(
        PermanentError,
        match=r"exceeded quota: compute.*requested: requests.nvidia.com/gpu=1.*used: requests.nvidia.com/gpu=2",
    ):
        await cluster.apply(service_plan("b", gpus=1))
    # Stopping "a" gives its GPUs back; the Service keeps its node port.
    first = await SimulatedAllocation.get(instance_id=str(uuid.uuid5(uuid.NAMESPACE_DNS, "a")))
    ports = first.node_ports
    progress = Recorder()
    await cluster.apply(service_plan("a", gpus=2, running=False), progress)
    assert "Waiting for the pod to terminate" in progress.messages
    stopped = await SimulatedAllocation.get(id=first.id)
    assert stopped.gpu_count == 0 and stopped.node_ports == ports
    await cluster.apply(service_plan("b", gpus=1))


async def test_a_service_needs_its_compute_instance_deployed(db: Database) -> None:
    driver = SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=0)
    with pytest.raises(PermanentError, match="does not exist: its compute instance is not deployed"):
        await driver.apply(service_plan())


async def test_failure_injection_and_destroy(cluster: SimulatedDriver) -> None:
    failing = service_plan(annotations={"simulated.gpupaas.io/service-fail": "apply"})
    with pytest.raises(PermanentError, match="image pull back-off"):
        await cluster.apply(failing)
    assert (await cluster.observe(failing)).phase == Phase.FAILED
    await cluster.destroy(failing)
    assert await cluster.observe(failing) == Observed(Phase.ABSENT)
    assert await cluster.observe(compute_plan()) == Observed(Phase.READY)  # the compute instance stays


async def test_destroying_the_compute_instance_takes_its_services_along(cluster: SimulatedDriver) -> None:
    await cluster.apply(service_plan("a"))
    await cluster.apply(service_plan("b", gpus=0, template="ubuntu"))
    await cluster.destroy(compute_plan())
    assert await SimulatedAllocation.all().count() == 0
