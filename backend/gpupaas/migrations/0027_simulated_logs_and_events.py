"""The simulated cluster's pods, their containers' log lines and its events (provisioning/models.py),
which the logs and events of service and compute instances read."""

from tortoise import migrations
from tortoise.migrations import operations as ops
from orjson import loads
from tortoise.fields.data import JSON_DUMPS
from uuid import uuid4
from tortoise import fields


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0026_image_pull_secrets")]

    initial = False

    operations = [
        ops.CreateModel(
            name="SimulatedEvent",
            fields=[
                ("id", fields.BigIntField(generated=True, primary_key=True, unique=True, db_index=True)),
                ("name", fields.CharField(max_length=253)),
                ("namespace", fields.CharField(db_index=True, max_length=63)),
                ("owner_id", fields.CharField(db_index=True, max_length=64)),
                ("object_kind", fields.CharField(max_length=63)),
                ("object_name", fields.CharField(max_length=253)),
                ("type", fields.CharField(max_length=16)),
                ("reason", fields.CharField(max_length=128)),
                ("message", fields.TextField(unique=False)),
                ("count", fields.IntField(default=1)),
                ("first_at", fields.DatetimeField(auto_now=False, auto_now_add=False)),
                ("last_at", fields.DatetimeField(auto_now=False, auto_now_add=False)),
            ],
            options={
                "table": "simulated_events",
                "app": "gpupaas",
                "pk_attr": "id",
                "table_description": "An event of the simulated cluster, as the component that reports it on a real cluster would",
            },
            bases=["Model"],
        ),
        ops.CreateModel(
            name="SimulatedLogLine",
            fields=[
                ("id", fields.BigIntField(generated=True, primary_key=True, unique=True, db_index=True)),
                ("owner_id", fields.CharField(db_index=True, max_length=64)),
                ("namespace", fields.CharField(max_length=63)),
                ("pod", fields.CharField(max_length=253)),
                ("container", fields.CharField(max_length=63)),
                ("restart", fields.IntField(default=0)),
                ("at", fields.DatetimeField(auto_now=False, auto_now_add=False)),
                ("text", fields.TextField(unique=False)),
            ],
            options={
                "table": "simulated_log_lines",
                "app": "gpupaas",
                "pk_attr": "id",
                "table_description": "One line a simulated container wrote (its start command's lifecycle: pulling its image,",
            },
            bases=["Model"],
        ),
        ops.CreateModel(
            name="SimulatedPod",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                ("owner_id", fields.CharField(db_index=True, max_length=64)),
                ("namespace", fields.CharField(max_length=63)),
                ("name", fields.CharField(max_length=253)),
                ("workload", fields.CharField(max_length=253)),
                ("template_hash", fields.CharField(max_length=16)),
                ("node", fields.CharField(null=True, max_length=253)),
                ("containers", fields.JSONField(default=list, encoder=JSON_DUMPS, decoder=loads)),
                ("created_at", fields.DatetimeField(auto_now=False, auto_now_add=True)),
            ],
            options={
                "table": "simulated_pods",
                "app": "gpupaas",
                "pk_attr": "id",
                "table_description": "A pod of the simulated cluster: what a plan's Deployment, StatefulSet or Pod runs. Its owner",
            },
            bases=["Model"],
        ),
    ]
