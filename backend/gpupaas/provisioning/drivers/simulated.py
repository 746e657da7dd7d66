"""The simulated cluster: the embedded default driver, a Kubernetes cluster that exists only in the
database.

It behaves like the `kubernetes` driver where a user can see it: it validates every manifest
against the Kubernetes schema, admits instances by the capacity of its inventory
(provisioning/inventory.py), walks through the phases a real deploy goes through (reporting each
to `progress` and waiting `phase_seconds` in each), keeps the applied objects with the fields the
API server fills in, and evaluates the plan's outputs against them.

State. Everything lives in the tables of provisioning/models.py: one `SimulatedAllocation` row
per instance (keyed by instance id, so that a repeated or redelivered apply, or one that runs
again after its worker died, finds the row and creates nothing twice), and one `SimulatedCluster`
row. Admission happens in one transaction that first locks the cluster row (`SELECT ... FOR
UPDATE` on PostgreSQL; on SQLite the single writer serializes it), so that two workers can never
both take the last free GPUs. A new driver over the same database (a restart) sees everything.

Admission model. Nodes match a plan when their GPU vendor is the plan's and, when the plan names
a GPU model, their model contains it (case-insensitively: "h100" matches "H100 80GB").

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
- Applying again with the same resources keeps the allocation as it is; with other resources the
  instance is admitted again as if it had released what it holds, preferring the nodes it already
  uses, and keeps the old allocation when the new one does not fit.
- A failed apply keeps what it admitted and applied, as a real cluster would: `destroy` frees it.
  Allocations on nodes that are no longer in the inventory (it changed between restarts) are
  ignored.

GPU service instances (a plan with `within`, service_instances/plan.py) hold no capacity of their own: they
run in their compute instance's namespace, whose row must exist ("its compute instance is not
deployed" otherwise), and their GPUs count against its quota as a ResourceQuota would ("exceeded
quota: compute, requested: requests.nvidia.com/gpu=1, used: ..., limited: ..."). A service scaled
to zero (stopped) holds no GPUs and keeps its objects and node ports. Its phases: "Scheduling
<name> in namespace <ns>", "Scheduled <name> on <nodes>", "Applying N objects", 'Pulling image
"<image>"', "Waiting for the container to be ready" (stopped: "Scaling <name> to 0 replicas", ...,
"Waiting for the pod to terminate"). Destroying a compute instance deletes its namespace and so
its services' rows too.

`observe` reads the row: no row is ABSENT; an apply or destroy under way (or interrupted by a
worker that died) is PROGRESSING with the phase it reached; READY; FAILED with the message of the
apply or destroy that failed last.

Phases of `apply`: "Scheduling ...", "Reserved nodes ..." or "Scheduled on ...", "Creating
namespace <ns>", "Applying N objects", "Waiting for quota <name>" (or "Waiting for N objects to be
ready"). Of `destroy`: "Deleting N objects", "Waiting for namespace <ns> to terminate".

Fields the simulated API server fills in: metadata.uid, creationTimestamp (kept across applies),
resourceVersion (a cluster-wide counter, bumped only when an object changes) and generation; a
Namespace gets the label kubernetes.io/metadata.name, spec.finalizers and status.phase=Active; a
ResourceQuota gets status.hard and status.used; a Service gets spec.type, a spec.clusterIP in
10.96.0.0/12 (from a hash, not checked for uniqueness), each port's protocol and targetPort and,
for type NodePort or LoadBalancer, a spec.ports[*].nodePort in 30000-32767 chosen from a hash of the
instance id and unique across the cluster (so `{{ objects.Service.spec.ports.0.nodePort }}` works
in outputs); a LoadBalancer gets an ingress IP in 198.51.100.0/24; Deployments and StatefulSets
report all replicas ready, Pods Running and PersistentVolumeClaims Bound.

Failure injection, through the plan's annotations (a profile's annotations), for tests and demos:

- `simulated.gpupaas.io/fail: "apply"`: every apply fails with a PermanentError after its objects
  are applied ("simulated failure: image pull back-off ...").
- `simulated.gpupaas.io/fail: "destroy"`: every destroy fails with a PermanentError, keeping the
  objects and the capacity.
- `simulated.gpupaas.io/fail-times: "N"`: the first N apply attempts of the instance fail with a
  TemporaryError after it was admitted; the count lives in its row, so it survives restarts, and
  starts again after a destroy.
"""

