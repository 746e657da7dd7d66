"""Migrations: they match the models, and the same files build the schema on SQLite and PostgreSQL."""

from __future__ import annotations

from tortoise import Tortoise

from gpupaas import db as gdb
from tests.conftest import Database


async def test_models_and_migrations_agree() -> None:
    # given the models and the committed migrations, when the autodetector compares them
    changes = await gdb.pending_model_changes()
    # then there is nothing to write: run `gpupaas makemigrations` after changing a model
    assert changes == [], [w.name for w in changes]


async def test_migrations_build_every_table(db: Database) -> None:
    conn = Tortoise.get_connection("default")
    if db.kind == "sqlite":
        rows = await conn.execute_query_dict("SELECT name FROM sqlite_master WHERE type = 'table'")
        tables = {r["name"] for r in rows}
    else:
        rows = await conn.execute_query_dict(
            "SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public'"
        )
        tables = {r["name"] for r in rows}
    expected = {m._meta.db_table for m in Tortoise.apps["gpupaas"].values()}
    assert expected <= tables


async def test_migrating_twice_changes_nothing(db: Database) -> None:
    await gdb.close()
    await gdb.migrate_database(db.url)  # already migrated by the fixture: a no-op
    await gdb.connect(db.url)
    assert await Tortoise.get_connection("default").execute_query_dict("SELECT 1 AS one") == [{"one": 1}]
