"""Readiness that tells the truth, against the fake API server: what usually passes by itself (a GPU
node pool scaling up, a crash the kubelet restarts, a quota that frees, an image pull retried) is
waited for within its grace with the reason in the status message, and fails after it with that
reason; the status of a generation the controllers have not observed is not believed; the pods of
an older revision do not fail a rollout; LoadBalancer addresses are waited for and rendered.

The driver's clock is a FakeClock: the tests let minutes pass for the graces in no time.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from typing import Any, TypeVar

import pytest

from gpupaas.provisioning.drivers.base import Applied, Observed, Phase
from gpupaas.provisioning.drivers.k8s_manifests.pods import Graces
from gpupaas.provisioning.drivers.kubernetes.driver import KubernetesDriver
from gpupaas.provisioning.plan import PermanentError, Plan
from gpupaas.provisioning.render.rendering import OutputDefinition
from tests.fake_kube import FakeKube, node
from tests.provisioning.drivers.kubernetes.clusters import (
    NOTEBOOK,
    FakeClock,
    Recorder,
    first_pod,
    make_plan,
    new_driver,
    notebook_plan,
    ns,
)

T = TypeVar("T")
GRACES = Graces(crash_restarts=3, image_pull_seconds=60, scheduling_seconds=300)
IMAGE = "quay.io/jupyter/base-notebook:2026-01-01"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def patient(kubeconfig: str, clock: FakeClock) -> AsyncIterator[KubernetesDriver]:
    """A driver with graces (and a readiness deadline of 600 s) on the test's clock."""
    driver = new_driver(kubeconfig, readiness_timeout=600, graces=GRACES, clock=clock)
    try:
        yield driver
    finally:
        await driver.close()


async def said(progress: Recorder, text: str) -> str:
    """The first status message that contains `text`, once the driver has said it."""
    async with asyncio.timeout(5):
        while True:
            found = next((m for m in progress.messages if text in m), None)
            if found is not None:
                return found
            await asyncio.sleep(0.01)


async def still_running(run: asyncio.Task[T], clock: FakeClock) -> None:
    """The run has looked at the clock again since the test moved it, and has not ended."""
    await clock.read_after(clock.reads + 1)
    assert not run.done(), run.result()


async def within(awaitable: Awaitable[T]) -> T:
    return await asyncio.wait_for(awaitable, timeout=10)


def no_gpu_message(nodes: int) -> str:
    return (
        f"0/{nodes} nodes are available: {nodes} Insufficient nvidia.com/gpu. preemption: 0/{nodes} nodes "
        f"are available: {nodes} No preemption victims found for incoming pod."
    )


# ------------------------------------------------------------------------------- scheduling


async def test_a_pod_waiting_for_a_gpu_node_that_appears_after_20_s_ends_success(
    fake: FakeKube, patient: KubernetesDriver, clock: FakeClock
) -> None:
    fake.set_nodes([node("cpu-0")])  # the GPU node pool is scaled to zero
    progress = Recorder()
    run = asyncio.create_task(patient.apply(notebook_plan(), progress))

    message = await said(progress, "Waiting for GPU nodes")
    pod = await first_pod(fake, ns("nb"))
    assert message == f"Waiting for GPU nodes for pod {pod}: {no_gpu_message(1)}"
    clock.advance(20)
    await still_running(run, clock)
    # a GPU node joins; its device plugin advertises the GPUs a moment later
    fake.add_nodes([node("gpu-0", gpus=8)], device_plugin_delay=0.05)

    applied = await within(run)
    assert applied.outputs["port"]
    [running] = fake.pods(ns("nb"))
    assert running["spec"]["nodeName"] == "gpu-0"
    assert await patient.observe(notebook_plan()) == Observed(Phase.READY)


