"""Webhooks of a project, the deliveries queued for them and each attempt to send one.

`WebhookDelivery` is the webhooks' outbox: a row written in the same transaction as the event it
announces (`webhooks.service.publish`), claimed and sent afterwards by a dispatcher
(`webhooks.dispatch`), retried with backoff until it is delivered or its attempts run out.
"""

from __future__ import annotations

import uuid
from enum import Enum

from tortoise import fields
from tortoise.models import Model

from gpupaas.accounts.models import Project


class WebhookEvent(str, Enum):
    COMPUTE_INSTANCE_SUCCESS = "COMPUTE_INSTANCE_SUCCESS"
    COMPUTE_INSTANCE_FAILED = "COMPUTE_INSTANCE_FAILED"
    SERVICE_INSTANCE_SUCCESS = "SERVICE_INSTANCE_SUCCESS"
    SERVICE_INSTANCE_FAILED = "SERVICE_INSTANCE_FAILED"
    AUTO_STOP_WARNING = "AUTO_STOP_WARNING"
    QUOTA_REACHED = "QUOTA_REACHED"
    # Sent only by sendWebhookTestEvent, to the one webhook asked; no webhook subscribes to it.
    TEST = "TEST"


class DeliveryStatus(str, Enum):
    PENDING = "PENDING"  # waiting for its first or next attempt
    DELIVERED = "DELIVERED"  # the receiver answered 2xx
    FAILED = "FAILED"  # every attempt failed: given up


class Webhook(Model):
    id = fields.UUIDField(primary_key=True)
    project: fields.ForeignKeyRelation[Project] = fields.ForeignKeyField(
        "gpupaas.Project", related_name="webhooks", on_delete=fields.CASCADE
    )
    project_id: uuid.UUID
    url = fields.CharField(max_length=2000)
    # The WebhookEvent values it wants, sorted.
    events: fields.JSONField[list[str]] = fields.JSONField(default=list)
    # The signing secret, sealed (core.crypto.Sealer); shown once, when it is made.
    secret_sealed: str = fields.TextField()
    enabled = fields.BooleanField(default=True)
    created_at = fields.DatetimeField(auto_now_add=True)
    updated_at = fields.DatetimeField(auto_now=True)

    class Meta:
        table = "webhooks"
        indexes = (("project_id", "created_at"),)


class WebhookDelivery(Model):
    id = fields.UUIDField(primary_key=True)
    webhook: fields.ForeignKeyRelation[Webhook] = fields.ForeignKeyField(
        "gpupaas.Webhook", related_name="deliveries", on_delete=fields.CASCADE
    )
    webhook_id: uuid.UUID
    event = fields.CharEnumField(WebhookEvent, max_length=32)
    # The same in every attempt, and for every webhook the event went to: receivers drop repeats.
    event_id = fields.UUIDField()
    # The request body, exactly as every attempt sends (and signs) it.
    body: str = fields.TextField()
    status = fields.CharEnumField(DeliveryStatus, max_length=16, default=DeliveryStatus.PENDING)
    attempts = fields.IntField(default=0)
    next_attempt_at = fields.DatetimeField()
    # Which dispatcher is sending it, until when (a claim outlives a dispatcher that died by this much).
    claimed_by = fields.CharField(max_length=128, null=True)
    claimed_until = fields.DatetimeField(null=True)
    last_error: str | None = fields.TextField(null=True)
    created_at = fields.DatetimeField(auto_now_add=True)
    finished_at = fields.DatetimeField(null=True)

    class Meta:
        table = "webhook_deliveries"
        indexes = (("status", "next_attempt_at"), ("webhook_id", "created_at"))


class WebhookAttempt(Model):
    """One try at sending a delivery: what the delivery log shows."""

    id = fields.UUIDField(primary_key=True)
    delivery: fields.ForeignKeyRelation[WebhookDelivery] = fields.ForeignKeyField(
        "gpupaas.WebhookDelivery", related_name="attempt_rows", on_delete=fields.CASCADE
    )
    delivery_id: uuid.UUID
    number = fields.IntField()
    started_at = fields.DatetimeField()
    duration_ms = fields.IntField()
    # The receiver's HTTP status, or None with `error` when no answer came (refused, timeout...).
    status_code = fields.IntField(null=True)
    error: str | None = fields.TextField(null=True)
    # The start of the receiver's answer, never more (RESPONSE_EXCERPT characters).
    response_excerpt: str | None = fields.TextField(null=True)

    class Meta:
        table = "webhook_attempts"
        indexes = (("delivery_id", "number"),)
