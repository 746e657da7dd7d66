"""The simulated cluster's state in the database (the tables of provisioning/models.py), and the
transactions that change it.

One `SimulatedAllocation` row per instance (keyed by instance id, so that a repeated or redelivered
apply, or one that runs again after its worker died, finds the row and creates nothing twice), and
one `SimulatedCluster` row. Admission happens in one transaction that first locks the cluster row
(`SELECT ... FOR UPDATE` on PostgreSQL; on SQLite the single writer serializes it), so that two
workers can never both take the last free GPUs. A new driver over the same database (a restart)
sees everything.

Applying again with the same resources keeps the allocation as it is; with other resources the
instance is admitted again as if it had released what it holds, preferring the nodes it already
uses, and keeps the old allocation when the new one does not fit.

GPU service instances (a plan with `within`, service_instances/plan.py) hold no capacity of their
own: they run in their compute instance's namespace, whose row must exist ("its compute instance is
not deployed" otherwise), and their GPUs count against its quota as a ResourceQuota would
("exceeded quota: compute, requested: requests.nvidia.com/gpu=1, used: ..., limited: ..."). A
service scaled to zero (stopped) holds no GPUs and keeps its objects and node ports.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

from tortoise.backends.base.client import BaseDBAsyncClient
from tortoise.transactions import in_transaction

from gpupaas.core import gpu_resources
from gpupaas.provisioning.drivers.simulated import quota
from gpupaas.provisioning.drivers.simulated.admission import Request, Usage, admit
from gpupaas.provisioning.drivers.simulated.server import Server, distinct, object_key
from gpupaas.provisioning.inventory import Inventory
from gpupaas.provisioning.models import AllocationPhase, SimulatedAllocation, SimulatedCluster
from gpupaas.provisioning.plan import (
    KEPT_FROM_ANNOTATION,
    RECLAIM_ANNOTATION,
    PermanentError,
    Plan,
    TemporaryError,
)
from gpupaas.provisioning.wording import plural

__all__ = [
    "CLUSTER",
    "KEPT_PREFIX",
    "WITHIN",
    "admit_instance",
    "admit_within",
    "keep_and_forget",
    "refresh_quotas",
    "set_phase",
    "store",
]


# The one row of SimulatedCluster: its lock serializes admission, and it counts resourceVersions.
CLUSTER = "default"
# The allocation type of a service instance's row: it holds no capacity, only its compute
# instance's quota.
WITHIN = "WITHIN"
# The instance id of the row that holds an object a deleted service left behind (a claim with
# reclaim Keep): "kept/<the object's uid>". It is the namespace's, counted by its quota, and goes
# with the namespace.
KEPT_PREFIX = "kept/"


async def _lock(conn: BaseDBAsyncClient) -> SimulatedCluster:
    """The cluster row, locked until the transaction of `conn` ends (on PostgreSQL)."""
    cluster = await SimulatedCluster.select_for_update().using_db(conn).get_or_none(name=CLUSTER)
    if cluster is None:  # created just before; only someone deleting it gets here
        raise TemporaryError("the simulated cluster's state is being reset; try again")
    return cluster


async def _record_attempt(
    conn: BaseDBAsyncClient, instance_id: str, row: SimulatedAllocation | None, values: dict[str, Any]
) -> SimulatedAllocation:
    """The instance's row with `values`, created or updated, counting one more apply attempt (the
    count fail-times reads)."""
    if row is None:
        return await SimulatedAllocation.create(
            using_db=conn, instance_id=instance_id, apply_attempts=1, **values
        )
    row.update_from_dict({**values, "apply_attempts": row.apply_attempts + 1})
    await row.save(using_db=conn)
    return row


async def admit_instance(
    inventory: Inventory, plan: Plan, request: Request
) -> tuple[SimulatedAllocation, str]:
    """The instance's row, admitted (or kept as it was), and what it holds, in words."""
    # Outside the transaction: on PostgreSQL a failed insert would abort it.
    await SimulatedCluster.get_or_create(name=CLUSTER)
    async with in_transaction() as conn:
        await _lock(conn)
        row = await SimulatedAllocation.filter(instance_id=plan.instance_id).using_db(conn).first()
        if row is None or not request.same_as(row):
            others = (
                await SimulatedAllocation.exclude(instance_id=plan.instance_id)
                .using_db(conn)
                .values("instance_id", "namespace", "nodes", "shares")
            )
            held = frozenset(row.nodes) | {s["node"] for s in row.shares} if row else frozenset()
            nodes, shares = admit(inventory, Usage.of(inventory, others), request, held)
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
        row = await _record_attempt(conn, plan.instance_id, row, values)
    if nodes:
        return row, f"Reserved {'node' if len(nodes) == 1 else 'nodes'} {', '.join(nodes)}"
    return row, "Scheduled on " + ", ".join(share["node"] for share in shares)


