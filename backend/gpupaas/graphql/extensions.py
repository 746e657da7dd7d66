"""Schema extensions: the error policy (codes, masking) applied to every operation.

Our own refusals (not signed in, forbidden, not found, bad argument) reach the client with an
`extensions.code`; anything unexpected is logged here and masked as INTERNAL, with no stack trace
or SQL in the response.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

from graphql.error import GraphQLError
from strawberry.extensions import SchemaExtension

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
        result = self.execution_context.result
        errors = getattr(result, "errors", None)
        if result is not None and errors:
            result.errors = [_classify(e) for e in errors]
