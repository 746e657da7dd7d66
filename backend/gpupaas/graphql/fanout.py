"""Subscription fan-out: each event is executed and serialized once per distinct selection, not once
per subscriber.

Subscribers of the same operation (query text, operation name, variables) whose callers see alike
(`visibility_of`: signed in or not, platform admin or not, their role in every project) get the
same result for the same event. The first of them to reach the event executes its selection; the
others take that result (`SharedResults.executor_for`, used by graphql/executor.py), and the JSON of
its data is made once and spliced into every subscriber's graphql-transport-ws `next` message, only
the operation id encoded per subscriber (`encode_message`, used by the app's `encode_json`).

This holds while resolvers depend on the caller only through those facts, as they do (sensitive
inputs are masked for everyone; sharing visibility, permissions and internals go by roles and the
platform admin flag; and, for a MEMBER, by whether the caller owns the instance: its actions, its
connect links' access params, its sensitive outputs, whether it is shown at all, so a MEMBER's
user id is one of the facts). A resolver that reads anything else of the caller must add it to
`visibility_of`; tests/graphql/test_fanout.py fails when callers who see differently share.

Sharing needs a subscription to yield the same root object to all its subscribers for an event (the
status subscriptions take theirs from `StatusBroadcaster.once`). A shared result lives as long as
its root object: nothing outlives its event, and an object yielded to one subscriber only is
executed as before, for that subscriber.
"""

from __future__ import annotations

import asyncio
import functools
import json
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from gpupaas.core.actor import Actor, Role
from graphql import ExecutionResult, OperationDefinitionNode

# The caller facts a shared result may depend on.
Visibility = tuple[bool, bool, tuple[tuple[str, str], ...], str | None]


def visibility_of(actor: Actor) -> Visibility:
    """What of the caller any field's value may depend on: signed in, platform admin, the role in
    each project (whose instances and shares it sees, where it may see internals), and who it is
    when it is a MEMBER somewhere (owners manage their instances there: compute/owners.py; admins
    manage every instance of their projects, whoever they are, so admins alike still share)."""
    roles = tuple(sorted((str(project), role.value) for project, role in actor.roles.items()))
    member = actor.user is not None and not actor.is_platform_admin and Role.MEMBER in actor.roles.values()
    who = str(actor.user.id) if member and actor.user is not None else None
    return actor.user is not None, actor.is_platform_admin, roles, who


def sharing_key(
    operation: OperationDefinitionNode, variables: Mapping[str, Any], context: object
) -> str | None:
    """Subscriptions with equal keys get equal results for the same event; None: never shared (no
    caller of ours, or no query text to compare)."""
    actor = getattr(context, "actor", None)
    if not isinstance(actor, Actor) or operation.loc is None:
        return None
    name = operation.name.value if operation.name else None
    try:
        # repr for coerced values that JSON lacks (enums, datetimes): equal text, equal values
        return json.dumps(
            [operation.loc.source.body, name, variables, visibility_of(actor)], sort_keys=True, default=repr
        )
    except (TypeError, ValueError):
        return None


class SharedEvent:
    """One event's execution for every subscriber with the same key. It stands in for graphql-core's
    per-event executor (`execute_operation` is all that is asked of one) and runs the real one once;
    its own task, so that a subscriber who leaves meanwhile cannot cancel it for the others."""

    __slots__ = ("_executor", "_owner", "data", "failed", "result", "task", "text")

    def __init__(self, owner: SharedResults, executor: Any) -> None:
        self._owner = owner
        self._executor: Any = executor  # dropped once it has run: it holds the event and a context
        self.result: ExecutionResult | None = None
        self.task: asyncio.Future[ExecutionResult] | None = None
        self.failed = False  # raised instead of answering (errors in fields are answers): not reused
        self.data: dict[str, Any] | None = None
        self.text: str | None = None  # the JSON of `data`, made when it is first sent

    def execute_operation(self, serially: bool | None = None) -> Any:
        if self.result is not None:
            return self.result
        if self.task is None:
            executor, self._executor = self._executor, None
            try:
                outcome = executor.execute_operation(serially)
            except Exception:
                self.failed = True
                raise
            if isinstance(outcome, ExecutionResult):
                self._finish(outcome)
                return outcome
            self.task = asyncio.ensure_future(outcome)
            self.task.add_done_callback(self._finished)
        return asyncio.shield(self.task)

    def _finished(self, task: asyncio.Future[ExecutionResult]) -> None:
        if task.cancelled() or task.exception() is not None:
            self.failed = True
        else:
            self._finish(task.result())

    def _finish(self, result: ExecutionResult) -> None:
        self.result = result
        if isinstance(result.data, dict):
            self.data = result.data
            self._owner.by_data[id(result.data)] = self


