"""Environment templates (versioned), compute profiles (the SKUs) and their sharing."""

from __future__ import annotations

import uuid
from enum import Enum
from typing import Any

from tortoise import fields
from tortoise.models import Model

from gpupaas.accounts.models import Project
from gpupaas.accounts.sharing import SharingMode
from gpupaas.clusters.models import Cluster
from gpupaas.core.gpus import Vendor


class VersionState(str, Enum):
    DRAFT = "DRAFT"
    ACTIVE = "ACTIVE"
    DISABLED = "DISABLED"


class AllocationType(str, Enum):
    DEDICATED = "DEDICATED"
    SHARED = "SHARED"


class EnvironmentTemplate(Model):
    id = fields.UUIDField(primary_key=True)
    project: fields.ForeignKeyRelation[Project] = fields.ForeignKeyField(
        "gpupaas.Project", related_name="environment_templates", on_delete=fields.CASCADE
    )
    project_id: uuid.UUID
    name = fields.CharField(max_length=63)
    display_name = fields.CharField(max_length=128)
    description: str | None = fields.TextField(null=True)
    built_in = fields.BooleanField(default=False)
    created_at = fields.DatetimeField(auto_now_add=True)
    updated_at = fields.DatetimeField(auto_now=True)

    versions: fields.ReverseRelation[EnvironmentTemplateVersion]

    class Meta:
        table = "environment_templates"
        unique_together = (("project", "name"),)


class EnvironmentTemplateVersion(Model):
    id = fields.UUIDField(primary_key=True)
    template: fields.ForeignKeyRelation[EnvironmentTemplate] = fields.ForeignKeyField(
        "gpupaas.EnvironmentTemplate", related_name="versions", on_delete=fields.CASCADE
    )
    template_id: uuid.UUID
    version = fields.CharField(max_length=63)
    state = fields.CharEnumField(VersionState, max_length=16, default=VersionState.DRAFT)
    resources = fields.TextField()
    # Lists of definitions as the API shows them (name, type, required, default, ...).
    inputs: fields.JSONField[list[dict[str, Any]]] = fields.JSONField(default=list)
    outputs: fields.JSONField[list[dict[str, Any]]] = fields.JSONField(default=list)
    created_at = fields.DatetimeField(auto_now_add=True)

    class Meta:
        table = "environment_template_versions"
        unique_together = (("template", "version"),)


class ComputeProfile(Model):
    id = fields.UUIDField(primary_key=True)
    project: fields.ForeignKeyRelation[Project] = fields.ForeignKeyField(
        "gpupaas.Project", related_name="compute_profiles", on_delete=fields.CASCADE
    )
    project_id: uuid.UUID
    name = fields.CharField(max_length=63)
    display_name = fields.CharField(max_length=128)
    description: str | None = fields.TextField(null=True)
    allocation_type = fields.CharEnumField(AllocationType, max_length=16)
    # RESTRICT: a version in use cannot vanish under a profile (the service says so first).
    template_version: fields.ForeignKeyRelation[EnvironmentTemplateVersion] = fields.ForeignKeyField(
        "gpupaas.EnvironmentTemplateVersion", related_name="profiles", on_delete=fields.RESTRICT
    )
    template_version_id: uuid.UUID
    # Where its instances go; None: the default cluster at launch time. RESTRICT: a cluster in use
    # cannot be deleted (the service says so first).
    cluster: fields.ForeignKeyNullableRelation[Cluster] = fields.ForeignKeyField(
        "gpupaas.Cluster", related_name="profiles", null=True, on_delete=fields.RESTRICT
    )
    cluster_id: uuid.UUID | None
    cpu = fields.CharField(max_length=32)
    memory = fields.CharField(max_length=32)
    storage = fields.CharField(max_length=32)
    gpu_count = fields.IntField()
    gpu_vendor = fields.CharEnumField(Vendor, max_length=16)
    gpu_model = fields.CharField(max_length=128, null=True)
    labels: fields.JSONField[list[list[str]]] = fields.JSONField(
        default=list
    )  # [[key, value], ...] in the admin's order
    annotations: fields.JSONField[list[list[str]]] = fields.JSONField(default=list)
    icon_url: str | None = fields.TextField(null=True)
    readme: str | None = fields.TextField(null=True)
    # Rendered once when saved, so that reads never pay for markdown.
    readme_html: str | None = fields.TextField(null=True)
    input_settings: fields.JSONField[list[dict[str, Any]]] = fields.JSONField(default=list)
    output_settings: fields.JSONField[list[dict[str, Any]]] = fields.JSONField(default=list)
    # Time limits of its instances in minutes of running (core/time_limits.py; None: none): the
    # default auto-stop, and the maximum lifetime no instance may exceed or extend past.
    auto_stop_minutes: int | None = fields.IntField(null=True)
    max_lifetime_minutes: int | None = fields.IntField(null=True)
    sharing_mode = fields.CharEnumField(SharingMode, max_length=32, default=SharingMode.NONE)
    # Bumped by every change that new instances would see; instances keep the one they took.
    revision = fields.IntField(default=1)
    created_at = fields.DatetimeField(auto_now_add=True)
    updated_at = fields.DatetimeField(auto_now=True)

    class Meta:
        table = "compute_profiles"
        unique_together = (("project", "name"),)
        indexes = (("project_id", "created_at"),)


class ComputeProfileShare(Model):
    id = fields.UUIDField(primary_key=True)
    profile: fields.ForeignKeyRelation[ComputeProfile] = fields.ForeignKeyField(
        "gpupaas.ComputeProfile", related_name="shares", on_delete=fields.CASCADE
    )
    profile_id: uuid.UUID
    project: fields.ForeignKeyRelation[Project] = fields.ForeignKeyField(
        "gpupaas.Project", related_name="shared_profiles", on_delete=fields.CASCADE
    )
    project_id: uuid.UUID

    class Meta:
        table = "compute_profile_shares"
        unique_together = (("profile", "project"),)
