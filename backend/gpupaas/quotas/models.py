"""A quota: a project's (`user` NULL), set by platform admins, or a member's within the project,
set by the project's admins. A NULL dimension is not limited."""

from __future__ import annotations

import uuid
from typing import Any

from tortoise import fields
from tortoise.models import Model

from gpupaas.accounts.models import Project, User


class Quota(Model):
    id = fields.UUIDField(primary_key=True)
    project: fields.ForeignKeyRelation[Project] = fields.ForeignKeyField(
        "gpupaas.Project", related_name="quotas", on_delete=fields.CASCADE
    )
    project_id: uuid.UUID
    # NULL: the project's own quota; otherwise the quota of this member inside the project.
    user: fields.ForeignKeyNullableRelation[User] = fields.ForeignKeyField(
        "gpupaas.User", related_name="quotas", null=True, on_delete=fields.CASCADE
    )
    user_id: uuid.UUID | None
    # GPUs of every vendor and model together.
    gpus = fields.IntField(null=True)
    # [{"vendor": "NVIDIA", "model": "A100" | None, "count": 8}]: a limit per vendor (model None)
    # or per vendor and model.
    gpu_limits: fields.JSONField[list[dict[str, Any]]] = fields.JSONField(default=list)
    # Kubernetes quantities, as written ("32", "500m"; "256Gi").
    cpu = fields.CharField(max_length=32, null=True)
    memory = fields.CharField(max_length=32, null=True)
    # Deployed compute instances.
    instances = fields.IntField(null=True)
    updated_at = fields.DatetimeField(auto_now=True)

    class Meta:
        table = "quotas"
        unique_together = (("project", "user"),)
