"""Logs (README, "Observe"): the JSON lines' shape, the context each line carries (a GraphQL
request's id, user, operation and project; a worker run's id, instance and project), text as the
default, exceptions inside their line, and no secret in any line."""

from __future__ import annotations

import io
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

from gpupaas import app as app_module
from gpupaas.api.request_ids import request_id_of
from gpupaas.app import create_app
from gpupaas.catalog.service import profiles as profile_service
from gpupaas.catalog.service import templates as template_service
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core import logs
from gpupaas.core.actor import Role
from gpupaas.events.bus import Message
from gpupaas.events.memory import InProcessBus
from gpupaas.events.relay import TOPICS
from gpupaas.provisioning.drivers.simulated.driver import SimulatedDriver
from gpupaas.provisioning.inventory import DEFAULT_INVENTORY
from gpupaas.provisioning.registry import DriverRegistry
from gpupaas.runtime import Runtime
from gpupaas.settings import Settings, SettingsError
from gpupaas.workers.worker import Worker
from tests.conftest import Database, GraphQLClient, serving
from tests.factories import make_instance, make_profile, make_project, make_template, make_user, make_version
from tests.workers.conftest import fast, wait_status


class Captured:
    def __init__(self, stream: io.StringIO) -> None:
        self.stream = stream

    def lines(self) -> list[str]:
        return self.stream.getvalue().splitlines()

    def entries(self) -> list[dict[str, Any]]:
        """Every line, each of which must be one JSON object."""
        return [json.loads(line) for line in self.lines()]


def _snapshot() -> dict[str, tuple[int, list[logging.Handler], bool, list[Any]]]:
    names = ["", *logs.QUIET_LOGGERS, *logs.UVICORN_LOGGERS]
    return {
        name: (
            logging.getLogger(name).level,
            list(logging.getLogger(name).handlers),
            logging.getLogger(name).propagate,
            list(logging.getLogger(name).filters),
        )
        for name in names
    }


@pytest.fixture
def restore_logging() -> Iterator[None]:
    """configure() changes the process's loggers: put them back for the other tests."""
    saved = _snapshot()
    try:
        yield
    finally:
        for name, (level, handlers, propagate, filters) in saved.items():
            logger = logging.getLogger(name)
            logger.setLevel(level)
            logger.handlers[:] = handlers
            logger.propagate = propagate
            logger.filters[:] = filters


@pytest.fixture
def json_logs(restore_logging: None) -> Captured:
    stream = io.StringIO()
    logs.configure("json", "debug", stream=stream)
    return Captured(stream)


def test_text_is_the_default_and_the_settings_are_checked() -> None:
    settings = Settings.from_env(
        {"GPUPAAS_DATABASE_URL": "sqlite:///tmp/x.db", "GPUPAAS_SECRET_KEY": "k" * 32}
    )
    assert (settings.log_format, settings.log_level) == ("text", "info")
    chosen = Settings.from_env(
        {
            "GPUPAAS_DATABASE_URL": "sqlite:///tmp/x.db",
            "GPUPAAS_SECRET_KEY": "k" * 32,
            "GPUPAAS_LOG_FORMAT": "JSON",
            "GPUPAAS_LOG_LEVEL": "Debug",
        }
    )
    assert (chosen.log_format, chosen.log_level) == ("json", "debug")
    for name, value in (("GPUPAAS_LOG_FORMAT", "xml"), ("GPUPAAS_LOG_LEVEL", "verbose")):
        with pytest.raises(SettingsError, match=f"{name}='{value}': expected one of"):
            Settings.from_env(
                {"GPUPAAS_DATABASE_URL": "sqlite:///tmp/x.db", "GPUPAAS_SECRET_KEY": "k" * 32, name: value}
            )


