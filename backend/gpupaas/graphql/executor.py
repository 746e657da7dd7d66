"""The execution context of our schema: strawberry's, without graphql-core 3.3.2's subscription leak,
and with each subscription event executed once for all the subscribers who would get the same.

graphql-core runs each subscription event with a shallow copy of the subscription's executor
(`build_per_event_executor`), and the copy shares the memo `_relevant_sub_fields`, keyed by the
id() of per-event field lists: it gains an entry for every event of every subscription and is
never freed (about 1.4 KB per delivered message; at 1,000 subscribers, megabytes per few events
and ever longer full-GC pauses). Each per-event executor gets a memo of its own instead, which
lives as long as that event's execution. tests/graphql/test_subscription_memory.py fails if the
leak comes back.

Subscribers whose operation, variables and visibility are the same share one execution of an event
they are all given (graphql/fanout.py); tests/graphql/test_fanout.py counts the executions. A
subscription opened through our websocket handler tells it its executor (`cancellable_iterable`,
graphql/groups.py), so that its live events can be executed once for its fan-out group.

Queries run by a plan made once per document (graphql/planner.py) when the planner supports all
their fields and `GPUPAAS_PLANNED_EXECUTOR` is on; the rest by graphql-core, as before. Parsing,
validation, the extensions and the response cache are the same for both: only the execution of
the validated operation differs.
"""

from __future__ import annotations

from collections.abc import AsyncIterable
from typing import Any, TypeVar

from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext

from gpupaas.graphql import fanout, groups, planner
from graphql import ExecutionResult, OperationType

T = TypeVar("T")


class ExecutionContext(StrawberryGraphQLCoreExecutionContext):
    # The subscription's sharing key, found when first asked (per-event copies inherit it).
    _sharing_known = False
    _sharing: str | None = None

    def sharing(self) -> str | None:
        if not self._sharing_known:
            variables = self.variable_values.coerced
            self._sharing = fanout.sharing_key(self.operation, variables, self.context_value)
            self._sharing_known = True
        return self._sharing

    def cancellable_iterable(self, iterable: AsyncIterable[T]) -> AsyncIterable[T]:
        """Called once per subscription, before its first event: the moment it has an executor."""
        groups.subscribed(self, self.sharing())
        return super().cancellable_iterable(iterable)

    def build_per_event_executor(self, payload: Any) -> Any:
        sharing = self.sharing()
        if sharing is None:
            return self.own_event_executor(payload)
        return fanout.SHARED.executor_for(payload, sharing, self.own_event_executor)

    def own_event_executor(self, payload: Any) -> Any:
        executor = super().build_per_event_executor(payload)
        executor._relevant_sub_fields = {}
        return executor

    def execute_operation(self, serially: bool | None = None) -> Any:
        if self.operation.operation is OperationType.SUBSCRIPTION:
            return super().execute_operation(serially)  # its events (above)
        settings = getattr(self.context_value, "settings", None)
        if not getattr(settings, "planned_executor", False):
            planner.STATS.fell_back("switched off")
            return super().execute_operation(serially)
        try:
            run = planner.prepare(self)
        except planner.Unsupported as refused:
            planner.STATS.fell_back(str(refused))
            return super().execute_operation(serially)
        planner.STATS.planned += 1
        run.start()
        if not run.pending:
            return self.build_response(run.result)
        return self._finish_planned(run)

    async def _finish_planned(self, run: planner.Run) -> ExecutionResult:
        await run.finish()
        result = self.build_response(run.result)
        assert isinstance(result, ExecutionResult)
        return result
