"""Errors the domain services raise, independent of GraphQL.

`UserErrors` carries problems with the input or the object's state: the GraphQL layer turns them
into a payload's `userErrors`. `NotAuthenticated` and `Forbidden` become top-level errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum


class ErrorCode(str, Enum):
    INVALID = "INVALID"
    REQUIRED = "REQUIRED"
    TAKEN = "TAKEN"
    IMMUTABLE = "IMMUTABLE"
    NOT_FOUND = "NOT_FOUND"
    INVALID_STATE = "INVALID_STATE"
    FORBIDDEN = "FORBIDDEN"
    CONFLICT = "CONFLICT"
    QUOTA_EXCEEDED = "QUOTA_EXCEEDED"
    # Too many failed sign-ins for a username or from an address: try again later.
    THROTTLED = "THROTTLED"


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a request: where (the argument path), what, and its code."""

    field: tuple[str, ...] | None
    message: str
    code: ErrorCode = ErrorCode.INVALID


class UserErrors(Exception):
    def __init__(self, problems: Sequence[Problem]) -> None:
        super().__init__("; ".join(p.message for p in problems))
        self.problems = list(problems)

    @classmethod
    def one(
        cls, field: Sequence[str] | None, message: str, code: ErrorCode = ErrorCode.INVALID
    ) -> UserErrors:
        return cls([Problem(tuple(field) if field is not None else None, message, code)])


class NotAuthenticated(Exception):
    def __init__(self, message: str = "Sign in first: log in or send Authorization: Bearer <token>.") -> None:
        super().__init__(message)


class Forbidden(Exception):
    def __init__(self, message: str = "You are not allowed to do this.") -> None:
        super().__init__(message)


class Collector:
    """Gathers problems so that one request reports all of them at once."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def add(
        self, field: Sequence[str | int] | None, message: str, code: ErrorCode = ErrorCode.INVALID
    ) -> None:
        path = tuple(str(p) for p in field) if field is not None else None
        self.problems.append(Problem(path, message, code))

    def check(
        self, field: Sequence[str | int], message: str | None, code: ErrorCode = ErrorCode.INVALID
    ) -> None:
        if message is not None:
            self.add(field, message, code)

    def __bool__(self) -> bool:
        return bool(self.problems)

    def raise_if_any(self) -> None:
        if self.problems:
            raise UserErrors(self.problems)


class NotFound(Exception):
    """A query named something that does not exist for the caller (top-level error NOT_FOUND)."""


class InvalidArgument(Exception):
    """A query argument that cannot be used, such as a malformed cursor (top-level error INVALID)."""


class Unavailable(Exception):
    """What a cluster cannot give now: a log of a service with no pod, a previous container that
    never was, a cluster that does not answer (top-level error UNAVAILABLE)."""
