"""DataLoaders, built fresh for every request, so that lists never run one query per row.

Each domain's GraphQL module defines the loaders of its own objects as factories
(`def projects() -> DataLoader[...]`); a request's `Loaders` makes each one on first use and keeps
it for the rest of the request: `info.context.loaders.get(projects).load(project_id)`. This module
knows no domain.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, TypeVar, cast

from strawberry.dataloader import DataLoader
from tortoise.models import Model

K = TypeVar("K")
V = TypeVar("V")
M = TypeVar("M", bound=Model)


class Loaders:
    """One of each loader per request, made by its factory on first use."""

    __slots__ = ("_made",)

    def __init__(self) -> None:
        self._made: dict[Callable[[], DataLoader[Any, Any]], DataLoader[Any, Any]] = {}

    def get(self, make: Callable[[], DataLoader[K, V]]) -> DataLoader[K, V]:
        loader = self._made.get(make)
        if loader is None:
            loader = self._made[make] = make()
        return cast(DataLoader[K, V], loader)


def by_id(model: type[M]) -> DataLoader[uuid.UUID, M | None]:
    """Rows of `model` by primary key, None for a missing one."""

    async def load(keys: Sequence[uuid.UUID]) -> list[M | None]:
        rows: list[Any] = await model.filter(id__in=list(keys))
        found = {row.id: row for row in rows}
        return [found.get(key) for key in keys]

    return DataLoader(load_fn=load)


def grouped(
    rows_of: Callable[[list[K]], Awaitable[Iterable[V]]], key_of: Callable[[V], K]
) -> DataLoader[K, list[V]]:
    """For each key, the rows `rows_of(keys)` gives for it, in their order: a one-to-many relation
    in one query (a template's versions, say)."""

    async def load(keys: Sequence[K]) -> list[list[V]]:
        found: dict[K, list[V]] = defaultdict(list)
        for row in await rows_of(list(keys)):
            found[key_of(row)].append(row)
        return [found.get(key, []) for key in keys]

    return DataLoader(load_fn=load)


def grouped_pairs(rows_of: Callable[[list[K]], Awaitable[Iterable[tuple[K, V]]]]) -> DataLoader[K, list[V]]:
    """For each key, the values of the (key, value) pairs `rows_of(keys)` gives (the projects a
    profile is shared with, say)."""

    async def load(keys: Sequence[K]) -> list[list[V]]:
        found: dict[K, list[V]] = defaultdict(list)
        for key, value in await rows_of(list(keys)):
            found[key].append(value)
        return [found.get(key, []) for key in keys]

    return DataLoader(load_fn=load)
