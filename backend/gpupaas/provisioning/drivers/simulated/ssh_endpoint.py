"""The simulated cluster's SSH endpoints: what answers at the node port of a service's SSH port.

Nothing runs on the simulated cluster, so, as the HTTP endpoints stand in for web ports
(endpoints.py), a real SSH server (asyncssh) on 127.0.0.1 stands in for the SSH server gpupaas
starts in a service's pod: the same host key (so the fingerprint the API shows is the one a client
sees), the same user, and exactly the keys of the service's authorized_keys (its owner's and those
added to it): any other key, user or a password is refused. A session gets a line saying what would
run there and ends (exit status 0).

The keys are replaced in place (`SshServerEndpoint.keys`), as the pod's Secret volume is, so a key
added while the service runs lets its holder in without the endpoint closing.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field

import asyncssh

__all__ = ["SshKeys", "SshServerEndpoint", "start_ssh_server"]

log = logging.getLogger("gpupaas.endpoints")


class SshKeys:
    """The public keys one endpoint accepts now (their SSH wire blobs), replaced in place."""

    def __init__(self, authorized_keys: str) -> None:
        self.blobs: frozenset[bytes] = frozenset()
        self.update(authorized_keys)

    def update(self, authorized_keys: str) -> None:
        blobs: set[bytes] = set()
        for line in authorized_keys.splitlines():
            if line.strip():
                try:
                    blobs.add(asyncssh.import_public_key(line.strip()).public_data)
                except (asyncssh.KeyImportError, ValueError):
                    log.warning("a key of a simulated SSH endpoint could not be read; skipped")
        self.blobs = frozenset(blobs)


@dataclass(frozen=True)
class SshServerEndpoint:
    """What answers at an SSH port: the service (display name), its image, its user and host key,
    and its authorized_keys (not part of equality: new keys are applied in place)."""

    service: str
    image: str
    port: str  # the port's name
    user: str
    host_key: str  # OpenSSH private key (PEM)
    authorized_keys: str = field(default="", compare=False)


class _Server(asyncssh.SSHServer):
    def __init__(self, endpoint: SshServerEndpoint, keys: SshKeys) -> None:
        self.endpoint = endpoint
        self.keys = keys

    def begin_auth(self, username: str) -> bool:
        return True  # always authenticate

    def password_auth_supported(self) -> bool:
        return False

    def public_key_auth_supported(self) -> bool:
        return True

    def validate_public_key(self, username: str, key: asyncssh.SSHKey) -> bool:
        return username == self.endpoint.user and key.public_data in self.keys.blobs


def _session(endpoint: SshServerEndpoint):  # type: ignore[no-untyped-def]
    def handle(process: asyncssh.SSHServerProcess[str]) -> None:
        process.stdout.write(
            f"{endpoint.service}: you are logged in as {endpoint.user} on port {endpoint.port} of "
            f"{endpoint.image}; this is gpupaas's simulated cluster, nothing runs here.\n"
        )
        process.exit(0)

    return handle


async def start_ssh_server(
    endpoint: SshServerEndpoint, host: str, port: int
) -> tuple[asyncssh.SSHAcceptor, SshKeys]:
    """Starts the endpoint's SSH server; the keys it accepts can be replaced through SshKeys."""
    keys = SshKeys(endpoint.authorized_keys)
    host_key = asyncssh.import_private_key(endpoint.host_key)
    server = await asyncssh.create_server(
        lambda: _Server(endpoint, keys),
        host,
        port,
        server_host_keys=[host_key],
        process_factory=_session(endpoint),
        encoding="utf-8",
        login_timeout=30,
    )
    return server, keys


async def stop_ssh_server(server: asyncssh.SSHAcceptor) -> None:
    server.close()
    with contextlib.suppress(Exception):
        await server.wait_closed()
