"""Time limits and schedules (issue 15): a compute profile's default auto-stop and maximum lifetime,
an instance's own and its armed due time, the reason of a run the scheduler asked for, and project
schedules."""

from tortoise import migrations
from tortoise.migrations import operations as ops
from gpupaas.schedules.models import ScheduleAction, ScheduleTarget
from orjson import loads
from tortoise.fields.base import OnDelete
from tortoise.fields.data import JSON_DUMPS
from uuid import uuid4
from tortoise import fields
from tortoise.indexes import Index


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0017_audit_log")]

    initial = False

    operations = [
        ops.CreateModel(
            name="Schedule",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                (
                    "project",
                    fields.ForeignKeyField(
                        "gpupaas.Project",
                        source_field="project_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="schedules",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                ("name", fields.CharField(max_length=63)),
                (
                    "action",
                    fields.CharEnumField(
                        description="STOP: STOP\nDESTROY: DESTROY", enum_type=ScheduleAction, max_length=16
                    ),
                ),
                (
                    "applies_to",
                    fields.CharEnumField(
                        description="SERVICE_INSTANCES: SERVICE_INSTANCES\nCOMPUTE_INSTANCES: COMPUTE_INSTANCES",
                        enum_type=ScheduleTarget,
                        max_length=32,
                    ),
                ),
                ("days", fields.JSONField(default=list, encoder=JSON_DUMPS, decoder=loads)),
                ("time_of_day", fields.CharField(max_length=5)),
                ("time_zone", fields.CharField(max_length=64)),
                ("next_run_at", fields.DatetimeField(auto_now=False, auto_now_add=False)),
                ("last_run_at", fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
                ("last_result", fields.TextField(null=True, unique=False)),
                (
                    "created_by",
                    fields.ForeignKeyField(
                        "gpupaas.User",
                        source_field="created_by_id",
                        null=True,
                        db_constraint=True,
                        to_field="id",
                        related_name="schedules",
                        on_delete=OnDelete.SET_NULL,
                    ),
                ),
                ("created_at", fields.DatetimeField(auto_now=False, auto_now_add=True)),
            ],
            options={
                "table": "project_schedules",
                "app": "gpupaas",
                "unique_together": (("project", "name"),),
                "indexes": [Index(fields=["next_run_at"])],
                "pk_attr": "id",
            },
            bases=["Model"],
        ),
        ops.AddField(
            model_name="ComputeInstance",
            name="auto_stop_minutes",
            field=fields.IntField(null=True),
        ),
        ops.AddField(
            model_name="ComputeInstance",
            name="lifetime_ends_at",
            field=fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
        ),
        ops.AddField(
            model_name="ComputeInstance",
            name="max_lifetime_minutes",
            field=fields.IntField(null=True),
        ),
        ops.AddField(
            model_name="ComputeInstance",
            name="running_since",
            field=fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
        ),
        ops.AddField(
            model_name="ComputeInstance",
            name="stop_at",
            field=fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
        ),
        ops.AddField(
            model_name="ComputeInstance",
            name="stop_claimed_until",
            field=fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
        ),
        ops.AddField(
            model_name="ComputeInstance",
            name="stop_reason",
            field=fields.TextField(null=True, unique=False),
        ),
        ops.AddField(
            model_name="ComputeInstance",
            name="stop_refused",
            field=fields.TextField(null=True, unique=False),
        ),
        ops.AddField(
            model_name="ComputeInstance",
            name="stop_warned_at",
            field=fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
        ),
        ops.AddIndex(
            model_name="ComputeInstance",
            index=Index(fields=["stop_at"]),
        ),
        ops.AddField(
            model_name="ComputeProfile",
            name="auto_stop_minutes",
            field=fields.IntField(null=True),
        ),
        ops.AddField(
            model_name="ComputeProfile",
            name="max_lifetime_minutes",
            field=fields.IntField(null=True),
        ),
        ops.AddField(
            model_name="DeploymentRun",
            name="reason",
            field=fields.TextField(null=True, unique=False),
        ),
        ops.AddField(
            model_name="ServiceInstance",
            name="auto_stop_minutes",
            field=fields.IntField(null=True),
        ),
        ops.AddField(
            model_name="ServiceInstance",
            name="lifetime_ends_at",
            field=fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
        ),
        ops.AddField(
            model_name="ServiceInstance",
            name="max_lifetime_minutes",
            field=fields.IntField(null=True),
        ),
        ops.AddField(
            model_name="ServiceInstance",
            name="running_since",
            field=fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
        ),
        ops.AddField(
            model_name="ServiceInstance",
            name="stop_at",
            field=fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
        ),
        ops.AddField(
            model_name="ServiceInstance",
            name="stop_claimed_until",
            field=fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
        ),
        ops.AddField(
            model_name="ServiceInstance",
            name="stop_reason",
            field=fields.TextField(null=True, unique=False),
        ),
        ops.AddField(
            model_name="ServiceInstance",
            name="stop_refused",
            field=fields.TextField(null=True, unique=False),
        ),
        ops.AddField(
            model_name="ServiceInstance",
            name="stop_warned_at",
            field=fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
        ),
        ops.AddIndex(
            model_name="ServiceInstance",
            index=Index(fields=["stop_at"]),
        ),
    ]
