"""The whole compute flow with the kubernetes driver, against the fake Kubernetes API server:
register the cluster, launch, deploy (server-side apply, readiness), outputs, drift, destroy; and
readiness that tells the truth: a GPU node that joins later, a fixed image after a failed one, a
crash loop past its grace, each with the status message a person reads."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gpupaas.accounts.service import actor_for
from gpupaas.catalog.service.profiles import ResourcesIn
from gpupaas.catalog.service.templates import InputDefinitionIn, OutputDefinitionIn
from gpupaas.clusters.models import ClusterStatus
from gpupaas.compute import service as compute
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.gpus import Vendor
from gpupaas.provisioning.plan import namespace_for
from gpupaas.runs.models import DeploymentRun
from gpupaas.runtime import Runtime
from gpupaas.settings import Settings
from tests.conftest import SECRET_KEY
from tests.factories import make_instance, make_profile, make_project, make_template, make_version
from tests.fake_kube import FakeKube, node
from tests.workers.conftest import eventually, kubernetes_runtime, wait_status

S = DeploymentStatus

WORKLOAD = """\
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: trainer
  namespace: "{{ instance.namespace }}"
spec:
  replicas: 1
  selector: {matchLabels: {app: trainer}}
  template:
    metadata: {labels: {app: trainer}}
    spec:
      containers:
      - name: main
        image: "nvcr.io/nvidia/pytorch:24.01-py3"
        resources:
          limits: {"{{ resources.gpuResourceName }}": "{{ resources.gpuCount }}"}
---
apiVersion: v1
kind: Service
metadata:
  name: trainer
  namespace: "{{ instance.namespace }}"
spec:
  type: NodePort
  selector: {app: trainer}
  ports: [{name: http, port: 8000}]
"""


@pytest.fixture
def graces() -> dict[str, Any]:
    """The driver's grace settings (Settings fields); a test parametrizes `graces` for others."""
    return {}


@pytest.fixture
async def kube_runtime(
    db: object,
    settings: Settings,
    fake_kube: FakeKube,
    tmp_path: Path,
    graces: dict[str, Any],
) -> AsyncIterator[tuple[Runtime, Any]]:
    """A runtime (in-process bus, worker, drift watch) and a KUBERNETES cluster on the fake server."""
    nodes = [node("gpu-0", gpus=8), node("gpu-1", gpus=8), node("cpu-0")]
    kubeconfig = fake_kube.kubeconfig(tmp_path / "kubeconfig").read_text()
    async with kubernetes_runtime(settings, kubeconfig, nodes=nodes, fake=fake_kube, **graces) as running:
        yield running


async def test_registering_checks_the_cluster(kube_runtime: tuple[Runtime, Any]) -> None:
    _, cluster = kube_runtime
    assert cluster.status == ClusterStatus.READY, cluster.status_message
    assert cluster.server_version and cluster.server_version.startswith("v1.37")
    gpus = {n["name"]: (n["gpuResource"], n["gpuCount"]) for n in cluster.nodes}
    assert gpus["gpu-0"] == ("nvidia.com/gpu", 8) and gpus["cpu-0"][1] == 0


