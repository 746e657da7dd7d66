"""The execution context of our schema: strawberry's, without graphql-core 3.3.2's subscription leak.

graphql-core runs each subscription event with a shallow copy of the subscription's executor
(`build_per_event_executor`), and the copy shares the memo `_relevant_sub_fields`, keyed by the
id() of per-event field lists: it gains an entry for every event of every subscription and is
never freed (about 1.4 KB per delivered message; at 1,000 subscribers, megabytes per few events
and ever longer full-GC pauses). Each per-event executor gets a memo of its own instead, which
lives as long as that event's execution. tests/graphql/test_subscription_memory.py fails if the
leak comes back.
"""

from __future__ import annotations

from typing import Any

from strawberry.schema.schema import StrawberryGraphQLCoreExecutionContext


class ExecutionContext(StrawberryGraphQLCoreExecutionContext):
    def build_per_event_executor(self, payload: Any) -> Any:
        executor = super().build_per_event_executor(payload)
        executor._relevant_sub_fields = {}
        return executor
