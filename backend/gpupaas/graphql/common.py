"""GraphQL types shared by every domain: user errors, key/value pairs, page info, delete payloads."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

import strawberry

from gpupaas.core.errors import ErrorCode, UserErrors
from gpupaas.core.pagination import Page, encode_cursor

ErrorCodeEnum = strawberry.enum(ErrorCode, name="ErrorCode")

T = TypeVar("T")


@strawberry.type
class UserError:
    field: list[str] | None
    message: str
    code: ErrorCode


@strawberry.type
class KeyValue:
    key: str
    value: str


@strawberry.input
class KeyValueInput:
    key: str
    value: str


@strawberry.type
class PageInfo:
    has_next_page: bool
    has_previous_page: bool
    start_cursor: str | None
    end_cursor: str | None


@strawberry.type
class DeletePayload:
    deleted_id: strawberry.ID | None
    user_errors: list[UserError]


def page_info(page: Page[Any], cursors: Sequence[str]) -> PageInfo:
    return PageInfo(
        has_next_page=page.has_next,
        has_previous_page=page.has_previous,
        start_cursor=cursors[0] if cursors else None,
        end_cursor=cursors[-1] if cursors else None,
    )


def cursors_of(page: Page[Any]) -> list[str]:
    return [encode_cursor(row.created_at, row.id) for row in page.rows]


def key_values(pairs: Sequence[Sequence[str]]) -> list[KeyValue]:
    return [KeyValue(key=k, value=v) for k, v in pairs]


def pairs_in(items: Sequence[KeyValueInput] | None) -> list[tuple[str, str]] | None:
    return None if items is None else [(i.key, i.value) for i in items]


def user_errors(error: UserErrors) -> list[UserError]:
    return [
        UserError(field=list(p.field) if p.field is not None else None, message=p.message, code=p.code)
        for p in error.problems
    ]


async def attempt(work: Awaitable[T]) -> tuple[T | None, list[UserError]]:
    """Runs a service call; its UserErrors become the payload's userErrors."""
    try:
        return await work, []
    except UserErrors as error:
        return None, user_errors(error)


async def delete_payload(work: Awaitable[str]) -> DeletePayload:
    deleted, errors = await attempt(work)
    return DeletePayload(deleted_id=strawberry.ID(deleted) if deleted else None, user_errors=errors)
