"""/metrics (README, "Observe"): the token protection, and each metric moving as the real app and
worker do their work (GraphQL operations and errors, runs, the outbox, instances, websockets)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from gpupaas.api.metrics import metrics_app, serve_metrics
from gpupaas.app import create_app
from gpupaas.clusters.models import Cluster
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.core.metrics import MAX_OPERATION_NAMES, Metrics
from gpupaas.events.models import OutboxMessage
from gpupaas.provisioning.drivers.simulated.driver import SimulatedDriver
from gpupaas.provisioning.inventory import DEFAULT_INVENTORY
from gpupaas.runs.models import DeploymentRun
from gpupaas.runtime import Runtime
from gpupaas.settings import Settings, SettingsError
from tests import ws
from tests.conftest import QueryCounter, serving
from tests.factories import make_instance, make_profile, make_project, make_user
from tests.kafka_broker import TansuBroker
from tests.workers.conftest import eventually, fast, wait_status

TOKEN = "metrics-token-0123456789abcdef"
AUTH = {"authorization": f"Bearer {TOKEN}"}
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str) -> Samples:
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


@pytest.fixture
def metered(settings: Settings) -> Settings:
    return replace(settings, metrics_token=TOKEN)


@pytest.fixture
async def http(metered: Settings) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(metered, migrate=False)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    ) as client:
        yield client


async def scrape(client: httpx.AsyncClient) -> Samples:
    response = await client.get("/metrics", headers=AUTH)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain; version=")
    return parse(response.text)


async def post(client: httpx.AsyncClient, query: str) -> dict[str, object]:
    response = await client.post("/graphql", json={"query": query})
    assert response.status_code == 200, response.text
    body: dict[str, object] = response.json()
    return body


# ---------------------------------------------------------------- protection


async def test_without_a_token_setting_there_is_no_metrics_endpoint(settings: Settings) -> None:
    app = create_app(settings, migrate=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as client:
        assert (await client.get("/metrics")).status_code == 404
        assert (await client.get("/metrics", headers={"authorization": "Bearer "})).status_code == 404


async def test_metrics_need_the_bearer_token(http: httpx.AsyncClient) -> None:
    missing = await http.get("/metrics")
    assert missing.status_code == 401
    assert missing.headers["www-authenticate"].startswith("Bearer")
    assert "gpupaas" not in missing.text
    for wrong in ("Bearer nope", f"Basic {TOKEN}", f"Bearer {TOKEN}x", TOKEN):
        assert (await http.get("/metrics", headers={"authorization": wrong})).status_code == 401, wrong
    assert (await http.get("/metrics", headers={"authorization": f"bearer  {TOKEN}"})).status_code == 200


def test_metrics_settings_are_checked() -> None:
    base = {"GPUPAAS_DATABASE_URL": "postgres://u:p@h/d", "GPUPAAS_SECRET_KEY": "k" * 32}
    settings = Settings.from_env(base)
    assert settings.metrics_token == "" and settings.metrics_port == 0
    settings = Settings.from_env({**base, "GPUPAAS_METRICS_TOKEN": TOKEN, "GPUPAAS_METRICS_PORT": "9100"})
    assert (settings.metrics_token, settings.metrics_port) == (TOKEN, 9100)
    with pytest.raises(SettingsError, match="GPUPAAS_METRICS_TOKEN: must be at least 16"):
        Settings.from_env({**base, "GPUPAAS_METRICS_TOKEN": "short"})
    with pytest.raises(SettingsError, match="GPUPAAS_METRICS_PORT"):
        Settings.from_env({**base, "GPUPAAS_METRICS_PORT": "70000"})
    with pytest.raises(SettingsError, match="GPUPAAS_METRICS_PORT"):
        Settings.from_env({**base, "GPUPAAS_METRICS_PORT": "http"})


# ---------------------------------------------------------------- GraphQL


async def test_operations_are_timed_by_name_and_type(http: httpx.AsyncClient) -> None:
    before = await scrape(http)
    for _ in range(3):
        await post(http, "query Me { me { username } }")
    await post(http, "mutation Out { logout }")
    await post(http, "{ me { username } }")
    after = await scrape(http)
    count = "gpupaas_graphql_operation_seconds_count"
    assert (
        value(after, count, operation="Me", type="query") - value(before, count, operation="Me", type="query")
        == 3
    )
    assert value(after, count, operation="Out", type="mutation") == 1
    assert value(after, count, operation="anonymous", type="query") == 1
    assert value(after, "gpupaas_graphql_operation_seconds_sum", operation="Me", type="query") > 0
    buckets = value(
        after, "gpupaas_graphql_operation_seconds_bucket", operation="Me", type="query", le="+Inf"
    )
    assert buckets == 3


async def test_http_requests_are_timed_by_method_route_and_status(http: httpx.AsyncClient) -> None:
    await http.get("/healthz")
    await http.get("/healthz")
    await http.get("/no/such/page/123")
    await http.post("/graphql", content=b"{", headers={"content-type": "application/json"})
    await post(http, "query Me { me { username } }")
    samples = await scrape(http)
    count = "gpupaas_http_request_seconds_count"
    assert value(samples, count, method="GET", route="/healthz", status="200") == 2
    assert value(samples, count, method="POST", route="/graphql", status="400") == 1
    assert value(samples, count, method="POST", route="/graphql", status="200") == 1
    routes = {dict(labels)["route"] for (name, labels) in samples if name == count}
    assert routes == {"/healthz", "/graphql", "other"}  # the scrape itself is counted when it ends


async def test_operation_names_cannot_grow_the_registry_without_limit() -> None:
    metrics = Metrics()
    for n in range(MAX_OPERATION_NAMES + 20):
        metrics.observe_operation(f"op{n}", "query", 0.001)
    metrics.observe_operation("not a name; {}", "query", 0.001)
    samples = parse(_text(metrics))
    names = {dict(labels)["operation"] for (name, labels) in samples if name.endswith("_count")}
    assert len(names) == MAX_OPERATION_NAMES + 1
    assert value(samples, "gpupaas_graphql_operation_seconds_count", operation="other", type="query") == 21


def _text(metrics: Metrics) -> str:
    from prometheus_client import generate_latest

    return generate_latest(metrics.registry).decode()


async def test_errors_are_counted_by_code(http: httpx.AsyncClient) -> None:
    await post(http, 'query P { project(name: "nope") { name } }')
    await post(http, "query Bad { nosuchfield }")
    await post(http, "query Bad { nosuchfield }")
    body = await post(http, 'query R { renderReadme(markdown: "x\\u0000") }')
    assert body["errors"]
    samples = await scrape(http)
    errors = "gpupaas_graphql_errors_total"
    assert value(samples, errors, code="GRAPHQL_VALIDATION_FAILED") == 2
    assert value(samples, errors, code="INVALID") == 1
    codes = {dict(labels)["code"]: v for (name, labels), v in samples.items() if name == errors}
    assert sum(codes.values()) == 4, codes
    assert "INTERNAL" not in codes


# ---------------------------------------------------------------- database gauges


async def test_outbox_backlog_and_age_of_the_oldest_row(metered: Settings) -> None:
    moment = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
    app = metrics_app(Metrics(), metered, clock=lambda: moment)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://w") as client:
        await OutboxMessage.filter(sent_at=None).update(sent_at=moment)  # what seeding left
        samples = await scrape(client)
        assert value(samples, "gpupaas_outbox_backlog") == 0
        assert value(samples, "gpupaas_outbox_oldest_age_seconds") == 0
        old = await OutboxMessage.create(topic="t", key="k", payload={})
        await OutboxMessage.create(topic="t", key="k", payload={})
        await OutboxMessage.create(topic="t", key="k", payload={}, sent_at=moment)
        await OutboxMessage.filter(id=old.id).update(created_at=moment - timedelta(seconds=90))
        await OutboxMessage.filter(id__gt=old.id).update(created_at=moment - timedelta(seconds=5))
        samples = await scrape(client)
        assert value(samples, "gpupaas_outbox_backlog") == 2
        assert value(samples, "gpupaas_outbox_oldest_age_seconds") == 90
        await OutboxMessage.filter(id=old.id).update(sent_at=moment)
        samples = await scrape(client)
        assert value(samples, "gpupaas_outbox_backlog") == 1
        assert value(samples, "gpupaas_outbox_oldest_age_seconds") == 5


async def test_instances_by_status_in_a_fixed_number_of_queries(
    http: httpx.AsyncClient, count_queries: QueryCounter
) -> None:
    project = await make_project("ml")
    profile = await make_profile(project)
    for name in ("a", "b", "c"):
        await make_instance(project, profile, name=name)
    count_queries.statements.clear()
    samples = await scrape(http)
    statements = len(count_queries.statements)
    assert value(samples, "gpupaas_instances", kind="compute", status="NOT_DEPLOYED") == 3
    from gpupaas.compute.models import ComputeInstance

    await ComputeInstance.filter(name="a").update(status=DeploymentStatus.FAILED)
    await ComputeInstance.filter(name__in=["b", "c"]).update(status=DeploymentStatus.SUCCESS)
    await make_instance(project, profile, name="d")
    count_queries.statements.clear()
    samples = await scrape(http)
    # backlog, oldest row, one GROUP BY per kind, held GPUs, clusters
    assert len(count_queries.statements) == statements == 6
    assert value(samples, "gpupaas_instances", kind="compute", status="FAILED") == 1
    assert value(samples, "gpupaas_instances", kind="compute", status="SUCCESS") == 2
    assert value(samples, "gpupaas_instances", kind="compute", status="NOT_DEPLOYED") == 1


async def test_a_graphql_request_costs_no_query_for_metrics(
    http: httpx.AsyncClient, metered: Settings, count_queries: QueryCounter
) -> None:
    plain = create_app(replace(metered, metrics_token=""), migrate=False)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=plain), base_url="http://p") as other:
        await post(other, "query Me { me { username } }")
        count_queries.statements.clear()
        await post(other, "query Me { me { username } }")
        unmetered = len(count_queries.statements)
    count_queries.statements.clear()
    await post(http, "query Me { me { username } }")
    assert len(count_queries.statements) == unmetered


# ---------------------------------------------------------------- runs, websockets, the worker


@pytest.fixture
async def runtime(metered: Settings) -> AsyncIterator[Runtime]:
    runtime = Runtime(
        fast(metered), run_worker=True, driver=SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=0.0)
    )
    await runtime.start()
    try:
        yield runtime
    finally:
        await runtime.stop()


async def test_runs_by_action_and_outcome_with_their_duration(metered: Settings, runtime: Runtime) -> None:
    app = create_app(metered, migrate=False, runtime=runtime)
    node = {"gpuCount": 4, "gpuResource": "nvidia.com/gpu", "gpuModel": "A100"}
    await Cluster.filter(name="simulated").update(nodes=[{**node, "name": "n1"}, {**node, "name": "n2"}])
    project = await make_project("ml")
    profile = await make_profile(project)
    instance = await make_instance(project, profile, name="nb", deploy=True)
    assert (await wait_status(instance.id, DeploymentStatus.SUCCESS, DeploymentStatus.FAILED)).status == (
        DeploymentStatus.SUCCESS
    )
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://a") as client:

        async def counted() -> bool:
            samples = await scrape(client)
            return (
                value(samples, "gpupaas_run_duration_seconds_count", action="DEPLOY", outcome="succeeded")
                == 1
            )

        await eventually(counted, what="the finished run in /metrics")
        samples = await scrape(client)
        run = await DeploymentRun.get(instance_id=instance.id)
        assert run.started_at is not None and run.finished_at is not None
        took = (run.finished_at - run.started_at).total_seconds()
        assert value(samples, "gpupaas_run_duration_seconds_sum", action="DEPLOY", outcome="succeeded") == (
            pytest.approx(took, abs=1e-3)
        )
        assert value(samples, "gpupaas_run_duration_seconds_count", action="DEPLOY", outcome="failed") == 0
        assert value(samples, "gpupaas_instances", kind="compute", status="SUCCESS") == 1
        gpu = {"cluster": "simulated", "vendor": "NVIDIA", "model": "A100"}
        assert value(samples, "gpupaas_gpus_capacity", **gpu) == 8
        assert value(samples, "gpupaas_gpus_allocated", **gpu) == 1
        assert value(samples, "gpupaas_gpus_free", **gpu) == 7
        await Cluster.filter(name="simulated").update(nodes=[])
        samples = await scrape(client)
        assert value(samples, "gpupaas_gpus_capacity", **gpu) == 0  # the model left the cluster
        assert value(samples, "gpupaas_gpus_allocated", cluster="simulated", vendor="NVIDIA", model="") == 1


async def test_live_websockets_and_subscriptions(metered: Settings, runtime: Runtime) -> None:
    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.MEMBER)
    instance = await make_instance(project, await make_profile(project), name="nb", by=alice)
    status = "subscription($id: ID!) { computeInstanceStatus(id: $id) { status } }"
    async with (
        serving(create_app(metered, migrate=False, runtime=runtime)) as url,
        httpx.AsyncClient(base_url=url) as client,
    ):
        samples = await scrape(client)
        assert value(samples, "gpupaas_websocket_connections") == 0
        assert value(samples, "gpupaas_status_subscriptions") == 0
        async with ws.connect(url, token=alice.token) as first, ws.connect(url, token=alice.token):
            await first.subscribe(status, {"id": str(instance.id)})
            await first.next_data()
            await first.subscribe(status, {"id": str(instance.id)})
            await first.next_data()
            samples = await scrape(client)
            assert value(samples, "gpupaas_websocket_connections") == 2
            assert value(samples, "gpupaas_status_subscriptions") == 2
        gone = {"gpupaas_websocket_connections": 0.0, "gpupaas_status_subscriptions": 0.0}

        async def closed() -> bool:
            samples = await scrape(client)
            return all(value(samples, name) == v for name, v in gone.items())

        await eventually(closed, what="the closed websockets to leave /metrics")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


async def test_the_worker_serves_metrics_on_its_own_port(metered: Settings) -> None:
    settings = replace(metered, metrics_port=_free_port(), metrics_host="127.0.0.1")
    metrics = Metrics()
    metrics.observe_run("DESTROY", "failed", 2.5)
    stop = asyncio.Event()
    server = asyncio.create_task(serve_metrics(metrics, settings, stop))
    url = f"http://127.0.0.1:{settings.metrics_port}"
    try:
        async with httpx.AsyncClient(base_url=url) as client:

            async def up() -> bool:
                try:
                    await client.get("/metrics")
                except httpx.TransportError:
                    return False
                return True

            await eventually(up, what="the worker's metrics port")
            assert (await client.get("/metrics")).status_code == 401
            assert (await client.get("/graphql", headers=AUTH)).status_code == 404
            samples = await scrape(client)
            assert (
                value(samples, "gpupaas_run_duration_seconds_sum", action="DESTROY", outcome="failed") == 2.5
            )
    finally:
        stop.set()
        await server
    assert server.done()


def test_the_gpupaas_worker_process_serves_metrics_and_stops_on_sigterm(
    tmp_path: Path, kafka_broker: TansuBroker
) -> None:
    port = _free_port()
    env = {
        **os.environ,
        "GPUPAAS_DATABASE_URL": f"sqlite://{tmp_path}/worker.db",
        "GPUPAAS_KAFKA_BOOTSTRAP_SERVERS": kafka_broker.bootstrap,
        "GPUPAAS_KAFKA_IDEMPOTENCE": "false",
        "GPUPAAS_KAFKA_PARTITIONS": "2",
        "GPUPAAS_KAFKA_NAMESPACE": f"metrics{os.getpid()}{port}",
        "GPUPAAS_METRICS_TOKEN": TOKEN,
        "GPUPAAS_METRICS_PORT": str(port),
        "GPUPAAS_METRICS_HOST": "127.0.0.1",
        "GPUPAAS_LOG_FORMAT": "json",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "gpupaas.cli", "worker"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, "the worker exited"
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}/metrics", headers=AUTH, timeout=5)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline, "the worker's /metrics never answered"
                time.sleep(0.1)
        assert answer.status_code == 200
        samples = parse(answer.text)
        assert ("gpupaas_outbox_backlog", ()) in samples
        assert [name for name, _ in samples if name == "gpupaas_worker_heartbeat_timestamp_seconds"]
        assert httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).status_code == 401

        # with Kafka, the lag of the partitions its group gave it (none waits: 0)
        def lags() -> dict[str, float]:
            found = parse(httpx.get(f"http://127.0.0.1:{port}/metrics", headers=AUTH, timeout=5).text)
            return {
                dict(labels)["partition"]: v for (name, labels), v in found.items() if name.endswith("_lag")
            }

        while not lags():
            assert time.monotonic() < deadline, "the worker's lag never showed"
            time.sleep(0.1)
        assert set(lags().values()) == {0.0}
    finally:
        process.terminate()
        stdout, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    # and its logs are JSON lines, the first saying that it consumes
    entries = [json.loads(line) for line in stderr.splitlines() if line.strip()]
    assert any(e["message"].endswith(" consuming commands") for e in entries), entries
    assert stdout == ""