async def admit_within(
    plan: Plan, request: Request, replicas: int, inventory: Inventory
) -> tuple[SimulatedAllocation, str]:
    """A service instance's row: no capacity of its own, but its GPUs must fit the quota of the
    compute instance it runs in (what the namespace's ResourceQuota does on a real cluster). Its
    MIG devices (a partition resource) are placed on a node of the inventory that has them free."""
    await SimulatedCluster.get_or_create(name=CLUSTER)
    gpus = request.gpus if replicas else 0
    async with in_transaction() as conn:
        await _lock(conn)
        parent = await SimulatedAllocation.filter(instance_id=plan.within).using_db(conn).first()
        if parent is None or parent.namespace != plan.namespace:
            raise PermanentError(
                f"namespace {plan.namespace} does not exist: its compute instance is not deployed"
            )
        shares: list[dict[str, Any]] = []
        if gpus and gpu_resources.is_partition(request.resource_name):
            # A MIG device is not one of the namespace's GPUs (its quota names nvidia.com/gpu): the
            # scheduler places it on a node that advertises a free one, of the instance's model.
            shares = await _place_partition(conn, inventory, plan, request, gpus, parent.gpu_model)
        elif gpus:
            counts: list[Any] = (
                await SimulatedAllocation.filter(
                    namespace=plan.namespace, allocation_type=WITHIN, gpu_count__gt=0
                )
                .exclude(instance_id=plan.instance_id)
                .using_db(conn)
                .values_list("gpu_count", "shares")
            )
            # Services on MIG devices hold none of the quota's whole GPUs.
            used = sum(
                int(count) for count, held in counts if not any(s.get("partitions") for s in held or [])
            )
            limit = parent.gpu_count if parent.gpu_vendor == request.vendor else 0
            if used + gpus > limit:
                raise PermanentError(
                    f'pods "{plan.instance_name}" is forbidden: exceeded quota: compute, requested: '
                    f"requests.{request.resource_name}={gpus}, used: requests.{request.resource_name}="
                    f"{used}, limited: requests.{request.resource_name}={limit}"
                )
        await _admit_by_quota(conn, plan, parent, replicas)
        row = await SimulatedAllocation.filter(instance_id=plan.instance_id).using_db(conn).first()
        values: dict[str, Any] = {
            "namespace": plan.namespace,
            "allocation_type": WITHIN,
            "nodes": [],
            "shares": shares,
            "gpu_vendor": request.vendor,
            "gpu_model": None,
            "gpu_count": gpus,
            "cpu_millicores": request.cpu if replicas else 0,
            "memory_bytes": request.memory if replicas else 0,
            "phase": AllocationPhase.PROGRESSING,
            "message": f"Scheduling {plan.instance_name}",
        }
        row = await _record_attempt(conn, plan.instance_id, row, values)
    if not replicas:
        return row, f"Scaling {plan.instance_name} to 0 replicas"
    held = shares or [*({"node": name} for name in parent.nodes), *parent.shares]
    where = ", ".join(dict.fromkeys(str(share["node"]) for share in held)) or "its nodes"
    return row, f"Scheduled {plan.instance_name} on {where}"


def _of_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [obj for obj in objects if obj.get("kind") == kind]


