"""Live status that never goes silent (issue 18), end to end: two `gpupaas serve` processes and a
`gpupaas worker` on one SQLite file and one real broker; subscribers on both API processes, deploys
in flight, and the broker restarted with its memory storage (it comes back empty, its topics
re-created from offset 0). Every subscriber sees every instance it follows reach SUCCESS, and each
API process says once per partition that its status consumer was beyond the high watermark (in its
log and in gpupaas_kafka_consumer_resets_total)."""

from __future__ import annotations

import asyncio
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests import conftest, ws
from tests.kafka_broker import TansuBroker
from tests.required import POSTGRES, missing
from tests.workers.conftest import eventually

PARTITIONS = 4  # tansu gives a topic it creates by itself 4: the same as ours either way
# Deployed and finished before the restart: their events put the status consumers' positions far
# beyond what the re-created topic will hold; then LATE deploys are in flight when it restarts.
EARLY, LATE = 24, 8
INSTANCES = EARLY + LATE
METRICS_TOKEN = "heal-metrics-token-0123456789"
STATUS = "gpupaas.status"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _wait_ready(url: str, process: subprocess.Popen[bytes], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url + "/readyz", timeout=1) as answer:
                if answer.status == 200:
                    return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


@dataclass
class Installation:
    urls: list[str]
    logs: list[Path]
    env: dict[str, str]
    namespace: str


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A new PostgreSQL database of this test's own: three processes that write at once (SQLite
    refuses a writer whose transaction read first while another writes: "database is locked")."""
    admin = conftest._postgres_admin_url()
    if admin is None:
        missing(POSTGRES, "no server answers at 127.0.0.1:5432 (start one, or set GPUPAAS_TEST_POSTGRES_URL)")
    assert admin is not None
    name = f"gpupaas_heal_{uuid.uuid4().hex[:10]}"
    asyncio.run(conftest._admin_execute(admin, f'CREATE DATABASE "{name}"'))
    try:
        yield conftest._with_database(admin, name)
    finally:
        asyncio.run(conftest._admin_execute(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
def installation(tmp_path: Path, own_broker: TansuBroker, postgres_url: str) -> Iterator[Installation]:
    namespace = f"heal{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "GPUPAAS_DATABASE_URL": postgres_url,
        "GPUPAAS_SECRET_KEY": "h" * 64,
        "GPUPAAS_KAFKA_BOOTSTRAP_SERVERS": own_broker.bootstrap,
        "GPUPAAS_KAFKA_IDEMPOTENCE": "false",
        "GPUPAAS_KAFKA_PARTITIONS": str(PARTITIONS),
        "GPUPAAS_KAFKA_NAMESPACE": namespace,
        # tansu holds a join for half the session timeout: short, so the worker rejoins in ~1 s
        "GPUPAAS_KAFKA_SESSION_TIMEOUT_MS": "2000",
        "GPUPAAS_KAFKA_HEARTBEAT_INTERVAL_MS": "200",
        "GPUPAAS_KAFKA_METADATA_MAX_AGE_MS": "500",
        # deploys take a few seconds, so that some are in flight when the broker restarts
        "GPUPAAS_SIMULATED_PHASE_SECONDS": "0.3",
        # a command lost with the broker is published again after 2 s
        "GPUPAAS_RUN_REQUEUE_AFTER_SECONDS": "2",
        "GPUPAAS_METRICS_TOKEN": METRICS_TOKEN,
        # what heals here is the consumers, not the watchdog (which would reconnect a consumer that
        # stayed beyond the high watermark after this long: tests/events/test_watchdog.py)
        "GPUPAAS_STATUS_WATCHDOG_SECONDS": "600",
        "GPUPAAS_LOG_LEVEL": "warning",
    }
    subprocess.run([sys.executable, "-m", "gpupaas.cli", "migrate"], env=env, check=True, capture_output=True)
    processes: list[subprocess.Popen[bytes]] = []
    urls, logs = [], []
    try:
        for n in range(2):
            port = _free_port()
            log = tmp_path / f"api-{n}.log"
            with log.open("wb") as sink:
                processes.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-m",
                            "gpupaas.cli",
                            "serve",
                            "--port",
                            str(port),
                            "--log-level",
                            "warning",
                        ],
                        env={**env, "GPUPAAS_RUN_WORKER": "false"},
                        stdout=sink,
                        stderr=subprocess.STDOUT,
                    )
                )
            urls.append(f"http://127.0.0.1:{port}")
            logs.append(log)
        with (tmp_path / "worker.log").open("wb") as sink:
            processes.append(
                subprocess.Popen(
                    [sys.executable, "-m", "gpupaas.cli", "worker"],
                    env=env,
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                )
            )
        for url, process in zip(urls, processes[:2], strict=True):
            _wait_ready(url, process)
        yield Installation(urls, logs, env, namespace)
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def cli(env: dict[str, str], *args: str, stdin: str = "") -> str:
    result = subprocess.run(
        [sys.executable, "-m", "gpupaas.cli", *args],
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()


EVENTS = 'subscription { computeInstanceEvents(project: "ml") { instance { id } status source } }'
ONE = "subscription($id: ID!) { computeInstanceStatus(id: $id) { instance { id } status source } }"


@dataclass
class Subscriber:
    """One websocket subscription and the last status it has seen of each instance."""

    url: str
    query: str
    field_name: str
    variables: dict[str, Any] = field(default_factory=dict)
    last: dict[str, str] = field(default_factory=dict)
    ready: asyncio.Event = field(default_factory=asyncio.Event)

    async def follow(self, token: str, expected: int) -> None:
        async with ws.connect(self.url, token=token) as session:
            await session.subscribe(self.query, self.variables)
            while True:
                event = (await session.next_data(timeout=120))[self.field_name]
                self.last[event["instance"]["id"]] = event["status"]
                if len(self.last) >= expected:
                    self.ready.set()


@pytest.mark.filterwarnings("ignore::ResourceWarning")
async def test_every_subscriber_on_two_api_processes_sees_every_deploy_finish_across_a_broker_restart(
    installation: Installation, own_broker: TansuBroker
) -> None:
    env = installation.env
    first, second = installation.urls
    cli(
        env,
        "create-user",
        "--username",
        "root",
        "--platform-admin",
        "--password-stdin",
        stdin="a long password\n",
    )
    token = cli(env, "create-token", "--username", "root", "--name", "t")
    cli(env, "create-project", "ml")
    async with httpx.AsyncClient(headers={"authorization": f"Bearer {token}"}, timeout=30) as http:

        async def gql(url: str, query: str, variables: dict[str, Any] | None = None) -> dict[str, Any]:
            response = await http.post(url + "/graphql", json={"query": query, "variables": variables or {}})
            body: dict[str, Any] = response.json()
            assert "errors" not in body, body
            return body["data"]  # type: ignore[no-any-return]

        versions = await gql(
            first, '{ environmentTemplates(project: "ml", search: "gpu-namespace") { versions { id } } }'
        )
        profile = await gql(
            first,
            'mutation($v: ID!) { createComputeProfile(input: {project: "ml", name: "p", displayName: "P", '
            'allocationType: SHARED, environmentTemplateVersion: $v, resources: {cpu: "1", memory: "1Gi", '
            'storage: "1Gi", gpuCount: 0, gpuVendor: CPU}}) { computeProfile { id } userErrors { message } } }',
            {"v": versions["environmentTemplates"][0]["versions"][0]["id"]},
        )
        profile_id = profile["createComputeProfile"]["computeProfile"]["id"]
        ids = []
        for n in range(INSTANCES):
            created = await gql(
                first,
                'mutation($p: ID!, $n: String!) { createComputeInstance(input: {project: "ml", profile: $p, '
                "name: $n}) { computeInstance { id } } }",
                {"p": profile_id, "n": f"nb-{n}"},
            )
            ids.append(created["createComputeInstance"]["computeInstance"]["id"])
        # given subscribers on both API processes: the project's events, and a few instances each
        subscribers: list[tuple[Subscriber, set[str]]] = []
        for url in (first, second):
            subscribers.append((Subscriber(url, EVENTS, "computeInstanceEvents"), set(ids)))
            for iid in ids[:3] + ids[-3:]:
                subscribers.append((Subscriber(url, ONE, "computeInstanceStatus", {"id": iid}), {iid}))
        tasks = [asyncio.create_task(s.follow(token, len(wanted))) for s, wanted in subscribers]
        try:
            for subscriber, _ in subscribers:
                await asyncio.wait_for(subscriber.ready.wait(), 30)  # its snapshot is in
            assert all(set(s.last.values()) == {"NOT_DEPLOYED"} for s, _ in subscribers)
            watcher = subscribers[0][0]

            async def deploy(batch: list[str]) -> None:
                for iid in batch:
                    await gql(
                        first,
                        "mutation($id: ID!) { deployComputeInstance(id: $id) { computeInstance { id } } }",
                        {"id": iid},
                    )

            # and the early deploys done
            await deploy(ids[:EARLY])

            async def early_done() -> bool:
                return all(watcher.last[iid] == "SUCCESS" for iid in ids[:EARLY])

            await eventually(early_done, timeout=60, what="the early deploys to finish")
            # and the late ones in flight
            await deploy(ids[EARLY:])
            assert any(watcher.last[iid] != "SUCCESS" for iid in ids[EARLY:])
            # when the broker restarts with its memory storage, mid-stream
            own_broker.restart()

            # then every subscriber sees every instance it follows reach SUCCESS
            async def all_done() -> bool:
                for task in tasks:
                    if task.done():
                        task.result()  # a subscriber that failed says why
                return all(
                    set(s.last) == wanted and set(s.last.values()) == {"SUCCESS"} for s, wanted in subscribers
                )

            try:
                await eventually(all_done, timeout=45, what="every subscriber to see every deploy finish")
            except AssertionError:
                behind = [
                    (s.url, s.field_name, {k: v for k, v in s.last.items() if v != "SUCCESS"})
                    for s, _ in subscribers
                ]
                raise AssertionError(f"subscribers missed terminal statuses: {behind}") from None
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

        # and each API process said once per partition that its status consumer was beyond the
        # high watermark of the re-created topic: in its log, with both offsets, and in /metrics
        topic = f"{installation.namespace}.{STATUS}"
        for url, log in zip(installation.urls, installation.logs, strict=True):
            lines = [
                line
                for line in log.read_text(errors="replace").splitlines()
                if "gpupaas.events.kafka" in line
            ]
            warned: dict[int, list[str]] = {}
            for line in lines:
                found = re.search(
                    rf"position (\d+) on partition (\d+) of {re.escape(topic)} is beyond the high watermark "
                    r"\(high watermark (\d+)\)",
                    line,
                )
                if found:
                    position, partition, highwater = map(int, found.groups())
                    assert position > highwater
                    warned.setdefault(partition, []).append(line)
            assert {p: len(w) for p, w in warned.items()} == dict.fromkeys(range(PARTITIONS), 1), lines
            response = await http.get(url + "/metrics", headers={"authorization": f"Bearer {METRICS_TOKEN}"})
            counted = {
                (sample.labels["topic"], sample.labels["partition"], sample.labels["reason"]): sample.value
                for family in text_string_to_metric_families(response.text)
                for sample in family.samples
                if sample.name == "gpupaas_kafka_consumer_resets_total"
            }
            assert counted == {(STATUS, str(p), "beyond_high_watermark"): 1.0 for p in range(PARTITIONS)}
