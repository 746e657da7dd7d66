"""Shared test set-up: a real database per test (SQLite, and PostgreSQL when it answers) and a
GraphQL client that talks to the real app.

`pytest` runs on SQLite; `pytest --db=postgres` runs the tests that use `db` on PostgreSQL (only
those: the others do not touch a database). `make test` runs both, in two processes, because
Tortoise binds its models to one dialect per process. PostgreSQL is the one from
GPUPAAS_TEST_POSTGRES_URL, else the machine's server at 127.0.0.1:5432; when neither answers the
PostgreSQL run is skipped locally, and fails in CI or when GPUPAAS_TEST_POSTGRES_URL was set
(tests/required.py). Under pytest-xdist each worker makes a database of its own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import shutil
import socket
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import hypothesis
import pytest
from tortoise import Tortoise

from gpupaas import db as gdb
from gpupaas.accounts import throttle
from gpupaas.app import create_app
from gpupaas.bootstrap import seed
from gpupaas.settings import Settings

# The real Kafka-protocol broker (tansu) for the tests that need one.
from tests.fake_kube.fixtures import fake_kube  # noqa: F401
from tests.kafka_broker import kafka_broker, own_broker, tansu_binary  # noqa: F401
from tests.required import POSTGRES, missing

# pytester: tests/test_required.py runs small pytest sessions of its own.
pytest_plugins = ["pytester"]

# Property tests assert properties, not speed: Hypothesis's default 200 ms per example is a
# wall-clock limit that pure-Python YAML (the GPUStack export/parse round trip) and resolving specs
# exceed on a loaded machine under coverage, then pass on the replay: reported as Flaky. No deadline.
hypothesis.settings.register_profile("gpupaas", deadline=None)
hypothesis.settings.load_profile("gpupaas")

DEFAULT_POSTGRES = "postgres://postgres@127.0.0.1:5432/test"
# The app's GPUPAAS_SECRET_KEY in tests: what the factories seal sensitive values with, so that the
# app and its worker read them.
SECRET_KEY = "k" * 64

# The studio's screenshots (tests/e2e). Listed at the end of the run from here, the conftest that
# the xdist controller loads too: its workers take them.
SCREENSHOTS = Path(os.environ.get("GPUPAAS_SCREENSHOTS", Path(__file__).resolve().parents[1] / "screenshots"))
_STARTED = time.time()


def _postgres_admin_url() -> str | None:
    explicit = os.environ.get("GPUPAAS_TEST_POSTGRES_URL")
    if explicit:
        return explicit
    try:
        with socket.create_connection(("127.0.0.1", 5432), timeout=0.5):
            return DEFAULT_POSTGRES
    except OSError:
        return None


def _with_database(url: str, name: str) -> str:
    base, _, _ = url.rpartition("/")
    return f"{base}/{name}"


async def _admin_execute(url: str, sql: str) -> None:
    conn = await asyncpg.connect(url.replace("postgres://", "postgresql://", 1))
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--db", choices=["sqlite", "postgres"], default="sqlite", help="the database the tests use"
    )


@pytest.fixture(autouse=True, scope="session")
def _quick_password_hashing() -> Iterator[None]:
    """Passwords are hashed with argon2id at its smallest cost in the tests: the default cost (64 MiB,
    3 passes) takes a quarter of a second of CPU per user, and the tests make hundreds of users.
    Hashing, verifying and refusing work as with the default; `gpupaas` subprocesses keep it."""
    from argon2 import PasswordHasher

    from gpupaas.accounts import service

    patch = pytest.MonkeyPatch()
    patch.setattr(service, "_hasher", PasswordHasher(time_cost=1, memory_cost=8, parallelism=1))
    yield
    patch.undo()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    taken = [p for p in SCREENSHOTS.glob("*.png") if p.stat().st_mtime >= _STARTED]
    if taken:
        terminalreporter.write_line(f"studio screenshots ({len(taken)}): {SCREENSHOTS}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--db") != "postgres":
        return
    keep = [i for i in items if "db" in getattr(i, "fixturenames", ())]
    dropped = [i for i in items if i not in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


@pytest.fixture(autouse=True)
def _throttle_waits_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sign-in throttling's waits take no time in tests: the hostile-input, fuzz and permission
    tests fail many sign-ins from one address and would otherwise sleep for real (15 s in the
    hostile-input test alone). tests/accounts/test_throttle.py replaces the sleep with its own
    recorder and checks the waits asked for; the lock itself is not affected."""

    async def at_once(seconds: float) -> None:
        await asyncio.sleep(0)

    monkeypatch.setattr(throttle, "sleep", at_once)


@dataclass
class Database:
    kind: str
    url: str


