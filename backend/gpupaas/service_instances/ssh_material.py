"""What a service's SSH server is rendered with (podspec.SshSetup): its host key, made with the
service and kept encrypted at rest (core.crypto), and its authorized_keys: the owner's keys (their
profile, ssh_keys) and then those added to the service. ssh.py has the rules around them."""

from __future__ import annotations

import base64
import hashlib

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from gpupaas.core import crypto
from gpupaas.service_instances.models import ServiceInstance, ServiceInstanceSshKey
from gpupaas.service_instances.podspec import SshSetup
from gpupaas.ssh_keys import keys as key_lines
from gpupaas.ssh_keys.models import SshPublicKey

__all__ = [
    "authorized_keys",
    "host_key_fingerprint",
    "host_key_of",
    "new_host_key",
    "sealed_host_key",
    "setup_for",
]


# ---------------------------------------------------------------- host key


def new_host_key() -> str:
    """A new ed25519 host key, as an OpenSSH private key (PEM)."""
    key = ed25519.Ed25519PrivateKey.generate()
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH, serialization.NoEncryption()
    ).decode()


def sealed_host_key(secret_key: str) -> str:
    """A new host key, encrypted for the database."""
    return crypto.encrypt(secret_key, new_host_key())


def host_key_fingerprint(host_key: str) -> str:
    """The host key's fingerprint as `ssh` shows it when it first connects (SHA256:...)."""
    private = serialization.load_ssh_private_key(host_key.encode(), password=None)
    line = private.public_key().public_bytes(
        serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH
    )
    blob = base64.b64decode(line.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def host_key_of(secret_key: str, service: ServiceInstance) -> str | None:
    """The service's host key (a secret), or None when it has none."""
    if not service.ssh_host_key:
        return None
    return crypto.decrypt(secret_key, service.ssh_host_key)


# ---------------------------------------------------------------- authorized keys


async def authorized_keys(service: ServiceInstance) -> str:
    """The authorized_keys file of the service: its owner's keys, then the keys added to it."""
    lines: list[str] = []
    if service.owner_id is not None:
        lines += [
            str(line)
            for line in await SshPublicKey.filter(user_id=service.owner_id)
            .order_by("name", "created_at")
            .values_list("public_key", flat=True)
        ]
    lines += [
        str(line)
        for line in await ServiceInstanceSshKey.filter(service_id=service.id)
        .order_by("name", "created_at")
        .values_list("public_key", flat=True)
    ]
    return key_lines.authorized_keys(lines)


async def setup_for(service: ServiceInstance, secret_key: str, image: str) -> SshSetup | None:
    """What the worker renders for a service with SSH access (None without): the tools image, its
    authorized_keys now and its host key (made now for a service from before it had one)."""
    if service.spec_model().ssh is None:
        return None
    host_key = host_key_of(secret_key, service)
    if host_key is None:
        host_key = new_host_key()
        service.ssh_host_key = crypto.encrypt(secret_key, host_key)
        await ServiceInstance.filter(id=service.id).update(ssh_host_key=service.ssh_host_key)
    return SshSetup(image=image, authorized_keys=await authorized_keys(service), host_key=host_key)
