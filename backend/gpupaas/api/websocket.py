"""The GraphQL websocket's sending side: one ordered, bounded outgoing buffer per socket, which
fan-out groups write to without waiting (graphql/groups.py), and strawberry's graphql-transport-ws
handler wired to it.

Every frame of a connection goes through its `Outlet`, strawberry's (acks, snapshots, errors,
`complete`) and the groups' alike, so that a subscription's messages keep their order. A writer
task per socket hands them to the ASGI server one by one; the server waits when the client does not
read (its TCP window and the transport's buffer are full), and then frames pile up here. A group's
frame that would make more than `limit` wait drops the socket: it is closed with 1013 ("Try Again
Later", RFC 6455: the server cannot serve it now; graphql-ws clients reconnect after it, and resume
from their last cursor with `after:`), its buffer is freed and its subscriptions end, so that it
costs the others nothing more. strawberry's own frames wait for room instead (a snapshot of many
instances is not a client falling behind), as its sends always waited.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from typing import Any

from starlette.types import Send
from strawberry.asgi import ASGIWebSocketAdapter
from strawberry.subscriptions.protocols.graphql_transport_ws.handlers import (
    BaseGraphQLTransportWSHandler,
    Operation,
)

from gpupaas.graphql import groups
from gpupaas.graphql.context import Context

log = logging.getLogger("gpupaas.websocket")

CLOSE_TOO_SLOW = 1013
CLOSE_TOO_SLOW_REASON = "Too slow: frames were not read in time. Reconnect and resume with after:."
SCOPE_KEY = "gpupaas.outlet"


class Outlet:
    """A socket's outgoing frames, in order, at most `limit` waiting."""

    def __init__(self, send: Send, limit: int) -> None:
        self._send = send
        self.limit = limit
        self._frames: deque[str] = deque()
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Future[None] | None = None
        self._room: asyncio.Event | None = None  # set while fewer than `limit` wait
        self._idle: asyncio.Event | None = None  # set while nothing waits and nothing is being sent
        self.open = True
        self.dropped = False  # closed for not keeping up
        self.on_drop: list[Any] = []  # called when it is dropped (the handler ends its operations)

    def push(self, frame: str) -> bool:
        if not self.open:
            return False
        if len(self._frames) >= self.limit:
            self.drop()
            return False
        self._frames.append(frame)
        wake = self._wake
        if wake is not None:
            self._wake = None
            wake.set_result(None)
        elif self._task is None:
            self._task = asyncio.create_task(self._write(), name="websocket-writer")
        return True

    async def send(self, frame: str) -> None:
        """strawberry's frames: wait for room rather than drop the socket."""
        while self.open and len(self._frames) >= self.limit:
            room = self._room = self._room or asyncio.Event()
            room.clear()
            await room.wait()
        self.push(frame)

    async def flush(self) -> None:
        """Until every frame queued so far has been handed to the server (before a close)."""
        while self.open and (self._frames or (self._task is not None and self._wake is None)):
            idle = self._idle = self._idle or asyncio.Event()
            idle.clear()
            await idle.wait()

    def drop(self) -> None:
        log.warning("closing a websocket that did not keep up (%d frames waiting)", len(self._frames))
        self.dropped = True
        self._end()
        for callback in self.on_drop:
            callback()
        close = {"type": "websocket.close", "code": CLOSE_TOO_SLOW, "reason": CLOSE_TOO_SLOW_REASON}
        task = asyncio.create_task(self._close(close), name="websocket-drop")
        task.add_done_callback(lambda done: done.cancelled() or done.exception())

    async def _close(self, message: dict[str, Any]) -> None:
        # after the frame being written, if any: the server takes them in order once the client reads
        await self._send(message)

    def _end(self) -> None:
        self.open = False
        self._frames.clear()
        for event in (self._room, self._idle):
            if event is not None:
                event.set()

    async def _write(self) -> None:
        loop = asyncio.get_running_loop()
        frames = self._frames
        try:
            while self.open:
                while frames:
                    frame = frames.popleft()
                    await self._send({"type": "websocket.send", "text": frame})
                    if self._room is not None and len(frames) < self.limit:
                        self._room.set()
                self._wake = wake = loop.create_future()
                if self._idle is not None:
                    self._idle.set()
                await wake
        except asyncio.CancelledError:
            raise
        except Exception:  # the connection is gone (the reader sees it too and ends the handler)
            self._end()

    async def close(self) -> None:
        """The connection has ended: stop writing."""
        self._end()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def outlet_of(scope: Any) -> Outlet | None:
    outlet = scope.get(SCOPE_KEY)
    return outlet if isinstance(outlet, Outlet) else None


class WebSocketAdapter(ASGIWebSocketAdapter):
    """strawberry's adapter, sending through the socket's outlet (closing after what it holds)."""

    async def send_json(self, message: Any) -> None:
        outlet = outlet_of(self.ws.scope)
        if outlet is None:
            await super().send_json(message)
            return
        encoded = self.view.encode_json(message)
        await outlet.send(encoded.decode() if isinstance(encoded, bytes) else encoded)

    async def close(self, code: int, reason: str) -> None:
        outlet = outlet_of(self.ws.scope)
        if outlet is not None:
            await outlet.flush()
            if outlet.dropped:
                return  # closed already, with its own code
        await super().close(code, reason)


class TransportWSHandler(BaseGraphQLTransportWSHandler[Context, None]):
    """strawberry's graphql-transport-ws handler; each subscription's task knows its operation, for
    its fan-out group (graphql/groups.py), and a socket dropped for being slow ends them all."""

    def on_request_accepted(self) -> None:
        super().on_request_accepted()
        outlet = self._outlet()
        if outlet is not None:
            outlet.on_drop.append(self._dropped)

    def _outlet(self) -> Outlet | None:
        ws = getattr(self.websocket, "ws", None)
        return outlet_of(ws.scope) if ws is not None else None

    async def run_operation(self, operation: Operation[Context, None]) -> None:
        outlet = self._outlet()
        if outlet is not None:
            groups.OPERATION.set(groups.Operation(operation.id, outlet, self.view.encode_json))
        await super().run_operation(operation)

    def _dropped(self) -> None:
        for operation in list(self.operations.values()):
            if operation.task is not None:
                operation.task.cancel()
        self.operations.clear()