def test_text_lines_name_their_context(restore_logging: None) -> None:
    stream = io.StringIO()
    logs.configure(stream=stream)  # the defaults: text, info
    log = logging.getLogger("gpupaas.test")
    with logs.bound(request_id="abc123", user="alice", operation="weird name\n"):
        log.info("hello %s", "there")
    log.debug("not shown at info")
    log.info("outside")
    first, second = stream.getvalue().splitlines()
    assert first.endswith(
        " INFO gpupaas.test: hello there [request_id=abc123 user=alice operation='weird name\\n']"
    )
    assert second.endswith(" INFO gpupaas.test: outside")
    with pytest.raises(json.JSONDecodeError):
        json.loads(first)


def test_json_lines_have_their_fields_and_the_exception_inside(json_logs: Captured) -> None:
    log = logging.getLogger("gpupaas.test")
    with logs.bound(run_id="r-1", instance_id="i-1"):
        log.warning("careful: %d", 3)
        try:
            raise RuntimeError("boom\nsecond line")
        except RuntimeError:
            log.exception("it failed")
    log.info("after")
    warning, failure, after = json_logs.lines()  # three lines: the traceback is inside the second
    entry = json.loads(warning)
    assert set(entry) == {"timestamp", "level", "logger", "message", "run_id", "instance_id"}
    assert entry["level"] == "warning" and entry["logger"] == "gpupaas.test"
    assert entry["message"] == "careful: 3" and entry["timestamp"].endswith("+00:00")
    failed = json.loads(failure)
    assert failed["message"] == "it failed" and failed["run_id"] == "r-1"
    assert failed["exception"].startswith("Traceback (most recent call last):")
    assert failed["exception"].endswith("RuntimeError: boom\nsecond line")
    assert set(json.loads(after)) == {"timestamp", "level", "logger", "message"}


def test_libraries_that_log_values_stay_quiet_even_at_debug(json_logs: Captured) -> None:
    logging.getLogger("tortoise.db_client").debug("INSERT ... params: ['hunter2']")
    logging.getLogger("aiokafka.conn").info("record value")
    logging.getLogger("tortoise.db_client").warning("slow")
    assert [e["message"] for e in json_logs.entries()] == ["slow"]


def test_uvicorn_lines_lose_their_query_strings(json_logs: Captured) -> None:
    for name in ("uvicorn.access", "uvicorn.error"):  # as `gpupaas serve` sets them (restored after)
        logging.getLogger(name).setLevel(logging.INFO)
    access = ("1.2.3.4:5", "GET", "/graphql?query={me{id}}&token=s3cret", "1.1", 200)
    logging.getLogger("uvicorn.access").info('%s - "%s %s HTTP/%s" %d', *access)
    logging.getLogger("uvicorn.error").info(
        '%s - "WebSocket %s" [accepted]', "1.2.3.4:5", "/graphql?token=s3cret"
    )
    logged, socket_line = json_logs.entries()
    assert (logged["method"], logged["path"], logged["status"]) == ("GET", "/graphql", 200)
    assert logged["message"] == '1.2.3.4:5 - "GET /graphql HTTP/1.1" 200'
    assert socket_line["message"] == '1.2.3.4:5 - "WebSocket /graphql" [accepted]'
    assert "s3cret" not in json_logs.stream.getvalue()


def test_unknown_context_fields_are_refused() -> None:
    with pytest.raises(ValueError, match="not a log context field: password"):
        logs.bind(password="x")


def test_a_sane_request_id_is_kept_and_any_other_replaced() -> None:
    assert request_id_of("4bf92f3577b34da6a3ce929d0e0e4736") == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert request_id_of("lb-1:abc.def") == "lb-1:abc.def"
    for bad in (None, "", "a b", "x\ny", "é", "a" * 129, "-leading"):
        replaced = request_id_of(bad)
        assert replaced != bad and len(replaced) == 32 and replaced.isalnum()


CATALOG = "query Shop($project: String!) { catalog(project: $project) { id } }"


@pytest.fixture
async def client(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings, migrate=False)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    ) as http:
        yield http