class _Root:
    """The shared results of one event object, by sharing key."""

    __slots__ = ("events", "ref")

    def __init__(self, ref: weakref.ref[Any]) -> None:
        self.ref = ref
        self.events: dict[str, SharedEvent] = {}


class SharedResults:
    """The results shared by the subscribers of one process, by event object and sharing key."""

    def __init__(self) -> None:
        self.by_root: dict[int, _Root] = {}
        self.by_data: dict[int, SharedEvent] = {}

    def executor_for(self, root: object, key: str, build: Callable[[Any], Any]) -> Any:
        """The per-event executor for `root` and `key`: the shared one, made with `build(root)` by
        the first subscriber to ask; `build(root)` itself when `root` cannot be tracked."""
        rid = id(root)
        holder = self.by_root.get(rid)
        if holder is None or holder.ref() is not root:
            if holder is not None:
                self._forget(rid, holder.ref)
            try:
                ref = weakref.ref(root, functools.partial(self._forget, rid))
            except TypeError:  # no weak references to it (a tuple, a dict): not shared
                return build(root)
            holder = self.by_root[rid] = _Root(ref)
        shared = holder.events.get(key)
        if shared is None or shared.failed:
            shared = holder.events[key] = SharedEvent(self, build(root))
        return shared

    def _forget(self, rid: int, ref: weakref.ref[Any]) -> None:
        """The event object is gone, and with it what was shared for it."""
        holder = self.by_root.get(rid)
        if holder is None or holder.ref is not ref:
            return
        del self.by_root[rid]
        for shared in holder.events.values():
            if shared.data is not None and self.by_data.get(id(shared.data)) is shared:
                del self.by_data[id(shared.data)]

    def text_of(self, data: object, encode: Callable[[object], str | bytes]) -> str | None:
        """The JSON of `data` when it is a shared result's, made once; None otherwise."""
        shared = self.by_data.get(id(data))
        if shared is None or shared.data is not data:
            return None
        if shared.text is None:
            shared.text = _text(encode(data))
        return shared.text


def _text(encoded: str | bytes) -> str:
    return encoded.decode() if isinstance(encoded, bytes) else encoded


# One per process, like the parser and validation caches: what is shared is keyed by event object.
SHARED = SharedResults()


def encode_message(message: object, encode: Callable[[object], str | bytes]) -> str | bytes:
    """A graphql-transport-ws message as `encode` would make it; a `next` message carrying a shared
    result is spliced from that result's JSON (made once) and its own operation id. Keys in the order
    strawberry's handler puts them (id, type, payload), so the text is the same either way."""
    if type(message) is dict and message.get("type") == "next":
        payload = message.get("payload")
        if type(payload) is dict and len(payload) == 1 and "data" in payload:
            text = SHARED.text_of(payload["data"], encode)
            if text is not None:
                # the id as json.dumps makes it (strawberry's encoding; compact separators change
                # nothing in a string), with its fast default encoder
                head = '{"id":' + json.dumps(message["id"])
                return head + ',"type":"next","payload":{"data":' + text + "}}"
    return encode(message)
