"""Service instances on the simulated cluster: no capacity of their own, their compute instance's GPU
quota, node ports, phases, stop (no pod, no GPUs), failures, and the namespace taking them along."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

import pytest

from gpupaas.instance_templates.builtins import BUILTIN_INSTANCE_TEMPLATES
from gpupaas.instance_templates.spec import Storage, resolve
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
    name: str = "nb",
    *,
    gpus: int = 1,
    running: bool = True,
    service_id: str | None = None,
    storage: Storage | None = None,
    disk: str | None = None,
    **changes: object,
) -> Plan:
    changes.setdefault("ssh", ssh_setup(TEMPLATES[str(changes.get("template", "jupyterlab-pytorch"))].spec))
    spec = resolve(
        TEMPLATES[str(changes.pop("template", "jupyterlab-pytorch"))].spec, {"generated_token": "ab" * 16}
    )
    if storage is not None:
        spec = replace(spec, storage=storage)
    if disk is not None:
        spec = replace(spec, container_disk=disk)
    return build_service_plan(
        service_id=service_id or str(uuid.uuid5(uuid.NAMESPACE_DNS, name)),
        name=name,
        spec=spec,
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
    small = Storage(size="10Gi")  # a stopped service keeps its claim: both claims fit the quota's storage
    await cluster.apply(service_plan("a", gpus=2, storage=small))
    with pytest.raises(
        PermanentError,
        match=r"exceeded quota: compute.*requested: requests.nvidia.com/gpu=1.*used: requests.nvidia.com/gpu=2",
    ):
        await cluster.apply(service_plan("b", gpus=1, storage=small))
    # Stopping "a" gives its GPUs back; the Service keeps its node port.
    first = await SimulatedAllocation.get(instance_id=str(uuid.uuid5(uuid.NAMESPACE_DNS, "a")))
    ports = first.node_ports
    progress = Recorder()
    await cluster.apply(service_plan("a", gpus=2, running=False, storage=small), progress)
    assert "Waiting for the pod to terminate" in progress.messages
    stopped = await SimulatedAllocation.get(id=first.id)
    assert stopped.gpu_count == 0 and stopped.node_ports == ports
    await cluster.apply(service_plan("b", gpus=1, storage=small))


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


# ---------------------------------------------------------------- ResourceQuota admission and status.used


async def _quota(name: str = "compute") -> dict[str, Any]:
    row = await SimulatedAllocation.get(instance_id=COMPUTE)
    return next(
        obj for obj in row.objects if obj["kind"] == "ResourceQuota" and obj["metadata"]["name"] == name
    )


async def test_ephemeral_storage_beyond_the_quota_is_refused_and_used_is_kept(
    cluster: SimulatedDriver,
) -> None:
    # given the namespace's quota of 50Gi of ephemeral storage (gpu-namespace's default)
    hard = (await _quota())["status"]["hard"]
    assert hard["requests.ephemeral-storage"] == "50Gi"
    # when CPU services of 15Gi of container disk each are started
    for index in range(3):
        await cluster.apply(
            service_plan(
                f"s{index}", gpus=0, template="ubuntu", disk="15Gi", storage=Storage(mode="EPHEMERAL")
            )
        )
    used = (await _quota())["status"]["used"]
    assert used["requests.ephemeral-storage"] == "45Gi" and used["limits.ephemeral-storage"] == "45Gi"
    assert used["pods"] == "3"
    # LimitRange defaults count for containers that set no CPU (500m each)
    assert used["requests.cpu"] == "1500m"
    # then the fourth is refused as the API server words it, and nothing of it counts
    with pytest.raises(PermanentError) as refused:
        await cluster.apply(
            service_plan("s3", gpus=0, template="ubuntu", disk="15Gi", storage=Storage(mode="EPHEMERAL"))
        )
    assert str(refused.value) == (
        'pods "s3" is forbidden: exceeded quota: compute, requested: '
        "limits.ephemeral-storage=15Gi,requests.ephemeral-storage=15Gi, used: "
        "limits.ephemeral-storage=45Gi,requests.ephemeral-storage=45Gi, limited: "
        "limits.ephemeral-storage=50Gi,requests.ephemeral-storage=50Gi"
    )
    assert (await _quota())["status"]["used"]["pods"] == "3"
    # when one stops, its pod's share is free again; when one is destroyed, everything of it
    await cluster.apply(
        service_plan(
            "s0", gpus=0, template="ubuntu", disk="15Gi", storage=Storage(mode="EPHEMERAL"), running=False
        )
    )
    assert (await _quota())["status"]["used"]["requests.ephemeral-storage"] == "30Gi"
    await cluster.apply(
        service_plan("s3", gpus=0, template="ubuntu", disk="15Gi", storage=Storage(mode="EPHEMERAL"))
    )
    await cluster.destroy(
        service_plan("s1", gpus=0, template="ubuntu", disk="15Gi", storage=Storage(mode="EPHEMERAL"))
    )
    used = (await _quota())["status"]["used"]
    assert used["requests.ephemeral-storage"] == "30Gi" and used["pods"] == "2"


async def test_an_ephemeral_workspace_size_counts_as_ephemeral_storage(cluster: SimulatedDriver) -> None:
    await cluster.apply(
        service_plan(
            "e", gpus=0, template="ubuntu", disk="5Gi", storage=Storage(mode="EPHEMERAL", size="20Gi")
        )
    )
    used = (await _quota())["status"]["used"]
    assert used["requests.ephemeral-storage"] == "25Gi"
    assert used["requests.storage"] == "0"  # no claim


async def test_claims_count_against_the_storage_quota(cluster: SimulatedDriver) -> None:
    await cluster.apply(service_plan("a", gpus=1, storage=Storage(size="60Gi")))
    assert (await _quota())["status"]["used"]["requests.storage"] == "60Gi"
    with pytest.raises(
        PermanentError,
        match=r'^persistentvolumeclaims "b-workspace" is forbidden: exceeded quota: compute, requested: '
        r"requests.storage=50Gi, used: requests.storage=60Gi, limited: requests.storage=100Gi$",
    ):
        await cluster.apply(service_plan("b", gpus=1, storage=Storage(size="50Gi")))


async def test_a_kept_claim_stays_for_another_service(cluster: SimulatedDriver) -> None:
    # given a service whose volume is kept on delete
    keep = Storage(size="30Gi", reclaim="KEEP")
    await cluster.apply(service_plan("a", storage=keep))
    progress = Recorder()
    # when it is deleted
    await cluster.destroy(service_plan("a", storage=keep), progress)
    # then its claim stays in the namespace, without its label, and still counts
    assert any("Keeping a-workspace" in message for message in progress.messages)
    rows = await SimulatedAllocation.filter(instance_id__startswith="kept/")
    (claim,) = [obj for row in rows for obj in row.objects]
    assert claim["metadata"]["name"] == "a-workspace"
    assert "gpupaas.io/service" not in claim["metadata"]["labels"]
    assert claim["metadata"]["annotations"] == {"gpupaas.io/kept-from": "a"}
    assert (await _quota())["status"]["used"]["requests.storage"] == "30Gi"
    # and another service mounts it as an existing claim
    existing = Storage(mode="EXISTING_CLAIM", claim_name="a-workspace")
    await cluster.apply(service_plan("b", storage=existing))
    assert (await _quota())["status"]["used"]["requests.storage"] == "30Gi"  # no new claim
    # a claim the namespace does not have is refused as the scheduler says it
    with pytest.raises(
        PermanentError, match=r'persistentvolumeclaim "nope" not found in namespace .* \(it has a-workspace\)'
    ):
        await cluster.apply(service_plan("c", storage=Storage(mode="EXISTING_CLAIM", claim_name="nope")))
    # and the compute instance's namespace takes it along
    await cluster.destroy(service_plan("b", storage=existing))
    await cluster.destroy(compute_plan())
    assert await SimulatedAllocation.all().count() == 0


async def test_a_released_claim_goes_with_its_service(cluster: SimulatedDriver) -> None:
    await cluster.apply(service_plan("a", storage=Storage(size="30Gi")))
    await cluster.destroy(service_plan("a", storage=Storage(size="30Gi")))
    assert await SimulatedAllocation.filter(instance_id__startswith="kept/").count() == 0
    assert (await _quota())["status"]["used"]["requests.storage"] == "0"
