"""Database set-up shared by every process: the Tortoise config, migrations, connect and close.

All models live in one Tortoise app, `gpupaas`, so that foreign keys can cross domains; its
migrations are in `gpupaas/migrations/` and run unchanged on SQLite and PostgreSQL.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from contextvars import ContextVar
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from tortoise import Tortoise
from tortoise.migrations.api import migrate

APP = "gpupaas"
MODEL_MODULES = [
    "gpupaas.accounts.models",
    "gpupaas.audit.models",
    "gpupaas.catalog.models",
    "gpupaas.clusters.models",
    "gpupaas.compute.models",
    "gpupaas.events.models",
    "gpupaas.instance_templates.models",
    "gpupaas.metering.models",
    "gpupaas.service_instances.models",
    "gpupaas.provisioning.models",
    "gpupaas.quotas.models",
    "gpupaas.webhooks.models",
    "gpupaas.schedules.models",
    "gpupaas.ssh_keys.models",
]


# SQLite runs in WAL mode (Tortoise's default); with synchronous=NORMAL a commit no longer waits for
# an fsync of the WAL (about 0.3 ms each here, and a deploy makes ~30 commits). The database stays
# consistent and every commit survives a crash or restart of the process; only a power loss or OS
# crash can undo the last commits. GPUPAAS_DATABASE_URL=sqlite:///f.db?synchronous=FULL restores
# the fsync per commit. bench/deploy_pipeline.py shows the gain (README, Performance).
SQLITE_SYNCHRONOUS = "NORMAL"


def connection_url(database_url: str) -> str:
    """The URL Tortoise connects with: SQLite gets our pragmas unless the URL sets them."""
    if not database_url.startswith("sqlite://") or "synchronous=" in database_url:
        return database_url
    separator = "&" if "?" in database_url else "?"
    return f"{database_url}{separator}synchronous={SQLITE_SYNCHRONOUS}"


def tortoise_config(database_url: str) -> dict[str, Any]:
    return {
        "connections": {"default": connection_url(database_url)},
        "apps": {
            APP: {
                "models": MODEL_MODULES,
                "migrations": "gpupaas.migrations",
                "default_connection": "default",
            }
        },
        "use_tz": True,
        "timezone": "UTC",
    }


# The GPUPAAS_SECRET_KEY of the migrations migrate_database runs: a data migration that encrypts
# what was stored in plain text needs it (0013 seals sensitive input values).
_secret_key: ContextVar[str | None] = ContextVar("gpupaas_migration_secret_key", default=None)


def migration_secret_key() -> str | None:
    """The secret key of the migrations being run (None: migrate_database was given none)."""
    return _secret_key.get()


# Every process migrates at start (`gpupaas serve`, `gpupaas worker`, `gpupaas migrate`), and on
# Kubernetes several pods start at once (README, "Install on Kubernetes"). Applied side by side, two
# processes apply the same migration twice and fail half-way ("relation ... already exists"). On
# PostgreSQL they take turns: each holds this session advisory lock while it migrates.
MIGRATION_LOCK = 0x6770757061617321  # "gpupaas!"
# What asyncpg understands of a Tortoise URL's query (Tortoise's pool options are not for it).
_LIBPQ_PARAMETERS = ("ssl", "sslmode", "sslrootcert", "sslcert", "sslkey", "sslpassword", "sslcrl")


def _asyncpg_dsn(database_url: str) -> str:
    parts = urlsplit(database_url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k in _LIBPQ_PARAMETERS]
    return urlunsplit(("postgresql", parts.netloc, parts.path, urlencode(query), ""))


@contextlib.asynccontextmanager
async def _migration_turn(database_url: str) -> AsyncIterator[None]:
    if database_url.startswith("sqlite://"):
        yield
        return
    import asyncpg

    connection = await asyncpg.connect(_asyncpg_dsn(database_url))
    try:
        await connection.execute("SELECT pg_advisory_lock($1)", MIGRATION_LOCK)
        yield
    finally:
        await connection.close()  # the session ends, and its lock with it


async def migrate_database(database_url: str, secret_key: str | None = None) -> None:
    """Apply every migration that the database has not seen yet (idempotent; one process at a time
    on PostgreSQL). `secret_key` is the app's GPUPAAS_SECRET_KEY: a migration that finds plain text
    to encrypt fails without it."""
    token = _secret_key.set(secret_key)
    try:
        async with _migration_turn(database_url):
            await migrate(config=tortoise_config(database_url))
    finally:
        _secret_key.reset(token)
    await Tortoise.close_connections()


async def connect(database_url: str) -> None:
    # The global fallback lets request tasks see the connection that the lifespan task opened
    # (uvicorn runs the lifespan in a task of its own, so a context variable would not reach them).
    await Tortoise.init(config=tortoise_config(database_url), _enable_global_fallback=True)


async def close() -> None:
    await Tortoise.close_connections()


async def pending_model_changes(database_url: str = "sqlite://:memory:") -> list[Any]:
    """Migration writers for model changes that no migration covers yet (empty when in sync)."""
    from tortoise.context import TortoiseContext
    from tortoise.migrations.autodetector import MigrationAutodetector

    config = tortoise_config(database_url)
    async with TortoiseContext() as ctx:
        await ctx.init(config=config)
        assert ctx.apps is not None
        detector = MigrationAutodetector(ctx.apps, config["apps"])
        return await detector.changes()
