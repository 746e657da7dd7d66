"""Project schedules: "stop every service instance at 20:00 Europe/Berlin on weekdays"."""

from __future__ import annotations

import uuid
from enum import Enum

from tortoise import fields
from tortoise.models import Model

from gpupaas.accounts.models import Project, User


class ScheduleAction(str, Enum):
    STOP = "STOP"
    DESTROY = "DESTROY"


class ScheduleTarget(str, Enum):
    SERVICE_INSTANCES = "SERVICE_INSTANCES"
    COMPUTE_INSTANCES = "COMPUTE_INSTANCES"


class Schedule(Model):
    id = fields.UUIDField(primary_key=True)
    project: fields.ForeignKeyRelation[Project] = fields.ForeignKeyField(
        "gpupaas.Project", related_name="schedules", on_delete=fields.CASCADE
    )
    project_id: uuid.UUID
    name = fields.CharField(max_length=63)
    action = fields.CharEnumField(ScheduleAction, max_length=16)
    applies_to = fields.CharEnumField(ScheduleTarget, max_length=32)
    # Days of the week it runs on, Monday first: ["MON", "TUE", ...].
    days: fields.JSONField[list[str]] = fields.JSONField(default=list)
    # "HH:MM", wall-clock time in `time_zone` (an IANA name: "Europe/Berlin").
    time_of_day = fields.CharField(max_length=5)
    time_zone = fields.CharField(max_length=64)
    # When it next runs, in UTC, computed when it is saved and each time it runs (schedules/timing.py):
    # the database is the truth, and the worker that moves it on first is the one that acts.
    next_run_at = fields.DatetimeField()
    last_run_at = fields.DatetimeField(null=True)
    last_result: str | None = fields.TextField(null=True)
    created_by: fields.ForeignKeyNullableRelation[User] = fields.ForeignKeyField(
        "gpupaas.User", related_name="schedules", null=True, on_delete=fields.SET_NULL
    )
    created_by_id: uuid.UUID | None
    created_at = fields.DatetimeField(auto_now_add=True)

    class Meta:
        table = "project_schedules"
        unique_together = (("project", "name"),)
        indexes = (("next_run_at",),)
