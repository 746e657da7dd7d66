"""Admission on the simulated cluster: what a plan asks for (`Request`, in whole units), what the other
instances hold (`Usage`), and where the plan fits (`admit`), as pure functions of the inventory.

Nodes match a plan when their GPU vendor is the plan's and, when the plan names a GPU model, their
model contains it (case-insensitively: "h100" matches "H100 80GB").

- DEDICATED with GPUs reserves whole matching nodes: a node is free when no DEDICATED instance
  holds it and no SHARED instance uses any of it (GPUs, CPU or memory). One node that has enough
  GPUs, CPU and memory is taken if there is one (the smallest such), else as few as possible,
  biggest first. The instance owns all of their capacity.
- DEDICATED without GPUs (vendor CPU, 0 GPUs) reserves whole nodes without GPUs the same way.
- SHARED takes quota from the pool of nodes no DEDICATED instance holds: its GPUs from matching
  nodes (packed onto the fullest node that still fits them, else spread), its CPU and memory from
  the nodes that hold its GPUs first, then from nodes without GPUs, then from any other node.
  CPU-only SHARED instances take CPU and memory from nodes without GPUs first, then from any node.
- A shortage is a PermanentError that says what was asked and what is free, e.g.
  "Insufficient nvidia.com/gpu: 8 requested, 4 free (NVIDIA H100 nodes: 2, 1 reserved)".
- Nodes the instance already uses (`prefer`) are preferred, so that applying again with other
  resources moves as little as it can. Allocations on nodes that are no longer in the inventory
  (it changed between restarts) are ignored.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gpupaas.core import gpu_resources
from gpupaas.core.quantities import parse_quantity
from gpupaas.provisioning.inventory import Inventory, Node
from gpupaas.provisioning.models import SimulatedAllocation
from gpupaas.provisioning.plan import PermanentError, Plan

__all__ = ["Request", "Usage", "admit", "cpu_text", "memory_text"]


def cpu_text(millicores: int) -> str:
    """Millicores as a quantity people write: 8000 -> "8", 1500 -> "1500m"."""
    return str(millicores // 1000) if millicores % 1000 == 0 else f"{millicores}m"


def memory_text(size: int) -> str:
    """Bytes as a quantity people write: in the largest binary unit that divides them ("64Gi")."""
    for suffix, power in (("Ei", 6), ("Pi", 5), ("Ti", 4), ("Gi", 3), ("Mi", 2), ("Ki", 1)):
        unit = 1024**power
        if size >= unit and size % unit == 0:
            return f"{size // unit}{suffix}"
    return str(size)


# ----------------------------------------------------------------------------------------- request


@dataclass(frozen=True)
class Request:
    """What a plan asks of the cluster, in whole units."""

    allocation: str
    vendor: str
    model: str | None
    gpus: int
    cpu: int  # millicores
    memory: int  # bytes
    resource_name: str
    cpu_text: str
    memory_text: str

    @classmethod
    def of(cls, plan: Plan) -> Request:
        if plan.allocation not in ("DEDICATED", "SHARED"):
            raise PermanentError(f"unknown allocation type {plan.allocation!r}: expected DEDICATED or SHARED")
        amounts: list[int] = []
        for what, text, scale in (("cpu", plan.cpu, 1000), ("memory", plan.memory, 1)):
            try:
                value = parse_quantity(text)
            except ValueError as error:
                raise PermanentError(f"resources.{what}: {error}") from None
            if value < 0:
                raise PermanentError(f"resources.{what}: must not be negative, not {text}")
            amounts.append(math.ceil(value * scale))
        if plan.gpu_count < 0:
            raise PermanentError(f"resources.gpuCount: must not be negative, not {plan.gpu_count}")
        if plan.gpu_vendor == "CPU" and plan.gpu_count > 0:
            raise PermanentError(
                f"resources.gpuCount: a CPU-only profile cannot ask for GPUs ({plan.gpu_count} requested); "
                "choose a GPU vendor or set the count to 0"
            )
        return cls(
            allocation=plan.allocation,
            vendor=plan.gpu_vendor,
            model=(plan.gpu_model or "").strip() or None,
            gpus=plan.gpu_count,
            cpu=amounts[0],
            memory=amounts[1],
            resource_name=plan.gpu_resource_name,
            cpu_text=plan.cpu,
            memory_text=plan.memory,
        )

    @property
    def label(self) -> str:
        """The nodes it asks for, as people say it: "NVIDIA H100", "AMD", "CPU"."""
        return f"{self.vendor} {self.model}" if self.model else self.vendor

    def matches(self, node: Node) -> bool:
        if node.gpu_vendor != self.vendor or node.gpu_count == 0:
            return False
        # The device plugin's resource is per chip for some vendors (Ascend 310P vs 910B): a pod
        # asking for huawei.com/Ascend910 never lands on a node that advertises huawei.com/Ascend310P.
        node_resource = gpu_resources.resource_name(
            node.gpu_vendor, node.gpu_model, {self.vendor: self.resource_name}
        )
        if node_resource != self.resource_name:
            return False
        if self.model is None:
            return True
        return node.gpu_model is not None and self.model.lower() in node.gpu_model.lower()

    def same_as(self, row: SimulatedAllocation) -> bool:
        return (
            row.allocation_type == self.allocation
            and row.gpu_vendor == self.vendor
            and (row.gpu_model or None) == self.model
            and row.gpu_count == self.gpus
            and row.cpu_millicores == self.cpu
            and row.memory_bytes == self.memory
        )

    def describe(self) -> str:
        parts = [f"{self.gpus} {self.resource_name} ({self.label})"] if self.gpus else []
        parts += [f"cpu {self.cpu_text}", f"memory {self.memory_text}"]
        return f"Scheduling {self.allocation.lower()}: " + ", ".join(parts)


# ------------------------------------------------------------------------------------------- usage


@dataclass
class Usage:
    """What the other instances hold, per node of the inventory."""

    reserved: dict[str, str] = field(default_factory=dict)  # node -> instance id
    gpus: dict[str, int] = field(default_factory=dict)
    cpu: dict[str, int] = field(default_factory=dict)
    memory: dict[str, int] = field(default_factory=dict)
    namespaces: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, inventory: Inventory, rows: Iterable[Mapping[str, Any]]) -> Usage:
        usage = cls()
        known = {node.name for node in inventory.nodes}
        for row in rows:
            namespace = str(row["namespace"])
            for name in row["nodes"] or []:
                if name in known:
                    usage.reserved[name] = str(row["instance_id"])
                    usage.namespaces.setdefault(name, []).append(namespace)
            for share in row["shares"] or []:
                name = share.get("node")
                if name not in known:
                    continue
                for amounts, key in ((usage.gpus, "gpus"), (usage.cpu, "cpu"), (usage.memory, "memory")):
                    amounts[name] = amounts.get(name, 0) + int(share.get(key, 0))
                if namespace not in usage.namespaces.setdefault(name, []):
                    usage.namespaces[name].append(namespace)
        return usage

    def shared(self, node: str) -> bool:
        return any(amounts.get(node, 0) > 0 for amounts in (self.gpus, self.cpu, self.memory))

    def free_gpus(self, node: Node) -> int:
        return max(node.gpu_count - self.gpus.get(node.name, 0), 0)

    def free_cpu(self, node: Node) -> int:
        return max(node.cpu_millicores - self.cpu.get(node.name, 0), 0)

    def free_memory(self, node: Node) -> int:
        return max(node.memory_bytes - self.memory.get(node.name, 0), 0)


# --------------------------------------------------------------------------------------- placement


def no_nodes(inventory: Inventory, request: Request) -> PermanentError:
    if not any(node.gpu_vendor == request.vendor for node in inventory.nodes):
        return PermanentError(f"No {request.vendor} GPU nodes in the cluster; it has {inventory.describe()}")
    return PermanentError(
        f'No {request.vendor} nodes with GPU model "{request.model}" in the cluster; '
        f"it has {inventory.describe()}"
    )


def admit(
    inventory: Inventory, usage: Usage, request: Request, prefer: frozenset[str]
) -> tuple[list[str], list[dict[str, Any]]]:
    """(whole nodes, shares) for the request, or a PermanentError saying what is short."""
    matching: list[Node] = []
    if request.gpus > 0:
        matching = [node for node in inventory.nodes if request.matches(node)]
        if not matching:
            raise no_nodes(inventory, request)
    if request.allocation == "DEDICATED":
        return _admit_dedicated(inventory, usage, request, matching, prefer), []
    return [], _admit_shared(inventory, usage, request, matching, prefer)


def _admit_dedicated(
    inventory: Inventory, usage: Usage, request: Request, matching: list[Node], prefer: frozenset[str]
) -> list[str]:
    if request.gpus > 0:
        pool, label = matching, request.label
    else:
        pool, label = [node for node in inventory.nodes if node.gpu_vendor == "CPU"], "CPU"
        if not pool:
            raise PermanentError(
                "No nodes without GPUs in the cluster for a dedicated CPU-only instance; "
                f"it has {inventory.describe()}"
            )
    reserved = [node for node in pool if node.name in usage.reserved]
    in_shared_use = [node for node in pool if node.name not in usage.reserved and usage.shared(node.name)]
    free = [node for node in pool if node.name not in usage.reserved and not usage.shared(node.name)]
    where = f"({label} nodes: {len(pool)}, {len(reserved)} reserved" + (
        f", {len(in_shared_use)} in shared use)" if in_shared_use else ")"
    )
    free_gpus = sum(node.gpu_count for node in free)
    free_cpu = sum(node.cpu_millicores for node in free)
    free_memory = sum(node.memory_bytes for node in free)
    if free_gpus < request.gpus:
        raise PermanentError(
            f"Insufficient {request.resource_name}: {request.gpus} requested on whole nodes, "
            f"{free_gpus} free on whole nodes {where}"
        )
    if free_cpu < request.cpu:
        raise PermanentError(
            f"Insufficient cpu: {request.cpu_text} requested on whole nodes, "
            f"{cpu_text(free_cpu)} free on whole nodes {where}"
        )
    if free_memory < request.memory:
        raise PermanentError(
            f"Insufficient memory: {request.memory_text} requested on whole nodes, "
            f"{memory_text(free_memory)} free on whole nodes {where}"
        )
    fits = [
        node
        for node in free
        if node.gpu_count >= request.gpus
        and node.cpu_millicores >= request.cpu
        and node.memory_bytes >= request.memory
    ]
    if fits:
        best = min(
            fits,
            key=lambda n: (n.name not in prefer, n.gpu_count, n.cpu_millicores, n.memory_bytes, n.name),
        )
        return [best.name]
    chosen: list[str] = []
    gpus = cpu = memory = 0
    for node in sorted(
        free, key=lambda n: (n.name not in prefer, -n.gpu_count, -n.cpu_millicores, -n.memory_bytes, n.name)
    ):
        if gpus >= request.gpus and cpu >= request.cpu and memory >= request.memory:
            break
        chosen.append(node.name)
        gpus, cpu, memory = gpus + node.gpu_count, cpu + node.cpu_millicores, memory + node.memory_bytes
    return chosen


def _admit_shared(
    inventory: Inventory, usage: Usage, request: Request, matching: list[Node], prefer: frozenset[str]
) -> list[dict[str, Any]]:
    gpu_place: dict[str, int] = {}
    if request.gpus > 0:
        pool = [node for node in matching if node.name not in usage.reserved]
        reserved = len(matching) - len(pool)
        free = sum(usage.free_gpus(node) for node in pool)
        if free < request.gpus:
            raise PermanentError(
                f"Insufficient {request.resource_name}: {request.gpus} requested, {free} free "
                f"({request.label} nodes: {len(matching)}, {reserved} reserved)"
            )
        fits = [node for node in pool if usage.free_gpus(node) >= request.gpus]
        if fits:
            best = min(fits, key=lambda n: (n.name not in prefer, usage.free_gpus(n), n.name))
            gpu_place[best.name] = request.gpus
        else:
            wanted = request.gpus
            for node in sorted(pool, key=lambda n: (n.name not in prefer, -usage.free_gpus(n), n.name)):
                take = min(usage.free_gpus(node), wanted)
                if take > 0:
                    gpu_place[node.name] = take
                    wanted -= take

    open_nodes = [node for node in inventory.nodes if node.name not in usage.reserved]
    by_name = {node.name: node for node in open_nodes}
    rest = sorted(
        (n for n in open_nodes if n.name not in gpu_place), key=lambda n: (n.name not in prefer, n.name)
    )
    tiers = [
        [by_name[name] for name in gpu_place],
        [node for node in rest if node.gpu_vendor == "CPU"],
        [node for node in rest if node.gpu_vendor != "CPU"],
    ]
    where = f"(nodes: {len(inventory.nodes)}, {len(inventory.nodes) - len(open_nodes)} reserved)"
    free_cpu = sum(usage.free_cpu(node) for node in open_nodes)
    free_memory = sum(usage.free_memory(node) for node in open_nodes)
    if free_cpu < request.cpu:
        raise PermanentError(
            f"Insufficient cpu: {request.cpu_text} requested, {cpu_text(free_cpu)} free {where}"
        )
    if free_memory < request.memory:
        raise PermanentError(
            f"Insufficient memory: {request.memory_text} requested, {memory_text(free_memory)} free {where}"
        )
    cpu_place: dict[str, tuple[int, int]] = {}
    for tier in tiers:
        fits = [
            node
            for node in tier
            if usage.free_cpu(node) >= request.cpu and usage.free_memory(node) >= request.memory
        ]
        if fits:
            best = min(
                fits,
                key=lambda n: (n.name not in prefer, usage.free_cpu(n), usage.free_memory(n), n.name),
            )
            cpu_place[best.name] = (request.cpu, request.memory)
            break
    else:
        cpu, memory = request.cpu, request.memory
        for node in (node for tier in tiers for node in tier):
            take_cpu, take_memory = min(usage.free_cpu(node), cpu), min(usage.free_memory(node), memory)
            if take_cpu or take_memory:
                cpu_place[node.name] = (take_cpu, take_memory)
                cpu, memory = cpu - take_cpu, memory - take_memory
    names = list(gpu_place) + [name for name in cpu_place if name not in gpu_place]
    return [
        {
            "node": name,
            "gpus": gpu_place.get(name, 0),
            "cpu": cpu_place.get(name, (0, 0))[0],
            "memory": cpu_place.get(name, (0, 0))[1],
        }
        for name in names
    ]
