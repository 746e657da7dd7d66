"""Resumable status subscriptions (events/outbox.py `add_status`): each project's stream of status
events has a cursor (status_streams), and the outbox's status rows say which project and cursor
they are, indexed for the replay of one project's events after a cursor."""

from tortoise import migrations
from tortoise.migrations import operations as ops
from uuid import uuid4
from tortoise import fields
from tortoise.indexes import Index


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0023_ssh_public_keys")]

    initial = False

    operations = [
        ops.CreateModel(
            name="StatusStream",
            fields=[
                ("project_id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                ("cursor", fields.BigIntField(default=0)),
            ],
            options={
                "table": "status_streams",
                "app": "gpupaas",
                "pk_attr": "project_id",
                "table_description": "Per project: the cursor of its last status event.",
            },
            bases=["Model"],
        ),
        ops.AddField(
            model_name="OutboxMessage",
            name="cursor",
            field=fields.BigIntField(null=True),
        ),
        ops.AddField(
            model_name="OutboxMessage",
            name="project_id",
            field=fields.UUIDField(null=True),
        ),
        ops.AddIndex(
            model_name="OutboxMessage",
            index=Index(fields=["project_id", "cursor"]),
        ),
    ]
