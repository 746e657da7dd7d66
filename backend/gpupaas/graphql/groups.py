"""Fan-out groups: live status events written once per selection to every subscriber's socket,
past the per-subscriber layers (strawberry's per-subscription generator and per-event wrapper, and
graphql-core's event loop).

A status subscription starts as any other: strawberry runs its resolver, which sends the snapshot
or the replay and catches up (graphql/follow.py). When it has nothing left to do (its queue is
empty) it *parks*: it leaves the broadcaster and joins the group of the subscriptions with the same
sharing key (operation, variables, visibility: graphql/fanout.py) and the same stream. The group is
one subscriber of the broadcaster: for each event, one wake-up, one decision per member (the same
rules the resolver applies: its cursor and each instance's version), one read of what the event
shows, one execution of the selection, one JSON encoding, and the frame spliced with each member's
operation id into its socket's outgoing buffer (`Outlet`, api/websocket.py), which never waits.

Whatever the group does not handle itself goes back to the member's own path, with the event and
everything queued after it, so that the resolver handles it exactly as it would have: a gap in a
member's cursors (the resolver reads what is missing), an overflow or a resync (it catches up from
the database), and for one instance's subscription its end (the instance deleted or no longer
shown). A member who unsubscribes leaves at once (its operation task is cancelled while parked).

Only subscriptions opened through our websocket handler (api/websocket.py sets `OPERATION`) whose
executor knows a sharing key park; the others (over another transport, or that cannot share) stay
on strawberry's path for their whole life.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
import json
import logging
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

from gpupaas.events.broadcast import Overflow, Resync, StatusBroadcaster, StatusEvent, Subscription
from gpupaas.graphql.extensions import _classify as classify
from gpupaas.graphql.loaders import Loaders

log = logging.getLogger("gpupaas.groups")


class Outlet(Protocol):
    """One websocket's outgoing frames, in order (api/websocket.py)."""

    def push(self, frame: str) -> bool:
        """Queues a text frame without waiting; False when the socket is gone or was dropped for
        not keeping up."""
        ...


@dataclass(eq=False)
class Operation:
    """A subscription operation on one websocket, as the websocket handler knows it."""

    id: str
    outlet: Outlet
    encode: Callable[[object], str | bytes]
    executor: Any = None  # the subscription's graphql-core executor, once it has one
    sharing: str | None = None  # its sharing key (graphql/fanout.py); None: it never parks
    # The start of its `next` messages, made once: {"id":<its id>,"type":"next","payload":
    head: str = field(default="", init=False)

    def __post_init__(self) -> None:
        # the id as strawberry's path encodes it in a spliced message (graphql/fanout.py)
        self.head = '{"id":' + json.dumps(self.id) + ',"type":"next","payload":'


# Set by the websocket handler in each operation's task (api/websocket.py).
OPERATION: ContextVar[Operation | None] = ContextVar("gpupaas_ws_operation", default=None)


def subscribed(executor: Any, sharing: str | None) -> None:
    """The subscription of the current operation has its executor (graphql/executor.py)."""
    operation = OPERATION.get()
    if operation is not None and operation.executor is None:
        operation.executor = executor
        operation.sharing = sharing


class Member:
    """A parked subscription: where it is in its stream, and how to hand it back."""

    __slots__ = ("cursor", "group", "operation", "returned", "shown", "subscription", "versions")

    def __init__(
        self,
        operation: Operation,
        subscription: Subscription,
        cursor: int,
        versions: dict[str, int],
        shown: Callable[[StatusEvent], Awaitable[Any]],
    ) -> None:
        self.operation = operation
        self.subscription = subscription  # its own, detached while it is parked
        self.cursor = cursor
        self.versions = versions  # the resolver's own dict: changed in place
        self.shown = shown
        self.group: Group | None = None
        self.returned: asyncio.Future[None] = asyncio.get_running_loop().create_future()


# What a member's rules say of an event: skip it, send it, or hand it back to the member's path.
SKIP, SEND, BACK = 0, 1, 2


