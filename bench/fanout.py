"""Live-status fan-out benchmark: how one `gpupaas serve` delivers status events to many websocket
subscribers of `computeInstanceEvents(project:)`.

For each number of subscribers N it starts, in a fresh temporary directory, `gpupaas serve` as a
subprocess (in-process bus, its worker on, simulated driver with zero-delay phases, a fresh SQLite
file), creates an admin, a token and a project with the CLI, and through GraphQL a CPU-only
compute profile on the built-in `gpu-namespace` template and one compute instance. A separate
client process (this file with `--client`: one asyncio loop, uvloop when installed) opens N
graphql-transport-ws connections, each with one subscription. Probe events (new, undeployed
instances) prove that every subscription is live. Then the instance is deployed and destroyed
(WAITING, IN_PROGRESS, SUCCESS; DESTROYING, NOT_DEPLOYED), one operation at a time, each waited
for until every subscriber has its final status, until E status events have been made. For every
event and every subscriber the delay runs from the event's `at` (when the server wrote the status;
same machine clock) to its receipt.

    .venv/bin/python bench/fanout.py [--subscribers 200 500 1000] [--events 100] [--memory-events 1000]
        [--selections 1]

The server executes and serializes each event once per distinct selection, not once per subscriber
(gpupaas/graphql/fanout.py): with --selections K the subscribers are spread over K selections of
the same fields in different orders, so that each event is executed K times.

It prints figures and asserts nothing about speed; it fails (exit status 1) when a subscriber
missed an event or a step does not finish within its timeout. All traffic stays on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import resource
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from array import array
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from harness import (
    BenchError,
    GraphQL,
    base_env,
    children,
    cpu_seconds,
    free_port,
    stop_all_children,
    stop_process,
    tail,
    terminate_on_sigterm,
)

HOST = "127.0.0.1"
PROJECT = "bench"
CLIENT_SCRIPT = str(Path(__file__).resolve())  # run with --client: the subscribers


# The subscribers' selection, and the same fields in other orders (--selections): 36 variants.
VARIANTS = list(
    itertools.product(
        itertools.permutations(("status", "at", "instance")), itertools.permutations(("id", "name", "status"))
    )
)


def subscription(variant: int) -> str:
    """The subscribers' operation; variant 0 is `{ status at instance { id name status } source }`
    (`source`: a subscription starts with a SNAPSHOT of the project's instances, which the client
    skips: only LIVE events are probes or measured)."""
    outer, inner = VARIANTS[variant]
    fields = " ".join(f"instance {{ {' '.join(inner)} }}" if name == "instance" else name for name in outer)
    return f"subscription($p: String!) {{ computeInstanceEvents(project: $p) {{ {fields} source }} }}"


DEPLOY = """
mutation($id: ID!) {
  deployComputeInstance(id: $id) { computeInstance { id status } userErrors { field message } }
}
"""
DESTROY = """
mutation($id: ID!) {
  destroyComputeInstance(id: $id) { computeInstance { id status } userErrors { field message } }
}
"""
CREATE_INSTANCE = """
mutation($input: CreateComputeInstanceInput!) {
  createComputeInstance(input: $input) { computeInstance { id status } userErrors { field message } }
}
"""
CREATE_PROFILE = """
mutation($input: CreateComputeProfileInput!) {
  createComputeProfile(input: $input) { computeProfile { id } userErrors { field message } }
}
"""
TEMPLATES = """
query($project: String!) {
  environmentTemplates(project: $project) { name builtIn versions { id version state } }
}
"""
# The status that ends each operation, and the events it makes.
DEPLOY_EVENTS = ("WAITING", "IN_PROGRESS", "SUCCESS")
DESTROY_EVENTS = ("DESTROYING", "NOT_DEPLOYED")
FINAL = ("SUCCESS", "NOT_DEPLOYED")


def percentile(values: Any, q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return float(ordered[low] + (ordered[high] - ordered[low]) * (rank - low))


def raise_fd_limit() -> None:
    """Each subscriber is a socket in the client and in the server (children inherit the limit)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else 65536
    if soft != resource.RLIM_INFINITY and soft < wanted:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


# ================================================================================ the client process
#
# Commands come on stdin and answers go to stdout, one JSON object a line; the answer has "ok".
# Nothing else may write to stdout (logs go to stderr).