async def test_a_graphql_request_logs_its_id_user_operation_and_project(
    db: Database, client: httpx.AsyncClient, json_logs: Captured, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given a resolver that fails unexpectedly (ErrorPolicy logs it, masked for the client)
    alice = await make_user("alice")
    await make_project("ml", alice=Role.MEMBER)

    async def broken(*args: object) -> object:
        raise RuntimeError("the catalog broke")

    monkeypatch.setattr(profile_service, "catalog", broken)

    # when alice asks with a request id of her proxy's
    headers = {"authorization": f"Bearer {alice.token}", "x-request-id": "proxy-42"}
    response = await client.post(
        "/graphql", json={"query": CATALOG, "variables": {"project": "ml"}}, headers=headers
    )

    # then the response keeps the id, and the logged error carries the request's fields
    assert response.headers["x-request-id"] == "proxy-42"
    assert response.json()["errors"][0]["extensions"]["code"] == "INTERNAL"
    (entry,) = [e for e in json_logs.entries() if e["logger"] == "gpupaas.graphql"]
    assert entry["level"] == "error"
    assert {k: entry[k] for k in ("request_id", "user", "operation", "project")} == {
        "request_id": "proxy-42",
        "user": "alice",
        "operation": "Shop",
        "project": "ml",
    }
    assert "RuntimeError: the catalog broke" in entry["exception"]

    # and a request without an id (or a bad one) gets a new one, different each time
    first = await client.get("/healthz", headers={"x-request-id": "bad id\t"})
    second = await client.get("/healthz")
    assert len({first.headers["x-request-id"], second.headers["x-request-id"], "bad id\t"}) == 3


async def test_a_project_given_inline_in_an_input_is_logged(
    db: Database, client: httpx.AsyncClient, json_logs: Captured, monkeypatch: pytest.MonkeyPatch
) -> None:
    boss = await make_user("boss")
    await make_project("vision", boss=Role.ADMIN)

    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("no templates today")

    monkeypatch.setattr(template_service, "create_template", broken)
    query = 'mutation { createEnvironmentTemplate(input: {project: "vision", name: "t"}) { userErrors { message } } }'
    await client.post("/graphql", json={"query": query}, headers={"authorization": f"Bearer {boss.token}"})
    failures = [e for e in json_logs.entries() if e.get("exception")]
    assert failures, json_logs.lines()
    assert all(e["project"] == "vision" and e["operation"] == "anonymous" for e in failures), failures


async def test_a_worker_run_logs_its_run_instance_and_project(
    settings: Settings, json_logs: Captured
) -> None:
    # given a worker on the simulated cluster
    chosen = fast(settings)
    runtime = Runtime(chosen, run_worker=True, driver=SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=0.0))
    await runtime.start()
    try:
        # when an instance of project "ml" is deployed
        boss = await make_user("boss")
        project = await make_project("ml", boss=Role.ADMIN)
        profile = await make_profile(project)
        instance = await make_instance(project, profile, by=boss, deploy=True)
        deployed = await wait_status(instance.id, DeploymentStatus.SUCCESS, DeploymentStatus.FAILED)
        assert deployed.status == DeploymentStatus.SUCCESS
    finally:
        await runtime.stop()
    # then the worker's lines about the run name it, its instance and its project
    about = [e for e in json_logs.entries() if e["logger"] == "gpupaas.worker"]
    assert [e["message"] for e in about] == [
        "DEPLOY run of instance started (attempt 1)",
        "DEPLOY run of instance succeeded",
    ]
    for entry in about:
        assert entry["instance_id"] == str(instance.id)
        assert entry["project"] == "ml"
        assert len(entry["run_id"]) == 36


SECRET_YAML = """\
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
---
apiVersion: v1
kind: Secret
metadata:
  name: key
  namespace: "{{ instance.namespace }}"
stringData:
  apiKey: "{{ inputs.apiKey }}"
"""
LOGIN = "mutation($u: String!, $p: String!) { login(username: $u, password: $p) { user { username } userErrors { message } } }"


