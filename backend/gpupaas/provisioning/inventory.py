"""The inventory of the simulated cluster: its nodes, their CPU, memory and GPUs.

`DEFAULT_INVENTORY` is what `gpupaas serve` simulates when nothing else is configured. An inventory
file (`load_inventory`) is YAML:

```yaml
nodes:
  - name: h100          # with `count`, the nodes are h100-0, h100-1, ...; without it, just h100
    count: 2            # optional, default 1: how many identical nodes this entry describes
    cpu: 96             # a Kubernetes quantity: 96, "95500m"
    memory: 1024Gi      # a Kubernetes quantity: 1024Gi, 512G
    gpu:                # optional: a node without `gpu` has no GPUs (vendor CPU)
      vendor: NVIDIA    # NVIDIA | AMD | INTEL | ASCEND
      model: H100 80GB  # optional, free text; profiles match it case-insensitively by substring
      count: 8          # GPUs on each node, at least 1
      partitions:       # optional, NVIDIA only: MIG devices on each node, per profile resource
        nvidia.com/mig-1g.10gb: 7
  - name: cpu
    count: 2
    cpu: 32
    memory: 128Gi
```

Every mistake is an `InventoryError` naming the file, the entry (`nodes[2] (mi300x)`) and the field.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from gpupaas.core import gpu_resources
from gpupaas.core.quantities import parse_quantity
from gpupaas.core.validation import dns_label
from gpupaas.provisioning.wording import type_name

__all__ = [
    "DEFAULT_INVENTORY",
    "GPU_VENDORS",
    "VENDORS",
    "Inventory",
    "InventoryError",
    "Node",
    "load_inventory",
    "parse_inventory",
]

GPU_VENDORS: tuple[str, ...] = ("NVIDIA", "AMD", "INTEL", "ASCEND")
VENDORS: tuple[str, ...] = (*GPU_VENDORS, "CPU")

# A node name is a DNS-1123 subdomain in Kubernetes; a label (core.validation.dns_label) is plenty here.
_NODE_NAME_RULE = 'must be lowercase letters, digits and "-", starting and ending with a letter or digit'
_MAX_REPEAT = 1000
_ENTRY_KEYS = ("name", "count", "cpu", "memory", "gpu")
_GPU_KEYS = ("vendor", "model", "count", "partitions")


class InventoryError(ValueError):
    """An inventory that cannot be used; the message says where and why."""


def _positive_quantity(text: str, what: str) -> str | None:
    """None when `text` is a positive Kubernetes quantity, else what is wrong with it."""
    try:
        value = parse_quantity(text)
    except ValueError as error:
        return f"{what}: {error}"
    return None if value > 0 else f"{what}: must be more than 0, not {text}"


@dataclass(frozen=True)
class Node:
    """One node of the simulated cluster. A node of vendor CPU has no GPUs (`gpu_count` 0)."""

    name: str
    cpu: str
    memory: str
    gpu_vendor: str
    gpu_model: str | None
    gpu_count: int
    # MIG devices the node advertises besides its whole GPUs: (resource, count) pairs, NVIDIA only.
    gpu_partitions: tuple[tuple[str, int], ...] = ()

    def __post_init__(self) -> None:
        problem = self.problem()
        if problem is not None:
            raise InventoryError(f"node {self.name!r}: {problem}")

    def problem(self) -> str | None:
        """What is wrong with the node, naming the field, or None."""
        if dns_label(self.name) is not None:
            return f"name: {self.name!r} {_NODE_NAME_RULE} (at most 63 characters)"
        for what, text in (("cpu", self.cpu), ("memory", self.memory)):
            problem = _positive_quantity(text, what)
            if problem is not None:
                return problem
        if self.gpu_vendor not in VENDORS:
            return f"gpu.vendor: must be one of {', '.join(VENDORS)}, not {self.gpu_vendor!r}"
        if isinstance(self.gpu_count, bool) or not isinstance(self.gpu_count, int):
            return "gpu.count: must be a whole number"
        if self.gpu_vendor == "CPU":
            if self.gpu_count != 0 or self.gpu_model is not None:
                return "gpu: a node of vendor CPU has no GPUs (leave out gpu.count and gpu.model)"
        elif self.gpu_count < 1:
            return f"gpu.count: a {self.gpu_vendor} node needs at least 1 GPU"
        for resource, count in self.gpu_partitions:
            problem = gpu_resources.partition_problem(self.gpu_vendor, resource)
            if problem is not None:
                return f"gpu.partitions.{resource}: {problem}"
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                return f"gpu.partitions.{resource}: must be a whole number of at least 1"
        return None

    def partitions(self, resource: str) -> int:
        """How many devices of the partition `resource` the node advertises."""
        return sum(count for name, count in self.gpu_partitions if name == resource)

    @property
    def resource_name(self) -> str:
        """The extended resource of the node's whole GPUs (per model: core/gpu_resources.py)."""
        return gpu_resources.resource_name(self.gpu_vendor, self.gpu_model)

    @property
    def cpu_millicores(self) -> int:
        return math.floor(parse_quantity(self.cpu) * 1000)

    @property
    def memory_bytes(self) -> int:
        return math.floor(parse_quantity(self.memory))

    @property
    def kind(self) -> str:
        """What kind of node this is, as people say it: "NVIDIA H100 80GB", "AMD", "CPU"."""
        return f"{self.gpu_vendor} {self.gpu_model}" if self.gpu_model else self.gpu_vendor