class Group(Subscription):
    """The parked subscriptions of one stream with one sharing key; one subscriber of the
    broadcaster for all of them."""

    def __init__(self, registry: Groups, name: tuple[str, ...], scope: str, key: str, kind: str) -> None:
        super().__init__(key, scope)
        self.registry = registry
        self.name = name
        self.kind = kind
        self.members: dict[Member, None] = {}  # in order of arrival
        self.task: asyncio.Task[None] | None = None
        # How many events it executed (one per event whatever its size: tests count them).
        self.executions = 0
        self.closed = False  # no members left: it is out of the registry and the broadcaster

    def subscribers(self) -> int:  # the status-subscriptions gauge counts its members
        return len(self.members)

    def decide(self, member: Member, event: StatusEvent) -> int:
        """The resolver's rules for one live event (graphql/follow.py, `stream` and then
        `follow_stream` or `follow_events`), with the member's position updated as they update it;
        BACK before changing anything."""
        same_stream = event.cursor is not None and event.project_id == self.key_project
        if same_stream:
            assert event.cursor is not None
            if event.cursor <= member.cursor:
                return SKIP
            if self.scope == "project" and event.cursor > member.cursor + 1:
                return BACK  # a gap: the resolver reads what is missing
        if self.scope == "instance":
            if event.version <= member.versions.get(self.key, 0):
                if same_stream:
                    member.cursor = event.cursor  # type: ignore[assignment]
                return SKIP
            if event.deleted:
                return BACK  # the subscription ends: the resolver returns
            if same_stream:
                member.cursor = event.cursor  # type: ignore[assignment]
            member.versions[self.key] = event.version
            return SEND
        if same_stream:
            member.cursor = event.cursor  # type: ignore[assignment]
        if (
            event.kind != self.kind
            or event.deleted
            or event.version <= member.versions.get(event.instance_id, 0)
        ):
            return SKIP
        member.versions[event.instance_id] = event.version
        return SEND if event.visible_in(self.key) else SKIP

    key_project: str = ""  # the project whose stream's cursors the members follow

    def join(self, member: Member) -> None:
        member.group = self
        self.members[member] = None

    def leave(self, member: Member) -> None:
        member.group = None
        if member in self.members:
            del self.members[member]
            if not self.members:
                self.registry.close(self)

    def hand_back(self, member: Member, first: object) -> None:
        """The member's own path takes over from `first`: it gets that and what is queued here
        after it, then every event again (synchronously: none is lost or doubled between)."""
        self.leave(member)
        for item in (first, *self.queue._queue):  # type: ignore[attr-defined]
            # the group's overflow is the member's loss too: it catches up from the database
            member.subscription.offer(Resync() if isinstance(item, (Overflow, Resync)) else item)
        self.registry.broadcaster.attach(member.subscription)
        if not member.returned.done():
            member.returned.set_result(None)

    async def run(self) -> None:
        while not self.closed:
            item = await self.queue.get()
            if isinstance(item, (Overflow, Resync)):
                # each member catches up from the database on its own (an overflow here is the
                # group's: to the member it is a resync)
                for member in list(self.members):
                    self.hand_back(member, Resync())
                return
            try:
                await self.deliver(item)
                # the sockets' writers run before the next event: a burst of events is not a
                # client falling behind
                await asyncio.sleep(0)
            except asyncio.CancelledError:
                raise
            except Exception:
                # what the resolver would have met too: each member's own path meets it again
                log.exception("delivering a status event to a fan-out group failed")
                for member in list(self.members):
                    self.hand_back(member, item)
                return

    def ended(self, task: asyncio.Task[None]) -> None:
        """Its task is over: whoever is still parked goes back to its own path (none is left
        waiting on a group that no longer delivers, whatever stopped it)."""
        if not task.cancelled() and task.exception() is not None:
            log.error("a fan-out group stopped", exc_info=task.exception())
        for member in list(self.members):
            self.hand_back(member, Resync())

    async def deliver(self, event: StatusEvent) -> None:
        version_key = self.key if self.scope == "instance" else event.instance_id
        sending: dict[Member, tuple[int, int | None]] = {}  # and where each was before this event
        for member in list(self.members):
            before = (member.cursor, member.versions.get(version_key))
            verdict = self.decide(member, event)
            if verdict == SEND:
                sending[member] = before
            elif verdict == BACK:
                self.hand_back(member, event)
        if not sending:
            return

        def undo() -> None:
            # back where they were before this event: their resolvers decide it again
            for member, (cursor, version) in sending.items():
                member.cursor = cursor
                if version is None:
                    member.versions.pop(version_key, None)
                else:
                    member.versions[version_key] = version

        first = next(iter(sending))
        try:
            shown = await first.shown(event)
            if shown is None:
                if self.scope == "instance":  # the instance is no longer shown: the resolver ends
                    undo()
                    for member in sending:
                        if member.group is self:
                            self.hand_back(member, event)
                return
            body = await self.execute(first.operation, shown)
        except asyncio.CancelledError:
            raise
        except Exception:
            undo()  # then `run` hands everyone back with this event
            raise
        if body is None:
            return
        for member in sending:
            if member.group is self:
                member.operation.outlet.push(member.operation.head + body)

    async def execute(self, operation: Operation, root: object) -> str | None:
        """The payload of the `next` message of `root` for every member, and its closing brace:
        what strawberry's path would send (graphql-core's result, errors classified by the error
        policy, graphql/extensions.py)."""
        executor = operation.executor
        context = executor.context_value
        context.loaders = Loaders()  # fresh data for every event, as the resolver gives itself
        outcome = executor.build_per_event_executor(root).execute_operation(False)
        result = await outcome if inspect.isawaitable(outcome) else outcome
        self.executions += 1
        payload: dict[str, object] = {"data": result.data}
        if result.errors:
            payload["errors"] = [classify(error).formatted for error in result.errors]
        encoded = operation.encode(payload)
        return (encoded.decode() if isinstance(encoded, bytes) else encoded) + "}"


