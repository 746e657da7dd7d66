"""Image pull secrets per project (registry, user, password encrypted at rest: pull_secrets/), and
the one an instance template names."""

from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise.fields.base import OnDelete
from uuid import uuid4
from tortoise import fields


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0025_gpu_partitions")]

    initial = False

    operations = [
        ops.CreateModel(
            name="ImagePullSecret",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                (
                    "project",
                    fields.ForeignKeyField(
                        "gpupaas.Project",
                        source_field="project_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="image_pull_secrets",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                ("name", fields.CharField(max_length=63)),
                ("registry", fields.CharField(max_length=255)),
                ("username", fields.CharField(max_length=255)),
                ("password_encrypted", fields.TextField(unique=False)),
                ("created_at", fields.DatetimeField(auto_now=False, auto_now_add=True)),
                ("updated_at", fields.DatetimeField(auto_now=True, auto_now_add=False)),
            ],
            options={
                "table": "image_pull_secrets",
                "app": "gpupaas",
                "unique_together": (("project", "name"),),
                "pk_attr": "id",
                "table_description": "Registry credentials of one project, by name. `password_encrypted` is Fernet",
            },
            bases=["Model"],
        ),
        ops.AddField(
            model_name="InstanceTemplate",
            name="image_pull_secret",
            field=fields.CharField(null=True, max_length=63),
        ),
    ]