async def test_no_secret_reaches_a_json_line(db: Database, settings: Settings, json_logs: Captured) -> None:
    """A sign-in (right and wrong passwords) and a deploy with a sensitive input, at DEBUG: no
    line holds the password, the token or the input's value."""
    password, value = "Corr3ct-Horse-b4ttery", "sens-Val-7d1e22"
    chosen = replace(fast(settings), simulated_endpoints=False)
    runtime = Runtime(chosen, run_worker=True, driver=SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=0.0))
    await runtime.start()
    try:
        app = create_app(chosen, migrate=False, runtime=runtime)
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://testserver"
        ) as http:
            gql = GraphQLClient(http)
            from gpupaas.accounts import service as accounts

            await accounts.create_user(None, "carol", password, False)
            wrong = await gql(LOGIN, {"u": "carol", "p": password + "x"})
            assert wrong["data"]["login"]["userErrors"], wrong
            right = await gql(LOGIN, {"u": "carol", "p": password})
            assert right["data"]["login"]["user"] == {"username": "carol"}, right
            session = http.cookies.get("gpupaas_session")
            assert session

            boss = await make_user("boss")
            project = await make_project("ml", boss=Role.ADMIN)
            version = await make_version(
                await make_template(project),
                resources=SECRET_YAML,
                inputs=[template_service.InputDefinitionIn(name="apiKey", type="STRING", sensitive=True)],
                outputs=[],
            )
            profile = await make_profile(project, version)
            launch = """mutation($input: CreateComputeInstanceInput!) {
              createComputeInstance(input: $input) { computeInstance { id } userErrors { field message } } }"""
            body = await gql.data(
                launch,
                {
                    "input": {
                        "project": "ml",
                        "profile": str(profile.id),
                        "name": "nb",
                        "deploy": True,
                        "inputs": [{"key": "apiKey", "value": value}],
                    }
                },
                token=boss.token,
            )
            payload = body["createComputeInstance"]
            assert not payload["userErrors"], payload
            deployed = await wait_status(
                payload["computeInstance"]["id"], DeploymentStatus.SUCCESS, DeploymentStatus.FAILED
            )
            assert deployed.status == DeploymentStatus.SUCCESS, deployed.status_message
    finally:
        await runtime.stop()
    lines = json_logs.lines()
    entries = json_logs.entries()  # every line is one JSON object
    assert any(e.get("run_id") for e in entries)  # the run was logged
    for secret in (password, value, session, boss.token):
        assert not [line for line in lines if secret in line], secret


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _post(url: str, body: dict[str, Any], headers: dict[str, str]) -> tuple[int, dict[str, str]]:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"content-type": "application/json", **headers}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return answer.status, dict(answer.headers.items())


