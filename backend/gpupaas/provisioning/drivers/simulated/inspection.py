"""What the simulated cluster's nodes hold, for people and tests to look at: every node of the
inventory with what the instances use of it (`cluster_state`).
"""

from __future__ import annotations

from dataclasses import dataclass

from gpupaas.provisioning.drivers.simulated.admission import Usage
from gpupaas.provisioning.inventory import Inventory, Node
from gpupaas.provisioning.models import SimulatedAllocation

__all__ = ["NodeUsage", "cluster_state"]


@dataclass(frozen=True)
class NodeUsage:
    """One node of the simulated cluster and what the instances use of it (cpu in millicores,
    memory in bytes). A node reserved by a DEDICATED instance is used whole."""

    node: Node
    reserved_for: str | None  # the instance id holding it whole
    namespaces: tuple[str, ...]  # of the instances using it
    gpus_used: int
    cpu_used: int
    memory_used: int

    @property
    def gpus_free(self) -> int:
        return self.node.gpu_count - self.gpus_used

    @property
    def cpu_free(self) -> int:
        return self.node.cpu_millicores - self.cpu_used

    @property
    def memory_free(self) -> int:
        return self.node.memory_bytes - self.memory_used


async def cluster_state(inventory: Inventory) -> tuple[NodeUsage, ...]:
    """Every node of the inventory, in its order, with what the instances use of it."""
    rows = await SimulatedAllocation.all().values("instance_id", "namespace", "nodes", "shares")
    usage = Usage.of(inventory, rows)
    state: list[NodeUsage] = []
    for node in inventory.nodes:
        reserved_for = usage.reserved.get(node.name)
        whole = reserved_for is not None
        state.append(
            NodeUsage(
                node=node,
                reserved_for=reserved_for,
                namespaces=tuple(usage.namespaces.get(node.name, [])),
                gpus_used=node.gpu_count if whole else usage.gpus.get(node.name, 0),
                cpu_used=node.cpu_millicores if whole else usage.cpu.get(node.name, 0),
                memory_used=node.memory_bytes if whole else usage.memory.get(node.name, 0),
            )
        )
    return tuple(state)
