"""Usage metering (issue 15): usage intervals, written with the status changes of compute instances
(at most one open per instance: open_subject is unique), and prices per GPU-hour per GPU model."""

from tortoise import migrations
from tortoise.migrations import operations as ops
from uuid import uuid4
from tortoise import fields
from tortoise.indexes import Index


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0015_quotas")]

    initial = False

    operations = [
        ops.CreateModel(
            name="GpuPrice",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                ("gpu_vendor", fields.CharField(max_length=16)),
                ("gpu_model", fields.CharField(default="", max_length=128)),
                ("price_per_gpu_hour", fields.DecimalField(max_digits=14, decimal_places=4)),
                ("updated_at", fields.DatetimeField(auto_now=True, auto_now_add=False)),
            ],
            options={
                "table": "gpu_prices",
                "app": "gpupaas",
                "unique_together": (("gpu_vendor", "gpu_model"),),
                "pk_attr": "id",
                "table_description": 'What one GPU-hour of a model costs (set by platform admins). gpu_model "": the price of the',
            },
            bases=["Model"],
        ),
        ops.CreateModel(
            name="UsageInterval",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                ("subject_kind", fields.CharField(max_length=32)),
                ("subject_id", fields.UUIDField()),
                ("subject_name", fields.CharField(max_length=63)),
                ("project_id", fields.UUIDField()),
                ("owner_id", fields.UUIDField(null=True)),
                ("gpu_count", fields.IntField()),
                ("gpu_vendor", fields.CharField(max_length=16)),
                ("gpu_model", fields.CharField(default="", max_length=128)),
                ("cpu_millicores", fields.BigIntField()),
                ("memory_bytes", fields.BigIntField()),
                ("started_at", fields.DatetimeField(auto_now=False, auto_now_add=False)),
                ("ended_at", fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
                ("open_subject", fields.UUIDField(null=True, unique=True)),
            ],
            options={
                "table": "usage_intervals",
                "app": "gpupaas",
                "indexes": [
                    Index(fields=["project_id", "started_at"]),
                    Index(fields=["owner_id", "started_at"]),
                    Index(fields=["started_at"]),
                ],
                "pk_attr": "id",
            },
            bases=["Model"],
        ),
    ]
