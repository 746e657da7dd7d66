"""SSH access: a template's declaration (instance_templates.ssh), a service instance's host key
(Fernet, like the other secrets) and the keys added to a service instance."""

from tortoise import migrations
from tortoise.migrations import operations as ops
from orjson import loads
from tortoise.fields.base import OnDelete
from tortoise.fields.data import JSON_DUMPS
from uuid import uuid4
from tortoise import fields
from gpupaas.runs.states import RunAction


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0028_service_storage_and_resources")]

    initial = False

    operations = [
        ops.CreateModel(
            name="ServiceInstanceSshKey",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                (
                    "service",
                    fields.ForeignKeyField(
                        "gpupaas.ServiceInstance",
                        source_field="service_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="ssh_keys",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                (
                    "added_by",
                    fields.ForeignKeyField(
                        "gpupaas.User",
                        source_field="added_by_id",
                        null=True,
                        db_constraint=True,
                        to_field="id",
                        related_name="service_ssh_keys_added",
                        on_delete=OnDelete.SET_NULL,
                    ),
                ),
                ("name", fields.CharField(max_length=128)),
                ("key_type", fields.CharField(max_length=64)),
                ("bits", fields.IntField()),
                ("fingerprint", fields.CharField(max_length=64)),
                ("public_key", fields.TextField(unique=False)),
                ("created_at", fields.DatetimeField(auto_now=False, auto_now_add=True)),
            ],
            options={
                "table": "service_instance_ssh_keys",
                "app": "gpupaas",
                "unique_together": (("service", "fingerprint"), ("service", "name")),
                "pk_attr": "id",
                "table_description": "An SSH public key added to one service instance (besides its owner's): who may log in to it",
            },
            bases=["Model"],
        ),
        ops.AddField(
            model_name="InstanceTemplate",
            name="ssh",
            field=fields.JSONField(null=True, encoder=JSON_DUMPS, decoder=loads),
        ),
        ops.AddField(
            model_name="ServiceInstance",
            name="ssh_host_key",
            field=fields.TextField(default="", db_default="", unique=False),
        ),
        ops.AlterField(
            model_name="DeploymentRun",
            name="action",
            field=fields.CharEnumField(
                description="DEPLOY: DEPLOY\nDESTROY: DESTROY\nSTART: START\nSTOP: STOP\nRESTART: RESTART\nAPPLY_SSH_KEYS: APPLY_SSH_KEYS",
                enum_type=RunAction,
                max_length=16,
            ),
        ),
    ]
