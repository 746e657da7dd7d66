"""SSH public keys in users' profiles (gpupaas/ssh_keys): one user holds a key, and a name, once."""

from tortoise import migrations
from tortoise.migrations import operations as ops
from tortoise.fields.base import OnDelete
from uuid import uuid4
from tortoise import fields


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0022_oidc_identities")]

    initial = False

    operations = [
        ops.CreateModel(
            name="SshPublicKey",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                (
                    "user",
                    fields.ForeignKeyField(
                        "gpupaas.User",
                        source_field="user_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="ssh_public_keys",
                        on_delete=OnDelete.CASCADE,
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
                "table": "ssh_public_keys",
                "app": "gpupaas",
                "unique_together": (("user", "fingerprint"), ("user", "name")),
                "pk_attr": "id",
            },
            bases=["Model"],
        ),
    ]
