"""What the webhook tests share: a real HTTP receiver on a loopback port, a clock the tests move,
an API that lets webhooks point at loopback (the receiver), and dispatchers on that clock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from gpupaas.app import create_app
from gpupaas.settings import Settings
from gpupaas.webhooks.dispatch import DeliveryPolicy, Dispatcher
from tests.conftest import SECRET_KEY, GraphQLClient, serving


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Answer:
    status: int = 200
    body: bytes = b"ok"
    headers: dict[str, str] = field(default_factory=dict)


class Receiver:
    """An ASGI app served by uvicorn on 127.0.0.1: records each request and answers with the next
    of `answers` (200 "ok" when none is left). With `hold` set it answers only once it is released."""

    def __init__(self) -> None:
        self.requests: list[Received] = []
        self.answers: list[Answer] = []
        self.arrived = asyncio.Event()
        self.hold: asyncio.Event | None = None
        self.url = ""

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:  # type: ignore[type-arg]
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        path = scope["path"] + (f"?{scope['query_string'].decode()}" if scope["query_string"] else "")
        self.requests.append(Received(path=path, headers=headers, body=body))
        self.arrived.set()
        answer = self.answers.pop(0) if self.answers else Answer()
        if self.hold is not None:
            await self.hold.wait()
        await send(
            {
                "type": "http.response.start",
                "status": answer.status,
                "headers": [(k.encode(), v.encode()) for k, v in answer.headers.items()],
            }
        )
        await send({"type": "http.response.body", "body": answer.body})


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    app = Receiver()
    async with serving(app) as url:
        app.url = url
        try:
            yield app
        finally:
            if app.hold is not None:
                app.hold.set()


class Clock:
    """Now, as the tests say: moves only when told. It starts a minute ahead of the real time, so
    that what a test queues (at the real time) is due at once."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC) + timedelta(minutes=1)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def hook_settings(settings: Settings) -> Settings:
    """Webhooks may point at loopback: the receiver lives there."""
    return replace(settings, webhook_allow_private_networks=True)


@pytest.fixture
async def hooks_gql(hook_settings: Settings) -> AsyncIterator[GraphQLClient]:
    app = create_app(hook_settings, migrate=False)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        yield GraphQLClient(http)


POLICY = DeliveryPolicy(
    allow_private_networks=True,
    timeout_seconds=5.0,
    max_attempts=4,
    backoff_seconds=10.0,
    max_backoff_seconds=60.0,
)

DispatcherFactory = Callable[..., Dispatcher]


@pytest.fixture
async def dispatcher(clock: Clock) -> AsyncIterator[DispatcherFactory]:
    """`dispatcher(**policy_changes, resolve=...)`: a dispatcher on the test's clock (closed after)."""
    made: list[Dispatcher] = []

    def make(**changes: object) -> Dispatcher:
        extra = {k: changes.pop(k) for k in ("resolve",) if k in changes}
        policy = replace(POLICY, **changes)  # type: ignore[arg-type]
        one = Dispatcher(SECRET_KEY, policy, clock=clock, **extra)  # type: ignore[arg-type]
        made.append(one)
        return one

    yield make
    for one in made:
        await one.stop()
