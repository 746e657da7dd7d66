"""Database set-up shared by every process: the Tortoise config, migrations, connect and close.

All models live in one Tortoise app, `gpupaas`, so that foreign keys can cross domains; its
migrations are in `gpupaas/migrations/` and run unchanged on SQLite and PostgreSQL.
"""

from __future__ import annotations

from typing import Any

from tortoise import Tortoise
from tortoise.migrations.api import migrate

APP = "gpupaas"
MODEL_MODULES = [
    "gpupaas.accounts.models",
    "gpupaas.catalog.models",
    "gpupaas.clusters.models",
    "gpupaas.compute.models",
    "gpupaas.events.models",
    "gpupaas.gpuservice.models",
    "gpupaas.provisioning.models",
]


def tortoise_config(database_url: str) -> dict[str, Any]:
    return {
        "connections": {"default": database_url},
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


async def migrate_database(database_url: str) -> None:
    """Apply every migration that the database has not seen yet (idempotent)."""
    await migrate(config=tortoise_config(database_url))
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