async def _namespace_rows(
    conn: BaseDBAsyncClient, namespace: str, besides: str | None = None
) -> list[SimulatedAllocation]:
    """The rows of what runs in a compute instance's namespace (services, kept claims)."""
    query = SimulatedAllocation.filter(namespace=namespace, allocation_type=WITHIN)
    if besides is not None:
        query = query.exclude(instance_id=besides)
    return await query.using_db(conn).all()


async def _admit_by_quota(
    conn: BaseDBAsyncClient, plan: Plan, parent: SimulatedAllocation, replicas: int
) -> None:
    """What the namespace's ResourceQuota and the scheduler refuse of a service's objects: over a
    quota (quota.py, the API server's words), or a pod that mounts a claim the namespace does not
    have (the scheduler's "persistentvolumeclaim not found")."""
    others = await _namespace_rows(conn, plan.namespace, besides=plan.instance_id)
    held = [*parent.objects, *(obj for row in others for obj in row.objects)]
    manifests = distinct(plan.manifests)
    if replicas:
        claims = {
            str((obj.get("metadata") or {}).get("name"))
            for obj in [*held, *manifests]
            if obj.get("kind") == "PersistentVolumeClaim"
        }
        for manifest in _of_kind(manifests, "Deployment"):
            pod = ((manifest.get("spec") or {}).get("template") or {}).get("spec") or {}
            for volume in pod.get("volumes") or []:
                claim = (volume.get("persistentVolumeClaim") or {}).get("claimName")
                if claim and claim not in claims:
                    have = ", ".join(sorted(claims)) or "none"
                    raise PermanentError(
                        f'0/1 nodes are available for {plan.instance_name}: persistentvolumeclaim "{claim}" '
                        f"not found in namespace {plan.namespace} (it has {have})"
                    )
    limit_ranges = _of_kind(parent.objects, "LimitRange")
    quota.admit(
        manifests,
        _of_kind(parent.objects, "ResourceQuota"),
        limit_ranges,
        quota.usage_of(held, limit_ranges),
    )


async def refresh_quotas(conn: BaseDBAsyncClient, namespace: str) -> None:
    """Writes `status.used` of the namespace's ResourceQuotas (on its compute instance's row) from
    everything the namespace holds, as the API server's quota controller does."""
    parent = (
        await SimulatedAllocation.filter(namespace=namespace)
        .exclude(allocation_type=WITHIN)
        .using_db(conn)
        .first()
    )
    if parent is None or not _of_kind(parent.objects, "ResourceQuota"):
        return
    rows = await _namespace_rows(conn, namespace)
    limit_ranges = _of_kind(parent.objects, "LimitRange")
    used = quota.usage_of([*parent.objects, *(obj for row in rows for obj in row.objects)], limit_ranges)
    objects = copy.deepcopy(parent.objects)
    for obj in objects:
        if obj.get("kind") == "ResourceQuota":
            obj["status"] = quota.status(obj, used)
    if objects != parent.objects:
        parent.objects = objects
        await parent.save(using_db=conn, update_fields=["objects", "updated_at"])


async def namespace_objects(namespace: str) -> list[dict[str, Any]]:
    """Everything a compute instance's namespace holds: its own objects (the quota, with the
    `status.used` refresh_quotas keeps) and its services' and kept claims'."""
    rows = await SimulatedAllocation.filter(namespace=namespace).all()
    return [copy.deepcopy(obj) for row in rows for obj in row.objects]


async def keep_and_forget(plan: Plan, keep: list[dict[str, Any]]) -> None:
    """A service's row deleted (its objects gone with it), but the objects of `keep` (its claims
    with reclaim Keep) left in its namespace: without its owner label, on rows of their own."""
    async with in_transaction() as conn:
        row = await SimulatedAllocation.filter(instance_id=plan.instance_id).using_db(conn).first()
        kept = []
        if row is not None:
            wanted = {object_key(obj) for obj in keep}
            kept = [copy.deepcopy(obj) for obj in row.objects if object_key(obj) in wanted]
            await row.delete(using_db=conn)
        for obj in kept:
            metadata = obj.setdefault("metadata", {})
            labels = {k: v for k, v in (metadata.get("labels") or {}).items() if k != plan.owner_label}
            metadata["labels"] = labels
            annotations = {
                k: v for k, v in (metadata.get("annotations") or {}).items() if k != RECLAIM_ANNOTATION
            }
            annotations[KEPT_FROM_ANNOTATION] = plan.instance_name
            metadata["annotations"] = annotations
            await SimulatedAllocation.create(
                using_db=conn,
                instance_id=KEPT_PREFIX + str(metadata.get("uid") or plan.instance_id),
                namespace=plan.namespace,
                allocation_type=WITHIN,
                gpu_vendor="CPU",
                objects=[obj],
                phase=AllocationPhase.READY,
            )
        await refresh_quotas(conn, plan.namespace)


