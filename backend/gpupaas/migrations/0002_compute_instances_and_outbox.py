from tortoise import migrations
from tortoise.migrations import operations as ops
import functools
from gpupaas.accounts.sharing import SharingMode
from gpupaas.compute.states import DeploymentStatus
from gpupaas.runs.states import RunAction, RunStatus
from json import dumps, loads
from tortoise.fields.base import OnDelete
from uuid import uuid4
from tortoise import fields
from tortoise.indexes import Index


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0001_initial")]

    initial = False

    operations = [
        ops.CreateModel(
            name="ComputeInstance",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                (
                    "project",
                    fields.ForeignKeyField(
                        "gpupaas.Project",
                        source_field="project_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="compute_instances",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                (
                    "profile",
                    fields.ForeignKeyField(
                        "gpupaas.ComputeProfile",
                        source_field="profile_id",
                        null=True,
                        db_constraint=True,
                        to_field="id",
                        related_name="instances",
                        on_delete=OnDelete.SET_NULL,
                    ),
                ),
                ("profile_name", fields.CharField(max_length=63)),
                ("profile_revision", fields.IntField()),
                ("name", fields.CharField(max_length=63)),
                ("display_name", fields.CharField(max_length=128)),
                ("description", fields.TextField(null=True, unique=False)),
                (
                    "status",
                    fields.CharEnumField(
                        default=DeploymentStatus.NOT_DEPLOYED,
                        description="NOT_DEPLOYED: NOT_DEPLOYED\nWAITING: WAITING\nIN_PROGRESS: IN_PROGRESS\nSUCCESS: SUCCESS\nFAILED: FAILED\nDESTROYING: DESTROYING",
                        enum_type=DeploymentStatus,
                        max_length=16,
                    ),
                ),
                ("status_message", fields.TextField(null=True, unique=False)),
                (
                    "labels",
                    fields.JSONField(
                        default=list, encoder=functools.partial(dumps, separators=(",", ":")), decoder=loads
                    ),
                ),
                (
                    "annotations",
                    fields.JSONField(
                        default=list, encoder=functools.partial(dumps, separators=(",", ":")), decoder=loads
                    ),
                ),
                (
                    "inputs",
                    fields.JSONField(
                        default=list, encoder=functools.partial(dumps, separators=(",", ":")), decoder=loads
                    ),
                ),
                (
                    "snapshot",
                    fields.JSONField(
                        default=dict, encoder=functools.partial(dumps, separators=(",", ":")), decoder=loads
                    ),
                ),
                (
                    "outputs",
                    fields.JSONField(
                        default=dict, encoder=functools.partial(dumps, separators=(",", ":")), decoder=loads
                    ),
                ),
                (
                    "sharing_mode",
                    fields.CharEnumField(
                        default=SharingMode.NONE,
                        description="NONE: NONE\nALL_PROJECTS: ALL_PROJECTS\nSELECTED_PROJECTS: SELECTED_PROJECTS",
                        enum_type=SharingMode,
                        max_length=32,
                    ),
                ),
                ("version", fields.IntField(default=1)),
                ("created_at", fields.DatetimeField(auto_now=False, auto_now_add=True)),
                ("updated_at", fields.DatetimeField(auto_now=True, auto_now_add=False)),
            ],
            options={
                "table": "compute_instances",
                "app": "gpupaas",
                "unique_together": (("project", "name"),),
                "indexes": [
                    Index(fields=["project_id", "created_at"]),
                    Index(fields=["project_id", "status"]),
                ],
                "pk_attr": "id",
            },
            bases=["Model"],
        ),
        ops.CreateModel(
            name="ComputeInstanceShare",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                (
                    "instance",
                    fields.ForeignKeyField(
                        "gpupaas.ComputeInstance",
                        source_field="instance_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="shares",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                (
                    "project",
                    fields.ForeignKeyField(
                        "gpupaas.Project",
                        source_field="project_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="shared_instances",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
            ],
            options={
                "table": "compute_instance_shares",
                "app": "gpupaas",
                "unique_together": (("instance", "project"),),
                "pk_attr": "id",
            },
            bases=["Model"],
        ),
        ops.CreateModel(
            name="DeploymentRun",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                (
                    "instance",
                    fields.ForeignKeyField(
                        "gpupaas.ComputeInstance",
                        source_field="instance_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="runs",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                (
                    "action",
                    fields.CharEnumField(
                        description="DEPLOY: DEPLOY\nDESTROY: DESTROY", enum_type=RunAction, max_length=16
                    ),
                ),
                (
                    "status",
                    fields.CharEnumField(
                        default=RunStatus.QUEUED,
                        description="QUEUED: QUEUED\nRUNNING: RUNNING\nSUCCEEDED: SUCCEEDED\nFAILED: FAILED\nCANCELED: CANCELED",
                        enum_type=RunStatus,
                        max_length=16,
                    ),
                ),
                ("message", fields.TextField(null=True, unique=False)),
                ("delete_after", fields.BooleanField(default=False)),
                ("attempts", fields.IntField(default=0)),
                ("lease_owner", fields.CharField(null=True, max_length=128)),
                ("lease_expires_at", fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
                ("queued_at", fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
                ("created_at", fields.DatetimeField(auto_now=False, auto_now_add=True)),
                ("started_at", fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
                ("finished_at", fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
            ],
            options={
                "table": "deployment_runs",
                "app": "gpupaas",
                "indexes": [
                    Index(fields=["instance_id", "created_at"]),
                    Index(fields=["status", "queued_at"]),
                ],
                "pk_attr": "id",
            },
            bases=["Model"],
        ),
        ops.CreateModel(
            name="OutboxMessage",
            fields=[
                ("id", fields.BigIntField(generated=True, primary_key=True, unique=True, db_index=True)),
                ("topic", fields.CharField(max_length=128)),
                ("key", fields.CharField(null=True, max_length=128)),
                (
                    "payload",
                    fields.JSONField(encoder=functools.partial(dumps, separators=(",", ":")), decoder=loads),
                ),
                ("created_at", fields.DatetimeField(auto_now=False, auto_now_add=True)),
                ("sent_at", fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
                ("attempts", fields.IntField(default=0)),
                ("last_error", fields.TextField(null=True, unique=False)),
            ],
            options={
                "table": "outbox",
                "app": "gpupaas",
                "indexes": [Index(fields=["sent_at", "id"])],
                "pk_attr": "id",
            },
            bases=["Model"],
        ),
    ]
