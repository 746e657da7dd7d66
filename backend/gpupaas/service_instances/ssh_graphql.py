"""GraphQL for SSH access to GPU service instances: `ServiceInstance.ssh` (the exact command),
`ServiceInstance.sshKeys` (the keys added to it) and the mutations that add and delete them. Thin:
the rules live in `service_instances.service` and `service_instances.ssh`."""

from __future__ import annotations

from datetime import datetime

import strawberry

from gpupaas.clusters.models import Cluster
from gpupaas.graphql.common import DeletePayload, UserError, attempt, delete_payload
from gpupaas.graphql.context import Info
from gpupaas.service_instances import service as instances
from gpupaas.service_instances import ssh
from gpupaas.service_instances.models import ServiceInstance, ServiceInstanceSshKey


@strawberry.type(
    name="ServiceInstanceSsh",
    description="How to log in to a service instance's SSH server: run `command`.",
)
class ServiceInstanceSshType:
    command: str = strawberry.field(description="The exact command: ssh -p <port> <user>@<host>.")
    host: str = strawberry.field(description="The cluster's access address (its host).")
    port: int = strawberry.field(description="The SSH port's node port.")
    user: str
    host_key_fingerprint: str = strawberry.field(
        description="The server's host key as ssh shows it when it first connects (SHA256:...); the "
        "same after every stop, start and restart."
    )


@strawberry.type(name="ServiceInstanceSshKey", description="An SSH public key added to a service instance.")
class ServiceInstanceSshKeyType:
    id: strawberry.ID
    name: str
    key_type: str
    bits: int
    fingerprint: str = strawberry.field(description="As `ssh-keygen -l` prints it: SHA256:...")
    public_key: str
    created_at: datetime

    @classmethod
    def of(cls, key: ServiceInstanceSshKey) -> ServiceInstanceSshKeyType:
        return cls(
            id=strawberry.ID(str(key.id)),
            name=key.name,
            key_type=key.key_type,
            bits=key.bits,
            fingerprint=key.fingerprint,
            public_key=key.public_key,
            created_at=key.created_at,
        )


def ssh_of(info: Info, service: ServiceInstance, cluster: Cluster | None) -> ServiceInstanceSshType | None:
    """`ServiceInstance.ssh` (graphql.py asks, with the service's cluster)."""
    found = ssh.ssh_of(info.context.settings.secret_key, service, cluster)
    if found is None:
        return None
    endpoint, fingerprint = found
    return ServiceInstanceSshType(
        command=endpoint.command,
        host=endpoint.host,
        port=endpoint.port,
        user=endpoint.user,
        host_key_fingerprint=fingerprint,
    )


async def ssh_keys_of(service: ServiceInstance) -> list[ServiceInstanceSshKeyType]:
    """`ServiceInstance.sshKeys`."""
    return [ServiceInstanceSshKeyType.of(key) for key in await ssh.list_keys(service)]


@strawberry.input
class AddServiceInstanceSshKeyInput:
    service: strawberry.ID = strawberry.field(description="The service instance's id.")
    public_key: str = strawberry.field(
        description="One line of a .pub file: ssh-ed25519, ecdsa or RSA of 2048 bits or more."
    )
    name: str | None = strawberry.field(default=None, description="Default: the key's comment.")


@strawberry.type
class ServiceInstanceSshKeyPayload:
    ssh_key: ServiceInstanceSshKeyType | None
    user_errors: list[UserError]


@strawberry.type
class ServiceInstanceSshMutation:
    @strawberry.mutation(
        description="Lets one more SSH key into a service instance with SSH access, besides its owner's "
        "(its owner and the project's admins; applied to its running pod without a restart)."
    )
    async def add_service_instance_ssh_key(
        self, info: Info, input: AddServiceInstanceSshKeyInput
    ) -> ServiceInstanceSshKeyPayload:
        key, errors = await attempt(
            instances.add_ssh_key(info.context.actor, input.service, input.name, input.public_key)
        )
        return ServiceInstanceSshKeyPayload(
            ssh_key=ServiceInstanceSshKeyType.of(key) if key else None, user_errors=errors
        )

    @strawberry.mutation(
        description="Removes a key added to a service instance (its owner and the project's admins)."
    )
    async def delete_service_instance_ssh_key(self, info: Info, id: strawberry.ID) -> DeletePayload:
        return await delete_payload(instances.delete_ssh_key(info.context.actor, id))
