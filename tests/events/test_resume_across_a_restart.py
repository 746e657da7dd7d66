"""A status subscriber resumes across an API process killed with SIGKILL: while the process is down
a worker process goes on writing status changes; once it is back, the subscriber that resumes with
`after:` the last cursor it received gets exactly the events it missed, in order, then live ones,
with no repeat.

Real processes: `gpupaas serve` (no worker of its own) and `gpupaas worker`, on one PostgreSQL
database of the test's own and a real Kafka-protocol broker: the production shape. (Not one SQLite
file: processes that write it at the same time under load lose writes to "database is locked", a
deferred transaction that cannot become the writer.) The expected events are read from the
database itself (the outbox's status rows, which carry their cursor), so the test compares the
replay with what was written."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import asyncpg
import httpx
import pytest
import websockets

from tests import ws
from tests.conftest import SECRET_KEY, _admin_execute, _postgres_admin_url, _with_database
from tests.kafka_broker import TansuBroker
from tests.required import POSTGRES, missing

FIELDS = "status source cursor missedEvents instance { id name }"
EVENTS = (
    "subscription($p: String!, $after: String) "
    f"{{ computeInstanceEvents(project: $p, after: $after) {{ {FIELDS} }} }}"
)
DEPLOY = "mutation($id: ID!) { deployComputeInstance(id: $id) { computeInstance { status } userErrors { message } } }"
DESTROY = "mutation($id: ID!) { destroyComputeInstance(id: $id) { computeInstance { status } userErrors { message } } }"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class Api:
    """One `gpupaas serve` process that can be killed and started again on the same port."""

    env: dict[str, str]
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gpupaas.cli",
                "serve",
                "--port",
                str(self.port),
                "--log-level",
                "warning",
            ],
            env={**self.env, "GPUPAAS_RUN_WORKER": "false"},
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(self.url + "/readyz", timeout=1) as answer:
                    if answer.status == 200:
                        return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        assert self.process.wait(timeout=30) == -signal.SIGKILL


@dataclass
class Deployment:
    api: Api
    worker: subprocess.Popen[bytes]
    database: str
    env: dict[str, str]

    def cli(self, *args: str, stdin: str = "") -> str:
        result = subprocess.run(
            [sys.executable, "-m", "gpupaas.cli", *args],
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            check=True,
        )
        return result.stdout.strip()

    async def query(self, sql: str, *parameters: Any) -> list[tuple[Any, ...]]:
        """Reads the shared database as it is now (the processes write it; this only reads)."""
        connection = await asyncpg.connect(self.database.replace("postgres://", "postgresql://", 1))
        try:
            return [tuple(row) for row in await connection.fetch(sql, *parameters)]
        finally:
            await connection.close()


@pytest.fixture
def database() -> Iterator[str]:
    """A PostgreSQL database of this test's own, dropped afterwards."""
    admin = _postgres_admin_url()
    if admin is None:
        missing(POSTGRES, "no server answers at 127.0.0.1:5432 (start one, or set GPUPAAS_TEST_POSTGRES_URL)")
    name = f"gpupaas_resume_{os.getpid()}_{_free_port()}"
    try:
        asyncio.run(_admin_execute(admin, f'CREATE DATABASE "{name}"'))
    except (OSError, asyncpg.PostgresError) as error:
        missing(POSTGRES, f"the server at {admin} cannot be used: {type(error).__name__}: {error}")
    try:
        yield _with_database(admin, name)
    finally:
        asyncio.run(_admin_execute(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
def deployment(database: str, kafka_broker: TansuBroker) -> Iterator[Deployment]:
    env = {
        **os.environ,
        "GPUPAAS_DATABASE_URL": database,
        "GPUPAAS_SECRET_KEY": SECRET_KEY,
        "GPUPAAS_KAFKA_BOOTSTRAP_SERVERS": kafka_broker.bootstrap,
        "GPUPAAS_KAFKA_IDEMPOTENCE": "false",
        "GPUPAAS_KAFKA_PARTITIONS": "2",
        "GPUPAAS_KAFKA_NAMESPACE": f"resume{os.getpid()}{_free_port()}",
        # slow enough that the deploys under way when the API dies finish while it is down
        "GPUPAAS_SIMULATED_PHASE_SECONDS": "0.7",
    }
    subprocess.run([sys.executable, "-m", "gpupaas.cli", "migrate"], env=env, check=True, capture_output=True)
    api = Api(env, _free_port())
    worker = subprocess.Popen([sys.executable, "-m", "gpupaas.cli", "worker"], env=env)
    try:
        api.start()
        yield Deployment(api, worker, database, env)
    finally:
        for process in (api.process, worker):
            if process is not None and process.poll() is None:
                process.terminate()
        if api.process is not None:
            api.process.wait(timeout=30)
        assert worker.wait(timeout=30) == 0


async def _events(session: ws.Session, count: int, timeout: float = 60.0) -> list[dict[str, Any]]:
    return [(await session.next_data(timeout))["computeInstanceEvents"] for _ in range(count)]


@pytest.mark.filterwarnings("ignore::ResourceWarning")
async def test_a_subscriber_resumes_after_the_api_was_killed_with_exactly_what_it_missed(
    deployment: Deployment,
) -> None:
    deployment.cli(
        "create-user", "--username", "root", "--platform-admin", "--password-stdin", stdin="a long password\n"
    )
    token = deployment.cli("create-token", "--username", "root", "--name", "t")
    deployment.cli("create-project", "ml")
    (project_id,) = (await deployment.query("SELECT id FROM projects WHERE name = 'ml'"))[0]
    api = deployment.api

    async with httpx.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=30) as http:

        async def gql(query: str, variables: dict[str, Any]) -> dict[str, Any]:
            response = await http.post(api.url + "/graphql", json={"query": query, "variables": variables})
            body: dict[str, Any] = response.json()
            assert "errors" not in body, body
            return body["data"]  # type: ignore[no-any-return]

        versions = await gql(
            '{ environmentTemplates(project: "ml", search: "gpu-namespace") { versions { id } } }', {}
        )
        profile = await gql(
            'mutation($v: ID!) { createComputeProfile(input: {project: "ml", name: "p", displayName: "P", '
            'allocationType: SHARED, environmentTemplateVersion: $v, resources: {cpu: "1", memory: "1Gi", '
            'storage: "1Gi", gpuCount: 1, gpuVendor: NVIDIA}}) { computeProfile { id } } }',
            {"v": versions["environmentTemplates"][0]["versions"][0]["id"]},
        )
        ids = []
        for name in ("a", "b", "c", "d"):
            created = await gql(
                'mutation($p: ID!, $n: String!) { createComputeInstance(input: {project: "ml", profile: $p, '
                "name: $n}) { computeInstance { id } } }",
                {"p": profile["createComputeProfile"]["computeProfile"]["id"], "n": name},
            )
            ids.append(created["createComputeInstance"]["computeInstance"]["id"])

        # given a subscriber that took a snapshot, then subscribed again with its cursor (as the
        # studio does after a reconnect) and follows a deploy live
        async with ws.connect(api.url, token=token) as session:
            await session.subscribe(EVENTS, {"p": "ml"})
            snapshot = await _events(session, 4)
            assert {e["source"] for e in snapshot} == {"SNAPSHOT"} and len(
                {e["cursor"] for e in snapshot}
            ) == 1
        seen = snapshot[0]["cursor"]
        async with ws.connect(api.url, token=token) as session:
            await session.subscribe(EVENTS, {"p": "ml", "after": seen})
            await gql(DEPLOY, {"id": ids[0]})
            first = await _events(session, 3)
            assert [(e["instance"]["name"], e["status"], e["source"]) for e in first] == [
                ("a", "WAITING", "LIVE"),
                ("a", "IN_PROGRESS", "LIVE"),
                ("a", "SUCCESS", "LIVE"),
            ]
            # three more deploys, and the API process dies while the worker runs them
            for instance_id in ids[1:]:
                await gql(DEPLOY, {"id": instance_id})
            received = first + await _events(session, 1)
            seen = received[-1]["cursor"]
            api.kill()
            with suppress(websockets.ConnectionClosed):
                while True:  # what was on its way before the socket closed, if anything
                    received.append((await session.next_data(timeout=10))["computeInstanceEvents"])
                    seen = received[-1]["cursor"]
        streams = await deployment.query(
            "SELECT cursor FROM status_streams WHERE project_id = $1", project_id
        )
        head_at_kill = streams[0][0]

        # while the API is down, the worker finishes the deploys
        deadline = time.monotonic() + 60
        while (await deployment.query("SELECT count(*) FROM compute_instances WHERE status != 'SUCCESS'"))[0][
            0
        ]:
            assert time.monotonic() < deadline, await deployment.query(
                "SELECT name, status FROM compute_instances"
            )
            await asyncio.sleep(0.1)
        rows = await deployment.query(
            "SELECT cursor, payload FROM outbox WHERE project_id = $1 AND cursor > $2 ORDER BY cursor",
            project_id,
            int(seen),
        )
        missed = [
            (str(cursor), json.loads(payload)["instanceId"], json.loads(payload)["status"])
            for cursor, payload in rows
        ]
        assert int(missed[-1][0]) > head_at_kill, "no status change happened while the API was down"
        assert [cursor for cursor, _, _ in missed] == [str(int(seen) + n) for n in range(1, len(missed) + 1)]
        for instance_id in ids[1:]:
            # each of the three deploys ends while the API is down (or just before it died)
            assert [status for _, i, status in missed if i == instance_id][-1] == "SUCCESS"

        # when the API comes back and the subscriber resumes from the last cursor it received
        api.start()
        async with ws.connect(api.url, token=token) as session:
            await session.subscribe(EVENTS, {"p": "ml", "after": seen})
            replayed = await _events(session, len(missed))
            # then it gets exactly what it missed, in order, as replayed
            assert [(e["cursor"], e["instance"]["id"], e["status"]) for e in replayed] == missed
            assert {e["source"] for e in replayed} == {"REPLAY"} and not any(
                e["missedEvents"] for e in replayed
            )
            # and then live, with nothing repeated (the broker redelivers to the restarted process
            # what the worker published meanwhile: none of it comes again)
            await gql(DESTROY, {"id": ids[0]})
            live = (await session.next_data(timeout=60))["computeInstanceEvents"]
            assert (live["instance"]["id"], live["status"], live["source"]) == (ids[0], "DESTROYING", "LIVE")
            assert live["cursor"] == str(int(missed[-1][0]) + 1)
