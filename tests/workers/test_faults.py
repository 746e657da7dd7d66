"""Nothing accepted is lost: the relay stopped between commit and publish, the broker down while
deploys are accepted, a worker killed in the middle of a run, and two API processes sharing one
database and broker."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gpupaas.compute.states import DeploymentStatus
from gpupaas.events.bus import COMMANDS_TOPIC
from gpupaas.events.models import OutboxMessage
from gpupaas.events.namespaced import NamespacedBus
from gpupaas.provisioning.drivers.simulated.driver import SimulatedDriver
from gpupaas.provisioning.inventory import DEFAULT_INVENTORY
from gpupaas.provisioning.models import SimulatedAllocation
from gpupaas.runs.models import DeploymentRun
from gpupaas.runs.states import RunStatus
from gpupaas.runtime import Runtime
from gpupaas.settings import Settings
from tests import ws
from tests.factories import make_instance, make_profile, make_project
from tests.kafka_broker import TansuBroker
from tests.workers.conftest import Pipeline, eventually, fast, on_kafka, wait_status

S = DeploymentStatus


async def _builtin_profile(project: Any) -> Any:
    from gpupaas.catalog.models import EnvironmentTemplate, EnvironmentTemplateVersion

    template = await EnvironmentTemplate.get(name="gpu-namespace", built_in=True)
    return await make_profile(project, await EnvironmentTemplateVersion.get(template_id=template.id))


async def worker_is_past(pipeline: Pipeline, key: str) -> None:
    """Returns once the worker has handled a command published now with `key`: after everything
    published with that key before (one key, one partition, handled in offset order). The command
    names no run, so it does nothing (as a redelivered one)."""
    worker = pipeline.runtime.worker
    assert worker is not None
    handled = worker.handled
    probe = {"type": "run", "runId": str(uuid.uuid4()), "instanceId": key, "action": "DEPLOY"}
    await pipeline.runtime.bus.publish(COMMANDS_TOPIC, key, json.dumps(probe).encode())

    async def seen() -> bool:
        return worker.handled > handled

    await eventually(seen, what="the worker to handle the probe command")


async def test_relay_stopped_between_commit_and_publish(db: object, pipeline: Pipeline) -> None:
    project = await make_project("ml")
    profile = await _builtin_profile(project)
    # given the relay is down when the deploy commits
    await pipeline.runtime.relay.stop()
    instance = await make_instance(project, profile, deploy=True)
    # then nothing carries the command to the worker: had anything published it after the commit,
    # the worker would have run it before a command published now for the same instance
    await worker_is_past(pipeline, str(instance.id))
    assert await OutboxMessage.filter(sent_at=None).count() >= 2  # the command and the WAITING event wait
    assert (await DeploymentRun.get(instance_id=instance.id)).status == RunStatus.QUEUED
    # when it comes back, then the deploy completes
    await pipeline.runtime.relay.start()
    assert (await wait_status(instance.id, S.SUCCESS, S.FAILED)).status == S.SUCCESS

    # and every row is published (the SUCCESS event itself is written just before it goes out)
    async def drained() -> bool:
        return not await OutboxMessage.filter(sent_at=None).exists()

    await eventually(drained, what="the outbox to drain")


async def test_broker_down_while_deploys_are_accepted(
    db: object, settings: Settings, kafka_broker: TansuBroker
) -> None:
    chosen = on_kafka(fast(settings), kafka_broker.bootstrap)
    # a publish to the stopped broker fails after ~2 s (the test bus's request timeout), not 10 s
    bus = NamespacedBus(kafka_broker.bus(), chosen.kafka_namespace)
    runtime = Runtime(
        chosen, run_worker=True, bus=bus, driver=SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=0.0)
    )
    await runtime.start()
    try:
        project = await make_project("ml")
        profile = await _builtin_profile(project)
        kafka_broker.stop()
        # mutations still succeed: the outbox keeps the commands
        instances = [await make_instance(project, profile, deploy=True) for _ in range(5)]

        async def publishing_failed() -> bool:
            return await OutboxMessage.filter(attempts__gte=1).exists()

        await eventually(publishing_failed, what="the relay to fail to publish")
        assert await OutboxMessage.filter(sent_at=None).count() >= 10  # 5 commands, 5 WAITING events
        kafka_broker.start()
        for instance in instances:
            done = await wait_status(instance.id, S.SUCCESS, S.FAILED, timeout=90)
            assert done.status == S.SUCCESS, done.status_message
        for instance in instances:
            run = await DeploymentRun.get(instance_id=instance.id)
            assert run.status == RunStatus.SUCCEEDED
    finally:
        await runtime.stop()


async def test_a_worker_killed_during_a_run(db: object, settings: Settings) -> None:
    chosen = fast(settings)
    slow = Runtime(chosen, run_worker=True, driver=SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=1.0))
    await slow.start()
    project = await make_project("ml")
    instance = await make_instance(project, await _builtin_profile(project), deploy=True)
    await wait_status(instance.id, S.IN_PROGRESS)

    async def applying() -> bool:
        return await SimulatedAllocation.exists(instance_id=instance.id)

    await eventually(applying, what="the first worker to start applying")
    # the worker dies: its tasks stop without finishing the run or renewing its lease, and the
    # group hands its partitions to the others (Kafka does so when its heartbeats stop)
    assert slow.worker is not None and slow.worker._consumer is not None
    for task in slow.worker._tasks:
        task.cancel()
    await asyncio.gather(*slow.worker._tasks, return_exceptions=True)
    await slow.worker._consumer.stop()
    slow.worker._tasks, slow.worker._consumer = [], None
    # a healthy worker (on the same bus) takes the run over once the lease has expired
    healthy = Runtime(
        chosen, run_worker=True, bus=slow.bus, driver=SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=0.0)
    )
    assert healthy.worker is not None
    await healthy.worker.start()
    try:
        done = await wait_status(instance.id, S.SUCCESS, S.FAILED, timeout=30)
        assert done.status == S.SUCCESS, done.status_message
        run = await DeploymentRun.get(instance_id=instance.id)
        assert run.status == RunStatus.SUCCEEDED and run.attempts == 2
        assert run.lease_owner == healthy.worker.name
        # one allocation, one set of objects: no duplicates from the two attempts
        assert await SimulatedAllocation.filter(instance_id=instance.id).count() == 1
        allocation = await SimulatedAllocation.get(instance_id=instance.id)
        names = [(o["kind"], o["metadata"]["name"]) for o in allocation.objects]
        assert len(names) == len(set(names))
    finally:
        await healthy.worker.stop()
        await slow.stop()


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
            time.sleep(0.2)


@pytest.fixture
def two_servers(tmp_path: Path, kafka_broker: TansuBroker) -> Iterator[tuple[str, str, dict[str, str]]]:
    """Two `gpupaas serve` processes on one SQLite file and one broker, and a `gpupaas worker`
    process: the API processes run no worker of their own."""
    env = {
        **os.environ,
        "GPUPAAS_DATABASE_URL": f"sqlite://{tmp_path}/shared.db",
        "GPUPAAS_KAFKA_BOOTSTRAP_SERVERS": kafka_broker.bootstrap,
        "GPUPAAS_KAFKA_IDEMPOTENCE": "false",
        "GPUPAAS_KAFKA_PARTITIONS": "2",
        "GPUPAAS_KAFKA_NAMESPACE": f"two{os.getpid()}{_free_port()}",
        "GPUPAAS_SIMULATED_PHASE_SECONDS": "0",
    }
    subprocess.run([sys.executable, "-m", "gpupaas.cli", "migrate"], env=env, check=True, capture_output=True)
    processes = []
    urls = []
    for _ in range(2):
        port = _free_port()
        process = subprocess.Popen(
            [sys.executable, "-m", "gpupaas.cli", "serve", "--port", str(port), "--log-level", "warning"],
            env={**env, "GPUPAAS_RUN_WORKER": "false"},
        )
        processes.append(process)
        urls.append(f"http://127.0.0.1:{port}")
    processes.append(subprocess.Popen([sys.executable, "-m", "gpupaas.cli", "worker"], env=env))
    try:
        for url, process in zip(urls, processes[:2], strict=True):
            _wait_ready(url, process)
        yield urls[0], urls[1], env
    finally:
        for process in processes:
            process.terminate()
        codes = [process.wait(timeout=30) for process in processes]
        # uvicorn re-raises SIGTERM after its graceful shutdown; the worker exits 0 after its own
        assert codes[:2] == [-15, -15] and codes[2] == 0, codes


@pytest.mark.filterwarnings("ignore::ResourceWarning")
async def test_a_subscriber_on_the_second_process_sees_a_deploy_made_through_the_first_and_done_by_a_worker(
    two_servers: tuple[str, str, dict[str, str]],
) -> None:
    first, second, env = two_servers

    def cli(*args: str, stdin: str = "") -> str:
        result = subprocess.run(
            [sys.executable, "-m", "gpupaas.cli", *args],
            env=env,
            input=stdin,
            capture_output=True,
            text=True,
            check=True,
        )
        return result.stdout.strip()

    cli(
        "create-user", "--username", "root", "--platform-admin", "--password-stdin", stdin="a long password\n"
    )
    token = cli("create-token", "--username", "root", "--name", "t")
    cli("create-project", "ml")

    import httpx

    async with httpx.AsyncClient(headers={"authorization": f"Bearer {token}"}) as http:

        async def gql(url: str, query: str, variables: dict[str, Any]) -> dict[str, Any]:
            response = await http.post(url + "/graphql", json={"query": query, "variables": variables})
            body: dict[str, Any] = response.json()
            assert "errors" not in body, body
            return body["data"]  # type: ignore[no-any-return]

        versions = await gql(
            first, '{ environmentTemplates(project: "ml", search: "gpu-namespace") { versions { id } } }', {}
        )
        version = versions["environmentTemplates"][0]["versions"][0]["id"]
        profile = await gql(
            first,
            'mutation($v: ID!) { createComputeProfile(input: {project: "ml", name: "p", displayName: "P", '
            'allocationType: SHARED, environmentTemplateVersion: $v, resources: {cpu: "1", memory: "1Gi", '
            'storage: "1Gi", gpuCount: 1, gpuVendor: NVIDIA}}) { computeProfile { id } } }',
            {"v": version},
        )
        created = await gql(
            first,
            'mutation($p: ID!) { createComputeInstance(input: {project: "ml", profile: $p, name: "nb"}) '
            "{ computeInstance { id } } }",
            {"p": profile["createComputeProfile"]["computeProfile"]["id"]},
        )
        iid = created["createComputeInstance"]["computeInstance"]["id"]
        async with ws.connect(second, token=token) as session:
            await session.subscribe(
                "subscription($id: ID!) { computeInstanceStatus(id: $id) { status } }", {"id": iid}
            )
            assert (await session.next_data(timeout=60))["computeInstanceStatus"]["status"] == "NOT_DEPLOYED"
            await gql(
                first,
                "mutation($id: ID!) { deployComputeInstance(id: $id) { computeInstance { status } } }",
                {"id": iid},
            )
            seen: list[str] = []
            while not seen or seen[-1] not in ("SUCCESS", "FAILED"):
                seen.append((await session.next_data(timeout=60))["computeInstanceStatus"]["status"])
            assert seen == ["WAITING", "IN_PROGRESS", "SUCCESS"]
