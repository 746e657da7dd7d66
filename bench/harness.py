"""What the benchmarks share: the error they stop with, the processes they start (stopped on any
exit), ports, /proc readings, logs, the environment they hand to `gpupaas serve`, scratch
databases, a GraphQL client for set-up and SIGTERM handling. Imported by the scripts of this
folder (run as `python bench/<name>.py`)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

CLK_TCK = os.sysconf("SC_CLK_TCK")

children: list[subprocess.Popen[bytes]] = []  # processes started, stopped on any exit


class BenchError(RuntimeError):
    """The benchmark could not run to the end; the message says why."""


async def status_events(
    ws: Any, field: str, clock: Callable[[], float]
) -> AsyncIterator[tuple[float, dict[str, Any]]]:
    """The events of the status subscription `field` on a graphql-transport-ws socket, each with
    `clock()` when it was read: pings answered, the SNAPSHOT it starts with skipped, and a
    BenchError when the subscription ends, errs or the socket closes."""
    async for raw in ws:
        received = clock()
        message = json.loads(raw)
        kind = message.get("type")
        if kind == "ping":
            await ws.send(json.dumps({"type": "pong"}))
            continue
        if kind in ("error", "complete"):
            raise BenchError(f"the subscription ended: {message}")
        if kind != "next":
            continue
        payload = message["payload"]
        if payload.get("errors"):
            raise BenchError(f"subscription errors: {payload['errors']}")
        event = payload["data"][field]
        if event.get("source") == "SNAPSHOT":
            continue
        yield received, event
    raise BenchError("the websocket closed")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError as error:
        raise BenchError(f"cannot read /proc/{pid}/stat: {error}") from None
    # after the ")" of comm: field 3 (state) is index 0, so utime (14) and stime (15) are 11 and 12
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def stop_process(
    process: subprocess.Popen[bytes], sig: signal.Signals = signal.SIGINT, timeout: float = 15.0
) -> None:
    """`sig`, then SIGKILL if the process is still there after `timeout` seconds."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(sig)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
    with contextlib.suppress(ValueError):
        children.remove(process)


def stop_all_children() -> None:
    for process in reversed(list(children)):
        stop_process(process)


def tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def base_env() -> dict[str, str]:
    """This environment without any GPUPAAS_* variable (the bench sets its own) and without proxies."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("GPUPAAS_") and k.lower() not in ("http_proxy", "https_proxy", "all_proxy")
    }


async def _admin_execute(url: str, sql: str) -> None:
    import asyncpg  # type: ignore[import-untyped]

    conn = await asyncpg.connect(url.replace("postgres://", "postgresql://", 1), timeout=10)
    try:
        await conn.execute(sql, timeout=30)
    finally:
        await conn.close()


@contextlib.asynccontextmanager
async def scratch_database(admin_url: str | None, workdir: Path) -> AsyncIterator[str]:
    """A fresh SQLite file in `workdir`, or a scratch database on the PostgreSQL server of
    `admin_url` (created here, dropped at the end)."""
    if admin_url is None:
        yield f"sqlite://{workdir / 'gpupaas.db'}"
        return
    name = f"gpupaas_bench_{uuid.uuid4().hex[:10]}"
    base = admin_url.replace("postgresql://", "postgres://", 1).rpartition("/")[0]
    await _admin_execute(admin_url, f'CREATE DATABASE "{name}"')
    try:
        yield f"{base}/{name}"
    finally:
        await _admin_execute(admin_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class GraphQL:
    """Set-up requests to a `gpupaas serve` as the bench user (API token): data, or BenchError on an
    HTTP error, GraphQL errors or a payload's userErrors. `connections`: the pool's size."""

    def __init__(self, url: str, token: str, connections: int = 10) -> None:
        import httpx  # here: the --client processes that import this file do not need it

        limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
        self.http = httpx.AsyncClient(
            base_url=url,
            trust_env=False,
            timeout=30.0,
            limits=limits,
            headers={"Authorization": f"Bearer {token}"},
        )

    async def close(self) -> None:
        await self.http.aclose()

    async def __call__(self, query: str, variables: dict[str, Any]) -> dict[str, Any]:
        response = await self.http.post("/graphql", json={"query": query, "variables": variables})
        if response.status_code != 200:
            raise BenchError(f"GraphQL answered {response.status_code}: {response.text[:500]}")
        body: dict[str, Any] = response.json()
        if body.get("errors"):
            raise BenchError(f"GraphQL errors: {body['errors']}")
        data: dict[str, Any] = body["data"]
        return data

    async def payload(self, query: str, variables: dict[str, Any], name: str) -> dict[str, Any]:
        result: dict[str, Any] = (await self(query, variables))[name]
        if result.get("userErrors"):
            raise BenchError(f"{name}: {result['userErrors']}")
        return result


@contextlib.contextmanager
def terminate_on_sigterm() -> Iterator[None]:
    """SIGTERM ends the run as Ctrl-C does, so that the `finally` blocks stop what was started."""

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