@pytest.fixture(scope="session")
def database_kind(pytestconfig: pytest.Config) -> str:
    kind: str = pytestconfig.getoption("--db")
    return kind


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One migrated SQLite file; each test gets a copy (migrating is the slow part)."""
    path = tmp_path_factory.mktemp("sqlite") / "template.db"
    asyncio.run(gdb.migrate_database(f"sqlite://{path}"))
    return path


@pytest.fixture(scope="session")
def postgres_database(database_kind: str) -> Iterator[str | None]:
    """A database of our own on the PostgreSQL server, migrated once, dropped at the end."""
    if database_kind != "postgres":
        yield None
        return
    admin = _postgres_admin_url()
    if admin is None:
        missing(POSTGRES, "no server answers at 127.0.0.1:5432 (start one, or set GPUPAAS_TEST_POSTGRES_URL)")
    # one database per session, and so per xdist worker (gw0, gw1, ...)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    name = f"gpupaas_test_{worker}_{uuid.uuid4().hex[:10]}"
    url = _with_database(admin, name)
    try:
        asyncio.run(_admin_execute(admin, f'CREATE DATABASE "{name}"'))
        asyncio.run(_admin_execute(admin, f'ALTER DATABASE "{name}" SET synchronous_commit = off'))
    except (OSError, asyncpg.PostgresError) as error:
        missing(POSTGRES, f"the server at {admin} cannot be used: {type(error).__name__}: {error}")
    try:
        asyncio.run(gdb.migrate_database(url))
        yield url
    finally:
        asyncio.run(_admin_execute(admin, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


async def _truncate_all() -> None:
    conn = Tortoise.get_connection("default")
    tables = sorted({m._meta.db_table for m in Tortoise.apps["gpupaas"].values()})
    await conn.execute_script(f"TRUNCATE {', '.join(tables)} CASCADE")


@pytest.fixture
async def db(
    database_kind: str, tmp_path: Path, sqlite_template: Path, postgres_database: str | None
) -> AsyncIterator[Database]:
    if database_kind == "sqlite":
        path = tmp_path / "gpupaas.db"
        shutil.copyfile(sqlite_template, path)
        database = Database("sqlite", f"sqlite://{path}")
        await gdb.connect(database.url)
    else:
        url = postgres_database
        assert url is not None  # the fixture skipped or failed otherwise
        database = Database("postgres", url)
        await gdb.connect(database.url)
        await _truncate_all()
    try:
        await seed()
        yield database
    finally:
        await gdb.close()


@pytest.fixture
def settings(db: Database) -> Settings:
    # Tests write through the service layer (factories), which does not bump the data version as
    # mutations do: the response cache is off here, and tests/graphql/test_response_cache.py tests it.
    return Settings(database_url=db.url, secret_key=SECRET_KEY, response_cache=False)


class GraphQLClient:
    """Posts operations to the real app; `token` signs in as that API token's user."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    async def post(
        self, query: str, variables: dict[str, Any] | None = None, token: str | None = None
    ) -> httpx.Response:
        headers = {"content-type": "application/json"}
        if token:
            headers["authorization"] = f"Bearer {token}"
        # json.dumps escapes what UTF-8 cannot carry (an unpaired surrogate), as browsers do
        body = json.dumps({"query": query, "variables": variables or {}})
        return await self.http.post("/graphql", content=body, headers=headers)

    async def __call__(
        self, query: str, variables: dict[str, Any] | None = None, token: str | None = None
    ) -> dict[str, Any]:
        response = await self.post(query, variables, token)
        assert response.status_code == 200, response.text
        body: dict[str, Any] = response.json()
        return body

    async def data(
        self, query: str, variables: dict[str, Any] | None = None, token: str | None = None
    ) -> dict[str, Any]:
        body = await self(query, variables, token)
        assert "errors" not in body, body["errors"]
        data: dict[str, Any] = body["data"]
        return data


@pytest.fixture
async def gql(settings: Settings) -> AsyncIterator[GraphQLClient]:
    app = create_app(settings, migrate=False)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        yield GraphQLClient(http)


@contextlib.asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """`app` under a real uvicorn on a free loopback port, in this event loop (same database)."""
    import uvicorn

    config = uvicorn.Config(app, host="127.0.0.1", port=0, lifespan="off", log_level="warning")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task


@pytest.fixture
async def live_server(settings: Settings) -> AsyncIterator[str]:
    async with serving(create_app(settings, migrate=False)) as url:
        yield url


class QueryCounter(logging.Handler):
    """Counts the SQL statements Tortoise sends (its db_client logger, at DEBUG)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.statements: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.statements.append(record.getMessage())


@contextlib.contextmanager
def sql_log(handler: logging.Handler) -> Iterator[None]:
    """`handler` gets every SQL statement Tortoise sends meanwhile (its db_client logger, at DEBUG)."""
    logger = logging.getLogger("tortoise.db_client")
    previous = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)


@pytest.fixture
def count_queries() -> Iterator[QueryCounter]:
    counter = QueryCounter()
    with sql_log(counter):
        yield counter
