from tortoise import migrations
from tortoise.migrations import operations as ops
import functools
from gpupaas.core.gpus import Vendor
from gpupaas.instance_templates.models import ImagePullPolicy
from json import dumps, loads
from tortoise.fields.base import OnDelete
from uuid import uuid4
from tortoise import fields


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0006_outbox_claims")]

    initial = False

    operations = [
        ops.CreateModel(
            name="InstanceTemplate",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                (
                    "project",
                    fields.ForeignKeyField(
                        "gpupaas.Project",
                        source_field="project_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="instance_templates",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                ("name", fields.CharField(max_length=63)),
                ("display_name", fields.CharField(max_length=128)),
                ("description", fields.TextField(null=True, unique=False)),
                (
                    "vendor",
                    fields.CharEnumField(
                        description="NVIDIA: NVIDIA\nAMD: AMD\nINTEL: INTEL\nASCEND: ASCEND\nCPU: CPU",
                        enum_type=Vendor,
                        max_length=16,
                    ),
                ),
                ("image", fields.CharField(max_length=1024)),
                (
                    "image_pull_policy",
                    fields.CharEnumField(
                        default=ImagePullPolicy.IF_NOT_PRESENT,
                        description="ALWAYS: ALWAYS\nIF_NOT_PRESENT: IF_NOT_PRESENT\nNEVER: NEVER",
                        enum_type=ImagePullPolicy,
                        max_length=16,
                    ),
                ),
                (
                    "command",
                    fields.JSONField(
                        default=list, encoder=functools.partial(dumps, separators=(",", ":")), decoder=loads
                    ),
                ),
                ("container_disk", fields.CharField(max_length=64)),
                ("mount_path", fields.CharField(max_length=1024)),
                (
                    "ports",
                    fields.JSONField(
                        default=list, encoder=functools.partial(dumps, separators=(",", ":")), decoder=loads
                    ),
                ),
                (
                    "env",
                    fields.JSONField(
                        default=list, encoder=functools.partial(dumps, separators=(",", ":")), decoder=loads
                    ),
                ),
                ("built_in", fields.BooleanField(default=False)),
                ("created_at", fields.DatetimeField(auto_now=False, auto_now_add=True)),
                ("updated_at", fields.DatetimeField(auto_now=True, auto_now_add=False)),
            ],
            options={
                "table": "instance_templates",
                "app": "gpupaas",
                "unique_together": (("project", "name"),),
                "pk_attr": "id",
            },
            bases=["Model"],
        ),
    ]
