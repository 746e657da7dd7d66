"""Cursor pagination, newest first, over (created_at, id).

A cursor is opaque to clients: base64 of the row's creation time and id, so that pages stay
stable while rows are added.
"""

from __future__ import annotations

import base64
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from tortoise.expressions import Q
from tortoise.models import Model
from tortoise.queryset import QuerySet

from gpupaas.core.errors import InvalidArgument

DEFAULT_PAGE = 20
MAX_PAGE = 100

M = TypeVar("M", bound=Model)
R = TypeVar("R")


def encode_cursor(created_at: datetime, row_id: uuid.UUID) -> str:
    raw = f"{created_at.isoformat()}|{row_id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, uuid.UUID]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        created, row_id = base64.urlsafe_b64decode(padded.encode()).decode().split("|", 1)
        return datetime.fromisoformat(created), uuid.UUID(row_id)
    except (ValueError, UnicodeDecodeError):
        raise InvalidArgument(f"after: {cursor!r} is not a cursor this API gave out") from None


@dataclass(frozen=True)
class Page(Generic[R]):
    """One page of rows, newest first, and the total of the whole list."""

    rows: list[R]
    has_next: bool
    has_previous: bool
    total: int


async def paginate(query: QuerySet[M], first: int | None, after: str | None) -> Page[M]:
    """One page of `query`, newest first: a count and one select (first + 1 rows)."""
    size = DEFAULT_PAGE if first is None else first
    if size < 0 or size > MAX_PAGE:
        raise InvalidArgument(f"first: must be between 0 and {MAX_PAGE}")
    total = await query.count()
    page_query = query
    if after:
        created_at, row_id = decode_cursor(after)
        page_query = page_query.filter(Q(created_at__lt=created_at) | Q(created_at=created_at, id__lt=row_id))
    rows: list[Any] = await page_query.order_by("-created_at", "-id").limit(size + 1)
    return Page(rows=rows[:size], has_next=len(rows) > size, has_previous=after is not None, total=total)


def encode_name_cursor(name: str) -> str:
    return base64.urlsafe_b64encode(f"name|{name}".encode()).decode().rstrip("=")


def decode_name_cursor(cursor: str) -> str:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        kind, name = base64.urlsafe_b64decode(padded.encode()).decode().split("|", 1)
    except (ValueError, UnicodeDecodeError):
        kind, name = "", ""
    if kind != "name":
        raise InvalidArgument(f"after: {cursor!r} is not a cursor this API gave out")
    return name


async def paginate_by_name(query: QuerySet[M], field: str, first: int | None, after: str | None) -> Page[M]:
    """One page of `query` in the order of a unique text column (users by username): a count and
    one select (first + 1 rows); the cursor is the last row's value of it."""
    size = DEFAULT_PAGE if first is None else first
    if size < 0 or size > MAX_PAGE:
        raise InvalidArgument(f"first: must be between 0 and {MAX_PAGE}")
    total = await query.count()
    page_query = query
    if after:
        page_query = page_query.filter(**{f"{field}__gt": decode_name_cursor(after)})
    rows: list[Any] = await page_query.order_by(field).limit(size + 1)
    return Page(rows=rows[:size], has_next=len(rows) > size, has_previous=after is not None, total=total)
