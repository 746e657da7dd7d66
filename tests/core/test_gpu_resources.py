"""GPU resource names per vendor and model, MIG partitions and their share of a GPU, and what a
cluster's nodes advertise (core/gpu_resources.py)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from gpupaas.core import gpu_resources
from gpupaas.provisioning.inventory import InventoryError, load_inventory, parse_inventory


@pytest.mark.parametrize(
    ("vendor", "model", "names", "expected"),
    [
        ("NVIDIA", "H100 80GB", None, "nvidia.com/gpu"),
        ("AMD", "MI300X", None, "amd.com/gpu"),
        ("ASCEND", None, None, "huawei.com/Ascend910"),
        ("ASCEND", "Ascend910B", None, "huawei.com/Ascend910"),
        ("ASCEND", "Ascend310P", None, "huawei.com/Ascend310P"),
        ("ASCEND", "Atlas 300I Duo (310P3)", None, "huawei.com/Ascend310P"),
        ("ASCEND", "ascend-310", None, "huawei.com/Ascend310"),
        # A cluster's resource names with the defaults merged in: the model still decides.
        ("ASCEND", "Ascend310P", {"ASCEND": "huawei.com/Ascend910"}, "huawei.com/Ascend310P"),
        # A cluster's own name for the vendor wins for every model.
        ("ASCEND", "Ascend310P", {"ASCEND": "example.com/npu"}, "example.com/npu"),
        ("NVIDIA", None, {"NVIDIA": "nvidia.com/gpu.shared"}, "nvidia.com/gpu.shared"),
    ],
)
def test_the_resource_name_is_per_vendor_and_model(
    vendor: str, model: str | None, names: dict[str, str] | None, expected: str
) -> None:
    assert gpu_resources.resource_name(vendor, model, names) == expected


def test_mig_profiles_are_partitions_with_their_share_of_a_gpu() -> None:
    partition = gpu_resources.parse_partition("nvidia.com/mig-3g.40gb")
    assert partition is not None and (partition.slices, partition.memory_gb, partition.profile) == (
        3,
        40,
        "3g.40gb",
    )
    assert gpu_resources.parse_partition("nvidia.com/gpu") is None
    assert gpu_resources.parse_partition("nvidia.com/mig-8g.10gb") is None  # no GPU has 8 slices
    assert gpu_resources.partition_share("nvidia.com/mig-1g.10gb", "A100 80GB") == Fraction(1, 7)
    assert gpu_resources.partition_share("nvidia.com/mig-2g.12gb", "A30") == Fraction(1, 2)
    assert gpu_resources.partition_share("nvidia.com/gpu", "H100") == 1


@pytest.mark.parametrize(
    ("vendor", "resource", "message"),
    [
        ("NVIDIA", "mig-1g.10gb", 'did you mean "nvidia.com/mig-1g.10gb"?'),
        ("NVIDIA", "1g.10gb", 'did you mean "nvidia.com/mig-1g.10gb"?'),
        ("NVIDIA", "nvidia.com/gpu", "must be a MIG profile resource"),
        ("AMD", "nvidia.com/mig-1g.10gb", "only NVIDIA GPUs have partitions"),
    ],
)
def test_a_wrong_partition_says_what_to_write(vendor: str, resource: str, message: str) -> None:
    problem = gpu_resources.partition_problem(vendor, resource)
    assert problem is not None and message in problem
    assert gpu_resources.partition_problem("NVIDIA", "nvidia.com/mig-1g.10gb") is None


def test_advertised_resources_are_per_model_whole_gpus_first_and_leave_out_nodes_not_ready() -> None:
    nodes: list[dict[str, Any]] = [
        {"gpuModel": "A100", "gpus": {"nvidia.com/gpu": 2, "nvidia.com/mig-1g.10gb": 7}, "ready": True},
        {"gpuModel": "A100", "gpus": {"nvidia.com/mig-1g.10gb": 7}, "ready": True},
        {"gpuModel": "A100", "gpus": {"nvidia.com/mig-1g.10gb": 7}, "ready": False},
        {"gpuModel": "Ascend310P", "gpus": {"huawei.com/Ascend310P": 4}},
        {"gpuModel": None, "gpuResource": "amd.com/gpu", "gpuCount": 4},  # checked before `gpus` was kept
    ]
    found = [
        (r.resource, r.model, r.vendor, r.partition, r.count, r.nodes)
        for r in gpu_resources.advertised(nodes)
    ]
    assert found == [
        ("amd.com/gpu", None, "AMD", False, 4, 1),
        ("huawei.com/Ascend310P", "Ascend310P", "ASCEND", False, 4, 1),
        ("nvidia.com/gpu", "A100", "NVIDIA", False, 2, 1),
        ("nvidia.com/mig-1g.10gb", "A100", "NVIDIA", True, 14, 2),
    ]


def test_the_example_inventory_has_mig_partitions_and_both_ascend_chips() -> None:
    inventory = load_inventory("infra/simulated/inventory.yaml")
    a100 = inventory.node("a100-0")
    assert a100 is not None and a100.partitions("nvidia.com/mig-1g.10gb") == 7
    assert a100.partitions("nvidia.com/mig-3g.40gb") == 2
    chips = {node.name: node.resource_name for node in inventory.nodes if node.gpu_vendor == "ASCEND"}
    assert chips == {"ascend-910b-0": "huawei.com/Ascend910", "ascend-310p-0": "huawei.com/Ascend310P"}


@pytest.mark.parametrize(
    ("gpu", "message"),
    [
        (
            "{vendor: AMD, count: 1, partitions: {nvidia.com/mig-1g.10gb: 7}}",
            "only NVIDIA GPUs have partitions",
        ),
        (
            "{vendor: NVIDIA, count: 1, partitions: {mig-1g.10gb: 7}}",
            'did you mean "nvidia.com/mig-1g.10gb"?',
        ),
        ("{vendor: NVIDIA, count: 1, partitions: {nvidia.com/mig-1g.10gb: 0}}", "must be at least 1, not 0"),
        (
            "{vendor: NVIDIA, count: 1, partitions: [nvidia.com/mig-1g.10gb]}",
            "must be a mapping of MIG profile",
        ),
    ],
)
def test_bad_partitions_in_an_inventory_name_the_field(gpu: str, message: str) -> None:
    text = f"nodes:\n  - name: a100\n    cpu: 8\n    memory: 8Gi\n    gpu: {gpu}\n"
    with pytest.raises(InventoryError) as raised:
        parse_inventory(text, "inv.yaml")
    assert "inv.yaml: nodes[0] (a100).gpu.partitions" in str(raised.value)
    assert message in str(raised.value)