async def test_deploy_outputs_and_destroy_on_kubernetes(
    kube_runtime: tuple[Runtime, Any], fake_kube: FakeKube
) -> None:
    _, cluster = kube_runtime
    project = await make_project("ml")
    from gpupaas.catalog.models import EnvironmentTemplate, EnvironmentTemplateVersion

    builtin = await EnvironmentTemplate.get(name="gpu-namespace", built_in=True)
    version = await EnvironmentTemplateVersion.get(template_id=builtin.id)
    profile = await make_profile(project, version, cluster_id=str(cluster.id))
    instance = await make_instance(project, profile, name="nb", labels=[("team", "vision")], deploy=True)

    done = await wait_status(instance.id, S.SUCCESS, S.FAILED)
    assert done.status == S.SUCCESS, done.status_message
    ns = namespace_for("ml", "nb", str(instance.id))
    assert done.outputs["namespace"] == ns
    namespace = fake_kube.get("v1", "Namespace", ns)
    assert namespace is not None
    assert namespace["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpupaas"
    assert namespace["metadata"]["labels"]["gpupaas.io/instance"] == str(instance.id)
    assert namespace["metadata"]["labels"]["team"] == "vision"
    quota = (
        fake_kube.get("v1", "ResourceQuota", "compute", ns) or fake_kube.list("v1", "ResourceQuota", ns)[0]
    )
    assert str(quota["spec"]["hard"]["requests.nvidia.com/gpu"]) == "1"
    applies = [r for r in fake_kube.requests if r.method == "PATCH"]
    assert applies
    for request in applies:
        assert request.content_type == "application/apply-patch+yaml"
        assert request.query == {"fieldManager": "gpupaas", "force": "true"}
    run = await DeploymentRun.get(instance_id=instance.id)
    assert run.applied[0]["kind"] == "Namespace"

    await compute.destroy(await _root(), str(instance.id))
    gone = await wait_status(instance.id, S.NOT_DEPLOYED, S.FAILED)
    assert gone.status == S.NOT_DEPLOYED, gone.status_message
    assert fake_kube.get("v1", "Namespace", ns) is None


async def _root() -> Any:
    from gpupaas.accounts.models import User

    return await actor_for(await User.get(username="root"))


async def _workload_profile(cluster: Any, gpus: int) -> tuple[Any, Any]:
    project = await make_project("ml")
    version = await make_version(
        await make_template(project),
        resources=WORKLOAD.replace('"nvcr.io/nvidia/pytorch:24.01-py3"', '"{{ inputs.image }}"'),
        inputs=[InputDefinitionIn(name="image", type="STRING", default=IMAGE)],
        outputs=[OutputDefinitionIn(name="port", value="{{ objects.Service.spec.ports.0.nodePort }}")],
    )
    profile = await make_profile(
        project,
        version,
        cluster_id=str(cluster.id),
        resources=ResourcesIn(
            cpu="4", memory="16Gi", storage="10Gi", gpu_count=gpus, gpu_vendor=Vendor.NVIDIA
        ),
    )
    return project, profile


IMAGE = "nvcr.io/nvidia/pytorch:24.01-py3"


async def _run_message(instance_id: Any, text: str) -> str:
    """The message of the instance's run once it contains `text` (what the studio shows meanwhile)."""
    found: list[str] = []

    async def says() -> bool:
        run = await DeploymentRun.filter(instance_id=instance_id).order_by("-created_at").first()
        if run is not None and run.message and text in run.message:
            found.append(run.message)
        return bool(found)

    await eventually(says, timeout=10, what=f"the run's message to say {text!r}")
    return found[0]


@pytest.mark.parametrize("graces", [{"kubernetes_scheduling_grace_seconds": 0.3}])
async def test_a_pod_no_node_fits_past_the_scale_up_grace_fails_the_run_with_the_schedulers_reason(
    kube_runtime: tuple[Runtime, Any], graces: dict[str, Any]
) -> None:
    _, cluster = kube_runtime
    project, profile = await _workload_profile(cluster, gpus=64)
    instance = await make_instance(project, profile, name="big", deploy=True)
    failed = await wait_status(instance.id, S.FAILED, S.SUCCESS)
    assert failed.status == S.FAILED
    message = failed.status_message or ""
    assert " cannot be scheduled after " in message, message
    assert "0/3 nodes are available: 3 Insufficient nvidia.com/gpu." in message, message


async def test_a_gpu_node_that_joins_later_is_waited_for_and_the_run_succeeds(
    kube_runtime: tuple[Runtime, Any], fake_kube: FakeKube
) -> None:
    _, cluster = kube_runtime
    project, profile = await _workload_profile(cluster, gpus=16)  # more than any node has
    instance = await make_instance(project, profile, name="big", deploy=True)

    message = await _run_message(instance.id, "Waiting for GPU nodes")
    assert message.startswith("Waiting for GPU nodes for pod trainer-"), message
    assert ": 0/3 nodes are available: 3 Insufficient nvidia.com/gpu." in message, message
    assert (await ComputeInstance.get(id=instance.id)).status == S.IN_PROGRESS
    # the node pool scales up: a 16-GPU node joins, its device plugin a moment later
    fake_kube.add_nodes([node("gpu-big", gpus=16)], device_plugin_delay=0.1)

    done = await wait_status(instance.id, S.SUCCESS, S.FAILED)
    assert done.status == S.SUCCESS, done.status_message
    ns = namespace_for("ml", "big", str(instance.id))
    assert [p["spec"]["nodeName"] for p in fake_kube.pods(ns)] == ["gpu-big"]


@pytest.mark.parametrize("graces", [{"kubernetes_image_pull_grace_seconds": 0.3}])
async def test_a_fixed_image_deployed_after_a_failed_one_ends_success(
    kube_runtime: tuple[Runtime, Any], fake_kube: FakeKube, graces: dict[str, Any]
) -> None:
    _, cluster = kube_runtime
    project, profile = await _workload_profile(cluster, gpus=1)
    fake_kube.set_pod_delay(30)
    broken = "nvcr.io/nvidia/pytorch:24.01-py3-typo"
    instance = await make_instance(project, profile, name="train", inputs=[("image", broken)], deploy=True)
    ns = namespace_for("ml", "train", str(instance.id))
    [pod] = await asyncio.to_thread(fake_kube.wait_for, lambda: fake_kube.pod_names(ns))
    fake_kube.fail_pod(ns, pod, "ImagePullBackOff", f'Back-off pulling image "{broken}"')
    failed = await wait_status(instance.id, S.FAILED, S.SUCCESS)
    assert failed.status == S.FAILED
    assert (failed.status_message or "").startswith(f"pod {pod}: ImagePullBackOff for "), (
        failed.status_message
    )

    fake_kube.set_pod_delay(0)
    await compute.update_instance(
        await _root(), str(instance.id), compute.InstanceIn(inputs=[("image", IMAGE)]), secret_key=SECRET_KEY
    )
    await compute.deploy(await _root(), str(instance.id))

    done = await wait_status(instance.id, S.SUCCESS, S.FAILED, timeout=15)
    assert done.status == S.SUCCESS, done.status_message
    images = [p["spec"]["containers"][0]["image"] for p in fake_kube.ready_pods(ns)]
    assert images == [IMAGE]


async def test_drift_turns_the_instance_failed_past_the_restart_grace_and_back(
    kube_runtime: tuple[Runtime, Any], fake_kube: FakeKube
) -> None:
    _, cluster = kube_runtime
    project, profile = await _workload_profile(cluster, gpus=1)
    instance = await make_instance(project, profile, name="train", deploy=True)
    done = await wait_status(instance.id, S.SUCCESS, S.FAILED)
    assert done.status == S.SUCCESS, done.status_message
    assert 30000 <= int(done.outputs["port"]) <= 32767
    ns = namespace_for("ml", "train", str(instance.id))
    [pod] = fake_kube.pods(ns)
    name = pod["metadata"]["name"]
    # it crashes again and again (out of GPU memory); 3 restarts (the default grace) and it is FAILED
    fake_kube.crash_loop(ns, name, reason="OOMKilled", exit_code=137, back_off=0.05, runs_for=0.05)
    failed = await wait_status(instance.id, S.FAILED, timeout=20)
    assert (
        failed.status_message
        == f"drift: pod {name}: OOMKilled (container main exited with code 137; CrashLoopBackOff)"
    )
    restarts = fake_kube.pods(ns)[0]["status"]["containerStatuses"][0]["restartCount"]
    assert restarts >= 3
    fake_kube.recover_pod(ns, name)
    await wait_status(instance.id, S.SUCCESS, timeout=20)

    async def still_success() -> bool:
        return (await ComputeInstance.get(id=instance.id)).status == S.SUCCESS

    await eventually(still_success, what="the instance to stay SUCCESS")
