"""GPU service instances through the kubernetes driver, against the fake Kubernetes API server
(tests/fake_kube): the compute instance's gpu-namespace plan first, then the service's plan
(service_instances.plan.build_service_plan) into the same namespace, found by gpupaas.io/service."""

from __future__ import annotations

import asyncio
import base64
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gpupaas.instance_templates.builtins import builtin_instance_template
from gpupaas.provisioning.builtins import builtin_template
from gpupaas.provisioning.drivers.base import Observed, Owner, Phase
from gpupaas.provisioning.drivers.kubernetes.driver import KubernetesDriver
from gpupaas.provisioning.plan import SERVICE_LABEL, PermanentError, Plan, build_plan, namespace_for
from gpupaas.provisioning.render.schema import validate_manifest
from gpupaas.service_instances.plan import build_service_plan
from gpupaas.service_instances.podspec import RESTART_ANNOTATION
from tests.fake_kube import FakeKube
from tests.fake_kube.fixtures import fake_kube  # noqa: F401
from tests.provisioning.drivers.kubernetes.clusters import new_driver
from tests.service_instances.ssh_setup import ssh_setup

PROJECT = "team-a"
COMPUTE_NAME = "train"
COMPUTE_ID = str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{PROJECT}/{COMPUTE_NAME}"))
NAMESPACE = namespace_for(PROJECT, COMPUTE_NAME, COMPUTE_ID)
TOKEN = "ab" * 16
SERVICE_ID = "5d0c7f7e-0000-4000-8000-00000000000a"
OTHER_SERVICE_ID = "5d0c7f7e-0000-4000-8000-00000000000b"
# What the compute instance's profile gives it (its snapshot's resources).
COMPUTE_RESOURCES: dict[str, Any] = {
    "cpu": "8",
    "memory": "64Gi",
    "storage": "100Gi",
    "gpuCount": 2,
    "gpuVendor": "NVIDIA",
    "gpuModel": "H100",
}


def compute_plan() -> Plan:
    """The compute instance's plan on the built-in gpu-namespace template (2 NVIDIA GPUs)."""
    builtin = builtin_template("gpu-namespace")
    assert builtin is not None
    return build_plan(
        instance_id=COMPUTE_ID,
        instance_name=COMPUTE_NAME,
        project=PROJECT,
        profile_name="h100",
        allocation="SHARED",
        resources=COMPUTE_RESOURCES,
        template_resources=builtin.resources,
        input_definitions=builtin.inputs,
        input_values={d.name: d.default for d in builtin.inputs if d.default is not None},
        outputs=builtin.outputs,
        labels={"team": "ml"},
        annotations={},
    )


def service_plan(
    *,
    template: str = "jupyterlab-pytorch",
    service_id: str = SERVICE_ID,
    name: str = "notebook",
    gpu_count: int = 1,
    running: bool = True,
    restart: str | None = None,
    compute_resources: dict[str, Any] | None = None,
) -> Plan:
    """A service plan in the compute instance of compute_plan() (same project, name and id)."""
    builtin = builtin_instance_template(template)
    assert builtin is not None
    return build_service_plan(
        service_id=service_id,
        name=name,
        spec=builtin.spec,
        generated={"generated_token": TOKEN},  # as the run kind builds it: the pod reads a Secret
        gpu_count=gpu_count,
        compute_id=COMPUTE_ID,
        compute_name=COMPUTE_NAME,
        project=PROJECT,
        compute_resources=compute_resources or COMPUTE_RESOURCES,
        profile_name="h100",
        running=running,
        restart=restart,
        ssh=ssh_setup(builtin.spec),
    )


def service_selector(service_id: str = SERVICE_ID) -> str:
    return f"gpupaas.io/service={service_id}"


@pytest.fixture
def fake(fake_kube: FakeKube) -> FakeKube:  # noqa: F811 - the fixture imported above
    return fake_kube


@pytest.fixture
def kubeconfig(fake: FakeKube, tmp_path: Path) -> str:
    return fake.kubeconfig(tmp_path / "kubeconfig").read_text(encoding="utf-8")


