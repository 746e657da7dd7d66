"""The driver against a real cluster (kind, k3s) when GPUPAAS_TEST_KUBECONFIG names a kubeconfig
file; skipped otherwise. These tests create and delete namespaces of their own."""

from __future__ import annotations

import uuid

from gpupaas.provisioning.drivers.base import Observed, Phase
from gpupaas.provisioning.drivers.kubernetes.driver import KubernetesDriver
from tests.provisioning.drivers.kubernetes.clusters import make_plan, real_cluster


@real_cluster
async def test_a_real_cluster_is_checked(real_driver: KubernetesDriver) -> None:
    info = await real_driver.check()

    assert info.server_version.startswith("v1.")
    assert info.nodes
    assert all(node.cpu and node.memory for node in info.nodes)


@real_cluster
async def test_a_real_cluster_applies_observes_and_destroys_a_cpu_only_namespace(
    real_driver: KubernetesDriver,
) -> None:
    # given a CPU-only plan in a namespace of its own
    plan = make_plan(
        project="gpupaas-it",
        name=uuid.uuid4().hex[:10],
        gpus=0,
        vendor="CPU",
        model=None,
        cpu="1",
        memory="1Gi",
    )
    assert await real_driver.observe(plan) == Observed(Phase.ABSENT)
    try:
        # when it is applied (twice: the second changes nothing)
        applied = await real_driver.apply(plan)
        again = await real_driver.apply(plan)

        # then it is there and ready
        assert applied.outputs["namespace"] == plan.namespace
        assert again == applied
        assert [ref.kind for ref in applied.objects] == ["Namespace", "ResourceQuota", "LimitRange"]
        assert await real_driver.observe(plan) == Observed(Phase.READY)
    finally:
        # and destroy removes it, namespace included
        await real_driver.destroy(plan)
    assert await real_driver.observe(plan) == Observed(Phase.ABSENT)
    await real_driver.destroy(plan)  # idempotent