class Phase:
    """What the subscribers received while one phase (warm-up, measure, memory) ran."""

    def __init__(self, name: str, subscribers: int) -> None:
        self.name = name
        self.delays = array("d")  # seconds, `at` -> receipt, every receipt
        self.events: dict[str, list[Any]] = {}  # status|at -> [receipts, largest delay]
        self.received = [0] * subscribers
        self.finals = {status: [0] * subscribers for status in FINAL}
        self.reached: dict[tuple[str, int], int] = {}  # (status, k): subscribers with k of them
        self.at_cache: dict[str, float] = {}


class Client:
    def __init__(self, url: str, token: str, project: str, instance_id: str, selections: int) -> None:
        self.ws_url = url.replace("http://", "ws://", 1) + "/graphql"
        self.token = token
        self.project = project
        self.instance_id = instance_id
        self.selections = selections
        self.sockets: list[Any] = []
        self.readers: list[asyncio.Task[None]] = []
        self.probed: list[bool] = []
        self.probed_count = 0
        self.phase: Phase | None = None
        self.waiters: dict[tuple[str, int], asyncio.Future[None]] = {}
        self.probe_waiter: asyncio.Future[None] | None = None
        self.failure: str | None = None  # a FAILED status, a subscription error or a closed socket
        self.closing = False
        self.pongs: set[asyncio.Task[None]] = set()

    # ---------------------------------------------------------------- connections

    async def open(self, count: int, parallel: int = 64) -> None:
        import websockets
        from websockets.asyncio.client import connect

        first = len(self.sockets)
        self.sockets.extend([None] * count)
        self.probed.extend([False] * count)
        init = json.dumps({"type": "connection_init", "payload": {"authorization": f"Bearer {self.token}"}})
        subscribe = [
            json.dumps(
                {
                    "id": "1",
                    "type": "subscribe",
                    "payload": {"query": subscription(variant), "variables": {"p": self.project}},
                }
            )
            for variant in range(self.selections)
        ]
        gate = asyncio.Semaphore(parallel)

        async def one(index: int) -> None:
            async with gate:
                ws = await connect(
                    self.ws_url,
                    subprotocols=[websockets.Subprotocol("graphql-transport-ws")],
                    proxy=None,
                    compression=None,
                    open_timeout=30,
                    ping_interval=None,  # no client pings: they would cost the server CPU too
                    max_queue=None,
                )
                self.sockets[index] = ws
                await ws.send(init)
                ack = json.loads(await asyncio.wait_for(ws.recv(), 30))
                if ack.get("type") != "connection_ack":
                    raise RuntimeError(f"subscriber {index}: websocket not accepted: {ack}")
                await ws.send(subscribe[index % self.selections])
                self.readers.append(asyncio.create_task(self.read(index, ws)))

        await asyncio.gather(*(one(i) for i in range(first, first + count)))

    async def close(self) -> None:
        self.closing = True
        sockets = [ws for ws in self.sockets if ws is not None]
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(20):
                await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
        for task in self.readers:
            task.cancel()
        await asyncio.gather(*self.readers, return_exceptions=True)

    async def read(self, index: int, ws: Any) -> None:
        clock = time.time
        loads = json.loads
        try:
            async for raw in ws:
                self.receive(index, loads(raw), clock())
            if not self.closing:
                self.fail(
                    f"subscriber {index}: the server closed the websocket ({ws.close_code} {ws.close_reason})"
                )
        except asyncio.CancelledError:
            raise
        except Exception as error:
            if not self.closing:
                self.fail(f"subscriber {index}: {type(error).__name__}: {error}")

    # ---------------------------------------------------------------- messages

    def receive(self, index: int, message: dict[str, Any], moment: float) -> None:
        kind = message.get("type")
        if kind != "next":
            if kind == "ping":
                task = asyncio.create_task(self.sockets[index].send('{"type":"pong"}'))
                self.pongs.add(task)
                task.add_done_callback(self.pongs.discard)
            elif kind in ("error", "complete"):
                self.fail(f"subscriber {index}: the subscription ended: {message}")
            return
        payload = message["payload"]
        if payload.get("errors"):
            self.fail(f"subscriber {index}: subscription errors: {payload['errors']}")
            return
        event = payload["data"]["computeInstanceEvents"]
        if event["source"] == "SNAPSHOT":  # what the project holds when the subscription starts
            return
        if event["instance"]["id"] != self.instance_id:  # a probe
            if not self.probed[index]:
                self.probed[index] = True
                self.probed_count += 1
                waiter = self.probe_waiter
                if waiter is not None and not waiter.done() and self.probed_count == len(self.sockets):
                    waiter.set_result(None)
            return
        phase = self.phase
        if phase is None or index >= len(phase.received):
            return  # no phase, or a subscriber opened after it began (its snapshot): not part of it
        status, at = event["status"], event["at"]
        stamp = phase.at_cache.get(at)
        if stamp is None:
            stamp = phase.at_cache[at] = datetime.fromisoformat(at).timestamp()
        delay = moment - stamp
        phase.delays.append(delay)
        key = f"{status}|{at}"
        seen = phase.events.get(key)
        if seen is None:
            phase.events[key] = [1, delay]
        else:
            seen[0] += 1
            if delay > seen[1]:
                seen[1] = delay
        phase.received[index] += 1
        finals = phase.finals.get(status)
        if finals is not None:
            finals[index] += 1
            reached_key = (status, finals[index])
            reached = phase.reached[reached_key] = phase.reached.get(reached_key, 0) + 1
            if reached == len(self.sockets):
                waiter = self.waiters.pop(reached_key, None)
                if waiter is not None and not waiter.done():
                    waiter.set_result(None)
        elif status == "FAILED":
            self.fail(f"the instance FAILED (seen by subscriber {index}): {event}")

    def fail(self, reason: str) -> None:
        if self.failure is None:
            self.failure = reason
        error = RuntimeError(self.failure)
        for waiter in [*self.waiters.values(), self.probe_waiter]:
            if waiter is not None and not waiter.done():
                waiter.set_exception(error)
        self.waiters.clear()

    # ---------------------------------------------------------------- commands

    async def probe_wait(self, timeout: float) -> dict[str, Any]:
        if self.probed_count < len(self.sockets):
            self.probe_waiter = asyncio.get_running_loop().create_future()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self.probe_waiter), timeout)
            if self.probe_waiter.done() and self.probe_waiter.exception() is not None:
                raise RuntimeError(self.failure)
            self.probe_waiter = None
        return {"probed": self.probed_count, "subscribers": len(self.sockets)}

    async def wait(self, status: str, count: int, timeout: float) -> dict[str, Any]:
        if self.failure is not None:
            raise RuntimeError(self.failure)
        phase = self.phase
        assert phase is not None
        key = (status, count)
        if phase.reached.get(key, 0) < len(self.sockets):
            waiter = self.waiters.setdefault(key, asyncio.get_running_loop().create_future())
            try:
                await asyncio.wait_for(asyncio.shield(waiter), timeout)
            except TimeoutError:
                self.waiters.pop(key, None)
                behind = len(self.sockets) - phase.reached.get(key, 0)
                raise RuntimeError(
                    f"{behind} of {len(self.sockets)} subscribers had not received {status} number "
                    f"{count} of phase {phase.name} within {timeout:.0f}s"
                ) from None
        return {}

    def report(self, expected: int) -> dict[str, Any]:
        phase = self.phase
        assert phase is not None
        ms = 1000.0
        delays = phase.delays
        whole = [largest for receipts, largest in phase.events.values() if receipts == len(self.sockets)]
        missed = [max(expected - got, 0) for got in phase.received]
        extra = sum(max(got - expected, 0) for got in phase.received)
        return {
            "receipts": len(delays),
            "p50": percentile(delays, 50) * ms,
            "p90": percentile(delays, 90) * ms,
            "p99": percentile(delays, 99) * ms,
            "max": (max(delays) * ms) if delays else float("nan"),
            "events_seen": len(phase.events),
            "all_p50": percentile(whole, 50) * ms,
            "all_p99": percentile(whole, 99) * ms,
            "missed": sum(missed),
            "missed_max": max(missed, default=0),
            "missed_subscribers": sum(1 for m in missed if m),
            "extra": extra,
        }

    async def handle(self, command: dict[str, Any]) -> dict[str, Any]:
        name = command["cmd"]
        if name == "open":
            started = time.perf_counter()
            try:
                async with asyncio.timeout(command["timeout"]):
                    await self.open(command["count"])
            except TimeoutError:
                raise RuntimeError(
                    f"opening {command['count']} subscriptions took more than {command['timeout']:.0f}s"
                ) from None
            return {"subscribers": len(self.sockets), "seconds": time.perf_counter() - started}
        if name == "probe_wait":
            return await self.probe_wait(command["timeout"])
        if name == "phase":
            if self.failure is not None:
                raise RuntimeError(self.failure)
            self.phase = Phase(command["name"], len(self.sockets))
            return {}
        if name == "wait":
            return await self.wait(command["status"], command["count"], command["timeout"])
        if name == "report":
            return self.report(command["expected"])
        raise RuntimeError(f"unknown command {name!r}")


