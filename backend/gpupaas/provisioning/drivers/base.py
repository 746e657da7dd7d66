"""The driver protocol: what the workers ask of a cluster. Pure functions build the plan;
drivers only apply it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any, Protocol

from gpupaas.core import gpu_resources
from gpupaas.provisioning.plan import Plan

Progress = Callable[[str], Awaitable[None]]


class Phase(str, Enum):
    ABSENT = "ABSENT"  # nothing of the plan exists
    PROGRESSING = "PROGRESSING"
    READY = "READY"
    FAILED = "FAILED"


@dataclass(frozen=True)
class Observed:
    phase: Phase
    message: str | None = None


@dataclass(frozen=True)
class ObjectRef:
    """One object a run applied, as `kubectl get` would name it."""

    api_version: str
    kind: str
    name: str
    namespace: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "namespace": self.namespace,
        }


@dataclass(frozen=True)
class Applied:
    """What an apply left: the outputs (every output of the plan, evaluated against the applied
    objects) and the objects it applied, in the order it applied them."""

    outputs: dict[str, str]
    objects: tuple[ObjectRef, ...] = ()


@dataclass(frozen=True, order=True)
class Owner:
    """Whose objects these are on a cluster: the label that marks them and its value (the id of
    the compute instance or GPU service instance they were applied for: `Plan.owner_label`)."""

    label: str
    id: str


# What a drift watch reports: an owner whose workload failed (FAILED, with the reason) or came back
# (READY).
OnDrift = Callable[[Owner, Observed], Awaitable[None]]


KNOWN_GPU_RESOURCES = frozenset(
    {
        "nvidia.com/gpu",
        "amd.com/gpu",
        "gpu.intel.com/i915",
        "gpu.intel.com/xe",
        "huawei.com/Ascend910",
        "huawei.com/Ascend310",
        "huawei.com/Ascend310P",
    }
)


@dataclass(frozen=True)
class NodeInfo:
    """One node as a platform admin checks it: what pods may use of it, its GPUs, whether it is Ready."""

    name: str
    cpu: str  # allocatable, as the node reports it ("15500m")
    memory: str  # allocatable ("62Gi")
    gpus: Mapping[str, int] = field(default_factory=dict)  # capacity per extended resource
    gpu_model: str | None = None
    ready: bool = True

    @property
    def gpu_resource(self) -> str | None:
        """The node's main GPU resource: the one it has most of (a known one on a tie), whole GPUs
        before partitions (a node with MIG devices still counts its whole GPUs as its GPUs)."""
        if not self.gpus:
            return None
        return max(
            self.gpus,
            key=lambda n: (not gpu_resources.is_partition(n), self.gpus[n], n in KNOWN_GPU_RESOURCES, n),
        )

    def to_json(self) -> dict[str, Any]:
        resource = self.gpu_resource
        return {
            "name": self.name,
            "cpu": self.cpu,
            "memory": self.memory,
            "gpuResource": resource,
            "gpuCount": self.gpus[resource] if resource else 0,
            "gpuModel": self.gpu_model,
            "gpus": dict(self.gpus),
            "ready": self.ready,
        }


@dataclass(frozen=True)
class ClusterInfo:
    """What `KubernetesDriver.check` found: the server's version and its nodes."""

    server_version: str
    nodes: tuple[NodeInfo, ...] = ()

    @property
    def gpus(self) -> dict[str, int]:
        """GPUs in the cluster per extended resource."""
        totals: dict[str, int] = {}
        for node in self.nodes:
            for name, count in node.gpus.items():
                totals[name] = totals.get(name, 0) + count
        return totals

    def to_json(self) -> dict[str, Any]:
        return {"serverVersion": self.server_version, "nodes": [node.to_json() for node in self.nodes]}


# The most lines a log request may ask for from the end of a container's log (tail_lines).
MAX_TAIL_LINES = 10000


@dataclass(frozen=True)
class LogQuery:
    """Which container log to read: of the newest pod of `owner` in `namespace` (the pods a plan's
    controllers make carry its owner label), `container` (None: the pod's first container), its
    last `tail_lines` lines (None: all of it), `follow` (go on with new lines until the container
    stops), `previous` (the container's instance before its last restart, as `kubectl logs -p`)."""

    namespace: str
    owner: Owner
    container: str | None = None
    tail_lines: int | None = None
    follow: bool = False
    previous: bool = False


@dataclass(frozen=True)
class LogLine:
    """One line of a container's log: when the container wrote it (None: the runtime did not say),
    the text (without its newline), whose log it is, and the containers of its pod (those whose
    logs may be asked for instead)."""

    at: datetime | None
    text: str
    pod: str
    container: str
    containers: tuple[str, ...] = ()


@dataclass(frozen=True)
class EventQuery:
    """Which events to read: those of `namespace` whose involved object carries `owner`'s label (a
    pod of it, its Deployment, ...); `follow`: the ones there are, then new ones and changes (a
    repeated event comes again with its count raised) as they happen."""

    namespace: str
    owner: Owner
    follow: bool = False


@dataclass(frozen=True)
class ClusterEvent:
    """A Kubernetes event as `kubectl get events` shows it. `name` identifies it: a repeat of the
    same event comes with the same name, a higher `count` and a later `last_at`."""

    name: str
    type: str  # Normal | Warning
    reason: str
    message: str
    object_kind: str
    object_name: str
    count: int = 1
    first_at: datetime | None = None
    last_at: datetime | None = None


class Driver(Protocol):
    async def apply(self, plan: Plan, progress: Progress | None = None) -> Applied:
        """Creates or updates everything in the plan and waits until it is ready. Idempotent:
        applying the same plan twice leaves one set of objects. Raises DriverError; a plan the
        tenant confinement refused (`Plan.refused`) is a PermanentError before anything is applied."""
        ...

    async def destroy(self, plan: Plan, progress: Progress | None = None) -> None:
        """Deletes everything the plan applied and waits until it is gone. Idempotent."""
        ...

    async def observe(self, plan: Plan) -> Observed:
        """What the cluster holds of the plan now."""
        ...

    async def watch_drift(self, on_change: OnDrift, *, stop: asyncio.Event) -> None:
        """Reports owners whose workloads fail or recover after they were applied, until `stop` is
        set. Temporary failures are retried; a permanent one (credentials, rights) is raised."""
        ...

    async def check(self, gpu_resource_names: Mapping[str, str] | None = None) -> ClusterInfo:
        """The cluster's version and nodes (with their GPUs, named by `gpu_resource_names` per vendor
        where the driver does not read them from the cluster). Raises DriverError saying what is
        wrong."""
        ...

    def logs(self, query: LogQuery) -> AsyncIterator[LogLine]:
        """The lines of a container's log, oldest first; with `follow`, then its new lines as it
        writes them until it stops. Raises PermanentError saying why there is no such log (no pod,
        no such container, no previous container, a container still waiting to start)."""
        ...

    def events(self, query: EventQuery) -> AsyncIterator[ClusterEvent]:
        """The events of the query's objects, oldest first; with `follow`, then new ones and
        changes as they happen, until the caller stops reading."""
        ...

    async def close(self) -> None:
        """Releases what the driver holds (connections, threads); later calls fail."""
        ...
