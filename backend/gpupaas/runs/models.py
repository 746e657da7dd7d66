"""Deployment runs: every deploy, destroy, start, stop or restart of anything gpupaas deploys is one
run, kept as history. The rows are written by `runs.lifecycle` only."""

from __future__ import annotations

import uuid
from typing import Any

from tortoise import fields
from tortoise.models import Model

from gpupaas.runs.states import RunAction, RunStatus


class DeploymentRun(Model):
    id = fields.UUIDField(primary_key=True)
    # The compute instance the run acts in (its namespace and cluster): a compute instance's own
    # runs, and those of everything that runs inside it. Referenced by name: the kinds of subjects
    # sit above this package.
    instance: fields.ForeignKeyRelation[Any] = fields.ForeignKeyField(
        "gpupaas.ComputeInstance", related_name="runs", on_delete=fields.CASCADE
    )
    instance_id: uuid.UUID
    # Set for the runs of a GPU service instance (start, stop, restart, delete) in the instance.
    service: fields.ForeignKeyNullableRelation[Any] = fields.ForeignKeyField(
        "gpupaas.ServiceInstance", related_name="runs", null=True, on_delete=fields.CASCADE
    )
    service_id: uuid.UUID | None
    action = fields.CharEnumField(RunAction, max_length=16)
    status = fields.CharEnumField(RunStatus, max_length=16, default=RunStatus.QUEUED)
    message: str | None = fields.TextField(null=True)
    # Why the run was asked when it was not asked by a person: "auto-stop after 4h", "schedule
    # 'evening' (20:00 Europe/Berlin)" (the scheduler, workers/scheduler.py).
    reason: str | None = fields.TextField(null=True)
    # Remove the instance once this destroy run succeeds (deleteComputeInstance of a deployed one).
    delete_after = fields.BooleanField(default=False)
    attempts = fields.IntField(default=0)
    # The objects the run applied ({apiVersion, kind, name, namespace}), in order.
    applied: fields.JSONField[list[dict[str, Any]]] = fields.JSONField(default=list)
    # Which worker holds the run, and until when (renewed by heartbeats).
    lease_owner = fields.CharField(max_length=128, null=True)
    lease_expires_at = fields.DatetimeField(null=True)
    # When its command was last queued for publishing: the reaper re-queues stale QUEUED runs.
    queued_at = fields.DatetimeField(null=True)
    created_at = fields.DatetimeField(auto_now_add=True)
    started_at = fields.DatetimeField(null=True)
    finished_at = fields.DatetimeField(null=True)

    class Meta:
        table = "deployment_runs"
        indexes = (("instance_id", "created_at"), ("status", "queued_at"))
