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
