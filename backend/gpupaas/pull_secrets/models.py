"""A project's image pull secret: a registry, a user and a password (encrypted at rest)."""

from __future__ import annotations

import uuid

from tortoise import fields
from tortoise.models import Model

from gpupaas.accounts.models import Project


class ImagePullSecret(Model):
    """Registry credentials of one project, by name. `password_encrypted` is Fernet
    (core.crypto) of the password; the API never returns it."""

    id = fields.UUIDField(primary_key=True)
    project: fields.ForeignKeyRelation[Project] = fields.ForeignKeyField(
        "gpupaas.Project", related_name="image_pull_secrets", on_delete=fields.CASCADE
    )
    project_id: uuid.UUID
    name = fields.CharField(max_length=63)
    registry = fields.CharField(max_length=255)
    username = fields.CharField(max_length=255)
    password_encrypted = fields.TextField()
    created_at = fields.DatetimeField(auto_now_add=True)
    updated_at = fields.DatetimeField(auto_now=True)

    class Meta:
        table = "image_pull_secrets"
        unique_together = (("project", "name"),)
