"""Quotas (issue 15): a project's, set by platform admins, and each member's within it, set by the
project's admins (gpupaas.quotas)."""

from tortoise import migrations
from tortoise.migrations import operations as ops
from orjson import loads
from tortoise.fields.base import OnDelete
from tortoise.fields.data import JSON_DUMPS
from uuid import uuid4
from tortoise import fields


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0014_user_disabled")]

    initial = False

    operations = [
        ops.CreateModel(
            name="Quota",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                (
                    "project",
                    fields.ForeignKeyField(
                        "gpupaas.Project",
                        source_field="project_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="quotas",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                (
                    "user",
                    fields.ForeignKeyField(
                        "gpupaas.User",
                        source_field="user_id",
                        null=True,
                        db_constraint=True,
                        to_field="id",
                        related_name="quotas",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                ("gpus", fields.IntField(null=True)),
                ("gpu_limits", fields.JSONField(default=list, encoder=JSON_DUMPS, decoder=loads)),
                ("cpu", fields.CharField(null=True, max_length=32)),
                ("memory", fields.CharField(null=True, max_length=32)),
                ("instances", fields.IntField(null=True)),
                ("updated_at", fields.DatetimeField(auto_now=True, auto_now_add=False)),
            ],
            options={
                "table": "quotas",
                "app": "gpupaas",
                "unique_together": (("project", "user"),),
                "pk_attr": "id",
            },
            bases=["Model"],
        ),
    ]
