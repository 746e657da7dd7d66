"""Websocket sessions that end when their credentials do (README, "Security").

A graphql-transport-ws connection authenticates once, at connection_init (a bearer token) or with
the session cookie of its upgrade request. `SocketSessions` keeps every open connection of the
process with that credential, and checks it again:

- at once, when any process says that the user's credentials or rights changed (a token revoked, a
  logout, a membership changed or removed: accounts.credentials_changed, through the status topic
  and each process's broadcaster);
- when the token or the session expires;
- every `ws_recheck_seconds` otherwise (what changed without an event, such as a row deleted by hand).

A credential that no longer signs the same user in, or a user who lost a role they had in a project,
closes the connection with 4403 ("Forbidden" in graphql-transport-ws): its subscriptions end and
nothing more is read from it. A role gained is taken into the connection's caller for its next
operations.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from starlette.websockets import WebSocket, WebSocketState

from gpupaas.core.actor import Actor, Role
from gpupaas.graphql.context import Context

log = logging.getLogger("gpupaas.sockets")

CLOSE_FORBIDDEN = 4403
CLOSE_REASON = "Your session ended: sign in again."

Authenticate = Callable[[str | None, str | None], Awaitable[Actor]]
Expiry = Callable[[str | None, str | None], Awaitable[datetime | None]]


@dataclass
class _Socket:
    context: Context
    authorization: str | None
    cookie: str | None
    expires_at: datetime | None


def _lost_rights(before: Actor, after: Actor) -> bool:
    """Whether `after` is another user (or nobody), or has lost a role `before` had."""
    if before.user is None or after.user is None or before.user.id != after.user.id:
        return True
    if before.is_platform_admin and not after.is_platform_admin:
        return True
    for project, role in before.roles.items():
        now = after.roles.get(project)
        if now is None or (role == Role.ADMIN and now != Role.ADMIN):
            return True
    return False


class SocketSessions:
    def __init__(self, authenticate: Authenticate, expiry: Expiry, *, recheck_seconds: float) -> None:
        self._authenticate = authenticate
        self._expiry = expiry
        self.recheck_seconds = recheck_seconds
        self._sockets: dict[WebSocket, _Socket] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._checks: set[asyncio.Task[bool]] = set()
        # How many checks found a connection's credential still good (a test's "it was checked").
        self.kept = 0

    def __len__(self) -> int:
        return len(self._sockets)

    async def add(self, context: Context, authorization: str | None, cookie: str | None) -> None:
        """A connection that has just authenticated as `context.actor`."""
        if not isinstance(context.request, WebSocket) or context.actor.user is None:
            return
        expires_at = await self._expiry(authorization, cookie)
        self._sockets[context.request] = _Socket(context, authorization, cookie, expires_at)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._watch(), name="websocket-sessions")
        self._wake.set()

    def discard(self, websocket: WebSocket) -> None:
        self._sockets.pop(websocket, None)

    def forget(self, scope: object) -> None:
        """The connection of this ASGI scope has ended."""
        for websocket in [ws for ws in self._sockets if ws.scope is scope]:
            self.discard(websocket)

    def changed(self, user_id: str) -> None:
        """The user's credentials or rights changed: check their connections now."""
        for websocket, socket in list(self._sockets.items()):
            user = socket.context.actor.user
            if user is not None and str(user.id) == user_id:
                self._spawn(websocket)

    def _spawn(self, websocket: WebSocket) -> None:
        task = asyncio.create_task(self.check(websocket))
        self._checks.add(task)
        task.add_done_callback(self._checks.discard)

    async def check(self, websocket: WebSocket) -> bool:
        """Whether the connection may stay open; closes it (4403) when not."""
        socket = self._sockets.get(websocket)
        if socket is None:
            return False
        if socket.expires_at is not None and socket.expires_at <= datetime.now(UTC):
            self.discard(websocket)  # known without asking the database
            await self._close(websocket)
            return False
        try:
            actor = await self._authenticate(socket.authorization, socket.cookie)
        except Exception:  # the database is down: keep the connection, check again next round
            log.warning("checking a websocket's credentials failed; keeping it until the next check")
            return True
        if _lost_rights(socket.context.actor, actor):
            self.discard(websocket)
            await self._close(websocket)
            return False
        socket.context.actor = actor
        self.kept += 1
        return True

    async def _close(self, websocket: WebSocket) -> None:
        if websocket.application_state == WebSocketState.DISCONNECTED:
            return
        with contextlib.suppress(Exception):  # it may have gone meanwhile
            await websocket.close(code=CLOSE_FORBIDDEN, reason=CLOSE_REASON)

    async def _watch(self) -> None:
        """Checks every connection each `recheck_seconds`, and each one when its credential expires."""
        loop = asyncio.get_running_loop()
        next_round = loop.time() + self.recheck_seconds
        while self._sockets:
            now = datetime.now(UTC)
            soonest = min(
                (s.expires_at for s in self._sockets.values() if s.expires_at is not None), default=None
            )
            delay = next_round - loop.time()
            if soonest is not None:
                delay = min(delay, (soonest - now).total_seconds())
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=max(delay, 0.0))
            now = datetime.now(UTC)
            due_round = loop.time() >= next_round
            if due_round:
                next_round = loop.time() + self.recheck_seconds
            for websocket, socket in list(self._sockets.items()):
                if due_round or (socket.expires_at is not None and socket.expires_at <= now):
                    await self.check(websocket)

    async def close(self) -> None:
        for task in [self._task, *self._checks]:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
