"""A small graphql-transport-ws client for tests, over the `websockets` library."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import websockets

_ids = itertools.count(1)


class Session:
    def __init__(self, ws: websockets.ClientConnection) -> None:
        self.ws = ws

    async def subscribe(self, query: str, variables: dict[str, Any] | None = None) -> str:
        sid = str(next(_ids))
        await self.ws.send(
            json.dumps(
                {"id": sid, "type": "subscribe", "payload": {"query": query, "variables": variables or {}}}
            )
        )
        return sid

    async def receive(self, timeout: float = 30.0) -> dict[str, Any]:
        """The next message that is not a ping (pings are answered)."""
        while True:
            frame = await asyncio.wait_for(self.ws.recv(), timeout)
            # a browser's graphql-ws client reads text frames only
            assert isinstance(frame, str), f"a binary websocket frame: {frame!r:.200}"
            message: dict[str, Any] = json.loads(frame)
            if message["type"] == "ping":
                await self.ws.send(json.dumps({"type": "pong"}))
                continue
            return message

    async def next_data(self, timeout: float = 30.0) -> dict[str, Any]:
        message = await self.receive(timeout)
        assert message["type"] == "next", message
        assert "errors" not in message["payload"], message
        data: dict[str, Any] = message["payload"]["data"]
        return data

    async def next_change(self, field: str, timeout: float = 30.0) -> dict[str, Any]:
        """The next event of the status subscription `field` that is a change (REPLAY or LIVE),
        past the snapshot it starts with: its selection must include `source`."""
        while True:
            event: dict[str, Any] = (await self.next_data(timeout))[field]
            if event["source"] != "SNAPSHOT":
                return event


@asynccontextmanager
async def connect(
    base_url: str, *, token: str | None = None, cookie: str | None = None, init: bool = True, **options: Any
) -> AsyncIterator[Session]:
    """`options` go to `websockets.connect` (`max_queue`, `sock`, ...)."""
    url = base_url.replace("http://", "ws://") + "/graphql"
    headers = {"Cookie": f"gpupaas_session={cookie}"} if cookie else None
    # max_queue=None: a test that leaves messages unread (a long snapshot) closes at once. With the
    # default high-water mark (16 messages) the client stops reading the socket, does not see the
    # server's close frame behind them, and waits its close timeout (10 s) on every such close.
    async with websockets.connect(
        url,
        subprotocols=[websockets.Subprotocol("graphql-transport-ws")],
        additional_headers=headers,
        **{"max_queue": None, **options},
    ) as ws:
        session = Session(ws)
        if init:
            payload = {"authorization": f"Bearer {token}"} if token else {}
            await ws.send(json.dumps({"type": "connection_init", "payload": payload}))
            ack = await session.receive()
            assert ack["type"] == "connection_ack", ack
        yield session
