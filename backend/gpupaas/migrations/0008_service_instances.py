from tortoise import migrations
from tortoise.migrations import operations as ops
import functools
from gpupaas.runs.states import RunAction
from gpupaas.service_instances.states import ServiceStatus
from json import dumps, loads
from tortoise.fields.base import OnDelete
from uuid import uuid4
from tortoise import fields
from tortoise.indexes import Index


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0007_instance_templates")]

    initial = False

    operations = [
        ops.CreateModel(
            name="ServiceInstance",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                (
                    "project",
                    fields.ForeignKeyField(
                        "gpupaas.Project",
                        source_field="project_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="service_instances",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                (
                    "compute_instance",
                    fields.ForeignKeyField(
                        "gpupaas.ComputeInstance",
                        source_field="compute_instance_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="services",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                (
                    "template",
                    fields.ForeignKeyField(
                        "gpupaas.InstanceTemplate",
                        source_field="template_id",
                        null=True,
                        db_constraint=True,
                        to_field="id",
                        related_name="service_instances",
                        on_delete=OnDelete.SET_NULL,
                    ),
                ),
                ("template_name", fields.CharField(max_length=63)),
                ("name", fields.CharField(max_length=63)),
                ("display_name", fields.CharField(max_length=128)),
                (
                    "spec",
                    fields.JSONField(
                        default=dict, encoder=functools.partial(dumps, separators=(",", ":")), decoder=loads
                    ),
                ),
                ("generated", fields.TextField(default="", unique=False)),
                ("gpu_count", fields.IntField(default=0)),
                (
                    "status",
                    fields.CharEnumField(
                        default=ServiceStatus.PENDING,
                        description="PENDING: PENDING\nSTARTING: STARTING\nRUNNING: RUNNING\nSTOPPING: STOPPING\nSTOPPED: STOPPED\nFAILED: FAILED\nDELETING: DELETING",
                        enum_type=ServiceStatus,
                        max_length=16,
                    ),
                ),
                ("status_message", fields.TextField(null=True, unique=False)),
                (
                    "node_ports",
                    fields.JSONField(
                        default=dict, encoder=functools.partial(dumps, separators=(",", ":")), decoder=loads
                    ),
                ),
                ("drifted", fields.BooleanField(default=False)),
                ("version", fields.IntField(default=1)),
                ("created_at", fields.DatetimeField(auto_now=False, auto_now_add=True)),
                ("updated_at", fields.DatetimeField(auto_now=True, auto_now_add=False)),
            ],
            options={
                "table": "service_instances",
                "app": "gpupaas",
                "unique_together": (("compute_instance", "name"),),
                "indexes": [Index(fields=["project_id", "created_at"])],
                "pk_attr": "id",
                "table_description": "A container run from an instance template inside a compute instance (GPUStack's \"GPU service",
            },
            bases=["Model"],
        ),
        ops.AlterField(
            model_name="DeploymentRun",
            name="action",
            field=fields.CharEnumField(
                description="DEPLOY: DEPLOY\nDESTROY: DESTROY\nSTART: START\nSTOP: STOP\nRESTART: RESTART",
                enum_type=RunAction,
                max_length=16,
            ),
        ),
        ops.AddField(
            model_name="DeploymentRun",
            name="service",
            field=fields.ForeignKeyField(
                "gpupaas.ServiceInstance",
                source_field="service_id",
                null=True,
                db_constraint=True,
                to_field="id",
                related_name="runs",
                on_delete=OnDelete.CASCADE,
            ),
        ),
    ]
