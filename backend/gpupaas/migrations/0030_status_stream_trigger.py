"""A status event's outbox row takes its project's next cursor in its own INSERT (events/outbox.py):
on SQLite that INSERT reads the stream's cursor, and this trigger moves the stream on to the
cursor inserted (SQLite has one writer at a time, so no other event can take it meanwhile). On
PostgreSQL the INSERT moves the stream on itself, in a CTE that also locks it: nothing to do."""

from __future__ import annotations

from typing import Any

from tortoise import migrations
from tortoise.migrations import operations as ops

_TRIGGER = """
CREATE TRIGGER IF NOT EXISTS outbox_moves_status_stream AFTER INSERT ON outbox
WHEN NEW."cursor" IS NOT NULL
BEGIN
    INSERT OR REPLACE INTO status_streams (project_id, "cursor") VALUES (NEW.project_id, NEW."cursor");
END
"""


async def create_trigger(apps: Any, schema_editor: Any) -> None:
    if schema_editor.client.capabilities.dialect == "sqlite":
        await schema_editor.client.execute_script(_TRIGGER)


async def drop_trigger(apps: Any, schema_editor: Any) -> None:
    if schema_editor.client.capabilities.dialect == "sqlite":
        await schema_editor.client.execute_script("DROP TRIGGER IF EXISTS outbox_moves_status_stream")


class Migration(migrations.Migration):
    dependencies = [("gpupaas", "0029_ssh_access")]

    initial = False

    operations = [ops.RunPython(create_trigger, drop_trigger)]
