"""The simulated driver as a Driver: outputs, phases, destroy, observe, timing, check, drift."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from gpupaas.provisioning.drivers.base import Driver, Observed, Phase
from gpupaas.provisioning.drivers.simulated.driver import SimulatedDriver
from gpupaas.provisioning.inventory import DEFAULT_INVENTORY
from gpupaas.provisioning.plan import PermanentError
from tests.conftest import Database
from tests.provisioning.drivers.simulated.plans import Recorder, driver, make_plan, ns, rows, usage


def test_the_driver_implements_the_protocol() -> None:
    implementation: Driver = driver()
    assert callable(implementation.apply)


async def test_apply_returns_the_outputs(db: Database) -> None:
    # given a shared profile with 4 H100
    cluster = driver()
    plan = make_plan()

    # when it is applied
    outputs = (await cluster.apply(plan)).outputs

    # then the outputs are evaluated and the cluster holds it ready
    assert outputs == {
        "namespace": ns("train-1"),
        "quota": "cpu 8, memory 64Gi, storage 100Gi, nvidia.com/gpu 4",
        "gpuResource": "nvidia.com/gpu",
    }
    assert await cluster.observe(plan) == Observed(Phase.READY)


async def test_progress_reports_the_phases_in_order(db: Database) -> None:
    cluster = driver()
    progress = Recorder()

    await cluster.apply(make_plan(), progress)
    await cluster.destroy(make_plan(), progress)

    assert progress.messages == [
        "Scheduling shared: 4 nvidia.com/gpu (NVIDIA H100), cpu 8, memory 64Gi",
        "Scheduled on h100-0",
        f"Creating namespace {ns('train-1')}",
        "Applying 3 objects",
        "Waiting for quota compute",
        "Deleting 3 objects",
        f"Waiting for namespace {ns('train-1')} to terminate",
    ]


async def test_apply_names_the_objects_it_applied(db: Any) -> None:
    plan = make_plan()
    applied = await driver().apply(plan)
    assert [(ref.kind, ref.name) for ref in applied.objects] == [
        (m["kind"], m["metadata"]["name"]) for m in plan.manifests
    ]
    namespaced = [ref for ref in applied.objects if ref.kind != "Namespace"]
    assert all(ref.namespace == plan.namespace for ref in namespaced)


BAD_QUOTA = """
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
---
apiVersion: v1
kind: ResourceQuota
metadata:
  name: compute
  namespace: "{{ instance.namespace }}"
spec:
  hardd:
    requests.cpu: "{{ resources.cpu }}"
"""


async def test_a_manifest_kubernetes_would_reject_is_a_permanent_error_naming_the_field(db: Database) -> None:
    cluster = driver()
    plan = make_plan(resources_text=BAD_QUOTA, outputs=())

    with pytest.raises(PermanentError) as error:
        await cluster.apply(plan)

    assert str(error.value) == (
        "Kubernetes would reject the objects: ResourceQuota compute (object 2): spec.hardd: "
        'is not a field of this object (did you mean "hard"?)'
    )
    assert await cluster.observe(plan) == Observed(Phase.ABSENT)


# ----------------------------------------------------------------------------------------- destroy


async def test_destroy_frees_the_capacity(db: Database) -> None:
    # given both H100 nodes reserved
    cluster = driver()
    plan = make_plan(name="big", allocation="DEDICATED", gpus=16)
    await cluster.apply(plan)
    with pytest.raises(PermanentError):
        await cluster.apply(make_plan(name="other", allocation="DEDICATED", gpus=8))

    # when it is destroyed
    await cluster.destroy(plan)

    # then nothing is left of it and its nodes can be taken again
    assert await cluster.observe(plan) == Observed(Phase.ABSENT)
    assert usage(await cluster.cluster_state()) == {}
    await cluster.apply(make_plan(name="other", allocation="DEDICATED", gpus=8))


async def test_destroying_twice_or_what_never_existed_is_fine(db: Database) -> None:
    cluster = driver()
    plan = make_plan()
    await cluster.apply(plan)
    progress = Recorder()

    await cluster.destroy(plan)
    await cluster.destroy(plan, progress)
    await cluster.destroy(make_plan(name="never"))

    assert progress.messages == [f"Nothing to delete: namespace {ns('train-1')} does not exist"]
    assert await rows() == 0


async def test_observe_sees_an_apply_in_progress(db: Database) -> None:
    cluster = driver()
    plan = make_plan()
    seen: list[Observed] = []

    async def watch(message: str) -> None:
        seen.append(await cluster.observe(plan))

    await cluster.apply(plan, watch)

    assert seen[0] == Observed(Phase.ABSENT)  # while scheduling
    assert {o.phase for o in seen[1:]} == {Phase.PROGRESSING}
    assert seen[-1].message == "Waiting for 3 objects to be ready"


# ------------------------------------------------------------------------------------------ timing


async def test_phases_wait_phase_seconds_and_zero_does_not_sleep(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    delays: list[float] = []
    real_sleep = asyncio.sleep

    async def recording_sleep(delay: float, *args: Any, **kwargs: Any) -> Any:
        delays.append(delay)
        return await real_sleep(0)

    monkeypatch.setattr(asyncio, "sleep", recording_sleep)  # the module the driver sleeps with

    await SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=0).apply(make_plan(name="fast"))
    fast = [delay for delay in delays if delay > 0]
    await SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=0.25).apply(make_plan(name="slow"))

    assert fast == []
    assert delays.count(0.25) == 5


def test_a_kubernetes_version_without_schemas_is_refused_at_once() -> None:
    with pytest.raises(ValueError, match=r"no schemas for Kubernetes 9\.99"):
        SimulatedDriver(DEFAULT_INVENTORY, kubernetes_version="9.99.0")
    with pytest.raises(ValueError, match="phase_seconds"):
        SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=-1)


# ------------------------------------------------------------------------------------ check, drift


async def test_check_shows_the_inventory_with_the_clusters_gpu_resource_names() -> None:
    info = await driver().check({"AMD": "amd.com/mi300x"})
    assert info.server_version == "simulated"
    by_name = {node.name: node for node in info.nodes}
    assert [node.name for node in info.nodes] == [node.name for node in DEFAULT_INVENTORY.nodes]
    gpu_nodes = [node for node in DEFAULT_INVENTORY.nodes if node.gpu_count]
    for node in gpu_nodes:
        expected = "amd.com/mi300x" if node.gpu_vendor == "AMD" else "nvidia.com/gpu"
        assert dict(by_name[node.name].gpus) == {expected: node.gpu_count}
        assert by_name[node.name].gpu_model == node.gpu_model
    cpu_only = [node for node in DEFAULT_INVENTORY.nodes if not node.gpu_count]
    assert cpu_only and all(not by_name[node.name].gpus for node in cpu_only)


async def test_nothing_drifts_on_the_simulated_cluster() -> None:
    reported: list[object] = []

    async def on_change(owner: object, observed: object) -> None:
        reported.append((owner, observed))

    stop = asyncio.Event()
    watch = asyncio.create_task(driver().watch_drift(on_change, stop=stop))
    await asyncio.sleep(0)
    assert not watch.done()  # it waits for the stop
    stop.set()
    await asyncio.wait_for(watch, timeout=5)
    assert reported == []