def answer(reply: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()


async def client_main() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    line = await reader.readline()
    if not line:
        return
    init = json.loads(line)
    client = Client(init["url"], init["token"], init["project"], init["instance"], init["selections"])
    answer({"ok": True, "loop": type(loop).__module__.split(".")[0], "pid": os.getpid()})
    try:
        while line := await reader.readline():
            command = json.loads(line)
            if command["cmd"] == "quit":
                break
            try:
                reply = {"ok": True, **await client.handle(command)}
            except Exception as error:
                reply = {"ok": False, "error": f"{type(error).__name__}: {error}"}
            answer(reply)
    finally:
        await client.close()
    answer({"ok": True})


def run_client() -> int:
    raise_fd_limit()
    try:
        import uvloop
    except ImportError:
        asyncio.run(client_main())
    else:
        uvloop.run(client_main())
    return 0


# ================================================================================ the driver


def rss_kb(pid: int) -> int:
    """VmRSS of a process in KB, from /proc."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError as error:
        raise BenchError(f"cannot read /proc/{pid}/status: {error}") from None
    raise BenchError(f"no VmRSS in /proc/{pid}/status")


@dataclass
class Server:
    env: dict[str, str]
    workdir: Path
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def log(self) -> Path:
        return self.workdir / "server.log"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    async def start(self, timeout: float = 60.0) -> None:
        argv = [sys.executable, "-m", "gpupaas.cli", "serve", "--host", HOST, "--port", str(self.port)]
        with self.log.open("ab") as out:
            # A session of its own: Ctrl-C reaches only this script, which then stops the server.
            self.process = subprocess.Popen(  # noqa: S603, ASYNC220 - fixed argv; returns at once
                [*argv, "--log-level", "warning"],
                env=self.env,
                cwd=self.workdir,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        children.append(self.process)
        deadline = time.monotonic() + timeout
        async with httpx.AsyncClient(base_url=self.url, trust_env=False, timeout=2.0) as http:
            while True:
                if self.process.poll() is not None:
                    raise BenchError(
                        f"gpupaas serve exited with {self.process.returncode}:\n{tail(self.log)}"
                    )
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get("/readyz")).status_code == 200:
                        return
                if time.monotonic() > deadline:
                    raise BenchError(f"gpupaas serve not ready within {timeout}s:\n{tail(self.log)}")
                await asyncio.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process)

    def alive(self) -> None:
        if self.process is not None and self.process.poll() is not None:
            raise BenchError(f"gpupaas serve exited with {self.process.returncode}:\n{tail(self.log)}")

    async def explain(self, grace: float = 1.0) -> None:
        """After a failure: raises "gpupaas serve exited" when it did (within `grace` seconds: its
        sockets close a moment before it can be reaped)."""
        deadline = time.monotonic() + grace
        while True:
            self.alive()
            if time.monotonic() > deadline:
                return
            await asyncio.sleep(0.05)

    async def cli(self, *args: str, stdin: str | None = None, timeout: float = 60.0) -> str:
        """Runs a `gpupaas` command against the server's database; its stdout (stderr to cli.log)."""
        log = self.workdir / "cli.log"
        with log.open("ab") as errors:
            errors.write(f"$ gpupaas {' '.join(args)}\n".encode())
            errors.flush()
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "gpupaas.cli",
                *args,
                env=self.env,
                cwd=self.workdir,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=errors,
            )
            try:
                out, _ = await asyncio.wait_for(
                    process.communicate(stdin.encode() if stdin else None), timeout
                )
            except TimeoutError:
                process.kill()
                await process.wait()
                raise BenchError(f"gpupaas {args[0]} took more than {timeout}s:\n{tail(log)}") from None
        if process.returncode != 0:
            raise BenchError(f"gpupaas {' '.join(args)} failed:\n{tail(log)}")
        return out.decode().strip()


