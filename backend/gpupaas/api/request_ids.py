"""A request id for every HTTP request and websocket (README, "Observe"): the client's
`X-Request-ID` when it is a sane one (a proxy's or a load balancer's, so one id follows the request
through), else a new one; every log line of the request carries it (core/logs.py) and the response
(or the websocket's accept) returns it in `X-Request-ID`."""

from __future__ import annotations

import re
import uuid

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gpupaas.core import logs

HEADER = "x-request-id"
# What an id a client sends may be: short, and nothing that could break a log line or a header.
_SANE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@/+=-]{0,127}")


def request_id_of(given: str | None) -> str:
    if given is not None and _SANE.fullmatch(given):
        return given
    return uuid.uuid4().hex


class RequestIds:
    """ASGI middleware: binds the request id for the request's (or websocket's) task and returns it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        raw = dict(scope["headers"]).get(HEADER.encode())
        request_id = request_id_of(raw.decode("latin-1") if raw is not None else None)

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)[HEADER] = request_id
            elif message["type"] == "websocket.accept":
                headers = [(k, v) for k, v in message.get("headers", []) if k.lower() != HEADER.encode()]
                message = {**message, "headers": [*headers, (HEADER.encode(), request_id.encode())]}
            await send(message)

        token = logs.bind(request_id=request_id)
        # On an exception the id stays bound: the server logs it next, in this same task (which
        # ends with the request), and that line names the request too.
        await self.app(scope, receive, sending)
        logs.unbind(token)