@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_gpupaas_serve_writes_every_line_as_json(tmp_path: Path) -> None:
    """The real `gpupaas serve` with GPUPAAS_LOG_FORMAT=json: every line of its stderr (uvicorn's
    start-up, access and shutdown lines included) is one JSON object, the access lines carry the
    request id and the user, and neither the password nor a query string's token is in them."""
    password = "Pr0cess-Pass-5e9a"
    env = {
        **os.environ,
        "GPUPAAS_DATABASE_URL": f"sqlite://{tmp_path}/logs.db",
        "GPUPAAS_LOG_FORMAT": "json",
        "GPUPAAS_SIMULATED_ENDPOINTS": "false",
        "HOME": str(tmp_path),
    }
    cli = [sys.executable, "-m", "gpupaas.cli"]
    created = subprocess.run(
        [*cli, "create-user", "--username", "carol", "--password-stdin"],
        input=password + "\n",
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert created.returncode == 0, created.stderr
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [*cli, "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"{base}/readyz", timeout=1) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.2)
        login = {"query": LOGIN, "variables": {"u": "carol", "p": password}}
        status, headers = _post(f"{base}/graphql", login, {"x-request-id": "e2e-login-1"})
        assert status == 200 and headers["x-request-id"] == "e2e-login-1"
        with urllib.request.urlopen(f"{base}/healthz?token=qs-Secret-0b7c", timeout=5) as answer:
            assert answer.status == 200
    finally:
        server.send_signal(signal.SIGTERM)
        stdout, stderr = server.communicate(timeout=30)
    lines = [line for line in stderr.splitlines() if line.strip()]
    entries = [json.loads(line) for line in lines]  # every line parses
    assert all({"timestamp", "level", "logger", "message"} <= set(e) for e in entries)
    messages = [e["message"] for e in entries]
    assert any("Application startup complete" in m for m in messages), messages
    assert any("Application shutdown complete" in m for m in messages), messages
    access = [e for e in entries if e["logger"] == "uvicorn.access"]
    (signed_in,) = [e for e in access if e.get("request_id") == "e2e-login-1"]
    assert (signed_in["method"], signed_in["path"], signed_in["status"]) == ("POST", "/graphql", 200)
    (health,) = [e for e in access if e["path"] == "/healthz"]
    assert len(health["request_id"]) == 32
    for secret in (password, "qs-Secret-0b7c"):
        assert secret not in stderr and secret not in stdout, secret


async def test_a_websocket_gets_a_request_id_and_its_operations_log_the_user(
    db: Database, settings: Settings, json_logs: Captured, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = await make_user("alice")
    await make_project("ml", alice=Role.MEMBER)

    async def broken(*args: object) -> object:
        raise RuntimeError("the catalog broke")

    monkeypatch.setattr(profile_service, "catalog", broken)
    async with (
        serving(create_app(settings, migrate=False)) as url,
        websockets.connect(
            url.replace("http", "ws") + "/graphql",
            subprotocols=[websockets.Subprotocol("graphql-transport-ws")],
            additional_headers={"x-request-id": "ws-7"},
        ) as socket_,
    ):
        # the accept returns the id
        assert socket_.response is not None and socket_.response.headers["x-request-id"] == "ws-7"
        await socket_.send(
            json.dumps({"type": "connection_init", "payload": {"authorization": f"Bearer {alice.token}"}})
        )
        assert json.loads(await socket_.recv())["type"] == "connection_ack"
        subscribe = {"query": CATALOG, "variables": {"project": "ml"}, "operationName": "Shop"}
        await socket_.send(json.dumps({"id": "1", "type": "subscribe", "payload": subscribe}))
        answer = json.loads(await socket_.recv())
        assert answer["payload"]["errors"][0]["extensions"]["code"] == "INTERNAL"
    (entry,) = [e for e in json_logs.entries() if e["logger"] == "gpupaas.graphql"]
    assert {k: entry.get(k) for k in ("request_id", "user", "operation", "project")} == {
        "request_id": "ws-7",
        "user": "alice",
        "operation": "Shop",
        "project": "ml",
    }


async def test_an_unhandled_error_is_logged_with_its_request_id(
    db: Database, settings: Settings, json_logs: Captured, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def broken(request: object) -> object:
        raise RuntimeError("health broke")

    monkeypatch.setattr(app_module, "healthz", broken)
    async with serving(create_app(settings, migrate=False)) as url, httpx.AsyncClient() as http:
        # the test server configured uvicorn's loggers as uvicorn.run does: as `gpupaas serve` does, ours again
        logs.configure("json", "debug", stream=json_logs.stream)
        response = await http.get(f"{url}/healthz", headers={"x-request-id": "boom-1"})
    assert response.status_code == 500
    (entry,) = [e for e in json_logs.entries() if "exception" in e]
    assert entry["logger"] == "uvicorn.error" and entry["request_id"] == "boom-1"
    assert entry["exception"].endswith("RuntimeError: health broke")


async def test_a_command_that_cannot_be_handled_is_logged_with_its_run_id(
    settings: Settings, json_logs: Captured, monkeypatch: pytest.MonkeyPatch
) -> None:
    bus = InProcessBus()
    await bus.start()
    await bus.ensure_topics(TOPICS)
    worker = Worker(bus, DriverRegistry(settings))

    async def broken(kind: object, run_id: str) -> None:
        raise RuntimeError("the database went away")

    monkeypatch.setattr(worker, "handle_run", broken)
    command = json.dumps({"type": "run", "runId": "run-123"}).encode()
    await worker.handle_message(Message("gpupaas.commands", 0, 0, "k", command))
    await bus.stop()
    (entry,) = [e for e in json_logs.entries() if e["logger"] == "gpupaas.worker"]
    assert entry["run_id"] == "run-123" and "RuntimeError: the database went away" in entry["exception"]