@pytest.fixture
async def driver(kubeconfig: str) -> AsyncIterator[KubernetesDriver]:
    cluster = new_driver(kubeconfig)
    try:
        yield cluster
    finally:
        await cluster.close()


@pytest.fixture
async def compute(driver: KubernetesDriver) -> Plan:
    """The compute instance, applied and ready."""
    plan = compute_plan()
    await driver.apply(plan)
    assert await driver.observe(plan) == Observed(Phase.READY)
    return plan


async def first_pod(fake: FakeKube, namespace: str, selector: str | None = None) -> str:
    names: list[str] = await asyncio.to_thread(fake.wait_for, lambda: fake.pod_names(namespace, selector))
    return names[0]


def only_pod(fake: FakeKube, service_id: str = SERVICE_ID) -> dict[str, Any]:
    pods = fake.pods(NAMESPACE, service_selector(service_id))
    assert len(pods) == 1, [p["metadata"]["name"] for p in pods]
    return pods[0]


def node_port(fake: FakeKube, name: str = "notebook") -> int:
    service = fake.get("v1", "Service", name, NAMESPACE)
    assert service is not None
    port: int = service["spec"]["ports"][0]["nodePort"]
    return port


def versions(fake: FakeKube, selector: str) -> dict[tuple[str, str], str]:
    """(kind, name) -> resourceVersion of every object of the namespace matching the selector."""
    found: dict[tuple[str, str], str] = {}
    for api_version, kind in (
        ("v1", "PersistentVolumeClaim"),
        ("v1", "Service"),
        ("v1", "Pod"),
        ("apps/v1", "Deployment"),
        ("apps/v1", "ReplicaSet"),
    ):
        for obj in fake.list(api_version, kind, NAMESPACE, selector):
            found[(kind, obj["metadata"]["name"])] = obj["metadata"]["resourceVersion"]
    return found


def compute_objects(fake: FakeKube) -> dict[str, tuple[str, Any]]:
    """kind -> (uid, spec) of the compute instance's objects, all of which must be there and not
    being deleted (the quota's status changes with the services' usage: not compared)."""
    found: dict[str, tuple[str, Any]] = {}
    for kind, name, namespace in (
        ("Namespace", NAMESPACE, None),
        ("ResourceQuota", "compute", NAMESPACE),
        ("LimitRange", "container-defaults", NAMESPACE),
    ):
        obj = fake.get("v1", kind, name, namespace)
        assert obj is not None, f"{kind} {name} is gone"
        assert "deletionTimestamp" not in obj["metadata"], f"{kind} {name} is being deleted"
        assert obj["metadata"]["labels"]["gpupaas.io/instance"] == COMPUTE_ID
        found[kind] = (obj["metadata"]["uid"], obj.get("spec"))
    return found


# ------------------------------------------------------------------------------------- manifests


@pytest.mark.parametrize(
    ("template", "gpu_count", "resources"),
    [
        ("jupyterlab-pytorch", 1, COMPUTE_RESOURCES),
        ("vllm-openai", 2, COMPUTE_RESOURCES),
        ("pytorch-rocm", 1, {**COMPUTE_RESOURCES, "gpuVendor": "AMD", "gpuModel": "MI300X"}),
        ("ubuntu", 0, {**COMPUTE_RESOURCES, "gpuCount": 0, "gpuVendor": "CPU", "gpuModel": None}),
    ],
)
@pytest.mark.parametrize(("running", "restart"), [(True, None), (False, None), (True, "r1")])
def test_every_manifest_of_a_service_plan_is_valid(
    template: str, gpu_count: int, resources: dict[str, Any], running: bool, restart: str | None
) -> None:
    plan = service_plan(
        template=template,
        gpu_count=gpu_count,
        running=running,
        restart=restart,
        compute_resources=resources,
    )

    # the generated values' Secret when the command or env uses one (JupyterLab's token, vLLM's key),
    # the SSH server's when the template declares SSH access (the shells)
    secret = ["Secret"]
    assert [m["kind"] for m in plan.manifests][: 2 + len(secret)] == [
        "PersistentVolumeClaim",
        *secret,
        "Deployment",
    ]
    for manifest in plan.manifests:
        assert validate_manifest(manifest, "1.37.0") == [], manifest["kind"]
    deployment = next(m for m in plan.manifests if m["kind"] == "Deployment")
    assert deployment["spec"]["replicas"] == (1 if running else 0)
    annotations = deployment["spec"]["template"]["metadata"].get("annotations") or {}
    assert annotations.get(RESTART_ANNOTATION) == restart


