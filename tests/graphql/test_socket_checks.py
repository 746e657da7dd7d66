"""The websocket credential checks of api/sockets.py on their own: an expired credential closes its
socket without asking the database; a database that cannot answer keeps the socket open."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from starlette.types import Message
from starlette.websockets import WebSocket

from gpupaas.api.sockets import CLOSE_FORBIDDEN, SocketSessions
from gpupaas.core.actor import Actor, Role
from gpupaas.graphql.context import Context
from gpupaas.provisioning.registry import DriverRegistry
from gpupaas.settings import Settings


@dataclass(frozen=True)
class _User:
    id: uuid.UUID
    username: str = "alice"
    is_platform_admin: bool = False
    disabled_at: datetime | None = None


def _socket(sent: list[Message]) -> WebSocket:
    async def receive() -> Message:
        return {"type": "websocket.connect"}

    async def send(message: Message) -> None:
        sent.append(message)

    websocket = WebSocket({"type": "websocket", "path": "/graphql", "headers": []}, receive, send)
    websocket.application_state = websocket.application_state.CONNECTED
    return websocket


def _context(websocket: WebSocket, actor: Actor, settings: Settings) -> Context:
    return Context(
        request=websocket, response=None, settings=settings, actor=actor, drivers=DriverRegistry(settings)
    )


async def test_an_expired_credential_closes_without_the_database(settings: Settings) -> None:
    asked: list[Any] = []

    async def authenticate(authorization: str | None, cookie: str | None) -> Actor:
        asked.append(authorization)
        raise ConnectionError("the database is down")

    async def expiry(authorization: str | None, cookie: str | None) -> datetime | None:
        return datetime.now(UTC) - timedelta(seconds=1)

    sessions = SocketSessions(authenticate, expiry, recheck_seconds=60)
    sent: list[Message] = []
    websocket = _socket(sent)
    await sessions.add(_context(websocket, Actor(_User(uuid.uuid4())), settings), "Bearer x", None)
    assert await sessions.check(websocket) is False
    assert asked == [] and len(sessions) == 0
    assert sent == [
        {"type": "websocket.close", "code": CLOSE_FORBIDDEN, "reason": "Your session ended: sign in again."}
    ]
    await sessions.close()


async def test_a_database_that_cannot_answer_keeps_the_socket(settings: Settings) -> None:
    async def authenticate(authorization: str | None, cookie: str | None) -> Actor:
        raise ConnectionError("the database is down")

    async def expiry(authorization: str | None, cookie: str | None) -> datetime | None:
        return None

    sessions = SocketSessions(authenticate, expiry, recheck_seconds=60)
    sent: list[Message] = []
    websocket = _socket(sent)
    project = uuid.uuid4()
    await sessions.add(
        _context(websocket, Actor(_User(uuid.uuid4()), {project: Role.ADMIN}), settings), "Bearer x", None
    )
    assert await sessions.check(websocket) is True
    assert sent == [] and len(sessions) == 1
    await sessions.close()
