"""Users, projects, memberships, API tokens and browser sessions."""

from __future__ import annotations

import uuid

from tortoise import fields
from tortoise.models import Model

from gpupaas.core.actor import Role


class User(Model):
    id = fields.UUIDField(primary_key=True)
    username = fields.CharField(max_length=64, unique=True)
    password_hash = fields.CharField(max_length=255)
    is_platform_admin = fields.BooleanField(default=False)
    created_at = fields.DatetimeField(auto_now_add=True)
    # Set by a platform admin: the user's sessions and tokens sign nobody in while it is set.
    disabled_at = fields.DatetimeField(null=True)

    memberships: fields.ReverseRelation[Membership]

    class Meta:
        table = "users"


class Project(Model):
    id = fields.UUIDField(primary_key=True)
    name = fields.CharField(max_length=63, unique=True)
    display_name = fields.CharField(max_length=128)
    # The project that holds the built-in templates; every project may use what it owns.
    is_system = fields.BooleanField(default=False)
    created_at = fields.DatetimeField(auto_now_add=True)

    class Meta:
        table = "projects"


class Membership(Model):
    id = fields.UUIDField(primary_key=True)
    user: fields.ForeignKeyRelation[User] = fields.ForeignKeyField(
        "gpupaas.User", related_name="memberships", on_delete=fields.CASCADE
    )
    user_id: uuid.UUID
    project: fields.ForeignKeyRelation[Project] = fields.ForeignKeyField(
        "gpupaas.Project", related_name="memberships", on_delete=fields.CASCADE
    )
    project_id: uuid.UUID
    role = fields.CharEnumField(Role, max_length=16)
    created_at = fields.DatetimeField(auto_now_add=True)

    class Meta:
        table = "memberships"
        unique_together = (("user", "project"),)


class ApiToken(Model):
    id = fields.UUIDField(primary_key=True)
    user: fields.ForeignKeyRelation[User] = fields.ForeignKeyField(
        "gpupaas.User", related_name="api_tokens", on_delete=fields.CASCADE
    )
    user_id: uuid.UUID
    name = fields.CharField(max_length=128)
    # sha256 of the secret: the secret has 256 bits of entropy, so a slow hash adds nothing.
    token_hash = fields.CharField(max_length=64, unique=True)
    created_at = fields.DatetimeField(auto_now_add=True)
    last_used_at = fields.DatetimeField(null=True)
    expires_at = fields.DatetimeField(null=True)

    class Meta:
        table = "api_tokens"
        unique_together = (("user", "name"),)


class Session(Model):
    id = fields.UUIDField(primary_key=True)
    user: fields.ForeignKeyRelation[User] = fields.ForeignKeyField(
        "gpupaas.User", related_name="sessions", on_delete=fields.CASCADE
    )
    user_id: uuid.UUID
    token_hash = fields.CharField(max_length=64, unique=True)
    created_at = fields.DatetimeField(auto_now_add=True)
    expires_at = fields.DatetimeField()

    class Meta:
        table = "sessions"