# ----------------------------------------------------------------------------------------- apply


async def test_a_service_is_applied_into_its_compute_instances_namespace(
    fake: FakeKube, driver: KubernetesDriver, compute: Plan
) -> None:
    plan = service_plan()
    assert plan.namespace == NAMESPACE == compute.namespace
    assert plan.owner_label == "gpupaas.io/service"
    assert plan.within == COMPUTE_ID
    assert await driver.observe(plan) == Observed(Phase.ABSENT)

    applied = await driver.apply(plan)

    # the generated values' Secret, the claim, the Deployment and the Service, in the compute
    # instance's namespace
    assert [(r.api_version, r.kind, r.name, r.namespace) for r in applied.objects] == [
        ("v1", "Secret", "notebook-generated", NAMESPACE),
        ("v1", "PersistentVolumeClaim", "notebook-workspace", NAMESPACE),
        ("apps/v1", "Deployment", "notebook", NAMESPACE),
        ("v1", "Service", "notebook", NAMESPACE),
    ]
    for api_version, kind, name in (
        ("v1", "PersistentVolumeClaim", "notebook-workspace"),
        ("apps/v1", "Deployment", "notebook"),
        ("v1", "Service", "notebook"),
    ):
        obj = fake.get(api_version, kind, name, NAMESPACE)
        assert obj is not None, kind
        labels = obj["metadata"]["labels"]
        assert labels["gpupaas.io/service"] == SERVICE_ID
        assert labels["gpupaas.io/compute-instance"] == COMPUTE_ID
        assert "gpupaas.io/instance" not in labels
    claim = fake.get("v1", "PersistentVolumeClaim", "notebook-workspace", NAMESPACE)
    assert claim is not None
    assert claim["status"]["phase"] == "Bound"

    # the node port as the cluster chose it
    port = node_port(fake)
    assert 30000 <= port <= 32767
    assert applied.outputs == {"nodePort.jupyter": str(port)}

    # one pod, of the service, with one of the instance's GPUs and the token from its Secret
    pod = only_pod(fake)
    labels = pod["metadata"]["labels"]
    assert labels["gpupaas.io/service"] == SERVICE_ID
    assert labels["gpupaas.io/compute-instance"] == COMPUTE_ID
    assert "gpupaas.io/instance" not in labels
    assert fake.pods(NAMESPACE, f"gpupaas.io/instance={COMPUTE_ID}") == []
    (main,) = pod["spec"]["containers"]
    assert main["resources"]["requests"]["nvidia.com/gpu"] == "1"
    assert main["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert "--ServerApp.token=$(GPUPAAS_GENERATED_TOKEN)" in main["command"]
    assert main["env"][0] == {
        "name": "GPUPAAS_GENERATED_TOKEN",
        "valueFrom": {"secretKeyRef": {"name": "notebook-generated", "key": "generated_token"}},
    }
    secret = fake.get("v1", "Secret", "notebook-generated", NAMESPACE)
    assert secret is not None and secret["metadata"]["labels"]["gpupaas.io/service"] == SERVICE_ID
    assert base64.b64decode(secret["data"]["generated_token"]).decode() == TOKEN
    assert TOKEN not in json.dumps(fake.get("apps/v1", "Deployment", "notebook", NAMESPACE))

    assert await driver.observe(plan) == Observed(Phase.READY)
    assert await driver.observe(compute) == Observed(Phase.READY)


async def test_applying_the_running_service_again_changes_nothing(
    fake: FakeKube, driver: KubernetesDriver, compute: Plan
) -> None:
    plan = service_plan()
    first = await driver.apply(plan)
    before = versions(fake, service_selector())

    again = await driver.apply(plan)

    assert again == first
    assert versions(fake, service_selector()) == before
    assert len(before) == 5  # claim, service, pod, deployment, replicaset


# ------------------------------------------------------------------------------------ stop/start


async def test_stop_scales_to_zero_and_waits_for_the_pod_and_start_brings_it_back(
    fake: FakeKube, driver: KubernetesDriver, compute: Plan
) -> None:
    running = await driver.apply(service_plan())
    port = node_port(fake)
    claim = fake.get("v1", "PersistentVolumeClaim", "notebook-workspace", NAMESPACE)
    service = fake.get("v1", "Service", "notebook", NAMESPACE)
    assert claim is not None
    assert service is not None
    only_pod(fake)
    # a pod takes a while to terminate: apply must wait for it, not return at once
    fake.set_termination_delay(0.3)

    stopped = await driver.apply(service_plan(running=False))

    deployment = fake.get("apps/v1", "Deployment", "notebook", NAMESPACE)
    assert deployment is not None
    assert deployment["spec"]["replicas"] == 0
    assert fake.pods(NAMESPACE, service_selector()) == []
    # the claim (the workspace) and the Service (its node port) are kept
    claim_after = fake.get("v1", "PersistentVolumeClaim", "notebook-workspace", NAMESPACE)
    service_after = fake.get("v1", "Service", "notebook", NAMESPACE)
    assert claim_after is not None
    assert service_after is not None
    assert claim_after["metadata"]["uid"] == claim["metadata"]["uid"]
    assert service_after["metadata"]["uid"] == service["metadata"]["uid"]
    assert node_port(fake) == port
    assert stopped.outputs == running.outputs == {"nodePort.jupyter": str(port)}
    assert await driver.observe(service_plan(running=False)) == Observed(Phase.READY)
    compute_objects(fake)

    started = await driver.apply(service_plan(running=True))

    pod = only_pod(fake)
    assert "deletionTimestamp" not in pod["metadata"]
    assert node_port(fake) == port
    assert started.outputs == {"nodePort.jupyter": str(port)}
    assert await driver.observe(service_plan()) == Observed(Phase.READY)
    assert await driver.observe(compute) == Observed(Phase.READY)


# --------------------------------------------------------------------------------------- restart


async def test_restart_replaces_the_pod_with_a_new_one(
    fake: FakeKube, driver: KubernetesDriver, compute: Plan
) -> None:
    await driver.apply(service_plan())
    old = only_pod(fake)
    port = node_port(fake)

    await driver.apply(service_plan(restart="r1"))

    new = only_pod(fake)
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    assert new["metadata"]["name"] != old["metadata"]["name"]
    assert new["metadata"]["annotations"][RESTART_ANNOTATION] == "r1"
    assert "deletionTimestamp" not in new["metadata"]
    assert fake.get("v1", "Pod", old["metadata"]["name"], NAMESPACE) is None
    assert node_port(fake) == port
    assert await driver.observe(service_plan(restart="r1")) == Observed(Phase.READY)

    # the same restart again is the same plan: the pod stays
    await driver.apply(service_plan(restart="r1"))
    assert only_pod(fake)["metadata"]["uid"] == new["metadata"]["uid"]


# --------------------------------------------------------------------------------------- destroy


async def test_destroy_removes_the_service_and_leaves_the_namespace_and_other_services(
    fake: FakeKube, driver: KubernetesDriver, compute: Plan
) -> None:
    plan = service_plan()
    other = service_plan(service_id=OTHER_SERVICE_ID, name="shell", template="pytorch")
    await driver.apply(plan)
    await driver.apply(other)
    assert len(fake.pods(NAMESPACE)) == 2
    other_before = versions(fake, service_selector(OTHER_SERVICE_ID))
    assert {kind for kind, _ in other_before} == {
        "PersistentVolumeClaim",
        "Deployment",
        "ReplicaSet",
        "Pod",
        "Service",
    }
    compute_before = compute_objects(fake)

    await driver.destroy(plan)

    # everything of the service is gone, what its Deployment made included
    assert versions(fake, service_selector()) == {}
    assert fake.get("v1", "PersistentVolumeClaim", "notebook-workspace", NAMESPACE) is None
    assert fake.get("apps/v1", "Deployment", "notebook", NAMESPACE) is None
    assert fake.get("v1", "Service", "notebook", NAMESPACE) is None
    assert fake.get("v1", "Secret", "notebook-generated", NAMESPACE) is None  # deleted by name
    assert await driver.observe(plan) == Observed(Phase.ABSENT)
    # the compute instance's objects and the other service are untouched
    assert compute_objects(fake) == compute_before
    assert versions(fake, service_selector(OTHER_SERVICE_ID)) == other_before
    assert await driver.observe(other) == Observed(Phase.READY)
    assert await driver.observe(compute) == Observed(Phase.READY)

    await driver.destroy(plan)  # idempotent
    assert await driver.observe(plan) == Observed(Phase.ABSENT)
    assert versions(fake, service_selector(OTHER_SERVICE_ID)) == other_before


# ---------------------------------------------------------------------------------------- failure


class Changes:
    """What watch_drift reported, to wait for."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[tuple[Owner, Observed]] = asyncio.Queue()

    async def __call__(self, owner: Owner, observed: Observed) -> None:
        await self.queue.put((owner, observed))

    async def next(self) -> tuple[Owner, Phase, str | None]:
        instance, observed = await asyncio.wait_for(self.queue.get(), timeout=5)
        return instance, observed.phase, observed.message


def pod_lists(fake: FakeKube) -> int:
    """How many times the pods were listed (not watched) across namespaces."""
    return sum(1 for r in fake.requests if r.path == "/api/v1/pods" and r.query.get("watch") != "true")


async def test_drift_reports_a_failed_service_pod_as_the_service(
    fake: FakeKube, driver: KubernetesDriver, compute: Plan
) -> None:
    await driver.apply(service_plan())
    pod = await first_pod(fake, NAMESPACE, service_selector())
    changes = Changes()
    stop = asyncio.Event()
    watch = asyncio.create_task(driver.watch_drift(changes, stop=stop))
    try:
        await asyncio.to_thread(fake.wait_for, lambda: pod_lists(fake) == 1)
        oom = f"pod {pod}: OOMKilled (container main exited with code 137; CrashLoopBackOff)"

        fake.fail_pod(NAMESPACE, pod, "OOMKilled")
        assert await changes.next() == (Owner(SERVICE_LABEL, SERVICE_ID), Phase.FAILED, oom)
        fake.recover_pod(NAMESPACE, pod)
        assert await changes.next() == (Owner(SERVICE_LABEL, SERVICE_ID), Phase.READY, None)
    finally:
        stop.set()
        await asyncio.wait_for(watch, timeout=5)
    # nothing about the compute instance (nor anything else)
    assert changes.queue.empty()
    assert await driver.observe(compute) == Observed(Phase.READY)


async def test_a_service_pod_that_fails_while_applied_fails_the_run_but_not_the_compute_instance(
    fake: FakeKube, driver: KubernetesDriver, compute: Plan
) -> None:
    fake.set_pod_delay(30)
    run = asyncio.create_task(driver.apply(service_plan()))
    pod = await first_pod(fake, NAMESPACE, service_selector())

    fake.fail_pod(
        NAMESPACE, pod, "ImagePullBackOff", 'Back-off pulling image "nvcr.io/nvidia/pytorch:25.01-py3"'
    )

    with pytest.raises(PermanentError) as error:
        await run
    assert str(error.value) == (
        f"pod {pod}: ImagePullBackOff "
        '(container main: Back-off pulling image "nvcr.io/nvidia/pytorch:25.01-py3")'
    )
    observed = await driver.observe(service_plan())
    assert observed.phase == Phase.FAILED
    assert observed.message is not None
    assert observed.message.startswith(f"pod {pod}: ImagePullBackOff")
    assert await driver.observe(compute) == Observed(Phase.READY)
    compute_objects(fake)