async def test_a_pod_no_node_fits_past_the_scale_up_grace_fails_with_the_schedulers_message(
    fake: FakeKube, patient: KubernetesDriver, clock: FakeClock
) -> None:
    fake.set_nodes([node("cpu-0"), node("gpu-0", gpus=4)])
    progress = Recorder()
    run = asyncio.create_task(patient.apply(notebook_plan(gpus=8), progress))
    await said(progress, "Waiting for GPU nodes")
    clock.advance(299)
    await still_running(run, clock)

    clock.advance(2)

    with pytest.raises(PermanentError) as error:
        await within(run)
    pod = await first_pod(fake, ns("nb"))
    assert str(error.value) == f"pod {pod} cannot be scheduled after 301 s: {no_gpu_message(2)}"


async def test_a_deployment_past_its_own_progress_deadline_fails_naming_why_its_pods_wait(
    fake: FakeKube, patient: KubernetesDriver
) -> None:
    fake.set_nodes([node("cpu-0")])
    impatient = NOTEBOOK.replace("  replicas: 1\n", "  replicas: 1\n  progressDeadlineSeconds: 1\n")

    with pytest.raises(PermanentError) as error:
        await within(patient.apply(notebook_plan(resources_text=impatient)))

    pod = await first_pod(fake, ns("nb"))
    [replicaset] = fake.list("apps/v1", "ReplicaSet", ns("nb"))
    assert str(error.value) == (
        f'deployment jupyter: ReplicaSet "{replicaset["metadata"]["name"]}" has timed out progressing. '
        f"(GPU nodes for pod {pod}: {no_gpu_message(1)})"
    )


# ------------------------------------------------------------------------------------ crashes


async def test_a_crash_within_the_grace_recovers_to_success(
    fake: FakeKube, patient: KubernetesDriver, clock: FakeClock
) -> None:
    fake.set_pod_delay(30)
    progress = Recorder()
    run = asyncio.create_task(patient.apply(notebook_plan(), progress))
    pod = await first_pod(fake, ns("nb"))

    fake.fail_pod(ns("nb"), pod, "Error", exit_code=1)  # restartPolicy Always: the kubelet restarts it

    assert await said(progress, "CrashLoopBackOff") == (
        f"Waiting for pod {pod}: Error (container main exited with code 1; CrashLoopBackOff, "
        "restarted 1 of 3 times)"
    )
    await still_running(run, clock)
    fake.recover_pod(ns("nb"), pod)  # and this time it stays up
    applied = await within(run)
    assert applied.outputs["port"]


async def test_a_crash_loop_past_the_grace_fails_with_the_reason(
    fake: FakeKube, patient: KubernetesDriver, clock: FakeClock
) -> None:
    fake.set_pod_delay(30)
    progress = Recorder()
    run = asyncio.create_task(patient.apply(notebook_plan(), progress))
    pod = await first_pod(fake, ns("nb"))
    oom = "torch.OutOfMemoryError: CUDA out of memory"

    # the first crash is forgiven (a long back-off: the run sees it) ...
    fake.crash_loop(ns("nb"), pod, exit_code=3, message=oom, back_off=30)
    await said(progress, "restarted 1 of 3 times")
    await still_running(run, clock)
    # ... the loop goes on, faster, until the kubelet has restarted it 3 times
    fake.crash_loop(ns("nb"), pod, exit_code=3, message=oom, back_off=0.02, runs_for=0.02)

    with pytest.raises(PermanentError) as error:
        await within(run)
    assert str(error.value) == (
        f"pod {pod}: Error (container main exited with code 3: torch.OutOfMemoryError: CUDA out of memory; "
        "CrashLoopBackOff)"
    )
    restarts = fake.pods(ns("nb"))[0]["status"]["containerStatuses"][0]["restartCount"]
    assert restarts >= 3


# ------------------------------------------------------------------------------ stale status


BROKEN = NOTEBOOK.replace("  replicas: 1\n", "  replicas: 1\n  progressDeadlineSeconds: 1\n").replace(
    IMAGE, "quay.io/jupyter/base-notebook:no-such-tag"
)
FIXED = BROKEN.replace("quay.io/jupyter/base-notebook:no-such-tag", IMAGE)