async def _place_partition(
    conn: Any, inventory: Inventory, plan: Plan, request: Request, count: int, model: str | None
) -> list[dict[str, Any]]:
    """The node that takes `count` devices of the plan's partition: the fullest of those of the
    compute instance's GPU model that have enough free (as a bin-packing scheduler would), as the
    row's one share, {"node", "partitions": {resource: count}}; PermanentError as the scheduler
    says it when none has."""
    resource = request.resource_name
    nodes = [
        node
        for node in inventory.nodes
        if node.partitions(resource) and gpu_resources.model_matches(model, node.gpu_model, exact=False)
    ]
    rows: list[Any] = (
        await SimulatedAllocation.filter(allocation_type=WITHIN)
        .exclude(instance_id=plan.instance_id)
        .using_db(conn)
        .values_list("shares", flat=True)
    )
    used: dict[str, int] = {}
    for row_shares in rows:
        for share in row_shares or []:
            taken = (share.get("partitions") or {}).get(resource, 0)
            used[str(share.get("node"))] = used.get(str(share.get("node")), 0) + int(taken)
    free = {node.name: node.partitions(resource) - used.get(node.name, 0) for node in nodes}
    fits = sorted((left, name) for name, left in free.items() if left >= count)
    if not fits:
        where = ", ".join(f"{name} {left}" for name, left in sorted(free.items())) or "no node has any"
        of_model = f" of GPU model {model}" if model else ""
        raise PermanentError(
            f"0/{len(inventory.nodes)} nodes are available for {plan.instance_name}: "
            f"Insufficient {resource}: {count} requested; free on nodes{of_model}: {where}"
        )
    return [{"node": fits[0][1], "partitions": {resource: count}}]


async def store(plan: Plan, manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Applies the manifests to the instance's row; the objects as the server holds them."""
    async with in_transaction() as conn:
        cluster = await _lock(conn)
        row = await SimulatedAllocation.filter(instance_id=plan.instance_id).using_db(conn).first()
        if row is None:
            raise TemporaryError("the instance was destroyed while it was being applied; try again")
        taken = await (
            SimulatedAllocation.exclude(instance_id=plan.instance_id)
            .using_db(conn)
            .values_list("node_ports", flat=True)
        )
        server = Server(
            instance_id=plan.instance_id,
            resource_version=cluster.resource_version,
            taken_ports={int(port) for ports in taken for port in (ports or [])},
        )
        old_objects = {object_key(obj): obj for obj in row.objects}
        applied: list[dict[str, Any]] = []
        for manifest in manifests:
            obj = copy.deepcopy(manifest)
            server.fill(obj, old_objects.get(object_key(manifest)))
            applied.append(obj)
        row.objects = applied
        row.node_ports = server.ports
        row.message = f"Waiting for {plural(len(applied), 'object')} to be ready"
        await row.save(using_db=conn, update_fields=["objects", "node_ports", "message", "updated_at"])
        await refresh_quotas(conn, plan.namespace)
        if server.resource_version != cluster.resource_version:
            cluster.resource_version = server.resource_version
            await cluster.save(using_db=conn, update_fields=["resource_version", "updated_at"])
    return applied


async def set_phase(instance_id: str, phase: AllocationPhase, message: str | None) -> None:
    """Records the phase an apply or destroy reached (what observe reports)."""
    await SimulatedAllocation.filter(instance_id=instance_id).update(
        phase=phase, message=message, updated_at=datetime.now(UTC)
    )