from __future__ import annotations

import asyncio
import copy
import hashlib
import ipaddress
import math
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from tortoise.backends.base.client import BaseDBAsyncClient
from tortoise.transactions import in_transaction

from gpupaas.core.quantities import parse_quantity
from gpupaas.provisioning.drivers.base import (
    Applied,
    ClusterInfo,
    NodeInfo,
    ObjectRef,
    Observed,
    OnDrift,
    Phase,
    Progress,
)
from gpupaas.provisioning.inventory import Inventory, Node
from gpupaas.provisioning.models import AllocationPhase, SimulatedAllocation, SimulatedCluster
from gpupaas.provisioning.plan import GPU_RESOURCE_NAMES, DriverError, PermanentError, Plan, TemporaryError
from gpupaas.provisioning.render.problems import TemplateError
from gpupaas.provisioning.render.rendering import render_outputs
from gpupaas.provisioning.render.schema import validate_manifest
from gpupaas.provisioning.wording import plural

__all__ = [
    "FAIL_ANNOTATION",
    "FAIL_TIMES_ANNOTATION",
    "NodeUsage",
    "SimulatedDriver",
]

FAIL_ANNOTATION = "simulated.gpupaas.io/fail"
FAIL_TIMES_ANNOTATION = "simulated.gpupaas.io/fail-times"
_FAIL_VALUES = ("apply", "destroy")
_CLUSTER = "default"
NODE_PORT_MIN, NODE_PORT_MAX = 30000, 32767
_SERVICE_NETWORK = ipaddress.IPv4Network("10.96.0.0/12")
_MAX_REPORTED_PROBLEMS = 10
# The allocation type of a service instance's row: it holds no capacity, only its compute
# instance's quota.
_WITHIN = "WITHIN"


async def _silent(message: str) -> None:
    return None


# ----------------------------------------------------------------------------------------- formats


def _cpu_text(millicores: int) -> str:
    return str(millicores // 1000) if millicores % 1000 == 0 else f"{millicores}m"


def _memory_text(size: int) -> str:
    for suffix, power in (("Ei", 6), ("Pi", 5), ("Ti", 4), ("Gi", 3), ("Mi", 2), ("Ki", 1)):
        unit = 1024**power
        if size >= unit and size % unit == 0:
            return f"{size // unit}{suffix}"
    return str(size)


def _path_text(path: Sequence[str | int]) -> str:
    """("spec", "ports", 0, "port") -> "spec.ports[0].port"."""
    text = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path)
    return text.removeprefix(".") or "(the object)"


def _object_ref(manifest: Mapping[str, Any]) -> str:
    metadata = manifest.get("metadata")
    name = metadata.get("name") if isinstance(metadata, Mapping) else None
    return " ".join(str(part) for part in (manifest.get("kind") or "object", name) if part)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _hash(seed: str) -> int:
    return int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big")


# ----------------------------------------------------------------------------------------- request


@dataclass(frozen=True)
class _Request:
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
    def of(cls, plan: Plan) -> _Request:
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


@dataclass(frozen=True)
class _Failures:
    apply: bool
    times: int

    @classmethod
    def of(cls, plan: Plan) -> _Failures:
        fail = plan.annotations.get(FAIL_ANNOTATION)
        if fail is not None and fail not in _FAIL_VALUES:
            raise PermanentError(
                f'annotation {FAIL_ANNOTATION}: "{fail}" is not one of: ' + ", ".join(_FAIL_VALUES)
            )
        raw_times = plan.annotations.get(FAIL_TIMES_ANNOTATION)
        times = 0
        if raw_times is not None:
            if re.fullmatch(r"\s*[0-9]{1,9}\s*", raw_times) is None:
                raise PermanentError(
                    f'annotation {FAIL_TIMES_ANNOTATION}: "{raw_times}" must be a whole number such as "2"'
                )
            times = int(raw_times)
        return cls(apply=fail == "apply", times=times)