@dataclass(frozen=True)
class Inventory:
    """The nodes of the simulated cluster, by unique name."""

    nodes: tuple[Node, ...]

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for node in self.nodes:
            if node.name in seen:
                raise InventoryError(f"node {node.name!r} is listed more than once")
            seen.add(node.name)

    def node(self, name: str) -> Node | None:
        return next((node for node in self.nodes if node.name == name), None)

    def describe(self) -> str:
        """The kinds of nodes, for messages: "NVIDIA H100 80GB (2 nodes, 8 GPUs each), CPU (2 nodes)"."""
        kinds: dict[tuple[str, int], int] = {}
        for node in self.nodes:
            key = (node.kind, node.gpu_count)
            kinds[key] = kinds.get(key, 0) + 1
        parts = []
        for (kind, gpus), count in kinds.items():
            nodes = f"{count} node{'s' if count != 1 else ''}"
            each = f", {gpus} GPU{'s' if gpus != 1 else ''} each" if gpus else ""
            parts.append(f"{kind} ({nodes}{each})")
        return ", ".join(parts) or "no nodes"


def _repeat(prefix: str, count: int, **fields: Any) -> tuple[Node, ...]:
    return tuple(Node(name=f"{prefix}-{i}", **fields) for i in range(count))


DEFAULT_INVENTORY = Inventory(
    nodes=(
        *_repeat(
            "h100", 2, cpu="96", memory="1024Gi", gpu_vendor="NVIDIA", gpu_model="H100 80GB", gpu_count=8
        ),
        *_repeat("mi300x", 1, cpu="96", memory="1024Gi", gpu_vendor="AMD", gpu_model="MI300X", gpu_count=4),
        *_repeat("cpu", 2, cpu="32", memory="128Gi", gpu_vendor="CPU", gpu_model=None, gpu_count=0),
    )
)


# ------------------------------------------------------------------------------------------ loading


def _type_in_file(value: object) -> str:
    # Words for a file a person edits: a YAML field left blank is "empty", any number "a number".
    return type_name(value, null="empty", integers=False)


def _unknown_keys(data: Mapping[Any, Any], allowed: tuple[str, ...], where: str) -> None:
    for key in data:
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f' (did you mean "{close[0]}"?)' if close else ""
            raise InventoryError(f"{where}.{key}: is not a field{hint}; the fields are {', '.join(allowed)}")


def _quantity(data: Mapping[str, Any], key: str, where: str) -> str:
    value = data.get(key)
    if value is None:
        raise InventoryError(f"{where}.{key}: is required (a Kubernetes quantity such as 32 or 128Gi)")
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise InventoryError(f"{where}.{key}: must be a Kubernetes quantity, not {_type_in_file(value)}")
    text = str(value)
    problem = _positive_quantity(text, f"{where}.{key}")
    if problem is not None:
        raise InventoryError(problem)
    return text


