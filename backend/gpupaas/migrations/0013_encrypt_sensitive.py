"""Sensitive values stored before they were sealed, sealed; the simulated cluster keeps no rendered
manifests.

- The defaults of sensitive inputs (environment_template_versions.inputs), the profiles' values of
  them (compute_profiles.input_settings), and the instances' own values and snapshots of both
  (compute_instances.inputs, .snapshot) are sealed with the app's GPUPAAS_SECRET_KEY
  (core.crypto.Sealer, as the app now writes them). `gpupaas migrate` and `gpupaas serve` give
  the key (db.migrate_database); a database that holds such values cannot be migrated without it.
- The simulated cluster's Secrets keep `stringData` merged into `data` (base64), as a real API
  server keeps them, and its table drops the manifests it kept as applied (rendered text, plain).
"""

from __future__ import annotations

import base64
import json
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from tortoise import migrations
from tortoise.backends.base.client import BaseDBAsyncClient
from tortoise.migrations import operations as ops

from gpupaas.core.crypto import Sealer, is_sealed
from gpupaas.db import migration_secret_key

_PAGE = 500


def _json(value: Any) -> Any:
    """A JSON column as read: SQLite and asyncpg both give it as text."""
    return json.loads(value) if isinstance(value, str | bytes) else value


async def _query(conn: BaseDBAsyncClient, sql: str, values: Sequence[Any] = ()) -> list[dict[str, Any]]:
    if conn.capabilities.dialect != "sqlite":  # asyncpg numbers its parameters
        parts = sql.split("?")
        sql = "".join(part + (f"${n}" if n < len(parts) else "") for n, part in enumerate(parts, 1))
    return list(await conn.execute_query_dict(sql, list(values)))


async def _pages(conn: BaseDBAsyncClient, table: str, columns: str) -> AsyncIterator[dict[str, Any]]:
    """Every row of the table, a page at a time, by id."""
    after = ""
    while True:
        rows = await _query(
            conn,
            f"SELECT id, {columns} FROM {table} WHERE CAST(id AS VARCHAR(36)) > ? "  # noqa: S608 - our own names
            "ORDER BY CAST(id AS VARCHAR(36)) LIMIT ?",
            [after, _PAGE],
        )
        if not rows:
            return
        for row in rows:
            yield row
        after = str(rows[-1]["id"])


class _Sealing:
    """Seals a plain value; fails, saying what to do, when no key was given."""

    def __init__(self, secret_key: str | None, what: str = "0013 seals sensitive input values") -> None:
        self.sealer = Sealer(secret_key) if secret_key else None
        self.what = what
        self.sealed = 0

    def __call__(self, value: Any) -> Any:
        if not isinstance(value, str) or is_sealed(value):
            return value
        if self.sealer is None:
            raise RuntimeError(
                f"migration {self.what} stored in plain text and needs the app's "
                "GPUPAAS_SECRET_KEY: run `gpupaas migrate` (or `gpupaas serve`) with the settings the app uses"
            )
        self.sealed += 1
        return self.sealer.seal(value)


def _seal_definitions(definitions: list[dict[str, Any]], seal: Callable[[Any], Any]) -> list[dict[str, Any]]:
    return [
        {**d, "default": seal(d["default"])} if d.get("sensitive") and d.get("default") is not None else d
        for d in definitions
    ]


def _seal_settings(
    settings: list[dict[str, Any]], sensitive: frozenset[str], seal: Callable[[Any], Any]
) -> list[dict[str, Any]]:
    return [
        {**s, "value": seal(s["value"])} if s.get("name") in sensitive and s.get("value") is not None else s
        for s in settings
    ]


def _sensitive(definitions: list[dict[str, Any]]) -> frozenset[str]:
    return frozenset(str(d.get("name")) for d in definitions if d.get("sensitive"))


def _secret_data(objects: list[Any]) -> list[Any]:
    changed = []
    for obj in objects:
        if isinstance(obj, dict) and obj.get("kind") == "Secret" and isinstance(obj.get("stringData"), dict):
            obj = dict(obj)
            given = obj.pop("stringData")
            data = obj.get("data") if isinstance(obj.get("data"), dict) else {}
            obj["data"] = {
                **data,
                **{str(k): base64.b64encode(str(v).encode()).decode() for k, v in given.items()},
            }
        changed.append(obj)
    return changed


async def _update(conn: BaseDBAsyncClient, table: str, row_id: Any, values: dict[str, Any]) -> None:
    assignments = ", ".join(f"{column} = ?" for column in values)
    await _query(
        conn,
        f"UPDATE {table} SET {assignments} WHERE id = ?",  # noqa: S608 - our own names
        [*(json.dumps(value) for value in values.values()), row_id],
    )


async def seal_sensitive_values(apps: Any, schema_editor: Any) -> None:
    conn: BaseDBAsyncClient = schema_editor.client
    seal = _Sealing(migration_secret_key())

    sensitive_of_version: dict[str, frozenset[str]] = {}
    async for row in _pages(conn, "environment_template_versions", "inputs"):
        definitions = _json(row["inputs"]) or []
        sensitive_of_version[str(row["id"])] = _sensitive(definitions)
        sealed = _seal_definitions(definitions, seal)
        if sealed != definitions:
            await _update(conn, "environment_template_versions", row["id"], {"inputs": sealed})

    async for row in _pages(conn, "compute_profiles", "template_version_id, input_settings"):
        settings = _json(row["input_settings"]) or []
        sensitive = sensitive_of_version.get(str(row["template_version_id"]), frozenset())
        sealed = _seal_settings(settings, sensitive, seal)
        if sealed != settings:
            await _update(conn, "compute_profiles", row["id"], {"input_settings": sealed})

    async for row in _pages(conn, "compute_instances", "inputs, snapshot"):
        snapshot = _json(row["snapshot"]) or {}
        definitions = snapshot.get("inputDefinitions") or []
        sensitive = _sensitive(definitions)
        if not sensitive:
            continue
        own = _json(row["inputs"]) or []
        sealed_own = [[pair[0], seal(pair[1])] if pair[0] in sensitive else pair for pair in own]
        sealed_snapshot = {
            **snapshot,
            "inputDefinitions": _seal_definitions(definitions, seal),
            "inputSettings": _seal_settings(snapshot.get("inputSettings") or [], sensitive, seal),
        }
        if sealed_own != own or sealed_snapshot != snapshot:
            await _update(
                conn, "compute_instances", row["id"], {"inputs": sealed_own, "snapshot": sealed_snapshot}
            )

    async for row in _pages(conn, "simulated_allocations", "objects"):
        objects = _json(row["objects"]) or []
        kept = _secret_data(objects)
        if kept != objects:
            await _update(conn, "simulated_allocations", row["id"], {"objects": kept})


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0012_instance_owners")]

    initial = False

    operations = [
        ops.RunPython(seal_sensitive_values),
        ops.RemoveField(model_name="SimulatedAllocation", name="manifests"),
    ]