# --------------------------------------------------------------------------------------- admission


@dataclass
class _Usage:
    """What the other instances hold, per node of the inventory."""

    reserved: dict[str, str] = field(default_factory=dict)  # node -> instance id
    gpus: dict[str, int] = field(default_factory=dict)
    cpu: dict[str, int] = field(default_factory=dict)
    memory: dict[str, int] = field(default_factory=dict)
    namespaces: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, inventory: Inventory, rows: Iterable[Mapping[str, Any]]) -> _Usage:
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


def _no_nodes(inventory: Inventory, request: _Request) -> PermanentError:
    if not any(node.gpu_vendor == request.vendor for node in inventory.nodes):
        return PermanentError(f"No {request.vendor} GPU nodes in the cluster; it has {inventory.describe()}")
    return PermanentError(
        f'No {request.vendor} nodes with GPU model "{request.model}" in the cluster; '
        f"it has {inventory.describe()}"
    )


def _admit(
    inventory: Inventory, usage: _Usage, request: _Request, prefer: frozenset[str]
) -> tuple[list[str], list[dict[str, Any]]]:
    """(whole nodes, shares) for the request, or a PermanentError saying what is short."""
    matching: list[Node] = []
    if request.gpus > 0:
        matching = [node for node in inventory.nodes if request.matches(node)]
        if not matching:
            raise _no_nodes(inventory, request)
    if request.allocation == "DEDICATED":
        return _admit_dedicated(inventory, usage, request, matching, prefer), []
    return [], _admit_shared(inventory, usage, request, matching, prefer)


