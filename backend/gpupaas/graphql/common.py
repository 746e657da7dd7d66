"""GraphQL types shared by every domain: user errors, key/value pairs, page info, delete payloads."""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from typing import TypeVar

import strawberry

from gpupaas.core.errors import ErrorCode, UserErrors

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
class DeletePayload:
    deleted_id: strawberry.ID | None
    user_errors: list[UserError]


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
