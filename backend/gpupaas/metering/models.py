"""Usage intervals and GPU prices.

An interval is one stretch of time during which a subject (a compute instance) held a fixed amount of
resources, charged to one project and one user. It keeps copies of what it needs (names, sizes,
ids without foreign keys): the history outlives the instance, its owner's account and its profile.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from decimal import Decimal

from tortoise import fields
from tortoise.models import Model


class UsageInterval(Model):
    id = fields.UUIDField(primary_key=True)
    # What held the resources: its kind ("compute_instance"), id and name when the interval opened.
    subject_kind = fields.CharField(max_length=32)
    subject_id = fields.UUIDField()
    subject_name = fields.CharField(max_length=63)
    # Whom it is charged to. owner_id NULL: an instance nobody owns (only its project's admins).
    project_id = fields.UUIDField()
    owner_id: uuid.UUID | None = fields.UUIDField(null=True)
    gpu_count = fields.IntField()
    gpu_vendor = fields.CharField(max_length=16)
    # "" when the profile names no GPU model.
    gpu_model = fields.CharField(max_length=128, default="")
    cpu_millicores = fields.BigIntField()
    memory_bytes = fields.BigIntField()
    started_at = fields.DatetimeField()
    ended_at: datetime | None = fields.DatetimeField(null=True)
    # The subject's id while the interval is open, NULL once it has ended: the unique constraint
    # (NULLs are distinct on SQLite and PostgreSQL alike) makes the database itself refuse a second
    # open interval of one subject.
    open_subject: uuid.UUID | None = fields.UUIDField(null=True, unique=True)

    class Meta:
        table = "usage_intervals"
        indexes = (("project_id", "started_at"), ("owner_id", "started_at"), ("started_at",))


class GpuPrice(Model):
    """What one GPU-hour of a model costs (set by platform admins). gpu_model "": the price of the
    vendor's GPUs that have no price of their own (and of instances whose profile names no model)."""

    id = fields.UUIDField(primary_key=True)
    gpu_vendor = fields.CharField(max_length=16)
    gpu_model = fields.CharField(max_length=128, default="")
    price_per_gpu_hour: Decimal = fields.DecimalField(max_digits=14, decimal_places=4)
    updated_at = fields.DatetimeField(auto_now=True)

    class Meta:
        table = "gpu_prices"
        unique_together = (("gpu_vendor", "gpu_model"),)