def _admit_dedicated(
    inventory: Inventory, usage: _Usage, request: _Request, matching: list[Node], prefer: frozenset[str]
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
            f"{_cpu_text(free_cpu)} free on whole nodes {where}"
        )
    if free_memory < request.memory:
        raise PermanentError(
            f"Insufficient memory: {request.memory_text} requested on whole nodes, "
            f"{_memory_text(free_memory)} free on whole nodes {where}"
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
    inventory: Inventory, usage: _Usage, request: _Request, matching: list[Node], prefer: frozenset[str]
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
            f"Insufficient cpu: {request.cpu_text} requested, {_cpu_text(free_cpu)} free {where}"
        )
    if free_memory < request.memory:
        raise PermanentError(
            f"Insufficient memory: {request.memory_text} requested, {_memory_text(free_memory)} free {where}"
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


# ----------------------------------------------------------------------------------------- objects


def _key(obj: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """Identifies an object as the API server does: group, kind, namespace, name."""
    metadata = obj.get("metadata") or {}
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    return (group, str(obj.get("kind", "")), str(metadata.get("namespace") or ""), str(metadata.get("name")))


def _replicas(manifests: Iterable[Mapping[str, Any]]) -> int:
    """The pods the manifests' controllers ask for (0: every Deployment is scaled to zero)."""
    total = 0
    for manifest in manifests:
        if manifest.get("kind") in ("Deployment", "StatefulSet", "ReplicaSet"):
            spec = manifest.get("spec")
            replicas = spec.get("replicas", 1) if isinstance(spec, dict) else 1
            total += replicas if isinstance(replicas, int) else 1
        elif manifest.get("kind") == "Pod":
            total += 1
    return total


def _images(manifests: Iterable[Mapping[str, Any]]) -> list[str]:
    images: list[str] = []
    for manifest in manifests:
        template = ((manifest.get("spec") or {}).get("template") or {}).get("spec") or {}
        for container in template.get("containers") or []:
            image = container.get("image") if isinstance(container, dict) else None
            if isinstance(image, str) and image not in images:
                images.append(image)
    return images


def _distinct(manifests: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The manifests, an object named twice applied once (where it first appears, as it last reads)."""
    objects: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for manifest in manifests:
        objects[_key(manifest)] = copy.deepcopy(dict(manifest))
    return list(objects.values())


@dataclass
class _Server:
    """Fills the fields the API server would, for one apply of one instance."""

    instance_id: str
    resource_version: int
    taken_ports: set[int]  # node ports other instances hold
    ports: list[int] = field(default_factory=list)  # node ports of this instance

    def next_version(self) -> str:
        self.resource_version += 1
        return str(self.resource_version)

    def node_port(self, seed: str, wanted: object, previous: object, where: str) -> int:
        held = self.taken_ports | set(self.ports)
        if wanted is not None:
            if not isinstance(wanted, int) or not NODE_PORT_MIN <= wanted <= NODE_PORT_MAX:
                raise PermanentError(
                    f"{where}: {wanted} is not in the node port range {NODE_PORT_MIN}-{NODE_PORT_MAX}"
                )
            if wanted in held:
                raise PermanentError(f"{where}: {wanted} is already allocated")
            self.ports.append(wanted)
            return wanted
        if isinstance(previous, int) and previous not in held:
            self.ports.append(previous)
            return previous
        size = NODE_PORT_MAX - NODE_PORT_MIN + 1
        start = _hash(f"{self.instance_id}/{seed}") % size
        for step in range(size):
            port = NODE_PORT_MIN + (start + step) % size
            if port not in held:
                self.ports.append(port)
                return port
        raise PermanentError(f"{where}: no node port is free in {NODE_PORT_MIN}-{NODE_PORT_MAX}")

    def fill(self, obj: dict[str, Any], previous: Mapping[str, Any] | None, changed: bool) -> None:
        metadata = obj.setdefault("metadata", {})
        old_metadata = (previous or {}).get("metadata") or {}
        metadata["uid"] = old_metadata.get("uid") or str(uuid.uuid4())
        metadata["creationTimestamp"] = old_metadata.get("creationTimestamp") or _now()
        if changed or "resourceVersion" not in old_metadata:
            metadata["resourceVersion"] = self.next_version()
            metadata["generation"] = int(old_metadata.get("generation") or 0) + 1
        else:
            metadata["resourceVersion"] = old_metadata["resourceVersion"]
            metadata["generation"] = old_metadata.get("generation", 1)
        kind = obj.get("kind")
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else None
        if kind == "Namespace":
            metadata["labels"] = {
                **(metadata.get("labels") or {}),
                "kubernetes.io/metadata.name": metadata["name"],
            }
            obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
            obj["status"] = {"phase": "Active"}
        elif kind == "ResourceQuota" and spec is not None:
            hard = dict(spec.get("hard") or {})
            obj["status"] = {"hard": hard, "used": dict.fromkeys(hard, "0")}
        elif kind == "Service":
            self._service(obj, previous)
        elif kind in ("Deployment", "StatefulSet", "ReplicaSet"):
            replicas = (spec or {}).get("replicas", 1)
            obj["status"] = {
                "observedGeneration": metadata["generation"],
                "replicas": replicas,
                "readyReplicas": replicas,
                "availableReplicas": replicas,
                "updatedReplicas": replicas,
            }
        elif kind == "Pod":
            obj["status"] = {"phase": "Running"}
        elif kind == "PersistentVolumeClaim":
            obj["status"] = {"phase": "Bound"}

    def _service(self, obj: dict[str, Any], previous: Mapping[str, Any] | None) -> None:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        name = str(obj["metadata"].get("name"))
        kind = spec.setdefault("type", "ClusterIP")
        if kind != "ExternalName" and "clusterIP" not in spec:
            offset = _hash(f"{self.instance_id}/{name}") % (_SERVICE_NETWORK.num_addresses - 2) + 1
            spec["clusterIP"] = str(_SERVICE_NETWORK.network_address + offset)
        if "clusterIP" in spec:
            spec.setdefault("clusterIPs", [spec["clusterIP"]])
        old_spec = (previous or {}).get("spec") or {}
        old_ports = {
            (port.get("name"), port.get("port")): port.get("nodePort")
            for port in old_spec.get("ports") or []
            if isinstance(port, dict)
        }
        for index, port in enumerate(spec.get("ports") or []):
            if not isinstance(port, dict):
                continue
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))
            if kind in ("NodePort", "LoadBalancer"):
                port["nodePort"] = self.node_port(
                    f"{name}/{index}",
                    port.get("nodePort"),
                    old_ports.get((port.get("name"), port.get("port"))),
                    f"Service {name}: spec.ports[{index}].nodePort",
                )
        if kind == "LoadBalancer":
            ip = f"198.51.100.{_hash(f'{self.instance_id}/{name}/lb') % 254 + 1}"
            obj["status"] = {"loadBalancer": {"ingress": [{"ip": ip}]}}


# ------------------------------------------------------------------------------------------ driver


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


class SimulatedDriver:
    """A Driver (drivers/base.py) over the simulated cluster; see the module's docstring."""

    def __init__(
        self, inventory: Inventory, *, phase_seconds: float = 1.0, kubernetes_version: str = "1.37.0"
    ) -> None:
        if not phase_seconds >= 0:
            raise ValueError(f"phase_seconds must be 0 or more, not {phase_seconds}")
        # Fails now (ValueError) rather than at the first deploy when there are no schemas for it.
        validate_manifest(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "probe"}}, kubernetes_version
        )
        self.inventory = inventory
        self.phase_seconds = phase_seconds
        self.kubernetes_version = kubernetes_version

    # ------------------------------------------------------------------------------------- apply

    async def apply(self, plan: Plan, progress: Progress | None = None) -> Applied:
        report = progress or _silent
        request = _Request.of(plan)
        failures = _Failures.of(plan)
        self._validate(plan.manifests)
        manifests = _distinct(plan.manifests)
        replicas = _replicas(manifests)

        if plan.within is not None:
            await self._phase(report, f"Scheduling {plan.instance_name} in namespace {plan.namespace}")
            row, message = await self._admit_within(plan, request, replicas)
        else:
            await self._phase(report, request.describe())
            row, message = await self._admit(plan, request)
        try:
            await self._phase(report, message)
            if plan.within is None:
                await self._phase(report, f"Creating namespace {plan.namespace}")
            if row.apply_attempts <= failures.times:
                raise TemporaryError(
                    f"simulated temporary failure {row.apply_attempts} of {failures.times}: the API server "
                    f'did not answer in time (annotation {FAIL_TIMES_ANNOTATION}: "{failures.times}")'
                )
            await self._phase(report, f"Applying {plural(len(manifests), 'object')}")
            applied = await self._store(plan, manifests)
            quota = next((obj for obj in applied if obj.get("kind") == "ResourceQuota"), None)
            if plan.within is not None and replicas == 0:
                await self._phase(report, "Waiting for the pod to terminate")
            elif plan.within is not None:
                for image in _images(manifests):
                    await self._phase(report, f'Pulling image "{image}"')
                await self._phase(report, "Waiting for the container to be ready")
            else:
                await self._phase(
                    report,
                    f"Waiting for quota {quota['metadata']['name']}"
                    if quota is not None
                    else f"Waiting for {plural(len(applied), 'object')} to be ready",
                )
            if failures.apply:
                raise PermanentError(
                    "simulated failure: image pull back-off: the container image could not be pulled "
                    f'(annotation {FAIL_ANNOTATION}: "apply")'
                )
            try:
                outputs = render_outputs(plan.outputs, plan.context, applied)
            except TemplateError as error:
                raise PermanentError(f"the outputs cannot be rendered: {error}") from None
        except DriverError as error:
            await self._set_phase(plan.instance_id, AllocationPhase.FAILED, str(error))
            raise
        await self._set_phase(plan.instance_id, AllocationPhase.READY, None)
        refs = tuple(
            ObjectRef(
                api_version=str(obj["apiVersion"]),
                kind=str(obj["kind"]),
                name=str(obj["metadata"]["name"]),
                namespace=obj["metadata"].get("namespace"),
            )
            for obj in applied
        )
        return Applied(outputs=outputs, objects=refs)

    def _validate(self, manifests: Sequence[Mapping[str, Any]]) -> None:
        problems: list[str] = []
        for index, manifest in enumerate(manifests):
            ref = f"{_object_ref(manifest)} (object {index + 1})"
            problems.extend(
                f"{ref}: {_path_text(path)}: {message}"
                for path, message in validate_manifest(manifest, self.kubernetes_version)
            )
        if problems:
            more = len(problems) - _MAX_REPORTED_PROBLEMS
            raise PermanentError(
                "Kubernetes would reject the objects: "
                + "; ".join(problems[:_MAX_REPORTED_PROBLEMS])
                + (f"; and {more} more" if more > 0 else "")
            )

    async def _phase(self, report: Progress, message: str) -> None:
        await report(message)
        if self.phase_seconds > 0:
            await asyncio.sleep(self.phase_seconds)

    async def _lock(self, conn: BaseDBAsyncClient) -> SimulatedCluster:
        """The cluster row, locked until the transaction of `conn` ends (on PostgreSQL)."""
        cluster = await SimulatedCluster.select_for_update().using_db(conn).get_or_none(name=_CLUSTER)
        if cluster is None:  # created just before; only someone deleting it gets here
            raise TemporaryError("the simulated cluster's state is being reset; try again")
        return cluster

    async def _admit(self, plan: Plan, request: _Request) -> tuple[SimulatedAllocation, str]:
        """The instance's row, admitted (or kept as it was), and what it holds, in words."""
        # Outside the transaction: on PostgreSQL a failed insert would abort it.
        await SimulatedCluster.get_or_create(name=_CLUSTER)
        async with in_transaction() as conn:
            await self._lock(conn)
            row = await SimulatedAllocation.filter(instance_id=plan.instance_id).using_db(conn).first()
            if row is None or not request.same_as(row):
                others = (
                    await SimulatedAllocation.exclude(instance_id=plan.instance_id)
                    .using_db(conn)
                    .values("instance_id", "namespace", "nodes", "shares")
                )
                held = frozenset(row.nodes) | {s["node"] for s in row.shares} if row else frozenset()
                nodes, shares = _admit(self.inventory, _Usage.of(self.inventory, others), request, held)
            else:
                nodes, shares = row.nodes, row.shares
            values: dict[str, Any] = {
                "namespace": plan.namespace,
                "allocation_type": request.allocation,
                "nodes": nodes,
                "shares": shares,
                "gpu_vendor": request.vendor,
                "gpu_model": request.model,
                "gpu_count": request.gpus,
                "cpu_millicores": request.cpu,
                "memory_bytes": request.memory,
                "phase": AllocationPhase.PROGRESSING,
                "message": f"Creating namespace {plan.namespace}",
            }
            if row is None:
                row = await SimulatedAllocation.create(
                    using_db=conn, instance_id=plan.instance_id, apply_attempts=1, **values
                )
            else:
                row.update_from_dict({**values, "apply_attempts": row.apply_attempts + 1})
                await row.save(using_db=conn)
        if nodes:
            return row, f"Reserved {'node' if len(nodes) == 1 else 'nodes'} {', '.join(nodes)}"
        return row, "Scheduled on " + ", ".join(share["node"] for share in shares)

    async def _admit_within(
        self, plan: Plan, request: _Request, replicas: int
    ) -> tuple[SimulatedAllocation, str]:
        """A service instance's row: no capacity of its own, but its GPUs must fit the quota of the
        compute instance it runs in (what the namespace's ResourceQuota does on a real cluster)."""
        await SimulatedCluster.get_or_create(name=_CLUSTER)
        gpus = request.gpus if replicas else 0
        async with in_transaction() as conn:
            await self._lock(conn)
            parent = await SimulatedAllocation.filter(instance_id=plan.within).using_db(conn).first()
            if parent is None or parent.namespace != plan.namespace:
                raise PermanentError(
                    f"namespace {plan.namespace} does not exist: its compute instance is not deployed"
                )
            if gpus:
                counts: list[Any] = (
                    await SimulatedAllocation.filter(
                        namespace=plan.namespace, allocation_type=_WITHIN, gpu_count__gt=0
                    )
                    .exclude(instance_id=plan.instance_id)
                    .using_db(conn)
                    .values_list("gpu_count", flat=True)
                )
                used = sum(int(count) for count in counts)
                limit = parent.gpu_count if parent.gpu_vendor == request.vendor else 0
                if used + gpus > limit:
                    raise PermanentError(
                        f'pods "{plan.instance_name}" is forbidden: exceeded quota: compute, requested: '
                        f"requests.{request.resource_name}={gpus}, used: requests.{request.resource_name}="
                        f"{used}, limited: requests.{request.resource_name}={limit}"
                    )
            row = await SimulatedAllocation.filter(instance_id=plan.instance_id).using_db(conn).first()
            values: dict[str, Any] = {
                "namespace": plan.namespace,
                "allocation_type": _WITHIN,
                "nodes": [],
                "shares": [],
                "gpu_vendor": request.vendor,
                "gpu_model": None,
                "gpu_count": gpus,
                "cpu_millicores": request.cpu if replicas else 0,
                "memory_bytes": request.memory if replicas else 0,
                "phase": AllocationPhase.PROGRESSING,
                "message": f"Scheduling {plan.instance_name}",
            }
            if row is None:
                row = await SimulatedAllocation.create(
                    using_db=conn, instance_id=plan.instance_id, apply_attempts=1, **values
                )
            else:
                row.update_from_dict({**values, "apply_attempts": row.apply_attempts + 1})
                await row.save(using_db=conn)
        if not replicas:
            return row, f"Scaling {plan.instance_name} to 0 replicas"
        where = ", ".join([*parent.nodes, *(share["node"] for share in parent.shares)]) or "its nodes"
        return row, f"Scheduled {plan.instance_name} on {where}"

    async def _store(self, plan: Plan, manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Applies the manifests to the instance's row; the objects as the server holds them."""
        async with in_transaction() as conn:
            cluster = await self._lock(conn)
            row = await SimulatedAllocation.filter(instance_id=plan.instance_id).using_db(conn).first()
            if row is None:
                raise TemporaryError("the instance was destroyed while it was being applied; try again")
            taken = await (
                SimulatedAllocation.exclude(instance_id=plan.instance_id)
                .using_db(conn)
                .values_list("node_ports", flat=True)
            )
            server = _Server(
                instance_id=plan.instance_id,
                resource_version=cluster.resource_version,
                taken_ports={int(port) for ports in taken for port in (ports or [])},
            )
            old_objects = {_key(obj): obj for obj in row.objects}
            old_manifests = {_key(manifest): manifest for manifest in row.manifests}
            applied: list[dict[str, Any]] = []
            for manifest in manifests:
                key = _key(manifest)
                obj = copy.deepcopy(manifest)
                server.fill(obj, old_objects.get(key), changed=old_manifests.get(key) != manifest)
                applied.append(obj)
            row.manifests = manifests
            row.objects = applied
            row.node_ports = server.ports
            row.message = f"Waiting for {plural(len(applied), 'object')} to be ready"
            await row.save(
                using_db=conn, update_fields=["manifests", "objects", "node_ports", "message", "updated_at"]
            )
            if server.resource_version != cluster.resource_version:
                cluster.resource_version = server.resource_version
                await cluster.save(using_db=conn, update_fields=["resource_version", "updated_at"])
        return applied

    async def _set_phase(self, instance_id: str, phase: AllocationPhase, message: str | None) -> None:
        await SimulatedAllocation.filter(instance_id=instance_id).update(
            phase=phase, message=message, updated_at=datetime.now(UTC)
        )

    # ----------------------------------------------------------------------------------- destroy

    async def destroy(self, plan: Plan, progress: Progress | None = None) -> None:
        report = progress or _silent
        row = await SimulatedAllocation.get_or_none(instance_id=plan.instance_id)
        if row is None:
            await report(f"Nothing to delete: namespace {plan.namespace} does not exist")
            return
        deleting = f"Deleting {plural(len(row.objects), 'object')}"
        await self._set_phase(plan.instance_id, AllocationPhase.DELETING, deleting)
        await self._phase(report, deleting)
        if plan.annotations.get(FAIL_ANNOTATION) == "destroy":
            message = (
                f"simulated failure: namespace {row.namespace} is stuck terminating: a finalizer did not "
                f'finish (annotation {FAIL_ANNOTATION}: "destroy")'
            )
            await self._set_phase(plan.instance_id, AllocationPhase.FAILED, message)
            raise PermanentError(message)
        if plan.within is not None:
            await self._phase(report, f"Waiting for {plural(len(row.objects), 'object')} to be deleted")
            await SimulatedAllocation.filter(instance_id=plan.instance_id).delete()
            return
        await self._phase(report, f"Waiting for namespace {row.namespace} to terminate")
        async with in_transaction() as conn:
            # The namespace takes everything in it along, service instances' objects included.
            await SimulatedAllocation.filter(instance_id=plan.instance_id).using_db(conn).delete()
            await (
                SimulatedAllocation.filter(namespace=row.namespace, allocation_type=_WITHIN)
                .using_db(conn)
                .delete()
            )

    # ----------------------------------------------------------------------------------- observe

    async def observe(self, plan: Plan) -> Observed:
        rows = await SimulatedAllocation.filter(instance_id=plan.instance_id).values("phase", "message")
        if not rows:
            return Observed(Phase.ABSENT)
        phase, message = AllocationPhase(rows[0]["phase"]), rows[0]["message"]
        if phase == AllocationPhase.READY:
            return Observed(Phase.READY)
        if phase == AllocationPhase.FAILED:
            return Observed(Phase.FAILED, message)
        return Observed(Phase.PROGRESSING, message)

    # ------------------------------------------------------------------------ drift, check, close

    async def watch_drift(self, on_change: OnDrift, *, stop: asyncio.Event) -> None:
        """Nothing runs on the simulated cluster, so nothing drifts: waits until `stop` is set."""
        await stop.wait()

    async def check(self, gpu_resource_names: Mapping[str, str] | None = None) -> ClusterInfo:
        """The inventory's nodes, each GPU node's GPUs under its vendor's resource name."""
        names = {**GPU_RESOURCE_NAMES, **(gpu_resource_names or {})}
        nodes = tuple(
            NodeInfo(
                name=node.name,
                cpu=node.cpu,
                memory=node.memory,
                gpus={names[node.gpu_vendor]: node.gpu_count} if node.gpu_count else {},
                gpu_model=node.gpu_model,
            )
            for node in self.inventory.nodes
        )
        return ClusterInfo(server_version="simulated", nodes=nodes)

    async def close(self) -> None:
        """The simulation lives in the database: nothing to release."""

    # ------------------------------------------------------------------------------- inspection

    async def cluster_state(self) -> tuple[NodeUsage, ...]:
        """Every node of the inventory, in its order, with what the instances use of it."""
        rows = await SimulatedAllocation.all().values("instance_id", "namespace", "nodes", "shares")
        usage = _Usage.of(self.inventory, rows)
        state: list[NodeUsage] = []
        for node in self.inventory.nodes:
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
