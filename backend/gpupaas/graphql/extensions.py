"""Schema extensions: the error policy (codes, masking) applied to every operation, the text guard,
and the runner that calls the extensions' hooks.

Our own refusals (not signed in, forbidden, not found, bad argument) reach the client with an
`extensions.code`; anything unexpected is logged here and masked as INTERNAL, with no stack trace
or SQL in the response.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator
from types import TracebackType
from typing import Any

from graphql.error import GraphQLError
from graphql.language import DocumentNode, FieldNode, OperationDefinitionNode
from graphql.utilities import value_from_ast_untyped
from strawberry.extensions import SchemaExtension
from strawberry.extensions.context import StreamResultContextManager, WrappedHook
from strawberry.extensions.runner import SchemaExtensionsRunner
from strawberry.types import ExecutionContext
from strawberry.types.execution import StreamExecutionResult
from strawberry.utils.await_maybe import await_maybe

from gpupaas.core import logs
from gpupaas.core.errors import Forbidden, InvalidArgument, NotAuthenticated, NotFound, Unavailable

log = logging.getLogger("gpupaas.graphql")

_CODES: dict[type[Exception], str] = {
    NotAuthenticated: "UNAUTHENTICATED",
    Forbidden: "FORBIDDEN",
    NotFound: "NOT_FOUND",
    InvalidArgument: "INVALID",
    Unavailable: "UNAVAILABLE",
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


class Measured(SchemaExtension):
    """Each query's and mutation's time, by operation name and type, and its errors by code, in the
    app's metrics (core/metrics.py; the context carries them). First in the list, so that it
    leaves last: it sees the codes ErrorPolicy gave. Subscriptions are not timed (they last as
    long as the client keeps them; /metrics counts them live)."""

    def on_operation(self) -> Iterator[None]:
        started = time.perf_counter()
        yield
        context = self.execution_context
        metrics = getattr(context.context, "metrics", None)
        if metrics is None:
            return
        try:
            kind = context.operation_type.value
            name = context.operation_name
        except Exception:  # a document that does not parse names no operation
            kind, name = "unknown", None
        if kind == "subscription":
            return
        metrics.observe_operation(name, kind, time.perf_counter() - started)
        for error in getattr(context.result, "errors", None) or ():
            code = (error.extensions or {}).get("code") if isinstance(error, GraphQLError) else None
            metrics.count_error(str(code or "INTERNAL"))


# A project's name as the log shows it: a client's value that is not one is left out.
_PROJECT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")


def project_named(
    document: DocumentNode | None, operation_name: str | None, variables: dict[str, Any]
) -> str | None:
    """The project the operation's root fields name (`project:` or `input: {project:}`, literal or
    variable), for the log; None when none does."""
    if document is None:
        return None
    for definition in document.definitions:
        if not isinstance(definition, OperationDefinitionNode):
            continue
        named = definition.name.value if definition.name is not None else None
        if operation_name is not None and named != operation_name:
            continue
        for selection in definition.selection_set.selections:
            if not isinstance(selection, FieldNode):
                continue
            for argument in selection.arguments or ():
                try:
                    value = value_from_ast_untyped(argument.value, variables)
                except Exception:  # noqa: S112 (a malformed value: execution reports it)
                    continue
                if argument.name.value != "project":
                    value = value.get("project") if isinstance(value, dict) else None
                found = value
                if isinstance(found, str) and _PROJECT_NAME.fullmatch(found):
                    return found
    return None


class Logged(SchemaExtension):
    """What each line logged during an operation carries (core/logs.py): the user, the operation's
    name and the project it names. First in the list, so that the others' lines (ErrorPolicy's
    unexpected errors) carry them too."""

    def on_operation(self) -> Iterator[None]:
        actor = getattr(self.execution_context.context, "actor", None)
        user = getattr(actor, "user", None)
        token = logs.bind(user=getattr(user, "username", None))
        try:
            yield
        finally:
            logs.unbind(token)  # also takes off what on_execute bound

    def on_execute(self) -> Iterator[None]:
        context = self.execution_context
        try:
            name = context.operation_name
        except Exception:  # no operation in the document
            name = None
        logs.bind(
            operation=(name or "anonymous")[:100],  # a client's name: bounded, as in the metrics
            project=project_named(context.graphql_document, name, context.variables or {}),
        )
        yield


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


class ExtensionsRunner(SchemaExtensionsRunner):
    """strawberry's runner, which finds the extensions that have a hook once per operation instead of
    once per use. A subscription uses two of them for every event it sends (`on_stream_result` and
    the extensions' results); of our extensions only ErrorPolicy has a stream hook and none has
    results, so that the others (the data version's, the caches, the limiters) cost nothing per
    event."""

    _stream_hooks: list[WrappedHook] | None = None
    _with_results: list[SchemaExtension] | None = None

    def on_stream_result(self, result: StreamExecutionResult) -> StreamResultContextManager:
        if self._stream_hooks is None:
            self._stream_hooks = StreamResultContextManager(self.extensions, result).hooks
        return _StreamResultHooks(self._stream_hooks, result)

    async def get_extensions_results(self, ctx: ExecutionContext) -> dict[str, Any]:
        if self._with_results is None:
            self._with_results = [
                e for e in self.extensions if type(e).get_results is not SchemaExtension.get_results
            ]
        data: dict[str, Any] = {}
        for extension in self._with_results:
            data.update(await await_maybe(extension.get_results()))
        data.update(ctx.extensions_results)
        return data


class _StreamResultHooks(StreamResultContextManager):
    """strawberry's context manager of the stream hooks, given hooks found before; when none of them
    is async (ours are not), entered as a plain context manager, without an async exit stack."""

    def __init__(self, hooks: list[WrappedHook], result: StreamExecutionResult) -> None:
        self.hooks = hooks
        self.result = result

    async def __aenter__(self) -> None:
        if any(hook.is_async for hook in self.hooks):
            await super().__aenter__()
        else:
            self.__enter__()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        if any(hook.is_async for hook in self.hooks):
            await super().__aexit__(exc_type, exc_val, exc_tb)
        else:
            self.__exit__(exc_type, exc_val, exc_tb)