def progressing(fake: FakeKube) -> str | None:
    deployment = fake.get("apps/v1", "Deployment", "jupyter", ns("nb"))
    conditions = (deployment or {}).get("status", {}).get("conditions") or []
    return next((c.get("reason") for c in conditions if c.get("type") == "Progressing"), None)


async def test_a_fixed_image_applied_after_a_failed_one_ends_success(
    fake: FakeKube, patient: KubernetesDriver, clock: FakeClock
) -> None:
    # the broken image fails its run once the pull grace is over
    fake.set_pod_delay(30)
    progress = Recorder()
    failed = asyncio.create_task(patient.apply(notebook_plan(resources_text=BROKEN), progress))
    old_pod = await first_pod(fake, ns("nb"))
    pull = 'Back-off pulling image "quay.io/jupyter/base-notebook:no-such-tag"'
    fake.fail_pod(ns("nb"), old_pod, "ImagePullBackOff", pull)
    await said(progress, "ImagePullBackOff")
    clock.advance(61)
    with pytest.raises(PermanentError) as error:
        await within(failed)
    # (On a slow machine its Deployment's 1 s progress deadline may come first; it names the pod.)
    assert str(error.value) in (
        f"pod {old_pod}: ImagePullBackOff for 61 s (container main: {pull})",
        f'deployment jupyter: ReplicaSet "{fake.list("apps/v1", "ReplicaSet", ns("nb"))[0]["metadata"]["name"]}" '
        f"has timed out progressing. (pod {old_pod}: ImagePullBackOff (container main: {pull}))",
    )
    # and its Deployment gives up too: its rollout is past its progress deadline
    await asyncio.to_thread(fake.wait_for, lambda: progressing(fake) == "ProgressDeadlineExceeded")

    # The fix is applied while the controller is slow to observe it: the Deployment still says
    # ProgressDeadlineExceeded and the old pod still cannot pull its image, but neither is believed.
    fake.set_pod_delay(0)
    fake.set_observe_delay(None)
    progress = Recorder()
    fixing = asyncio.create_task(patient.apply(notebook_plan(resources_text=FIXED), progress))
    await said(progress, "deployment jupyter: waiting for its controller to observe the change")
    stale = fake.get("apps/v1", "Deployment", "jupyter", ns("nb"))
    assert stale is not None and stale["status"]["observedGeneration"] < stale["metadata"]["generation"]
    assert progressing(fake) == "ProgressDeadlineExceeded"
    await still_running(fixing, clock)
    fake.set_observe_delay(0.05)

    applied = await within(fixing)

    assert applied.outputs["port"]
    deployment = fake.get("apps/v1", "Deployment", "jupyter", ns("nb"))
    assert deployment is not None
    assert deployment["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    [current] = fake.ready_pods(ns("nb"))
    assert current["spec"]["containers"][0]["image"] == IMAGE
    assert await patient.observe(notebook_plan(resources_text=FIXED)) == Observed(Phase.READY)


STATEFUL = """
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  replicas: 2
  serviceName: db
  selector:
    matchLabels:
      app: db
  template:
    metadata:
      labels:
        app: db
    spec:
      containers:
        - name: db
          image: postgres:17.1
"""


async def test_a_statefulset_is_ready_only_once_its_new_revision_has_rolled_out(
    fake: FakeKube, patient: KubernetesDriver
) -> None:
    await patient.apply(make_plan(resources_text=STATEFUL, outputs=()))
    fake.set_observe_delay(None)
    progress = Recorder()

    run = asyncio.create_task(
        patient.apply(
            make_plan(resources_text=STATEFUL.replace("postgres:17.1", "postgres:17.2"), outputs=()), progress
        )
    )
    await said(progress, "statefulset db: waiting for its controller to observe the change")
    fake.set_observe_delay(0)
    await within(run)

    statefulset = fake.get("apps/v1", "StatefulSet", "db", ns("nb"))
    assert statefulset is not None
    revision = statefulset["status"]["updateRevision"]
    assert statefulset["status"]["currentRevision"] == revision
    pods = fake.pods(ns("nb"))
    assert sorted(p["metadata"]["name"] for p in pods) == ["db-0", "db-1"]
    assert {p["metadata"]["labels"]["controller-revision-hash"] for p in pods} == {revision}
    assert {p["spec"]["containers"][0]["image"] for p in pods} == {"postgres:17.2"}


# ------------------------------------------------------------------------------------- quota


QUOTA = {
    "apiVersion": "v1",
    "kind": "ResourceQuota",
    "metadata": {"name": "gpus", "namespace": ns("nb")},
    "spec": {"hard": {"requests.nvidia.com/gpu": "1"}},
}
HOLDER = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "holder", "namespace": ns("nb")},
    "spec": {
        "containers": [
            {"name": "main", "image": "busybox:1.37", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
        ]
    },
}


