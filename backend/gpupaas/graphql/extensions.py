"""Schema extensions: the error policy (codes, masking) applied to every operation.

Our own refusals (not signed in, forbidden, not found, bad argument) reach the client with an
`extensions.code`; anything unexpected is logged here and masked as INTERNAL, with no stack trace
or SQL in the response.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator

from graphql.error import GraphQLError
from strawberry.extensions import SchemaExtension
from strawberry.types.execution import StreamExecutionResult

from gpupaas.core.errors import Forbidden, InvalidArgument, NotAuthenticated, NotFound

log = logging.getLogger("gpupaas.graphql")

_CODES: dict[type[Exception], str] = {
    NotAuthenticated: "UNAUTHENTICATED",
    Forbidden: "FORBIDDEN",
    NotFound: "NOT_FOUND",
    InvalidArgument: "INVALID",
}


def _classify(error: GraphQLError) -> GraphQLError:
    original = error.original_error
    if original is None:
        # Parse and validation errors (and the limiters') describe the request itself.
        if not error.extensions or "code" not in error.extensions:
            return GraphQLError(
                error.message,
                nodes=error.nodes,
                source=error.source,
                positions=error.positions,
                path=error.path,
                extensions={**(error.extensions or {}), "code": "GRAPHQL_VALIDATION_FAILED"},
            )
        return error
    if isinstance(original, GraphQLError) and original.original_error is None:
        return error  # a GraphQLError raised on purpose, such as a variable coercion message
    for kind, code in _CODES.items():
        if isinstance(original, kind):
            return GraphQLError(
                str(original),
                nodes=error.nodes,
                source=error.source,
                positions=error.positions,
                path=error.path,
                extensions={"code": code},
            )
    log.error("unexpected error in %s", error.path, exc_info=original)
    return GraphQLError(
        "Unexpected error.",
        nodes=error.nodes,
        source=error.source,
        positions=error.positions,
        path=error.path,
        extensions={"code": "INTERNAL"},
    )


class ErrorPolicy(SchemaExtension):
    def on_operation(self) -> Iterator[None]:
        yield
        _classify_all(self.execution_context.result)

    def on_stream_result(self, result: StreamExecutionResult) -> Iterator[None]:
        """Each event of a subscription, before it reaches the client."""
        _classify_all(result)
        yield


def _classify_all(result: object) -> None:
    errors = getattr(result, "errors", None)
    if result is not None and errors:
        result.errors = [_classify(e) for e in errors]  # type: ignore[attr-defined]


_NUL_ESCAPE = re.compile(r"\\u0000|\\u\{0+\}")


def _bad_text(value: object) -> bool:
    """NUL or an unpaired surrogate anywhere: PostgreSQL cannot store either, and no person means them."""
    if isinstance(value, str):
        if "\x00" in value:
            return True
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_bad_text(k) or _bad_text(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_bad_text(v) for v in value)
    return False


class TextGuard(SchemaExtension):
    """Refuses NUL characters and unpaired surrogates in variables and in the query's string literals.

    One check for every argument of every operation, before it runs, instead of one per service
    function: a NUL in a project name or a search string would otherwise reach the database.
    Runs after the validation cache, so that its verdict is the one kept.
    """

    def on_validate(self) -> Iterator[None]:
        context = self.execution_context
        if _bad_text(context.variables or {}) or (context.query and _NUL_ESCAPE.search(context.query)):
            context.pre_execution_errors = [
                GraphQLError(
                    "Text must not contain NUL characters (U+0000) or unpaired surrogates.",
                    extensions={"code": "INVALID"},
                )
            ]
        yield
