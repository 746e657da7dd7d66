"""Webhooks of a project, their deliveries (the webhooks' outbox) and each attempt to send one
(webhooks/models.py)."""

from tortoise import migrations
from tortoise.migrations import operations as ops
from gpupaas.webhooks.models import DeliveryStatus, WebhookEvent
from orjson import loads
from tortoise.fields.base import OnDelete
from tortoise.fields.data import JSON_DUMPS
from uuid import uuid4
from tortoise import fields
from tortoise.indexes import Index


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0018_time_limits_and_schedules")]

    initial = False

    operations = [
        ops.CreateModel(
            name="Webhook",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                (
                    "project",
                    fields.ForeignKeyField(
                        "gpupaas.Project",
                        source_field="project_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="webhooks",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                ("url", fields.CharField(max_length=2000)),
                ("events", fields.JSONField(default=list, encoder=JSON_DUMPS, decoder=loads)),
                ("secret_sealed", fields.TextField(unique=False)),
                ("enabled", fields.BooleanField(default=True)),
                ("created_at", fields.DatetimeField(auto_now=False, auto_now_add=True)),
                ("updated_at", fields.DatetimeField(auto_now=True, auto_now_add=False)),
            ],
            options={
                "table": "webhooks",
                "app": "gpupaas",
                "indexes": [Index(fields=["project_id", "created_at"])],
                "pk_attr": "id",
            },
            bases=["Model"],
        ),
        ops.CreateModel(
            name="WebhookDelivery",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                (
                    "webhook",
                    fields.ForeignKeyField(
                        "gpupaas.Webhook",
                        source_field="webhook_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="deliveries",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                (
                    "event",
                    fields.CharEnumField(
                        description="COMPUTE_INSTANCE_SUCCESS: COMPUTE_INSTANCE_SUCCESS\nCOMPUTE_INSTANCE_FAILED: COMPUTE_INSTANCE_FAILED\nSERVICE_INSTANCE_SUCCESS: SERVICE_INSTANCE_SUCCESS\nSERVICE_INSTANCE_FAILED: SERVICE_INSTANCE_FAILED\nAUTO_STOP_WARNING: AUTO_STOP_WARNING\nQUOTA_REACHED: QUOTA_REACHED\nTEST: TEST",
                        enum_type=WebhookEvent,
                        max_length=32,
                    ),
                ),
                ("event_id", fields.UUIDField()),
                ("body", fields.TextField(unique=False)),
                (
                    "status",
                    fields.CharEnumField(
                        default=DeliveryStatus.PENDING,
                        description="PENDING: PENDING\nDELIVERED: DELIVERED\nFAILED: FAILED",
                        enum_type=DeliveryStatus,
                        max_length=16,
                    ),
                ),
                ("attempts", fields.IntField(default=0)),
                ("next_attempt_at", fields.DatetimeField(auto_now=False, auto_now_add=False)),
                ("claimed_by", fields.CharField(null=True, max_length=128)),
                ("claimed_until", fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
                ("last_error", fields.TextField(null=True, unique=False)),
                ("created_at", fields.DatetimeField(auto_now=False, auto_now_add=True)),
                ("finished_at", fields.DatetimeField(null=True, auto_now=False, auto_now_add=False)),
            ],
            options={
                "table": "webhook_deliveries",
                "app": "gpupaas",
                "indexes": [
                    Index(fields=["status", "next_attempt_at"]),
                    Index(fields=["webhook_id", "created_at"]),
                ],
                "pk_attr": "id",
            },
            bases=["Model"],
        ),
        ops.CreateModel(
            name="WebhookAttempt",
            fields=[
                ("id", fields.UUIDField(primary_key=True, default=uuid4, unique=True, db_index=True)),
                (
                    "delivery",
                    fields.ForeignKeyField(
                        "gpupaas.WebhookDelivery",
                        source_field="delivery_id",
                        db_constraint=True,
                        to_field="id",
                        related_name="attempt_rows",
                        on_delete=OnDelete.CASCADE,
                    ),
                ),
                ("number", fields.IntField()),
                ("started_at", fields.DatetimeField(auto_now=False, auto_now_add=False)),
                ("duration_ms", fields.IntField()),
                ("status_code", fields.IntField(null=True)),
                ("error", fields.TextField(null=True, unique=False)),
                ("response_excerpt", fields.TextField(null=True, unique=False)),
            ],
            options={
                "table": "webhook_attempts",
                "app": "gpupaas",
                "indexes": [Index(fields=["delivery_id", "number"])],
                "pk_attr": "id",
                "table_description": "One try at sending a delivery: what the delivery log shows.",
            },
            bases=["Model"],
        ),
    ]
