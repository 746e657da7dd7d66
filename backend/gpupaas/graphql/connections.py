"""One generic connection for every paginated list (cursor pagination, newest first:
core/pagination.py). `Connection[ComputeInstanceType]` is the schema's ComputeInstanceConnection,
its edges ComputeInstanceEdge: strawberry names a generic type after the type it holds."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Generic, Protocol, TypeVar

import strawberry

from gpupaas.core.pagination import Page, encode_cursor

N = TypeVar("N")
R = TypeVar("R")


class Dated(Protocol):
    """A row of a list: pages go by creation time, then id."""

    @property
    def id(self) -> uuid.UUID: ...

    @property
    def created_at(self) -> datetime: ...


def cursor_of(row: Dated) -> str:
    return encode_cursor(row.created_at, row.id)


@strawberry.type
class PageInfo:
    has_next_page: bool
    has_previous_page: bool
    start_cursor: str | None
    end_cursor: str | None


@strawberry.type
class Edge(Generic[N]):
    node: N
    cursor: str


@strawberry.type
class Connection(Generic[N]):
    edges: list[Edge[N]]
    page_info: PageInfo
    total_count: int

    @classmethod
    def of(cls, page: Page[R], node: Callable[[R], N], cursor: Callable[[R], str]) -> Connection[N]:
        """The page as a connection: `node(row)` for each row, with `cursor(row)`."""
        edges = [Edge(node=node(row), cursor=cursor(row)) for row in page.rows]
        return cls(
            edges=edges,
            page_info=PageInfo(
                has_next_page=page.has_next,
                has_previous_page=page.has_previous,
                start_cursor=edges[0].cursor if edges else None,
                end_cursor=edges[-1].cursor if edges else None,
            ),
            total_count=page.total,
        )
