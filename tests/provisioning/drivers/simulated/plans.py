"""Plans, a driver and readings of the simulated cluster that its tests share."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from gpupaas.provisioning.builtins import builtin_template
from gpupaas.provisioning.drivers.simulated.driver import SimulatedDriver
from gpupaas.provisioning.drivers.simulated.inspection import NodeUsage
from gpupaas.provisioning.inventory import DEFAULT_INVENTORY, Inventory
from gpupaas.provisioning.models import SimulatedAllocation
from gpupaas.provisioning.plan import Plan, build_plan, namespace_for
from gpupaas.provisioning.render.rendering import OutputDefinition


def ns(name: str, project: str = "team-a") -> str:
    """The namespace build_plan gives this test's instance (readable, with a digest of its id)."""
    return namespace_for(project, name, str(uuid.uuid5(uuid.NAMESPACE_DNS, name)))


def make_plan(
    *,
    template: str = "gpu-namespace",
    name: str = "train-1",
    instance_id: str | None = None,
    allocation: str = "SHARED",
    gpus: int = 4,
    vendor: str = "NVIDIA",
    model: str | None = "H100",
    cpu: str = "8",
    memory: str = "64Gi",
    annotations: Mapping[str, str] | None = None,
    resources_text: str | None = None,
    outputs: tuple[OutputDefinition, ...] | None = None,
) -> Plan:
    """A plan from a built-in template, as a profile that keeps every default would build it."""
    builtin = builtin_template(template)
    assert builtin is not None
    return build_plan(
        instance_id=instance_id or str(uuid.uuid5(uuid.NAMESPACE_DNS, name)),
        instance_name=name,
        project="team-a",
        profile_name="h100",
        allocation=allocation,
        resources={
            "cpu": cpu,
            "memory": memory,
            "storage": "100Gi",
            "gpuCount": gpus,
            "gpuVendor": vendor,
            "gpuModel": model,
        },
        template_resources=resources_text or builtin.resources,
        input_definitions=builtin.inputs if resources_text is None else (),
        input_values={d.name: d.default for d in builtin.inputs if d.default is not None},
        outputs=builtin.outputs if outputs is None else outputs,
        labels={},
        annotations=annotations or {},
    )


def driver(inventory: Inventory = DEFAULT_INVENTORY) -> SimulatedDriver:
    return SimulatedDriver(inventory, phase_seconds=0)


class Recorder:
    def __init__(self) -> None:
        self.messages: list[str] = []

    async def __call__(self, message: str) -> None:
        self.messages.append(message)


def usage(state: tuple[NodeUsage, ...]) -> dict[str, tuple[int, int, int]]:
    """node -> (gpus used, cpu used in millicores, memory used in Gi), only the nodes in use."""
    return {
        n.node.name: (n.gpus_used, n.cpu_used, n.memory_used // 1024**3)
        for n in state
        if n.gpus_used or n.cpu_used or n.memory_used
    }


async def rows() -> int:
    return await SimulatedAllocation.all().count()
