"""GraphQL for SSH public keys in the caller's profile (thin: calls the service)."""

from __future__ import annotations

from datetime import datetime

import strawberry

from gpupaas.graphql.common import DeletePayload, UserError, attempt, delete_payload
from gpupaas.graphql.context import Info
from gpupaas.ssh_keys import service
from gpupaas.ssh_keys.models import SshPublicKey


@strawberry.type(name="SshPublicKey")
class SshPublicKeyType:
    id: strawberry.ID
    name: str
    key_type: str = strawberry.field(description="ssh-ed25519, ecdsa-sha2-nistp256|384|521 or ssh-rsa.")
    bits: int
    fingerprint: str = strawberry.field(description="As `ssh-keygen -l` prints it: SHA256:...")
    public_key: str = strawberry.field(
        description="The key as one authorized_keys line (type, key data, comment; never options)."
    )
    created_at: datetime

    @classmethod
    def of(cls, key: SshPublicKey) -> SshPublicKeyType:
        return cls(
            id=strawberry.ID(str(key.id)),
            name=key.name,
            key_type=key.key_type,
            bits=key.bits,
            fingerprint=key.fingerprint,
            public_key=key.public_key,
            created_at=key.created_at,
        )


@strawberry.input
class AddSshPublicKeyInput:
    public_key: str = strawberry.field(
        description="One line of a .pub file: ssh-ed25519, ecdsa or RSA of 2048 bits or more."
    )
    name: str | None = strawberry.field(default=None, description="Default: the key's comment.")


@strawberry.type
class SshPublicKeyPayload:
    ssh_public_key: SshPublicKeyType | None
    user_errors: list[UserError]


@strawberry.type
class SshKeysQuery:
    @strawberry.field(description="The caller's SSH public keys, by name (nobody sees another's).")
    async def ssh_public_keys(self, info: Info) -> list[SshPublicKeyType]:
        return [SshPublicKeyType.of(k) for k in await service.list_keys(info.context.actor)]


@strawberry.type
class SshKeysMutation:
    @strawberry.mutation(
        description="Adds an SSH public key to the caller's profile: it lets them into the services "
        "they own that have SSH access."
    )
    async def add_ssh_public_key(self, info: Info, input: AddSshPublicKeyInput) -> SshPublicKeyPayload:
        key, errors = await attempt(service.add_key(info.context.actor, input.name, input.public_key))
        found = SshPublicKeyType.of(key) if key else None
        return SshPublicKeyPayload(ssh_public_key=found, user_errors=errors)

    @strawberry.mutation(description="Deletes one of the caller's SSH public keys.")
    async def delete_ssh_public_key(self, info: Info, id: strawberry.ID) -> DeletePayload:
        return await delete_payload(service.delete_key(info.context.actor, id))
