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
    # The last successful sign-in with the password (API tokens do not count).
    last_sign_in_at = fields.DatetimeField(null=True)

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


class FormerName(Model):
    """The name of a deleted user or project, under its old id: history that keeps ids without a
    foreign key (usage intervals, audit entries) still reads with the name."""

    id = fields.UUIDField(primary_key=True)  # the deleted user's or project's id
    kind = fields.CharField(max_length=16)  # "user" or "project"
    name = fields.CharField(max_length=64)
    deleted_at = fields.DatetimeField()

    class Meta:
        table = "former_names"


class SignInFailure(Model):
    """One failed sign-in, counted for the username given and for the client address
    (accounts/throttle.py); rows older than the window are deleted as new ones come."""

    id = fields.UUIDField(primary_key=True)
    key = fields.CharField(max_length=96)  # "user:bob" or "address:203.0.113.7"
    at = fields.DatetimeField()

    class Meta:
        table = "sign_in_failures"
        indexes = (("key", "at"),)


class SignInLock(Model):
    """A username or an address that may not sign in until `until` (too many failures)."""

    key = fields.CharField(max_length=96, primary_key=True)
    until = fields.DatetimeField()

    class Meta:
        table = "sign_in_locks"
