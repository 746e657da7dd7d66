"""People management and login throttling (issue 16): a user's last sign-in; the names of deleted
users and projects (their usage and audit entries keep reading with them); failed sign-ins and
locks per username and client address (accounts/throttle.py), in the database so that every API
replica counts the same."""

from tortoise import migrations
from tortoise.migrations import operations as ops
from uuid import uuid4
from tortoise import fields
from tortoise.indexes import Index


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0020_seal_sensitive_outputs")]

    initial = False

    operations = [
        ops.CreateModel(
            name="FormerName",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                ("kind", fields.CharField(max_length=16)),
                ("name", fields.CharField(max_length=64)),
                ("deleted_at", fields.DatetimeField(auto_now=False, auto_now_add=False)),
            ],
            options={
                "table": "former_names",
                "app": "gpupaas",
                "pk_attr": "id",
                "table_description": "The name of a deleted user or project, under its old id: history that keeps ids without a",
            },
            bases=["Model"],
        ),
        ops.CreateModel(
            name="SignInFailure",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                ("key", fields.CharField(max_length=96)),
                ("at", fields.DatetimeField(auto_now=False, auto_now_add=False)),
            ],
            options={
                "table": "sign_in_failures",
                "app": "gpupaas",
                "indexes": [Index(fields=["key", "at"])],
                "pk_attr": "id",
                "table_description": "One failed sign-in, counted for the username given and for the client address",
            },
            bases=["Model"],
        ),
        ops.CreateModel(
            name="SignInLock",
            fields=[
                ("key", fields.CharField(primary_key=True, unique=True, db_index=True, max_length=96)),
                ("until", fields.DatetimeField(auto_now=False, auto_now_add=False)),
            ],
            options={
                "table": "sign_in_locks",
                "app": "gpupaas",
                "pk_attr": "key",
                "table_description": "A username or an address that may not sign in until `until` (too many failures).",
            },
            bases=["Model"],
        ),
        ops.AddField(
            model_name="User",
            name="last_sign_in_at",
            field=fields.DatetimeField(null=True, auto_now=False, auto_now_add=False),
        ),
    ]
