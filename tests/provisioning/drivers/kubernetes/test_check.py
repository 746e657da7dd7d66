"""Checking a cluster against the fake API server: version, nodes and GPUs, missing rights."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpupaas.provisioning.drivers.kubernetes.driver import KubernetesDriver
from gpupaas.provisioning.plan import PermanentError
from tests.fake_kube import FakeKube, node, run_fake_kube
from tests.provisioning.drivers.kubernetes.clusters import new_driver


async def test_check_reports_the_version_and_the_gpus_of_every_node(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    fake.set_nodes(
        [
            node("h100-0", gpus=8, labels={"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}),
            node(
                "mi300-0", gpus=4, gpu_resource="amd.com/gpu", labels={"amd.com/gpu.product-name": "MI300X"}
            ),
            node("cpu-0", cpu="16", memory="64Gi"),
        ]
    )

    info = await driver.check()

    assert info.server_version == "v1.37.0"
    assert [(n.name, n.cpu, n.memory, dict(n.gpus), n.gpu_model, n.ready) for n in info.nodes] == [
        ("cpu-0", "16", "64Gi", {}, None, True),
        ("h100-0", "32", "256Gi", {"nvidia.com/gpu": 8}, "NVIDIA-H100-80GB-HBM3", True),
        ("mi300-0", "32", "256Gi", {"amd.com/gpu": 4}, "MI300X", True),
    ]
    assert info.gpus == {"nvidia.com/gpu": 8, "amd.com/gpu": 4}


async def test_check_says_which_permission_is_missing(fake: FakeKube, driver: KubernetesDriver) -> None:
    fake.inject_error(
        "GET",
        r"^/api/v1/nodes$",
        403,
        message='nodes is forbidden: User "system:serviceaccount:gpupaas:driver" cannot list resource '
        '"nodes" in API group "" at the cluster scope',
    )

    with pytest.raises(PermanentError) as error:
        await driver.check()

    assert 'cannot list resource "nodes"' in str(error.value)
    assert "(RBAC)" in str(error.value)


async def test_credentials_the_server_refuses_are_permanent(tmp_path: Path) -> None:
    with run_fake_kube(token="the-right-token") as fake:
        text = fake.kubeconfig(tmp_path / "kubeconfig", token="a-wrong-token").read_text(encoding="utf-8")
        cluster = new_driver(text)
        try:
            with pytest.raises(PermanentError, match="did not accept the credentials"):
                await cluster.check()
        finally:
            await cluster.close()
