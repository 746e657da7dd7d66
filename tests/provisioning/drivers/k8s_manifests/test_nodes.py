"""Nodes as a platform admin checks them: allocatable CPU and memory, GPUs, the GPU model."""

from __future__ import annotations

from typing import Any

from gpupaas.provisioning.drivers.base import ClusterInfo, NodeInfo
from gpupaas.provisioning.drivers.k8s_manifests.nodes import is_gpu_resource, node_info


def node(
    name: str, capacity: dict[str, str], labels: dict[str, str] | None = None, ready: bool = True
) -> dict[str, Any]:
    allocatable = {**capacity, "cpu": "15500m", "memory": "62Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {
            "capacity": {
                "cpu": "16",
                "memory": "64Gi",
                "pods": "110",
                "ephemeral-storage": "500Gi",
                **capacity,
            },
            "allocatable": allocatable,
            "conditions": [
                {"type": "MemoryPressure", "status": "False"},
                {"type": "Ready", "status": "True" if ready else "False", "reason": "KubeletReady"},
            ],
        },
    }


def test_gpu_like_extended_resources() -> None:
    assert is_gpu_resource("nvidia.com/gpu")
    assert is_gpu_resource("huawei.com/Ascend910")
    assert is_gpu_resource("gpu.intel.com/i915")
    assert is_gpu_resource("nvidia.com/mig-1g.10gb")
    assert is_gpu_resource("nvidia.com/gpu.shared")
    assert is_gpu_resource("example.com/gpu-slice")
    assert not is_gpu_resource("ephemeral-storage")
    assert not is_gpu_resource("hugepages-2Mi")
    assert not is_gpu_resource("smarter-devices/fuse")


def test_nodes_report_allocatable_cpu_memory_their_gpus_and_model() -> None:
    h100 = node_info(
        node("gpu-0", {"nvidia.com/gpu": "8"}, {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"})
    )
    mi300 = node_info(
        node("amd-0", {"amd.com/gpu": "4"}, {"amd.com/gpu.product-name": "AMD_Instinct_MI300X"})
    )
    mig = node_info(node("mig-0", {"nvidia.com/mig-1g.10gb": "7", "nvidia.com/gpu": "0"}))
    cpu = node_info(node("cpu-0", {}, ready=False))

    assert h100 == NodeInfo(
        name="gpu-0",
        cpu="15500m",
        memory="62Gi",
        gpus={"nvidia.com/gpu": 8},
        gpu_model="NVIDIA-H100-80GB-HBM3",
        ready=True,
    )
    assert h100.to_json() == {
        "name": "gpu-0",
        "cpu": "15500m",
        "memory": "62Gi",
        "gpuResource": "nvidia.com/gpu",
        "gpuCount": 8,
        "gpuModel": "NVIDIA-H100-80GB-HBM3",
        "gpus": {"nvidia.com/gpu": 8},
        "ready": True,
    }
    assert (mi300.gpu_resource, mi300.gpu_model) == ("amd.com/gpu", "AMD_Instinct_MI300X")
    assert mig.gpus == {"nvidia.com/mig-1g.10gb": 7}
    assert (cpu.gpus, cpu.gpu_resource, cpu.ready) == ({}, None, False)
    info = ClusterInfo("v1.37.0", (h100, mi300, mig, cpu))
    assert info.gpus == {"nvidia.com/gpu": 8, "amd.com/gpu": 4, "nvidia.com/mig-1g.10gb": 7}
    assert info.to_json()["serverVersion"] == "v1.37.0"