async def test_pods_the_quota_refuses_are_made_once_the_quota_frees(
    fake: FakeKube, patient: KubernetesDriver, clock: FakeClock
) -> None:
    plan = notebook_plan()
    # the instance's namespace, made by an earlier run (its label), with a quota the platform set
    labels = {plan.owner_label: plan.instance_id}
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns("nb"), "labels": labels}})
    fake.create(QUOTA)
    await asyncio.to_thread(
        fake.wait_for,
        lambda: (fake.get("v1", "ResourceQuota", "gpus", ns("nb")) or {}).get("status", {}).get("hard"),
    )
    fake.create(HOLDER)  # another workload holds the namespace's only GPU
    progress = Recorder()
    run = asyncio.create_task(patient.apply(plan, progress))

    message = await said(progress, "Waiting for quota for deployment jupyter")
    assert "exceeded quota: gpus" in message
    clock.advance(200)
    await still_running(run, clock)
    fake.delete("v1", "Pod", "holder", ns("nb"))  # it ends: the ReplicaSet's next try succeeds

    applied = await within(run)
    assert applied.outputs["port"]


# ------------------------------------------------------------------------------ load balancers


BALANCED = """
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
---
apiVersion: v1
kind: Service
metadata:
  name: api
spec:
  type: LoadBalancer
  selector:
    app: api
  ports:
    - name: http
      port: 8000
"""
BALANCED_OUTPUTS = (
    OutputDefinition("url", None, "http://{{ objects.Service.status.loadBalancer.ingress.0.ip }}:8000"),
)


async def test_a_load_balancer_is_waited_for_and_its_address_is_rendered_in_the_outputs(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    fake.set_loadbalancer_delay(None)  # the cloud has not provisioned it yet
    progress = Recorder()
    plan: Plan = make_plan(resources_text=BALANCED, outputs=BALANCED_OUTPUTS)
    run: asyncio.Task[Applied] = asyncio.create_task(driver.apply(plan, progress))

    assert (
        await said(progress, "load balancer")
        == "Waiting for service api: waiting for its load balancer's address"
    )
    assert not run.done()
    fake.set_loadbalancer_delay(0.05)

    applied = await within(run)
    service: dict[str, Any] | None = fake.get("v1", "Service", "api", ns("nb"))
    assert service is not None
    address = service["status"]["loadBalancer"]["ingress"][0]["ip"]
    assert applied.outputs == {"url": f"http://{address}:8000"}


async def test_a_load_balancer_that_never_gets_an_address_times_out_naming_it(
    fake: FakeKube, kubeconfig: str
) -> None:
    fake.set_loadbalancer_delay(None)
    driver = new_driver(kubeconfig, readiness_timeout=0.3)
    try:
        with pytest.raises(PermanentError) as error:
            await driver.apply(make_plan(resources_text=BALANCED, outputs=BALANCED_OUTPUTS))
    finally:
        await driver.close()

    assert str(error.value) == "not ready after 0.3 s: service api: waiting for its load balancer's address"
