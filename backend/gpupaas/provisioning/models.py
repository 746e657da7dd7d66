"""The state of the simulated cluster (drivers/simulated/state.py), kept in the database so that a restart
of `gpupaas serve` or of a worker keeps what was deployed.

One `SimulatedAllocation` row per instance that holds capacity and objects (its instance id is
unique: a redelivered or repeated apply finds the row and re-uses it), and one `SimulatedCluster`
row, created on demand, whose lock serializes admission on PostgreSQL and whose counter numbers
the objects' resourceVersions.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from tortoise import fields
from tortoise.models import Model


class AllocationPhase(str, Enum):
    PROGRESSING = "PROGRESSING"  # admitted; an apply is under way (or died on the way)
    READY = "READY"
    FAILED = "FAILED"  # the last apply or destroy failed; `message` says why
    DELETING = "DELETING"


class SimulatedCluster(Model):
    """The one row of the simulated cluster (name "default"): a lock and a resourceVersion counter."""

    name = fields.CharField(max_length=32, primary_key=True)
    resource_version = fields.BigIntField(default=0)
    updated_at = fields.DatetimeField(auto_now=True)

    class Meta:
        table = "simulated_clusters"


class SimulatedAllocation(Model):
    """What one instance holds in the simulated cluster: capacity and the objects applied."""

    id = fields.UUIDField(primary_key=True)
    instance_id = fields.CharField(max_length=64, unique=True)
    namespace = fields.CharField(max_length=63)
    allocation_type = fields.CharField(max_length=16)  # DEDICATED | SHARED
    # DEDICATED: the whole nodes reserved for the instance.
    nodes: fields.JSONField[list[str]] = fields.JSONField(default=list)
    # SHARED: what it takes from each node, [{"node", "gpus", "cpu" (millicores), "memory" (bytes)}].
    shares: fields.JSONField[list[dict[str, Any]]] = fields.JSONField(default=list)
    gpu_vendor = fields.CharField(max_length=16)
    gpu_model = fields.CharField(max_length=128, null=True)
    gpu_count = fields.IntField(default=0)
    cpu_millicores = fields.BigIntField(default=0)
    memory_bytes = fields.BigIntField(default=0)
    # The objects as the simulated API server holds them (with uid, resourceVersion, status, ...;
    # a Secret's data base64, as a cluster keeps it), never the manifests applied: a template's
    # rendered text would hold its sensitive values in plain text.
    objects: fields.JSONField[list[dict[str, Any]]] = fields.JSONField(default=list)
    # The node ports its Services hold (unique across the cluster), so that admission need not
    # read every instance's objects to find a free one.
    node_ports: fields.JSONField[list[int]] = fields.JSONField(default=list)
    phase = fields.CharEnumField(AllocationPhase, max_length=16, default=AllocationPhase.PROGRESSING)
    message: str | None = fields.TextField(null=True)
    # Counts every apply of the instance (the failure injection "fail-times" reads it).
    apply_attempts = fields.IntField(default=0)
    created_at = fields.DatetimeField(auto_now_add=True)
    updated_at = fields.DatetimeField(auto_now=True)

    class Meta:
        table = "simulated_allocations"


class SimulatedPod(Model):
    """A pod of the simulated cluster: what a plan's Deployment, StatefulSet or Pod runs. Its owner
    is the plan's instance id (a compute or GPU service instance); `template_hash` is that of its
    pod template, as a ReplicaSet's pod-template-hash, so that applying the same template again
    keeps the pod and a changed one (a restart) replaces it."""

    id = fields.UUIDField(primary_key=True)
    owner_id = fields.CharField(max_length=64, db_index=True)
    namespace = fields.CharField(max_length=63)
    name = fields.CharField(max_length=253)
    workload = fields.CharField(max_length=253)  # "Deployment/nb"
    template_hash = fields.CharField(max_length=16)
    node = fields.CharField(max_length=253, null=True)
    containers: fields.JSONField[list[str]] = fields.JSONField(default=list)
    created_at = fields.DatetimeField(auto_now_add=True)

    class Meta:
        table = "simulated_pods"


class SimulatedLogLine(Model):
    """One line a simulated container wrote (its start command's lifecycle: pulling its image,
    started, the command, ready, stopping, its exit code). Numbered in the order written, so that
    followers read on from the last line they saw."""

    id = fields.BigIntField(primary_key=True)
    owner_id = fields.CharField(max_length=64, db_index=True)
    namespace = fields.CharField(max_length=63)
    pod = fields.CharField(max_length=253)
    container = fields.CharField(max_length=63)
    restart = fields.IntField(default=0)  # the container's restart count when it wrote the line
    at = fields.DatetimeField()
    text = fields.TextField()

    class Meta:
        table = "simulated_log_lines"


class SimulatedEvent(Model):
    """An event of the simulated cluster, as the component that reports it on a real cluster would
    (Scheduled, Pulling, Started, Killing, FailedScheduling, BackOff ...). A repeat of the same event
    (same object, reason and message) replaces its row with the count raised, so the new row's
    higher id is what followers see; `name` stays that of the first."""

    id = fields.BigIntField(primary_key=True)
    name = fields.CharField(max_length=253)
    namespace = fields.CharField(max_length=63, db_index=True)
    owner_id = fields.CharField(max_length=64, db_index=True)
    object_kind = fields.CharField(max_length=63)
    object_name = fields.CharField(max_length=253)
    type = fields.CharField(max_length=16)  # Normal | Warning
    reason = fields.CharField(max_length=128)
    message = fields.TextField()
    count = fields.IntField(default=1)
    first_at = fields.DatetimeField()
    last_at = fields.DatetimeField()

    class Meta:
        table = "simulated_events"
