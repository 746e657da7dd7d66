"""The SSH public keys a user keeps in their profile."""

from __future__ import annotations

import uuid

from tortoise import fields
from tortoise.models import Model

from gpupaas.accounts.models import User


class SshPublicKey(Model):
    id = fields.UUIDField(primary_key=True)
    user: fields.ForeignKeyRelation[User] = fields.ForeignKeyField(
        "gpupaas.User", related_name="ssh_public_keys", on_delete=fields.CASCADE
    )
    user_id: uuid.UUID
    name = fields.CharField(max_length=128)
    key_type = fields.CharField(max_length=64)
    bits = fields.IntField()
    # "SHA256:..." of the key's wire form: one user holds a key once.
    fingerprint = fields.CharField(max_length=64)
    # The line as gpupaas rebuilt it (type, base64, comment): what goes into authorized_keys.
    public_key = fields.TextField()
    created_at = fields.DatetimeField(auto_now_add=True)

    class Meta:
        table = "ssh_public_keys"
        unique_together = (("user", "fingerprint"), ("user", "name"))
        ordering = ["name"]
