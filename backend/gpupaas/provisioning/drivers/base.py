"""The driver protocol: what the workers ask of a cluster. Pure functions build the plan;
drivers only apply it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any, Protocol

from gpupaas.core import gpu_resources
from gpupaas.provisioning.plan import (
    KEPT_FROM_ANNOTATION,
    RECLAIM_ANNOTATION,
    RECLAIM_KEEP,
    SERVICE_LABEL,
    Plan,
)

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


@dataclass(frozen=True)
class QuotaUse:
    """One resource of a ResourceQuota: its hard limit and what the namespace uses of it (as the
    API server's quota controller writes `status.used`)."""

    resource: str
    hard: str
    used: str


@dataclass(frozen=True)
class QuotaUsage:
    name: str
    uses: tuple[QuotaUse, ...]


@dataclass(frozen=True)
class VolumeClaim:
    """A PersistentVolumeClaim of a namespace: whose workspace it is (`service_id`, the service
    label; None: no service's, such as one kept after its service was deleted, `kept_from`)."""

    name: str
    size: str | None
    storage_class: str | None
    phase: str | None
    service_id: str | None
    kept_from: str | None
    keep: bool  # its service's delete leaves it in the namespace (reclaim Keep)


@dataclass(frozen=True)
class NamespaceUsage:
    """A compute instance's namespace: its quotas' use, and its volume claims (by name)."""

    quotas: tuple[QuotaUsage, ...] = ()
    claims: tuple[VolumeClaim, ...] = ()


def namespace_usage_of(objects: Iterable[Mapping[str, Any]]) -> NamespaceUsage:
    """The usage of a namespace from its ResourceQuotas (with their status) and its claims, as the
    API server serves them."""
    quotas: list[QuotaUsage] = []
    claims: list[VolumeClaim] = []
    for obj in objects:
        metadata = obj.get("metadata") or {}
        name = str(metadata.get("name") or "")
        status = obj.get("status") or {}
        spec = obj.get("spec") or {}
        if obj.get("kind") == "ResourceQuota":
            hard = status.get("hard") or spec.get("hard") or {}
            used = status.get("used") or {}
            uses = tuple(
                QuotaUse(resource=str(key), hard=str(value), used=str(used.get(key, "0")))
                for key, value in sorted(hard.items())
            )
            quotas.append(QuotaUsage(name=name, uses=uses))
        elif obj.get("kind") == "PersistentVolumeClaim":
            labels = metadata.get("labels") or {}
            annotations = metadata.get("annotations") or {}
            requests = (spec.get("resources") or {}).get("requests") or {}
            size = requests.get("storage")
            claims.append(
                VolumeClaim(
                    name=name,
                    size=str(size) if size is not None else None,
                    storage_class=spec.get("storageClassName"),
                    phase=status.get("phase"),
                    service_id=labels.get(SERVICE_LABEL),
                    kept_from=annotations.get(KEPT_FROM_ANNOTATION),
                    keep=annotations.get(RECLAIM_ANNOTATION) == RECLAIM_KEEP,
                )
            )
    return NamespaceUsage(
        quotas=tuple(sorted(quotas, key=lambda q: q.name)),
        claims=tuple(sorted(claims, key=lambda c: c.name)),
    )


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

    async def namespace_usage(self, namespace: str) -> NamespaceUsage:
        """What a compute instance's namespace uses of its quotas, and its volume claims (empty
        when the namespace is not there). Raises DriverError."""
        ...

    async def close(self) -> None:
        """Releases what the driver holds (connections, threads); later calls fail."""
        ...