class ClientProcess:
    """The subscribers: this file with --client, spoken to over its stdin and stdout."""

    def __init__(self, process: asyncio.subprocess.Process, log: Path) -> None:
        self.process = process
        self.log = log
        self.loop_name = "?"

    @property
    def pid(self) -> int:
        return self.process.pid

    @classmethod
    async def start(cls, workdir: Path, init: dict[str, str]) -> ClientProcess:
        log = workdir / "client.log"
        with log.open("ab") as errors:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                CLIENT_SCRIPT,
                "--client",
                env=base_env(),
                cwd=workdir,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=errors,
                start_new_session=True,
                limit=1 << 20,
            )
        client = cls(process, log)
        try:
            reply = await client.send(init, 30)
        except BaseException:
            await client.stop()
            raise
        client.loop_name = reply.get("loop", "?")
        return client

    async def send(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        try:
            self.process.stdin.write((json.dumps(message) + "\n").encode())
            await self.process.stdin.drain()
            line = await asyncio.wait_for(self.process.stdout.readline(), timeout)
        except TimeoutError:
            raise BenchError(
                f"the client did not answer {message.get('cmd', 'init')!r} within {timeout:.0f}s:\n"
                f"{tail(self.log)}"
            ) from None
        except (BrokenPipeError, ConnectionResetError):
            line = b""
        if not line:
            await asyncio.sleep(0.2)
            raise BenchError(f"the client process exited ({self.process.returncode}):\n{tail(self.log)}")
        reply: dict[str, Any] = json.loads(line)
        if not reply.get("ok"):
            raise BenchError(f"client: {reply.get('error')}")
        return reply

    async def __call__(self, cmd: str, timeout: float, **args: Any) -> dict[str, Any]:
        # The client applies `timeout` itself; this one only guards against a stuck client.
        return await self.send({"cmd": cmd, "timeout": timeout, **args}, timeout + 30)

    async def stop(self) -> None:
        """quit (the client closes its websockets), then SIGKILL after 40 s."""
        if self.process.returncode is None:
            with contextlib.suppress(BenchError, OSError):
                await self.send({"cmd": "quit"}, 40)
            try:
                await asyncio.wait_for(self.process.wait(), 10)
            except TimeoutError:
                self.process.kill()
                await self.process.wait()


# ------------------------------------------------------------------------------------ one N


@dataclass
class PhaseResult:
    events: int  # status events made
    seconds: float  # first mutation -> last final status at every subscriber
    server_cpu: float
    client_cpu: float
    stats: dict[str, Any]


@dataclass
class Result:
    subscribers: int
    open_seconds: float
    rss_before: int  # KB, one subscriber, after the warm-up
    rss_subscribed: int  # KB, all subscribers
    measured: PhaseResult
    memory: PhaseResult | None = None
    rss_memory_before: int = 0
    rss_memory_after: int = 0
    client_loop: str = "?"


class Driver:
    """Deploys and destroys the instance, one operation at a time, each waited for at every subscriber."""

    def __init__(
        self,
        server: Server,
        gql: GraphQL,
        client: ClientProcess,
        ids: tuple[str, str],
        timeout: float,
    ) -> None:
        self.profile_id, self.instance_id = ids
        self.server = server
        self.gql = gql
        self.client = client
        self.timeout = timeout
        self.deployed = False
        self.probes = 0

    async def probe(self, total_timeout: float) -> None:
        """New undeployed instances (one event each) until every subscriber has got one."""
        deadline = time.monotonic() + total_timeout
        while True:
            self.server.alive()
            self.probes += 1
            await self.gql.payload(
                CREATE_INSTANCE,
                {
                    "input": {
                        "project": PROJECT,
                        "profile": self.profile_id,
                        "name": f"probe-{self.probes:04d}",
                    }
                },
                "createComputeInstance",
            )
            reply = await self.client("probe_wait", 2.0)
            if reply["probed"] == reply["subscribers"]:
                return
            if time.monotonic() > deadline:
                raise BenchError(
                    f"only {reply['probed']} of {reply['subscribers']} subscribers got a probe event "
                    f"within {total_timeout:.0f}s ({self.probes} probes)"
                )

    async def phase(self, name: str, target: int) -> PhaseResult:
        """Operations until at least `target` events were made; CPU over exactly that window."""
        await self.client("phase", 10, name=name)
        counts = dict.fromkeys(FINAL, 0)
        made = 0
        server_cpu0, client_cpu0 = cpu_seconds(self.server.pid), cpu_seconds(self.client.pid)
        started = time.perf_counter()
        while made < target:
            if self.deployed:
                mutation, field_, answered = DESTROY, "destroyComputeInstance", "DESTROYING"
                events: tuple[str, ...] = DESTROY_EVENTS
            else:
                mutation, field_, answered = DEPLOY, "deployComputeInstance", "WAITING"
                events = DEPLOY_EVENTS
            result = await self.gql.payload(mutation, {"id": self.instance_id}, field_)
            if result["computeInstance"]["status"] != answered:
                raise BenchError(
                    f"{field_} answered status {result['computeInstance']['status']}, expected {answered}"
                )
            final = events[-1]
            counts[final] += 1
            made += len(events)
            self.deployed = not self.deployed
            await self.client("wait", self.timeout, status=final, count=counts[final])
        seconds = time.perf_counter() - started
        server_cpu = cpu_seconds(self.server.pid) - server_cpu0
        client_cpu = cpu_seconds(self.client.pid) - client_cpu0
        # A late, missed or duplicated event would still land in the counts: let stragglers arrive.
        await asyncio.sleep(0.2)
        stats = await self.client("report", 60, expected=made)
        return PhaseResult(made, seconds, server_cpu, client_cpu, stats)


async def run_one(n: int, memory_events: int, args: argparse.Namespace) -> Result:
    """One N, in a temporary directory that is removed afterwards (kept, with its logs, when the run
    fails or with --keep)."""
    workdir = Path(tempfile.mkdtemp(prefix=f"gpupaas-fanout-{n}-"))
    keep = args.keep
    try:
        return await measure(n, memory_events, args, workdir)
    except BaseException:
        keep = True
        for name in ("server.log", "client.log"):
            log = workdir / name
            if log.exists() and log.stat().st_size:
                print(f"--- N={n}: last lines of {log}:\n{tail(log)}", file=sys.stderr)
        raise
    finally:
        if keep:
            print(f"(N={n}: files kept in {workdir})", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)


async def measure(n: int, memory_events: int, args: argparse.Namespace, workdir: Path) -> Result:
    def progress(text: str) -> None:
        print(f"N={n}: {text}", file=sys.stderr, flush=True)

    async with contextlib.AsyncExitStack() as stack:
        # Unwound in reverse: the client, the HTTP client, then the server.
        env = base_env()
        env.update(
            {
                "GPUPAAS_DATABASE_URL": f"sqlite://{workdir / 'gpupaas.db'}",
                "GPUPAAS_SECRET_KEY": secrets.token_hex(32),
                "GPUPAAS_SIMULATED_PHASE_SECONDS": "0",
                "GPUPAAS_SIMULATED_ENDPOINTS": "false",
                "GPUPAAS_RUN_WORKER": "true",
                "GPUPAAS_GRAPHIQL": "false",
            }
        )
        env.update(dict(item.split("=", 1) for item in args.server_env))
        server = Server(env, workdir)
        stack.callback(server.stop)
        progress("starting gpupaas serve ...")
        await server.start()
        try:
            password = f"bench password {secrets.token_hex(8)}\n"
            await server.cli(
                "create-user", "--username", "bench", "--platform-admin", "--password-stdin", stdin=password
            )
            token = await server.cli("create-token", "--username", "bench", "--name", "bench")
            await server.cli("create-project", PROJECT)
            gql = GraphQL(server.url, token)
            stack.push_async_callback(gql.close)
            profile_id, instance_id = await prepare(gql)

            client = await ClientProcess.start(
                workdir,
                {
                    "url": server.url,
                    "token": token,
                    "project": PROJECT,
                    "instance": instance_id,
                    "selections": args.selections,
                },
            )
            stack.push_async_callback(client.stop)
            driver = Driver(server, gql, client, (profile_id, instance_id), args.timeout)

            # One subscriber first, and a deploy and destroy: the server's first-use costs (imports,
            # caches, the worker's first render) stay out of the figures.
            await client("open", args.timeout, count=1)
            await driver.probe(args.timeout)
            await driver.phase("warm-up", len(DEPLOY_EVENTS) + len(DESTROY_EVENTS))
            await asyncio.sleep(0.5)
            rss_before = rss_kb(server.pid)

            progress(f"opening {n - 1} more subscriptions ...")
            opened = await client("open", args.timeout + n * 0.1, count=n - 1)
            await driver.probe(args.timeout + n * 0.05)
            await asyncio.sleep(0.5)
            rss_subscribed = rss_kb(server.pid)
            progress(f"{n} subscribers live after {driver.probes} probes; {args.events} events ...")

            measured = await driver.phase("measure", args.events)
            result = Result(
                subscribers=n,
                open_seconds=opened["seconds"],
                rss_before=rss_before,
                rss_subscribed=rss_subscribed,
                measured=measured,
                client_loop=client.loop_name,
            )
            if memory_events > 0:
                progress(f"{memory_events} more events (server memory) ...")
                await asyncio.sleep(0.5)
                result.rss_memory_before = rss_kb(server.pid)
                result.memory = await driver.phase("memory", memory_events)
                await asyncio.sleep(0.5)
                result.rss_memory_after = rss_kb(server.pid)
            server.alive()
        except (BenchError, httpx.HTTPError, OSError):
            await server.explain()  # a server that died says so instead of its symptoms
            raise
        progress("done; stopping")
    return result


async def prepare(gql: GraphQL) -> tuple[str, str]:
    """A CPU-only SHARED profile on the built-in gpu-namespace template's ACTIVE version, and one
    saved (undeployed) instance."""
    templates = (await gql(TEMPLATES, {"project": PROJECT}))["environmentTemplates"]
    builtin = next((t for t in templates if t["name"] == "gpu-namespace" and t["builtIn"]), None)
    active = [v for v in (builtin or {}).get("versions", []) if v["state"] == "ACTIVE"]
    if not active:
        raise BenchError(f"no built-in gpu-namespace template with an ACTIVE version: {templates}")
    profile = await gql.payload(
        CREATE_PROFILE,
        {
            "input": {
                "project": PROJECT,
                "name": "bench-cpu",
                "displayName": "Bench CPU",
                "allocationType": "SHARED",
                "environmentTemplateVersion": active[0]["id"],  # newest first
                "resources": {
                    "cpu": "1",
                    "memory": "1Gi",
                    "storage": "1Gi",
                    "gpuCount": 0,
                    "gpuVendor": "CPU",
                },
            }
        },
        "createComputeProfile",
    )
    profile_id: str = profile["computeProfile"]["id"]
    created = await gql.payload(
        CREATE_INSTANCE,
        {"input": {"project": PROJECT, "profile": profile_id, "name": "fanout"}},
        "createComputeInstance",
    )
    instance = created["computeInstance"]
    if instance["status"] != "NOT_DEPLOYED":
        raise BenchError(f"the new instance is {instance['status']}, expected NOT_DEPLOYED")
    return profile_id, instance["id"]


# ------------------------------------------------------------------------------------ report


def report(results: list[Result], args: argparse.Namespace) -> int:
    """Prints the table; the number of missed or extra receipts."""

    def row(label: str, values: list[str]) -> str:
        return f"{label:<44}" + "".join(f"{v:>15}" for v in values)

    def ms(value: float) -> str:
        return "-" if value != value else f"{value:.1f}"

    lines = [row("subscribers", [str(r.subscribers) for r in results])]

    def add(label: str, get: Any) -> None:
        lines.append(row(label, [get(r) for r in results]))

    add("status events (measured)", lambda r: str(r.measured.events))
    add("messages delivered", lambda r: str(r.measured.stats["receipts"]))
    add("delivery p50 (ms, at -> receipt)", lambda r: ms(r.measured.stats["p50"]))
    add("delivery p90 (ms)", lambda r: ms(r.measured.stats["p90"]))
    add("delivery p99 (ms)", lambda r: ms(r.measured.stats["p99"]))
    add("delivery max (ms)", lambda r: ms(r.measured.stats["max"]))
    add(
        "event at every subscriber p50 / p99 (ms)",
        lambda r: f"{ms(r.measured.stats['all_p50'])} / {ms(r.measured.stats['all_p99'])}",
    )

    def per_message(cpu: float, r: Result) -> str:
        receipts = r.measured.events * r.subscribers
        return f"{cpu / receipts * 1e6:.0f}" if receipts else "-"

    add("server CPU per delivered message (us)", lambda r: per_message(r.measured.server_cpu, r))
    add("server CPU per event (ms)", lambda r: f"{r.measured.server_cpu / r.measured.events * 1e3:.1f}")
    add("server CPU busy (of one core)", lambda r: f"{r.measured.server_cpu / r.measured.seconds * 100:.0f}%")
    add("client CPU per message (us)", lambda r: per_message(r.measured.client_cpu, r))
    add("client CPU busy (of one core)", lambda r: f"{r.measured.client_cpu / r.measured.seconds * 100:.0f}%")
    add("event phase (s)", lambda r: f"{r.measured.seconds:.1f}")
    add(
        "server memory per subscriber (KB)",
        lambda r: f"{(r.rss_subscribed - r.rss_before) / max(r.subscribers - 1, 1):.1f}",
    )
    add(
        "server RSS, 1 / all subscribers (MB)",
        lambda r: f"{r.rss_before / 1024:.1f} / {r.rss_subscribed / 1024:.1f}",
    )
    add("opening the subscriptions (s)", lambda r: f"{r.open_seconds:.1f}")
    add(
        "missed events (total, max per subscriber)",
        lambda r: f"{r.measured.stats['missed']}, {r.measured.stats['missed_max']}",
    )
    sys.stderr.flush()
    print()
    print("\n".join(lines))

    bad = 0
    for r in results:
        bad += r.measured.stats["missed"] + r.measured.stats["extra"]
        if r.measured.stats["extra"]:
            print(
                f"N={r.subscribers}: {r.measured.stats['extra']} receipts more than the events made "
                "(duplicates?)"
            )
        if r.memory is None:
            continue
        m = r.memory
        bad += m.stats["missed"] + m.stats["extra"]
        grew = r.rss_memory_after - r.rss_memory_before
        print(
            f"\nserver memory over {m.events} more events at N={r.subscribers}: "
            f"RSS {r.rss_memory_before / 1024:.1f} MB before, "
            f"{r.rss_memory_after / 1024:.1f} MB after ({grew / 1024:+.1f} MB, "
            f"{grew / m.events:+.2f} KB per event); delivery p50 / p99 {ms(m.stats['p50'])} / "
            f"{ms(m.stats['p99'])} ms; missed {m.stats['missed']} (max {m.stats['missed_max']} per "
            f"subscriber), extra {m.stats['extra']}"
        )
    for r in results:
        print(goal_line(r))
    loops = sorted({r.client_loop for r in results})
    print(
        f"\nsettings: --events {args.events} (rounded up to whole deploys [3 events] and destroys [2]), "
        f"--selections {args.selections}, "
        f"one operation at a time; SQLite (fresh file); in-process bus; simulated driver, phase 0 s; one "
        f"`gpupaas serve` (API + relay + broadcaster + worker); one client process ({'/'.join(loops)} loop); "
        f"{os.cpu_count()} CPUs"
    )
    return bad


# Issue 19's goal P3, at 1,000 subscribers: delivery p99 and the server's CPU per delivered message.
GOAL_P99_MS = 100.0
GOAL_CPU_US = 40.0


def goal_line(r: Result) -> str:
    """Whether this N met P3 (the goal is stated at 1,000 subscribers; other N are for the trend)."""
    receipts = r.measured.events * r.subscribers
    cpu_us = r.measured.server_cpu / receipts * 1e6 if receipts else float("nan")
    p99 = r.measured.stats["p99"]
    met = p99 <= GOAL_P99_MS and cpu_us <= GOAL_CPU_US
    scope = "" if r.subscribers == 1000 else " (the goal is stated at N=1000)"
    return (
        f"goal P3 at N={r.subscribers}: p99 {p99:.1f} ms (<= {GOAL_P99_MS:.0f}), {cpu_us:.0f} us of server "
        f"CPU per message (<= {GOAL_CPU_US:.0f}): {'met' if met else 'not met'}{scope}"
    )


# ------------------------------------------------------------------------------------ main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument(
        "--subscribers", type=int, nargs="+", default=[200, 500, 1000], help="N values (default 200 500 1000)"
    )
    parser.add_argument("--events", type=int, default=100, help="measured status events per N (default 100)")
    parser.add_argument(
        "--memory-events",
        type=int,
        default=1000,
        help="more events at the largest N, for the server's RSS before and after (default 1000; 0: skip)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=60.0,
        help="seconds for each operation to reach every subscriber (default 60)",
    )
    parser.add_argument(
        "--selections",
        type=int,
        default=1,
        help=f"distinct selections the subscribers are spread over (default 1, at most {len(VARIANTS)})",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary directories (logs)")
    parser.add_argument(
        "--server-env",
        nargs="*",
        default=[],
        metavar="NAME=VALUE",
        help="more settings for gpupaas serve, e.g. GPUPAAS_GC_TUNING=false to compare",
    )
    parser.add_argument("--client", action="store_true", help=argparse.SUPPRESS)  # the subscribers' process
    args = parser.parse_args(argv)
    if any(n < 2 for n in args.subscribers):
        parser.error("--subscribers must be at least 2")
    if not 1 <= args.selections <= len(VARIANTS):
        parser.error(f"--selections must be from 1 to {len(VARIANTS)}")
    if args.events < 1 or args.memory_events < 0:
        parser.error("--events must be at least 1 and --memory-events at least 0")
    return args


async def main_async(args: argparse.Namespace) -> int:
    results = []
    largest = max(args.subscribers)
    memory_done = False
    for n in args.subscribers:
        memory = args.memory_events if n == largest and not memory_done else 0
        memory_done = memory_done or n == largest
        results.append(await run_one(n, memory, args))
    bad = report(results, args)
    if bad:
        print(f"fanout: error: {bad} events missed or duplicated (see above)", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.client:
        return run_client()
    raise_fd_limit()
    try:
        with terminate_on_sigterm():
            return asyncio.run(main_async(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BenchError as error:
        print(f"fanout: error: {error}", file=sys.stderr)
        return 1
    except (httpx.HTTPError, OSError) as error:
        print(f"fanout: error: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    finally:
        stop_all_children()


if __name__ == "__main__":
    sys.exit(main())
