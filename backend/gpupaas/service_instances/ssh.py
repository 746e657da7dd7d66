"""SSH access to GPU service instances: the host key, who may log in, the keys added to a service,
and the `ssh` command the Connect panel shows.

A service whose spec declares SSH access (`spec.ssh`: a port and a user) runs an SSH server beside
its command (podspec.py). Its authorized_keys are its owner's keys (ssh_keys: the owner's profile)
and the keys added to the service itself (`add_key`: the owner or a project admin lets someone
else in, a CI runner's key say). The host key is made with the service and kept encrypted at rest
(core.crypto, as the generated values and pull secrets are), so that `ssh` keeps trusting it
across stop, start and restart; the API shows its fingerprint.

Key changes reach running pods without a restart: a change (a key added to or deleted from the
service, to or from its owner's profile, a new owner) queues an APPLY_SSH_KEYS run for each of the
affected services that runs or is about to: it applies the same objects with the new Secret, and
the pod template is unchanged, so nothing rolls out (the kubelet updates the Secret's volume in
place, and the server reads authorized_keys at every login).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable

from tortoise.exceptions import IntegrityError
from tortoise.transactions import in_transaction

from gpupaas.audit import recorder as audit
from gpupaas.clusters.models import Cluster
from gpupaas.core import crypto
from gpupaas.core.actor import Actor
from gpupaas.core.errors import Collector, ErrorCode, Forbidden, UserErrors
from gpupaas.core.ids import parse_id
from gpupaas.events import outbox
from gpupaas.runs import lifecycle as runs
from gpupaas.runs.models import DeploymentRun
from gpupaas.runs.states import RunAction, RunStatus
from gpupaas.service_instances.connect import SshEndpoint, ssh_endpoint
from gpupaas.service_instances.models import ServiceInstance, ServiceInstanceSshKey
from gpupaas.service_instances.run_kind import SERVICES
from gpupaas.service_instances.ssh_material import host_key_fingerprint, host_key_of
from gpupaas.service_instances.states import ServiceStatus
from gpupaas.ssh_keys import service as ssh_keys

__all__ = [
    "MAX_KEYS_PER_SERVICE",
    "add_key",
    "delete_key",
    "keys_changed_for",
    "list_keys",
    "owner_changed",
    "ssh_of",
]

MAX_KEYS_PER_SERVICE = 50
# Statuses in which a service's pod runs (or is about to, with the keys of its start): a key change
# is applied to them at once; a STOPPED or FAILED one gets the keys at its next start.
_APPLY_TO = (ServiceStatus.PENDING, ServiceStatus.STARTING, ServiceStatus.RUNNING)


# ---------------------------------------------------------------- what the API shows


def ssh_of(
    secret_key: str, service: ServiceInstance, cluster: Cluster | None
) -> tuple[SshEndpoint, str] | None:
    """Where and how to log in (the endpoint and the host key's fingerprint), or None: no SSH access,
    STOPPED (nothing answers), no node port or access address yet."""
    spec = service.spec_model()
    if spec.ssh is None or service.status in (ServiceStatus.STOPPED, ServiceStatus.STOPPING):
        return None
    if cluster is None or not cluster.access_address:
        return None
    endpoint = ssh_endpoint(spec, access_address=cluster.access_address, node_ports=service.node_ports)
    if endpoint is None:
        return None
    try:
        host_key = host_key_of(secret_key, service)
    except crypto.DecryptionError:
        return None
    if host_key is None:
        return None
    return endpoint, host_key_fingerprint(host_key)


# ---------------------------------------------------------------- applying key changes


async def _queue_apply(service_ids: Iterable[uuid.UUID]) -> int:
    """Inside the caller's transaction: an APPLY_SSH_KEYS run for each of these services that has
    SSH access, runs (or is about to) and has none queued yet. How many were queued."""
    queued = 0
    for service in await ServiceInstance.filter(id__in=list(service_ids), status__in=list(_APPLY_TO)):
        if service.spec_model().ssh is None:
            continue
        waiting = await DeploymentRun.exists(
            service_id=service.id, action=RunAction.APPLY_SSH_KEYS, status=RunStatus.QUEUED
        )
        if not waiting:
            await runs.queue(SERVICES, service, RunAction.APPLY_SSH_KEYS, reason="its SSH keys changed")
            queued += 1
    return queued


async def keys_changed_for(user_id: uuid.UUID) -> None:
    """The user's profile keys changed (the ssh_keys hook, inside its transaction): the services
    they own get the new keys."""
    owned = await ServiceInstance.filter(owner_id=user_id, status__in=list(_APPLY_TO))
    await _queue_apply([service.id for service in owned])


async def owner_changed(service_id: uuid.UUID) -> None:
    """Inside the caller's transaction: the service has a new owner, so new keys."""
    await _queue_apply([service_id])


# ---------------------------------------------------------------- keys added to a service


NAME = ("input", "name")
KEY = ("input", "publicKey")


async def list_keys(service: ServiceInstance) -> list[ServiceInstanceSshKey]:
    """The keys added to a service the caller sees (by name)."""
    return await ServiceInstanceSshKey.filter(service_id=service.id).order_by("name", "created_at")


async def add_key(
    actor: Actor, service: ServiceInstance, name: str | None, text: str, *, manages: bool
) -> ServiceInstanceSshKey:
    """Adds a key to the service (its owner and its project's admins: `manages`); the key is parsed
    and checked as profile keys are, and applied to its pod at once when it runs."""
    user = actor.require_user()
    if not manages:
        raise Forbidden(
            f'Only the owner of service instance "{service.name}" or an admin of its project may add '
            "SSH keys to it."
        )
    if service.spec_model().ssh is None:
        raise UserErrors.one(
            ("input", "service"),
            f'service instance "{service.name}" has no SSH access: its template declares none',
            ErrorCode.INVALID_STATE,
        )
    problems = Collector()
    name, parsed = ssh_keys.checked(name, text, problems)
    problems.raise_if_any()
    assert parsed is not None
    same = await ServiceInstanceSshKey.filter(service_id=service.id, fingerprint=parsed.fingerprint).first()
    if same is not None:
        raise UserErrors.one(
            KEY, f'this key was already added, as "{same.name}" ({parsed.fingerprint})', ErrorCode.TAKEN
        )
    if await ServiceInstanceSshKey.exists(service_id=service.id, name=name):
        raise UserErrors.one(NAME, f'the service already has a key named "{name}"', ErrorCode.TAKEN)
    if await ServiceInstanceSshKey.filter(service_id=service.id).count() >= MAX_KEYS_PER_SERVICE:
        raise UserErrors.one(
            KEY,
            f"the service has {MAX_KEYS_PER_SERVICE} keys, the most it may have: delete one first",
            ErrorCode.INVALID_STATE,
        )
    try:
        async with in_transaction():
            key = await ServiceInstanceSshKey.create(
                service_id=service.id,
                added_by_id=user.id,
                name=name,
                key_type=parsed.key_type,
                bits=parsed.bits,
                fingerprint=parsed.fingerprint,
                public_key=parsed.line,
            )
            await audit.record(
                "ServiceInstanceSshKey",
                key.id,
                f"{service.name}/{name}",
                project=service.project,
                after={**audit.fields_of(key), "service": service.name},
            )
            await _queue_apply([service.id])
    except IntegrityError:  # the same key or name, added at the same moment
        raise UserErrors.one(KEY, "this key, or one of this name, was just added", ErrorCode.TAKEN) from None
    outbox.notify()
    return key


async def key_of(key_id: str) -> ServiceInstanceSshKey | None:
    kid = parse_id(key_id)
    return await ServiceInstanceSshKey.get_or_none(id=kid) if kid is not None else None


async def delete_key(
    actor: Actor, service: ServiceInstance, key: ServiceInstanceSshKey, *, manages: bool
) -> str:
    """Removes a key from the service (its owner and its project's admins); applied at once."""
    actor.require_user()
    if not manages:
        raise Forbidden(
            f'Only the owner of service instance "{service.name}" or an admin of its project may '
            "delete its SSH keys."
        )
    async with in_transaction():
        if not await ServiceInstanceSshKey.filter(id=key.id).delete():
            raise UserErrors.one(("id",), "No such SSH key.", ErrorCode.NOT_FOUND)
        await audit.record(
            "ServiceInstanceSshKey",
            key.id,
            f"{service.name}/{key.name}",
            project=service.project,
            before={**audit.fields_of(key), "service": service.name},
        )
        await _queue_apply([service.id])
    outbox.notify()
    return str(key.id)
