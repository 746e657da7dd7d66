"""Compute instances (launched from a profile, with a snapshot of it), their deployment runs and
their sharing."""

from __future__ import annotations

import uuid
from typing import Any

from tortoise import fields
from tortoise.models import Model

from gpupaas.accounts.models import Project, User
from gpupaas.accounts.sharing import SharingMode
from gpupaas.catalog.models import ComputeProfile
from gpupaas.compute.snapshot import Snapshot
from gpupaas.compute.states import DeploymentStatus
from gpupaas.runs.models import DeploymentRun


class ComputeInstance(Model):
    id = fields.UUIDField(primary_key=True)
    project: fields.ForeignKeyRelation[Project] = fields.ForeignKeyField(
        "gpupaas.Project", related_name="compute_instances", on_delete=fields.CASCADE
    )
    project_id: uuid.UUID
    # SET_NULL: deleting a profile leaves its instances running on their snapshot.
    profile: fields.ForeignKeyNullableRelation[ComputeProfile] = fields.ForeignKeyField(
        "gpupaas.ComputeProfile", related_name="instances", null=True, on_delete=fields.SET_NULL
    )
    profile_id: uuid.UUID | None
    # Its creator, or whom a project admin gave it to: with the project's admins, the only one who
    # may change, deploy, destroy, delete or share it (compute/owners.py). NULL for instances made
    # before owners existed (migration 0012), and when the user is deleted: only admins manage it.
    owner: fields.ForeignKeyNullableRelation[User] = fields.ForeignKeyField(
        "gpupaas.User", related_name="compute_instances", null=True, on_delete=fields.SET_NULL
    )
    owner_id: uuid.UUID | None
    profile_name = fields.CharField(max_length=63)
    # The profile's revision when the snapshot was taken: a newer one makes the instance outdated.
    profile_revision = fields.IntField()
    name = fields.CharField(max_length=63)
    display_name = fields.CharField(max_length=128)
    description: str | None = fields.TextField(null=True)
    status = fields.CharEnumField(DeploymentStatus, max_length=16, default=DeploymentStatus.NOT_DEPLOYED)
    status_message: str | None = fields.TextField(null=True)
    labels: fields.JSONField[list[list[str]]] = fields.JSONField(default=list)
    annotations: fields.JSONField[list[list[str]]] = fields.JSONField(default=list)
    # The user's own input values ([[name, value], ...]); effective values come from the snapshot.
    inputs: fields.JSONField[list[list[str]]] = fields.JSONField(default=list)
    # What the profile said when the instance was created: template version and its YAML,
    # resources, allocation, input definitions and settings, outputs and output settings.
    snapshot: fields.JSONField[dict[str, Any]] = fields.JSONField(default=dict)
    outputs: fields.JSONField[dict[str, str]] = fields.JSONField(default=dict)
    sharing_mode = fields.CharEnumField(SharingMode, max_length=32, default=SharingMode.NONE)
    # FAILED because the cluster drifted (a pod died) rather than because a run failed: it turns
    # back to SUCCESS by itself when the cluster recovers.
    drifted = fields.BooleanField(default=False)
    # Bumped by every change; status events carry it so that subscribers never go backwards,
    # and writers use it to detect a concurrent change (optimistic lock, for SQLite).
    version = fields.IntField(default=1)
    # Time limits (core/time_limits.py): its own, within its profile's (copied at launch); armed
    # while it runs, with the due time the scheduler (workers/scheduler.py) claims (a lease in
    # stop_claimed_until).
    auto_stop_minutes: int | None = fields.IntField(null=True)
    max_lifetime_minutes: int | None = fields.IntField(null=True)
    running_since = fields.DatetimeField(null=True)
    stop_at = fields.DatetimeField(null=True)
    stop_reason: str | None = fields.TextField(null=True)
    lifetime_ends_at = fields.DatetimeField(null=True)
    stop_warned_at = fields.DatetimeField(null=True)
    stop_claimed_until = fields.DatetimeField(null=True)
    # Why the last auto-stop was not carried out (a compute instance that runs service instances).
    stop_refused: str | None = fields.TextField(null=True)
    created_at = fields.DatetimeField(auto_now_add=True)
    updated_at = fields.DatetimeField(auto_now=True)

    runs: fields.ReverseRelation[DeploymentRun]

    _snapshot_read: tuple[object, Snapshot] | None = None

    @property
    def profile_snapshot(self) -> Snapshot:
        """`snapshot`, typed; read once per object (and again when `snapshot` is replaced)."""
        raw = self.snapshot
        cached: tuple[object, Snapshot] | None = getattr(self, "_snapshot_read", None)
        if cached is None or cached[0] is not raw:
            cached = (raw, Snapshot.from_json(raw))
            self._snapshot_read = cached
        return cached[1]

    class Meta:
        table = "compute_instances"
        unique_together = (("project", "name"),)
        # sharing_mode: lets the list's "own OR shared" filter (compute.service.shared_filter) use a
        # BitmapOr of indexes instead of a sequential scan (bench/scale.py).
        # owner_id: the lists' "mine" filter, newest first.
        indexes = (
            ("project_id", "created_at"),
            ("project_id", "status"),
            ("sharing_mode",),
            ("owner_id", "created_at"),
            ("stop_at",),
        )


class ComputeInstanceShare(Model):
    id = fields.UUIDField(primary_key=True)
    instance: fields.ForeignKeyRelation[ComputeInstance] = fields.ForeignKeyField(
        "gpupaas.ComputeInstance", related_name="shares", on_delete=fields.CASCADE
    )
    instance_id: uuid.UUID
    project: fields.ForeignKeyRelation[Project] = fields.ForeignKeyField(
        "gpupaas.Project", related_name="shared_instances", on_delete=fields.CASCADE
    )
    project_id: uuid.UUID

    class Meta:
        table = "compute_instance_shares"
        unique_together = (("instance", "project"),)
