from tortoise import migrations
from tortoise.migrations import operations as ops
import functools
from gpupaas.provisioning.models import AllocationPhase
from json import dumps, loads
from uuid import uuid4
from tortoise import fields


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0002_compute_instances_and_outbox")]

    initial = False

    operations = [
        ops.CreateModel(
            name="SimulatedAllocation",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                ("instance_id", fields.CharField(unique=True, max_length=64)),
                ("namespace", fields.CharField(max_length=63)),
                ("allocation_type", fields.CharField(max_length=16)),
                (
                    "nodes",
                    fields.JSONField(
                        default=list, encoder=functools.partial(dumps, separators=(",", ":")), decoder=loads
                    ),
                ),
                (
                    "shares",
                    fields.JSONField(
                        default=list, encoder=functools.partial(dumps, separators=(",", ":")), decoder=loads
                    ),
                ),
                ("gpu_vendor", fields.CharField(max_length=16)),
                ("gpu_model", fields.CharField(null=True, max_length=128)),
                ("gpu_count", fields.IntField(default=0)),
                ("cpu_millicores", fields.BigIntField(default=0)),
                ("memory_bytes", fields.BigIntField(default=0)),
                (
                    "manifests",
                    fields.JSONField(
                        default=list, encoder=functools.partial(dumps, separators=(",", ":")), decoder=loads
                    ),
                ),
                (
                    "objects",
                    fields.JSONField(
                        default=list, encoder=functools.partial(dumps, separators=(",", ":")), decoder=loads
                    ),
                ),
                (
                    "node_ports",
                    fields.JSONField(
                        default=list, encoder=functools.partial(dumps, separators=(",", ":")), decoder=loads
                    ),
                ),
                (
                    "phase",
                    fields.CharEnumField(
                        default=AllocationPhase.PROGRESSING,
                        description="PROGRESSING: PROGRESSING\nREADY: READY\nFAILED: FAILED\nDELETING: DELETING",
                        enum_type=AllocationPhase,
                        max_length=16,
                    ),
                ),
                ("message", fields.TextField(null=True, unique=False)),
                ("apply_attempts", fields.IntField(default=0)),
                ("created_at", fields.DatetimeField(auto_now=False, auto_now_add=True)),
                ("updated_at", fields.DatetimeField(auto_now=True, auto_now_add=False)),
            ],
            options={
                "table": "simulated_allocations",
                "app": "gpupaas",
                "pk_attr": "id",
                "table_description": "What one instance holds in the simulated cluster: capacity and the objects applied.",
            },
            bases=["Model"],
        ),
        ops.CreateModel(
            name="SimulatedCluster",
            fields=[
                ("name", fields.CharField(primary_key=True, unique=True, db_index=True, max_length=32)),
                ("resource_version", fields.BigIntField(default=0)),
                ("updated_at", fields.DatetimeField(auto_now=True, auto_now_add=False)),
            ],
            options={
                "table": "simulated_clusters",
                "app": "gpupaas",
                "pk_attr": "name",
                "table_description": 'The one row of the simulated cluster (name "default"): a lock and a resourceVersion counter.',
            },
            bases=["Model"],
        ),
    ]
