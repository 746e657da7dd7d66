"""What answers at the simulated cluster's node ports: nothing runs there, so the process that runs
the workers opens a small HTTP endpoint on 127.0.0.1 at each node port of a web port that should be
up (`Endpoint`). It checks the port's access params as the real server would (JupyterLab's
`?token=`): 200 with a page saying what would run there when they match, 403 when they do not. So
the Connect links of `make run` work as they would on a cluster.

What should be up is asked of `wanted` (the GPU service instances say: service_instances/endpoints.py)
when `woken` is set (the runtime sets it after each commit of its process: `outbox.notify()`), at most
once every `interval` seconds (a burst of commits costs one look), and every `poll` seconds (10 s)
for what other processes commit; so endpoints follow services whichever worker started them and come
back after a restart, and an idle process does not query the database every second. One that is no
longer wanted closes. A port another program holds is
skipped (logged) and tried again later. Only loopback is ever bound.

An SSH port's endpoint is a real SSH server (ssh_endpoint.py, `SshServerEndpoint`) that accepts
exactly the service's authorized keys; new keys replace the old in place, without closing it.

A service's endpoint opens before the service is reported RUNNING (`open_now`, which the simulated
driver awaits once it applied a running service: driver.py `on_service_ready`), so that its
Connect link answers the moment RUNNING is shown; it is held open until `wanted` names it (the
worker writes RUNNING right after) or for `hold` seconds at most, so that a service stopped at once
(or whose RUNNING write failed) does not keep answering for long.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from gpupaas.provisioning.drivers.simulated.ssh_endpoint import (
    SshKeys,
    SshServerEndpoint,
    start_ssh_server,
    stop_ssh_server,
)

__all__ = ["AnyEndpoint", "Endpoint", "SimulatedEndpoints", "SshServerEndpoint", "Wanted"]

log = logging.getLogger("gpupaas.endpoints")
HOST = "127.0.0.1"
_MAX_HEAD = 8192


@dataclass(frozen=True)
class Endpoint:
    service: str  # display name
    image: str
    port: str  # the port's name
    params: tuple[tuple[str, str], ...]  # the access params a request must carry

    def answer(self, target: str) -> tuple[int, str]:
        given = dict(parse_qsl(urlsplit(target).query, keep_blank_values=True))
        name = html.escape(self.service)
        if all(given.get(key) == value for key, value in self.params):
            signed = " You are signed in with the link's access parameters." if self.params else ""
            return 200, (
                f"<h1>{name}</h1><p>Port {html.escape(self.port)} of <code>{html.escape(self.image)}</code> "
                f"would answer here: this is gpupaas's simulated cluster.{signed}</p>"
            )
        missing = ", ".join(html.escape(key) for key, value in self.params if given.get(key) != value)
        return 403, f"<h1>{name}</h1><p>Forbidden: wrong or missing {missing}. Use the Connect link.</p>"


AnyEndpoint = Endpoint | SshServerEndpoint
# Node port -> the endpoint that should answer there.
Wanted = Callable[[], Awaitable[dict[int, AnyEndpoint]]]


class SimulatedEndpoints:
    def __init__(
        self, wanted: Wanted, *, interval: float = 1.0, poll: float = 10.0, hold: float = 10.0
    ) -> None:
        self.wanted = wanted
        self.interval = interval
        self.poll = poll
        # Set when something may have changed what is wanted (see the module's docstring).
        self.woken = asyncio.Event()
        self.hold = hold
        # Node port -> (endpoint, server, the keys an SSH endpoint accepts).
        self._servers: dict[int, tuple[AnyEndpoint, Any, SshKeys | None]] = {}
        # Opened by open_now before `wanted` names them: node port -> (endpoint, held until).
        self._held: dict[int, tuple[AnyEndpoint, float]] = {}
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None

    @property
    def ports(self) -> list[int]:
        return sorted(self._servers)

    async def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="simulated-endpoints")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        for port in list(self._servers):
            await self._close(port)

    async def _loop(self) -> None:
        while True:
            self.woken.clear()
            try:
                await self.reconcile()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("reconciling the simulated endpoints failed; retrying")
            await asyncio.sleep(self.interval)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.woken.wait(), timeout=max(0.0, self.poll - self.interval))

    async def reconcile(self) -> None:
        wanted = await self.wanted()
        async with self._lock:
            moment = asyncio.get_running_loop().time()
            for port, (endpoint, until) in list(self._held.items()):
                if port in wanted or until < moment:
                    del self._held[port]
                else:
                    wanted.setdefault(port, endpoint)
            await self._open(wanted, close_others=True)

    async def open_now(self, endpoints: Mapping[int, AnyEndpoint]) -> None:
        """Opens these endpoints at once (a service about to be reported RUNNING) and holds them
        open until `wanted` names them or `hold` seconds pass. Once this returns, they accept
        connections (unless another program holds the port: logged, tried again later)."""
        async with self._lock:
            until = asyncio.get_running_loop().time() + self.hold
            self._held.update({port: (endpoint, until) for port, endpoint in endpoints.items()})
            await self._open(dict(endpoints), close_others=False)

    async def _open(self, wanted: dict[int, AnyEndpoint], *, close_others: bool) -> None:
        for port, (endpoint, _, keys) in list(self._servers.items()):
            if (close_others and port not in wanted) or (port in wanted and wanted[port] != endpoint):
                await self._close(port)
            elif port in wanted and keys is not None and isinstance(wanted[port], SshServerEndpoint):
                keys.update(wanted[port].authorized_keys)  # type: ignore[union-attr]
        for port, endpoint in wanted.items():
            if port in self._servers:
                continue
            try:
                if isinstance(endpoint, SshServerEndpoint):
                    ssh_server, ssh_keys = await start_ssh_server(endpoint, HOST, port)
                    self._servers[port] = (endpoint, ssh_server, ssh_keys)
                else:
                    server = await asyncio.start_server(self._handler(endpoint), HOST, port)
                    self._servers[port] = (endpoint, server, None)
            except OSError as error:
                log.warning(
                    "cannot open the simulated endpoint %s:%s (%s); trying again later", HOST, port, error
                )

    async def _close(self, port: int) -> None:
        _, server, keys = self._servers.pop(port)
        if keys is not None:
            await stop_ssh_server(server)
            return
        server.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(server.wait_closed(), timeout=2)

    def _handler(self, endpoint: Endpoint):  # type: ignore[no-untyped-def]
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout=5)
                line = head[:_MAX_HEAD].split(b"\r\n", 1)[0].decode("latin-1")
                parts = line.split(" ")
                if len(parts) != 3 or parts[0] not in ("GET", "HEAD"):
                    status, body = 400, "<p>Bad request</p>"
                else:
                    status, body = endpoint.answer(parts[1])
                reason = {200: "OK", 400: "Bad Request", 403: "Forbidden"}[status]
                data = f"<!doctype html><title>{html.escape(endpoint.service)}</title>{body}".encode()
                writer.write(
                    f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\n"
                    f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode()
                    + (data if parts[0] != "HEAD" else b"")
                )
                await writer.drain()
            except (TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                pass
            finally:
                writer.close()
                with contextlib.suppress(Exception):
                    await writer.wait_closed()

        return handle