def _whole_number(value: object, where: str, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InventoryError(f"{where}: must be a whole number, not {_type_in_file(value)}")
    if value < minimum:
        raise InventoryError(f"{where}: must be at least {minimum}, not {value}")
    return value


def _partitions(value: object, vendor: str, where: str) -> tuple[tuple[str, int], ...]:
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise InventoryError(
            f"{where}: must be a mapping of MIG profile resources to counts (nvidia.com/mig-1g.10gb: 7), "
            f"not {_type_in_file(value)}"
        )
    found: list[tuple[str, int]] = []
    for resource, count in value.items():
        problem = gpu_resources.partition_problem(vendor, str(resource))
        if problem is not None:
            raise InventoryError(f"{where}.{resource}: {problem}")
        found.append((str(resource), _whole_number(count, f"{where}.{resource}", 1)))
    return tuple(found)


def _entry(data: object, index: int, prefix: str) -> tuple[Node, ...]:
    name = data.get("name") if isinstance(data, dict) else None
    where = f"{prefix}nodes[{index}]" + (f" ({name})" if isinstance(name, str) and name else "")
    if not isinstance(data, dict):
        raise InventoryError(
            f"{where}: must be a mapping with name, cpu, memory and gpu, not {_type_in_file(data)}"
        )
    _unknown_keys(data, _ENTRY_KEYS, where)
    if not isinstance(name, str) or not name:
        raise InventoryError(f"{where}.name: is required (a string such as h100)")
    if dns_label(name) is not None:
        raise InventoryError(f"{where}.name: {name!r} {_NODE_NAME_RULE}")
    repeat = data.get("count")
    if repeat is not None:
        repeat = _whole_number(repeat, f"{where}.count", 1)
        if repeat > _MAX_REPEAT:
            raise InventoryError(f"{where}.count: must be at most {_MAX_REPEAT}, not {repeat}")
    cpu = _quantity(data, "cpu", where)
    memory = _quantity(data, "memory", where)
    vendor, model, gpus = "CPU", None, 0
    partitions: tuple[tuple[str, int], ...] = ()
    gpu = data.get("gpu")
    if gpu is not None:
        if not isinstance(gpu, dict):
            raise InventoryError(f"{where}.gpu: must be a mapping with vendor, model and count")
        _unknown_keys(gpu, _GPU_KEYS, f"{where}.gpu")
        raw_vendor = gpu.get("vendor")
        if raw_vendor not in GPU_VENDORS:
            shown = "missing" if raw_vendor is None else repr(raw_vendor)
            raise InventoryError(f"{where}.gpu.vendor: must be one of {', '.join(GPU_VENDORS)}, not {shown}")
        vendor = str(raw_vendor)
        raw_model = gpu.get("model")
        if raw_model is not None and (isinstance(raw_model, bool) or not isinstance(raw_model, str | int)):
            raise InventoryError(f"{where}.gpu.model: must be a string, not {_type_in_file(raw_model)}")
        model = (str(raw_model).strip() or None) if raw_model is not None else None
        if "count" not in gpu:
            raise InventoryError(f"{where}.gpu.count: is required (GPUs on each node, at least 1)")
        gpus = _whole_number(gpu["count"], f"{where}.gpu.count", 1)
        partitions = _partitions(gpu.get("partitions"), vendor, f"{where}.gpu.partitions")
    names = [name] if repeat is None else [f"{name}-{i}" for i in range(repeat)]
    for node_name in names:
        if len(node_name) > 63:
            raise InventoryError(f"{where}.name: {node_name!r} is longer than 63 characters")
    try:
        return tuple(
            Node(
                name=n,
                cpu=cpu,
                memory=memory,
                gpu_vendor=vendor,
                gpu_model=model,
                gpu_count=gpus,
                gpu_partitions=partitions,
            )
            for n in names
        )
    except InventoryError as error:  # pragma: no cover - the checks above catch everything first
        raise InventoryError(f"{where}: {error}") from None


def parse_inventory(text: str, source: str = "inventory") -> Inventory:
    """The inventory in the YAML `text`; `source` names it in errors (usually the file's path)."""
    prefix = f"{source}: "
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        detail = getattr(error, "problem", None) or "invalid YAML"
        raise InventoryError(f"{prefix}invalid YAML{where}: {detail}") from None
    if not isinstance(data, dict) or "nodes" not in data:
        raise InventoryError(f"{prefix}the file must hold a mapping with a list of nodes (nodes: [...])")
    extra = sorted(str(key) for key in data if key != "nodes")
    if extra:
        raise InventoryError(f"{prefix}{extra[0]}: is not a field; the file holds only nodes")
    entries = data["nodes"]
    if not isinstance(entries, list):
        raise InventoryError(f"{prefix}nodes: must be a list of nodes, not {_type_in_file(entries)}")
    if not entries:
        raise InventoryError(f"{prefix}nodes: must list at least one node")
    nodes: list[Node] = []
    where_of: dict[str, int] = {}
    for index, entry in enumerate(entries):
        for node in _entry(entry, index, prefix):
            if node.name in where_of:
                raise InventoryError(
                    f"{prefix}nodes[{index}].name: node {node.name!r} is already defined by "
                    f"nodes[{where_of[node.name]}]"
                )
            where_of[node.name] = index
            nodes.append(node)
    return Inventory(nodes=tuple(nodes))


def load_inventory(path: str) -> Inventory:
    """The inventory in the YAML file at `path`; raises InventoryError naming what is wrong."""
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except (OSError, UnicodeDecodeError) as error:
        raise InventoryError(f"{path}: the inventory file cannot be read: {error}") from None
    return parse_inventory(text, path)
