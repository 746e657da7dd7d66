"""The drift watch against the fake API server: failures, recoveries, dropped and compacted watches."""

from __future__ import annotations

import asyncio

import pytest

from gpupaas.provisioning.drivers.base import Observed, Owner, Phase
from gpupaas.provisioning.drivers.k8s_manifests.pods import Graces
from gpupaas.provisioning.drivers.kubernetes.driver import KubernetesDriver
from gpupaas.provisioning.plan import INSTANCE_LABEL
from tests.fake_kube import FakeKube, node
from tests.provisioning.drivers.kubernetes.clusters import FakeClock, first_pod, new_driver, notebook_plan, ns


class Changes:
    """What watch_drift reported, to wait for."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[tuple[str, Observed]] = asyncio.Queue()

    async def __call__(self, owner: Owner, observed: Observed) -> None:
        assert owner.label == INSTANCE_LABEL  # a compute instance's pods
        await self.queue.put((owner.id, observed))

    async def next(self) -> tuple[str, Phase, str | None]:
        instance, observed = await asyncio.wait_for(self.queue.get(), timeout=5)
        return instance, observed.phase, observed.message


def pod_lists(fake: FakeKube) -> int:
    """How many times the pods were listed (not watched) across namespaces."""
    return sum(1 for r in fake.requests if r.path == "/api/v1/pods" and r.query.get("watch") != "true")


async def test_drift_reports_a_failed_pod_and_its_recovery_across_dropped_and_compacted_watches(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    plan = notebook_plan()
    await driver.apply(plan)
    pod = await first_pod(fake, ns("nb"))
    changes = Changes()
    stop = asyncio.Event()
    watch = asyncio.create_task(driver.watch_drift(changes, stop=stop))
    try:
        await asyncio.to_thread(fake.wait_for, lambda: pod_lists(fake) == 1)
        oom = f"pod {pod}: OOMKilled (container main exited with code 137; CrashLoopBackOff)"

        # a pod that dies turns the instance FAILED with the reason; its recovery READY
        fake.fail_pod(ns("nb"), pod, "OOMKilled")
        assert await changes.next() == (plan.instance_id, Phase.FAILED, oom)
        fake.recover_pod(ns("nb"), pod)
        assert await changes.next() == (plan.instance_id, Phase.READY, None)

        # the watch is cut (an API server restart): it goes on from its resourceVersion
        assert fake.drop_watches() == 1
        fake.fail_pod(ns("nb"), pod, "OOMKilled")
        assert await changes.next() == (plan.instance_id, Phase.FAILED, oom)
        fake.recover_pod(ns("nb"), pod)
        assert await changes.next() == (plan.instance_id, Phase.READY, None)
        assert pod_lists(fake) == 1

        # the history is compacted while the watch is cut: 410 Gone, so it lists again
        fake.compact()
        fake.drop_watches()
        fake.fail_pod(ns("nb"), pod, "Error", exit_code=2)
        assert await changes.next() == (
            plan.instance_id,
            Phase.FAILED,
            f"pod {pod}: Error (container main exited with code 2; CrashLoopBackOff)",
        )
        assert pod_lists(fake) == 2
    finally:
        stop.set()
        await asyncio.wait_for(watch, timeout=5)
    assert changes.queue.empty()


async def test_a_watch_the_api_server_expired_lists_again_at_once_and_reports_what_it_missed(
    fake: FakeKube, kubeconfig: str
) -> None:
    """After 410 Gone the list comes at once, not after the pause that keeps a watch ending at once
    from turning into a busy loop (the poll interval: a minute here, far past what the test waits)."""
    clock = FakeClock()
    driver = new_driver(kubeconfig, poll_interval=60, clock=clock)
    plan = notebook_plan()
    await driver.apply(plan)
    pod = await first_pod(fake, ns("nb"))
    changes = Changes()
    stop = asyncio.Event()
    watch = asyncio.create_task(driver.watch_drift(changes, stop=stop))
    try:
        await watching(fake, 1)
        assert pod_lists(fake) == 1
        clock.advance(120)  # the watch has lasted two minutes: it did not end at once

        def restart_past_the_history() -> None:
            # In one go, as an API server restarted after its history moved on: the watch is cut,
            # the pod dies meanwhile, and the history is compacted past the watch's resourceVersion.
            fake.store.drop_watches()
            fake.controllers.fail_pod(ns("nb"), pod, "OOMKilled", "")
            fake.store.compact()

        fake.call(restart_past_the_history)
        oom = f"pod {pod}: OOMKilled (container main exited with code 137; CrashLoopBackOff)"
        assert await changes.next() == (plan.instance_id, Phase.FAILED, oom)
        assert pod_lists(fake) == 2
        await watching(fake, 1)
    finally:
        stop.set()
        await asyncio.wait_for(watch, timeout=5)
        await driver.close()
    assert changes.queue.empty()


async def watching(fake: FakeKube, count: int) -> None:
    """Until the fake API server has `count` pod watches open."""
    await asyncio.to_thread(fake.wait_for, lambda: fake.open_watches("Pod") == count)


async def test_a_drift_watch_stops_when_asked_and_when_cancelled(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    # a watch that is established (listed, then watching), not one still starting up
    stop = asyncio.Event()
    watch = asyncio.create_task(driver.watch_drift(Changes(), stop=stop))
    await watching(fake, 1)

    stop.set()
    await asyncio.wait_for(watch, timeout=2)
    await watching(fake, 0)  # and its stream is closed

    other = asyncio.create_task(driver.watch_drift(Changes(), stop=asyncio.Event()))
    await watching(fake, 1)
    other.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(other, timeout=2)
    await watching(fake, 0)


async def test_a_pod_left_pending_by_a_node_drain_turns_its_instance_failed_only_after_the_grace(
    fake: FakeKube, kubeconfig: str
) -> None:
    clock = FakeClock()
    driver = new_driver(kubeconfig, graces=Graces(scheduling_seconds=300), clock=clock)
    fake.set_nodes([node("gpu-0", gpus=8)])
    plan, other = notebook_plan(), notebook_plan("other")
    await driver.apply(plan)
    await driver.apply(other)
    changes = Changes()
    stop = asyncio.Event()
    watch = asyncio.create_task(driver.watch_drift(changes, stop=stop))
    try:
        await watching(fake, 1)
        # the node is drained: cordoned, its pods evicted; nb's replacement finds no node
        fake.set_nodes([node("gpu-0", gpus=8, unschedulable=True)])
        drained = await first_pod(fake, ns("nb"))
        fake.delete("v1", "Pod", drained, ns("nb"))
        replacement = await asyncio.to_thread(
            fake.wait_for, lambda: [p for p in fake.pods(ns("nb")) if p["metadata"]["name"] != drained]
        )
        name = replacement[0]["metadata"]["name"]
        await asyncio.to_thread(
            fake.wait_for,
            lambda: any(
                c.get("reason") == "Unschedulable"
                for p in fake.pods(ns("nb"))
                for c in p.get("status", {}).get("conditions") or []
            ),
        )
        # Another instance fails for good afterwards: its FAILED comes first, so the watch saw
        # the pending pod before it and did not report nb.
        broken = await first_pod(fake, ns("other"))
        fake.fail_pod(ns("other"), broken, "InvalidImageName", 'invalid reference format: "Nope:"')
        assert await changes.next() == (
            other.instance_id,
            Phase.FAILED,
            f'pod {broken}: InvalidImageName (container main: invalid reference format: "Nope:")',
        )

        clock.advance(301)  # no node for longer than the grace
        unschedulable = (
            "0/1 nodes are available: 1 node(s) were unschedulable. preemption: 0/1 nodes are available: "
            "1 Preemption is not helpful for scheduling."
        )
        assert await changes.next() == (
            plan.instance_id,
            Phase.FAILED,
            f"pod {name} cannot be scheduled after 301 s: {unschedulable}",
        )

        fake.set_nodes([node("gpu-0", gpus=8)])  # uncordoned: the pod runs, the instance recovers
        assert await changes.next() == (plan.instance_id, Phase.READY, None)
    finally:
        stop.set()
        await asyncio.wait_for(watch, timeout=5)
        await driver.close()
    assert changes.queue.empty()
