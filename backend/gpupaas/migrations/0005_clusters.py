from tortoise import migrations
from tortoise.migrations import operations as ops
import functools
from gpupaas.provisioning.registry import ClusterDriver
from gpupaas.clusters.models import ClusterStatus
from json import dumps, loads
from tortoise.fields.base import OnDelete
from uuid import uuid4
from tortoise import fields


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0004_run_applied_objects")]

    initial = False

    operations = [
        ops.CreateModel(
            name="Cluster",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                ("name", fields.CharField(unique=True, max_length=63)),
                ("display_name", fields.CharField(max_length=128)),
                (
                    "driver",
                    fields.CharEnumField(
                        description="SIMULATED: SIMULATED\nKUBERNETES: KUBERNETES",
                        enum_type=ClusterDriver,
                        max_length=16,
                    ),
                ),
                ("kubeconfig_encrypted", fields.TextField(null=True, unique=False)),
                ("in_cluster", fields.BooleanField(default=False)),
                ("context", fields.CharField(null=True, max_length=253)),
                ("access_address", fields.CharField(null=True, max_length=253)),
                (
                    "gpu_resource_names",
                    fields.JSONField(
                        default=dict, encoder=functools.partial(dumps, separators=(",", ":")), decoder=loads
                    ),
                ),
                ("is_default", fields.BooleanField(default=False)),
                (
                    "status",
                    fields.CharEnumField(
                        default=ClusterStatus.UNKNOWN,
                        description="UNKNOWN: UNKNOWN\nREADY: READY\nUNREACHABLE: UNREACHABLE",
                        enum_type=ClusterStatus,
                        max_length=16,
                    ),
                ),
                ("status_message", fields.TextField(null=True, unique=False)),
                ("server_version", fields.CharField(null=True, max_length=64)),
                (
                    "nodes",
                    fields.JSONField(
                        default=list, encoder=functools.partial(dumps, separators=(",", ":")), decoder=loads
                    ),
                ),
                ("checked_at", fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
                ("created_at", fields.DatetimeField(auto_now=False, auto_now_add=True)),
                ("updated_at", fields.DatetimeField(auto_now=True, auto_now_add=False)),
            ],
            options={"table": "clusters", "app": "gpupaas", "pk_attr": "id"},
            bases=["Model"],
        ),
        ops.AddField(
            model_name="ComputeInstance",
            name="drifted",
            field=fields.BooleanField(default=False),
        ),
        ops.AddField(
            model_name="ComputeProfile",
            name="cluster",
            field=fields.ForeignKeyField(
                "gpupaas.Cluster",
                source_field="cluster_id",
                null=True,
                db_constraint=True,
                to_field="id",
                related_name="profiles",
                on_delete=OnDelete.RESTRICT,
            ),
        ),
    ]
