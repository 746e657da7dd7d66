"""The data version: one counter (`DataVersion`, row 1) shared by every process through the
database, bumped after every write that can change what the response cache keeps
(graphql/response_cache.py): the mutations that can, start-up seeding, and what a worker removes (a
deleted instance leaves its project's `instanceCount`)."""

from __future__ import annotations

from typing import Any

from tortoise.expressions import F

from gpupaas.events.models import DataVersion


async def current() -> int:
    values: list[Any] = await DataVersion.filter(id=1).values_list("value", flat=True)
    return int(values[0]) if values else 0


async def bump() -> None:
    """After a write: every cached answer of every process is stale."""
    if not await DataVersion.filter(id=1).update(value=F("value") + 1):
        await DataVersion.get_or_create(id=1, defaults={"value": 1})
