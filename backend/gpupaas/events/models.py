"""The transactional outbox: a row written in the same transaction as the change it announces,
published to Kafka by the relay afterwards, so that an accepted change is never lost."""

from __future__ import annotations

from typing import Any

from tortoise import fields
from tortoise.models import Model


class OutboxMessage(Model):
    # Ordered: the relay publishes in id order, so one instance's events keep their order.
    id = fields.BigIntField(primary_key=True)
    topic = fields.CharField(max_length=128)
    key = fields.CharField(max_length=128, null=True)
    payload: fields.JSONField[dict[str, Any]] = fields.JSONField()
    created_at = fields.DatetimeField(auto_now_add=True)
    sent_at = fields.DatetimeField(null=True)
    attempts = fields.IntField(default=0)
    # Which relay is publishing it, until when (a claim outlives a relay that died by this much).
    claimed_by = fields.CharField(max_length=128, null=True)
    claimed_until = fields.DatetimeField(null=True)
    last_error: str | None = fields.TextField(null=True)
    # Status events only (events/outbox.py `add_status`): the project whose stream the event is in
    # and its place there. Those rows are kept after they are sent, for subscriptions that resume
    # (`after:`), until the replay retention has passed (events/relay.py).
    project_id = fields.UUIDField(null=True)
    cursor = fields.BigIntField(null=True)

    class Meta:
        table = "outbox"
        indexes = (("sent_at", "id"), ("project_id", "cursor"))


class StatusStream(Model):
    """Per project: the cursor of its last status event.

    Moved on (INSERT .. ON CONFLICT .. DO UPDATE .. RETURNING) in the transaction that writes the
    event, whose row it keeps locked until that commits: one project's status events commit in
    cursor order, so a subscriber that has an event knows that every earlier cursor of its project
    is in the database."""

    project_id = fields.UUIDField(primary_key=True)
    cursor = fields.BigIntField(default=0)

    class Meta:
        table = "status_streams"


class DataVersion(Model):
    """One row (id 1): a counter bumped after every write that can change a cached read (every
    GraphQL mutation, and start-up seeding), shared by all processes through the database. The
    response cache (graphql/response_cache.py) serves an answer only while it is unchanged."""

    id = fields.IntField(primary_key=True)
    value = fields.BigIntField(default=0)

    class Meta:
        table = "data_version"