class Groups:
    """The fan-out groups of one broadcaster."""

    def __init__(self, broadcaster: StatusBroadcaster) -> None:
        self.broadcaster = broadcaster
        self.groups: dict[tuple[str, ...], Group] = {}

    def group_for(self, scope: str, key: str, project_id: str, kind: str, sharing: str) -> Group:
        name = (scope, key, kind, sharing)
        group = self.groups.get(name)
        if group is None:
            group = self.groups[name] = Group(self, name, scope, key, kind)
            group.key_project = project_id
            self.broadcaster.attach(group)
            # its own context: not that of the operation whose subscriber made it
            group.task = asyncio.create_task(
                group.run(), name="status-fan-out-group", context=contextvars.Context()
            )
            group.task.add_done_callback(group.ended)
        return group

    def close(self, group: Group) -> None:
        group.closed = True
        if self.groups.get(group.name) is group:
            del self.groups[group.name]
        self.broadcaster.detach(group)
        if group.task is not None and group.task is not asyncio.current_task():
            group.task.cancel()


_REGISTRIES: dict[int, Groups] = {}


def groups_of(broadcaster: StatusBroadcaster) -> Groups:
    """The broadcaster's groups (kept on it: one set per broadcaster, gone with it)."""
    registry: Groups | None = getattr(broadcaster, "fan_out_groups", None)
    if registry is None:
        registry = Groups(broadcaster)
        broadcaster.fan_out_groups = registry  # type: ignore[attr-defined]
    return registry


Park = Callable[[int], Awaitable[int]]


def parking(
    broadcaster: StatusBroadcaster,
    subscription: Subscription,
    *,
    project_id: str,
    kind: str,
    versions: dict[str, int],
    shown: Callable[[StatusEvent], Awaitable[Any]],
) -> Park | None:
    """For a status subscription's stream (graphql/follow.py `stream`): `park(cursor)` parks it in
    its group until the group hands it back, and returns its cursor then; None when it cannot park
    (not opened through our websocket handler, or no sharing key)."""
    operation = OPERATION.get()
    if operation is None or operation.executor is None or operation.sharing is None:
        return None
    registry = groups_of(broadcaster)
    # a subscription of one instance follows its project's stream, keyed by the instance
    instance = subscription.scope == "instance"

    async def park(cursor: int) -> int:
        member = Member(operation, subscription, cursor, versions, shown)
        assert operation.sharing is not None
        group = registry.group_for(
            subscription.scope, subscription.key, project_id, "" if instance else kind, operation.sharing
        )
        broadcaster.detach(subscription)
        group.join(member)
        try:
            await member.returned
        finally:
            if member.group is not None:  # cancelled while parked: unsubscribed, or the socket ended
                member.group.leave(member)
                with contextlib.suppress(Exception):
                    broadcaster.attach(subscription)  # detached again by the resolver's exit
        return member.cursor

    return park
