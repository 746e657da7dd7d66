"""events/rows.py: a row carried in an event's payload builds back the model the database gives."""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from typing import Any

from gpupaas.compute import service
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.run_kind import COMPUTE
from gpupaas.core.actor import Role
from gpupaas.events import rows
from gpupaas.events.broadcast import StatusEvent
from tests.conftest import QueryCounter
from tests.factories import make_instance, make_profile, make_project, make_user


async def test_a_dumped_row_loads_as_the_database_reads_it(db: object) -> None:
    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.MEMBER)
    instance = await make_instance(project, await make_profile(project), name="nb", by=alice, deploy=True)
    stored = await ComputeInstance.get(id=instance.id)
    # Through JSON, as it travels in the outbox and on the bus,
    loaded = rows.load(ComputeInstance, json.loads(json.dumps(rows.dump(stored))))
    # every column comes back equal, and of the type the database gives.
    for name in ComputeInstance._meta.fields_db_projection:
        mine, theirs = getattr(loaded, name), getattr(stored, name)
        assert (mine, _kind(mine)) == (theirs, _kind(theirs)), name
    assert loaded._saved_in_db and loaded.pk == stored.pk


def _kind(value: Any) -> type:
    return uuid.UUID if isinstance(value, uuid.UUID) else type(value)  # asyncpg's UUID is one


async def test_dumping_a_row_changes_nothing_of_it(db: object) -> None:
    project = await make_project("ml")
    instance = await make_instance(project, await make_profile(project), name="nb")
    before = {name: getattr(instance, name) for name in ComputeInstance._meta.fields_db_projection}
    rows.dump(instance)
    # (Tortoise's own conversion for the database would move `updated_at`, an auto_now date, on.)
    assert {name: getattr(instance, name) for name in ComputeInstance._meta.fields_db_projection} == before


async def test_an_event_gives_its_instance_unread_and_an_older_event_reads_it(
    db: object, count_queries: QueryCounter
) -> None:
    project = await make_project("ml")
    instance = await make_instance(project, await make_profile(project), name="nb")
    payload = await COMPUTE.status_event(instance, deleted=False)
    event = StatusEvent.parse(json.loads(json.dumps(payload)))
    await ComputeInstance.filter(id=instance.id).update(display_name="renamed since")
    count_queries.statements.clear()
    # An event with the row: the instance as the event's transaction wrote it, with no statement,
    found = await service.instance_of_event(event)
    assert found is not None and (found.id, found.display_name) == (instance.id, instance.display_name)
    assert count_queries.statements == []
    # one written before events carried it (or with a row this release cannot read): as it is now.
    for row in (None, {"id": str(instance.id)}):
        older = await service.instance_of_event(replace(event, row=row))
        assert older is not None and older.display_name == "renamed since"
