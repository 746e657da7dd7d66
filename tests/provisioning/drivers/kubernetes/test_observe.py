"""Observing an instance against the fake API server."""

from __future__ import annotations

from gpupaas.provisioning.drivers.base import Observed, Phase
from gpupaas.provisioning.drivers.kubernetes.driver import KubernetesDriver
from tests.fake_kube import FakeKube
from tests.provisioning.drivers.kubernetes.clusters import first_pod, notebook_plan, ns


async def test_observe_follows_the_instance(fake: FakeKube, driver: KubernetesDriver) -> None:
    plan = notebook_plan()
    assert await driver.observe(plan) == Observed(Phase.ABSENT)

    await driver.apply(plan)
    assert await driver.observe(plan) == Observed(Phase.READY)

    pod = await first_pod(fake, ns("nb"))
    fake.fail_pod(ns("nb"), pod, "OOMKilled")
    observed = await driver.observe(plan)
    assert observed.phase == Phase.FAILED
    assert observed.message is not None
    assert observed.message.startswith(f"pod {pod}: OOMKilled (container main exited with code 137")

    fake.recover_pod(ns("nb"), pod)
    assert await driver.observe(plan) == Observed(Phase.READY)
