"""The simulated cluster's inventory: the default one, inventory files and their mistakes."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpupaas.provisioning.inventory import (
    DEFAULT_INVENTORY,
    Inventory,
    InventoryError,
    Node,
    load_inventory,
    parse_inventory,
)

EXAMPLE = """
nodes:
  - name: h100
    count: 2
    cpu: 96
    memory: 1024Gi
    gpu:
      vendor: NVIDIA
      model: H100 80GB
      count: 8
  - name: ascend
    cpu: "191500m"
    memory: 768Gi
    gpu: {vendor: ASCEND, count: 8}
  - name: cpu
    count: 1
    cpu: 32
    memory: 128Gi
"""


def test_the_default_inventory() -> None:
    nodes = DEFAULT_INVENTORY.nodes

    assert [node.name for node in nodes] == ["h100-0", "h100-1", "mi300x-0", "cpu-0", "cpu-1"]
    assert [(node.gpu_vendor, node.gpu_count) for node in nodes] == [
        ("NVIDIA", 8),
        ("NVIDIA", 8),
        ("AMD", 4),
        ("CPU", 0),
        ("CPU", 0),
    ]
    assert nodes[0].cpu_millicores == 96_000
    assert nodes[0].memory_bytes == 1024 * 1024**3
    assert nodes[3].cpu_millicores == 32_000
    assert nodes[3].gpu_model is None
    assert DEFAULT_INVENTORY.describe() == (
        "NVIDIA H100 80GB (2 nodes, 8 GPUs each), AMD MI300X (1 node, 4 GPUs each), CPU (2 nodes)"
    )
    assert DEFAULT_INVENTORY.node("mi300x-0") == nodes[2]
    assert DEFAULT_INVENTORY.node("nope") is None


def test_an_inventory_file_is_loaded_with_repeated_nodes(tmp_path: Path) -> None:
    # given a file with an entry that describes two nodes
    path = tmp_path / "inventory.yaml"
    path.write_text(EXAMPLE, encoding="utf-8")

    # when it is loaded
    inventory = load_inventory(str(path))

    # then `count` repeats the node with numbered names, and a node without gpu is a CPU node
    assert inventory == Inventory(
        nodes=(
            Node(
                "h100-0", cpu="96", memory="1024Gi", gpu_vendor="NVIDIA", gpu_model="H100 80GB", gpu_count=8
            ),
            Node(
                "h100-1", cpu="96", memory="1024Gi", gpu_vendor="NVIDIA", gpu_model="H100 80GB", gpu_count=8
            ),
            Node("ascend", cpu="191500m", memory="768Gi", gpu_vendor="ASCEND", gpu_model=None, gpu_count=8),
            Node("cpu-0", cpu="32", memory="128Gi", gpu_vendor="CPU", gpu_model=None, gpu_count=0),
        )
    )
    assert inventory.nodes[2].cpu_millicores == 191_500


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nodes: [", "f.yaml: invalid YAML at line 1, column 9"),
        ("- a\n", r"f.yaml: the file must hold a mapping with a list of nodes \(nodes: \[...\]\)"),
        ("nodes: []\n", "f.yaml: nodes: must list at least one node"),
        ("nodes: {a: 1}\n", "f.yaml: nodes: must be a list of nodes, not a mapping"),
        ("nodes: [{name: a, cpu: 1, memory: 1Gi}]\nzones: []\n", "f.yaml: zones: is not a field"),
        (
            "nodes: [42]\n",
            r"f.yaml: nodes\[0\]: must be a mapping with name, cpu, memory and gpu, not a number",
        ),
        ("nodes: [{cpu: 1, memory: 1Gi}]\n", r"f.yaml: nodes\[0\].name: is required"),
        (
            "nodes: [{name: GPU_1, cpu: 1, memory: 1Gi}]\n",
            r"nodes\[0\] \(GPU_1\).name: 'GPU_1' must be lowercase",
        ),
        (
            "nodes: [{name: a, cpu: 1, memory: 1Gi}, {name: b, memory: 1Gi}]\n",
            r"f.yaml: nodes\[1\] \(b\).cpu: is required",
        ),
        (
            "nodes: [{name: a, cpu: lots, memory: 1Gi}]\n",
            r"nodes\[0\] \(a\).cpu: 'lots' is not a Kubernetes quantity",
        ),
        ("nodes: [{name: a, cpu: 0, memory: 1Gi}]\n", r"nodes\[0\] \(a\).cpu: must be more than 0, not 0"),
        (
            "nodes: [{name: a, cpu: 1, memory: [1]}]\n",
            r"nodes\[0\] \(a\).memory: must be a Kubernetes quantity, not a list",
        ),
        (
            "nodes: [{name: a, cpu: 1, memory: 1Gi, gpus: 8}]\n",
            r'nodes\[0\] \(a\).gpus: is not a field \(did you mean "gpu"\?\)',
        ),
        (
            "nodes: [{name: a, count: 0, cpu: 1, memory: 1Gi}]\n",
            r"nodes\[0\] \(a\).count: must be at least 1, not 0",
        ),
        (
            "nodes: [{name: a, count: two, cpu: 1, memory: 1Gi}]\n",
            r"nodes\[0\] \(a\).count: must be a whole number, not a string",
        ),
        (
            "nodes: [{name: a, cpu: 1, memory: 1Gi, gpu: {vendor: nvidia, count: 1}}]\n",
            r"nodes\[0\] \(a\).gpu.vendor: must be one of NVIDIA, AMD, INTEL, ASCEND, not 'nvidia'",
        ),
        (
            "nodes: [{name: a, cpu: 1, memory: 1Gi, gpu: {vendor: AMD}}]\n",
            r"nodes\[0\] \(a\).gpu.count: is required",
        ),
        (
            "nodes: [{name: a, cpu: 1, memory: 1Gi, gpu: {vendor: AMD, count: 0}}]\n",
            r"nodes\[0\] \(a\).gpu.count: must be at least 1, not 0",
        ),
        (
            "nodes: [{name: a, cpu: 1, memory: 1Gi, gpu: {vendor: AMD, count: 1, modle: x}}]\n",
            r'nodes\[0\] \(a\).gpu.modle: is not a field \(did you mean "model"\?\)',
        ),
        (
            "nodes: [{name: a, cpu: 1, memory: 1Gi, gpu: 8}]\n",
            r"nodes\[0\] \(a\).gpu: must be a mapping with vendor, model and count",
        ),
        (
            "nodes: [{name: a-0, cpu: 1, memory: 1Gi}, {name: a, count: 2, cpu: 1, memory: 1Gi}]\n",
            r"f.yaml: nodes\[1\].name: node 'a-0' is already defined by nodes\[0\]",
        ),
    ],
)
def test_a_bad_inventory_names_the_entry_and_the_field(text: str, message: str) -> None:
    with pytest.raises(InventoryError, match=message):
        parse_inventory(text, "f.yaml")


def test_a_missing_file_is_an_inventory_error(tmp_path: Path) -> None:
    path = tmp_path / "missing.yaml"

    with pytest.raises(InventoryError, match=r"missing.yaml: the inventory file cannot be read"):
        load_inventory(str(path))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"gpu_vendor": "TPU"}, "gpu.vendor: must be one of NVIDIA, AMD, INTEL, ASCEND, CPU, not 'TPU'"),
        ({"gpu_count": 0}, "gpu.count: a NVIDIA node needs at least 1 GPU"),
        ({"gpu_vendor": "CPU", "gpu_model": None}, "gpu: a node of vendor CPU has no GPUs"),
        ({"memory": "-1Gi"}, "memory: must be more than 0, not -1Gi"),
        ({"name": "Node A"}, "name: 'Node A' must be lowercase letters"),
    ],
)
def test_a_node_checks_itself(fields: dict[str, object], message: str) -> None:
    values: dict[str, object] = {
        "name": "n",
        "cpu": "1",
        "memory": "1Gi",
        "gpu_vendor": "NVIDIA",
        "gpu_model": "H100",
        "gpu_count": 8,
        **fields,
    }

    with pytest.raises(InventoryError) as error:
        Node(**values)  # type: ignore[arg-type]

    assert message in str(error.value)


def test_node_names_are_unique() -> None:
    node = Node("a", cpu="1", memory="1Gi", gpu_vendor="CPU", gpu_model=None, gpu_count=0)

    with pytest.raises(InventoryError, match="node 'a' is listed more than once"):
        Inventory(nodes=(node, node))
