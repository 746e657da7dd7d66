"""create_app(): the Starlette application with its routes, lifespan and the GraphQL endpoint.

/graphql serves HTTP (JSON POST, GET for queries only) and graphql-transport-ws; /healthz says
the process is up, /readyz that the database answers; /auth/oidc/* is the OpenID Connect sign-in
when it is configured (api/oidc.py); the SPA is mounted last.
"""

from __future__ import annotations

import contextlib
import gc
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.exceptions import ConnectionRejectionError
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from strawberry.types import ExecutionResult
from strawberry.types.unset import UNSET, UnsetType
from tortoise import Tortoise

from gpupaas import bootstrap, db
from gpupaas.accounts import service as accounts
from gpupaas.api import metrics as metrics_endpoint
from gpupaas.api import oidc as oidc_routes
from gpupaas.api.headers import SecurityHeaders
from gpupaas.api.request_ids import RequestIds
from gpupaas.api.schema import build_schema
from gpupaas.api.sockets import SocketSessions
from gpupaas.api.websocket import SCOPE_KEY, Outlet, TransportWSHandler, WebSocketAdapter
from gpupaas.core import logs
from gpupaas.core.actor import ANONYMOUS, Actor
from gpupaas.core.metrics import Metrics
from gpupaas.graphql import fanout, response_cache
from gpupaas.graphql.context import SESSION_COOKIE, Context
from gpupaas.graphql.response_cache import ResponseCache
from gpupaas.provisioning.registry import DriverRegistry
from gpupaas.runtime import Runtime
from gpupaas.settings import Settings
from gpupaas.spa import SpaFiles

log = logging.getLogger("gpupaas")
STATIC_DIR = Path(__file__).parent / "static"


async def _actor_of(authorization: str | None, cookie: str | None) -> Actor:
    actor, _ = await actor_from_credentials(authorization, cookie)
    return actor


async def actor_from_credentials(authorization: str | None, cookie: str | None) -> tuple[Actor, str | None]:
    """The caller from a bearer token or the session cookie (the token wins when both are sent),
    with their roles: one SQL statement."""
    actor = ANONYMOUS
    if authorization:
        scheme, _, secret = authorization.partition(" ")
        if scheme.lower() == "bearer" and secret.strip():
            actor = await accounts.actor_for_token(secret.strip())
    elif cookie:
        actor = await accounts.actor_for_session(cookie)
    return actor, cookie


def encode_json(data: object) -> str:
    """Compact JSON of a response or websocket message: orjson's, or the stdlib's escapes for what
    orjson refuses (a string with an unpaired surrogate, which UTF-8 cannot carry). Text, not
    bytes: strawberry sends bytes as binary websocket frames, which browsers' clients cannot read."""
    try:
        return orjson.dumps(data).decode()
    except TypeError:
        return json.dumps(data, separators=(",", ":"))


class GraphQLApp(GraphQL[Context, None]):
    # Every websocket frame goes through the socket's outlet, and status subscriptions park in
    # fan-out groups that write to it directly (api/websocket.py, graphql/groups.py).
    websocket_adapter_class = WebSocketAdapter
    graphql_transport_ws_handler_class = TransportWSHandler

    def __init__(self, settings: Settings, runtime: Runtime | None = None) -> None:
        # Shared with the runtime's worker when there is one: one driver per cluster per process.
        self.drivers = runtime.drivers if runtime else DriverRegistry(settings)
        super().__init__(
            build_schema(settings),
            graphql_ide="graphiql" if settings.graphiql else None,
            subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL,),
            allowed_origins=settings.allowed_origins,
        )
        self.settings = settings
        self.runtime = runtime
        # The runtime's when there is one, so that its worker's runs and the API's operations are
        # exported together (api/metrics.py).
        self.metrics = runtime.metrics if runtime else Metrics()
        self.cache = ResponseCache() if settings.response_cache else None
        self.sockets = SocketSessions(
            _actor_of, accounts.credential_expiry, recheck_seconds=settings.ws_recheck_seconds
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        outlet = None
        if scope["type"] == "websocket":
            outlet = scope[SCOPE_KEY] = Outlet(send, self.settings.ws_send_buffer)
        try:
            await super().__call__(scope, receive, send)
        finally:
            if outlet is not None:
                await outlet.close()
                self.sockets.forget(scope)

    async def execute_single(
        self,
        request: Request,
        request_adapter: Any,
        sub_response: Response,
        context: Context,
        root_value: None,
        request_data: Any,
    ) -> ExecutionResult:
        """Repeated reads of unchanged data come from the response cache (graphql/response_cache.py)."""
        key = (
            response_cache.key_of(
                request_data.query or "", request_data.operation_name, request_data.variables, context.actor
            )
            if self.cache is not None and request_adapter.method == "POST"
            else None
        )
        if key is None or self.cache is None:
            return await super().execute_single(
                request, request_adapter, sub_response, context, root_value, request_data
            )
        version = await response_cache.current_version()
        cached = self.cache.get(key, version)
        if cached is not None:
            return ExecutionResult(data=cached, errors=None)
        result = await super().execute_single(
            request, request_adapter, sub_response, context, root_value, request_data
        )
        if not result.errors and result.data is not None:
            self.cache.put(key, version, result.data)
        return result

    async def get_context(self, request: Request | WebSocket, response: Response | WebSocket) -> Context:
        actor, session = await actor_from_credentials(
            request.headers.get("authorization"), request.cookies.get(SESSION_COOKIE)
        )
        # For the rest of the request's (or websocket's) task: its access line names the caller too.
        logs.bind(user=actor.user.username if actor.user is not None else None)
        return Context(
            request=request,
            response=response if isinstance(response, Response) else None,
            settings=self.settings,
            actor=actor,
            drivers=self.drivers,
            session_secret=session,
            broadcaster=self.runtime.broadcaster if self.runtime else None,
            metrics=self.metrics,
        )

    async def on_ws_connect(self, context: Context) -> UnsetType | dict[str, object] | None:
        """graphql-transport-ws: `{"authorization": "Bearer ..."}` in connection_init, else the cookie."""
        params = context.connection_params or {}
        authorization = params.get("authorization") or params.get("Authorization")
        if authorization is not None:
            actor, _ = await actor_from_credentials(str(authorization), None)
            if actor.user is None:
                raise ConnectionRejectionError({"message": "Invalid or expired token."})
            context.actor = actor
            logs.bind(user=actor.user.username)
        # The connection ends when its credentials do (api/sockets.py).
        broadcaster = self.runtime.broadcaster if self.runtime else None
        if broadcaster is not None:
            broadcaster.credential_listeners.add(self.sockets.changed)
        await self.sockets.add(
            context,
            str(authorization) if authorization is not None else None,
            context.session_secret if authorization is None else None,
        )
        unset: UnsetType = UNSET
        return unset

    def encode_json(self, data: object) -> str | bytes:
        """Responses and websocket messages as compact JSON, with orjson (a cached 100-profile page
        is mostly encoding: 235 -> 507 requests/s in bench/read_path.py). A subscription's `next`
        message carrying a result that its subscribers share is spliced from that result's JSON,
        made once (graphql/fanout.py)."""
        return fanout.encode_message(data, encode_json)


MAX_BODY_BYTES = 4 * 1024 * 1024  # the largest field (a template's resources) is capped at 512 KiB


class BodySizeLimit:
    """Refuses request bodies over MAX_BODY_BYTES with 413, before they are read into memory."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await self._refuse(scope, receive, send)
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.limit:
                raise _TooLarge
            return message

        try:
            await self.app(scope, limited, send)
        except _TooLarge:
            await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = PlainTextResponse(f"Request body over {self.limit} bytes.", status_code=413)
        await response(scope, receive, send)


class _TooLarge(Exception):
    pass


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


def readiness(graphql: GraphQLApp) -> Callable[[Request], Awaitable[Response]]:
    """/readyz: the database answers and, in a process that serves live status, its status consumer
    hears what the outbox publishes (events/watchdog.py; the reason under `statusEvents`)."""

    async def readyz(request: Request) -> Response:
        try:
            await Tortoise.get_connection("default").execute_query("SELECT 1")
        except Exception as error:  # any failure means "not ready"; the reason is logged, not shown
            log.warning("readiness check failed: %s", error)
            return JSONResponse({"status": "unavailable", "database": "unreachable"}, status_code=503)
        watchdog = graphql.runtime.watchdog if graphql.runtime is not None else None
        if watchdog is None:
            return JSONResponse({"status": "ok", "database": "ok"})
        if watchdog.problem is not None:
            return JSONResponse(
                {"status": "unavailable", "database": "ok", "statusEvents": watchdog.problem}, status_code=503
            )
        return JSONResponse({"status": "ok", "database": "ok", "statusEvents": "ok"})

    return readyz


def create_app(settings: Settings, *, migrate: bool = True, runtime: Runtime | None = None) -> Starlette:
    """The application. Its lifespan migrates, connects and starts a runtime (bus, relay,
    broadcaster, worker) built from the settings; tests that drive those themselves pass `runtime`."""
    graphql = GraphQLApp(settings, runtime)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if migrate:
            await db.migrate_database(settings.database_url, settings.secret_key)
        await db.connect(settings.database_url)
        await bootstrap.seed(graphql.drivers)
        owned = graphql.runtime is None
        if owned:
            graphql.runtime = Runtime(settings, drivers=graphql.drivers, metrics=graphql.metrics)
            await graphql.runtime.start()
        if settings.gc_tuning:
            tune_gc()
        try:
            yield
        finally:
            await graphql.sockets.close()
            if owned and graphql.runtime is not None:
                await graphql.runtime.stop()
                graphql.runtime = None
            await db.close()

    routes: list[Any] = [
        Route("/healthz", healthz),
        Route("/readyz", readiness(graphql)),
        Route("/metrics", metrics_endpoint.endpoint(graphql.metrics, settings)),
        Route("/graphql", graphql, methods=["GET", "POST"]),
        WebSocketRoute("/graphql", graphql),
        *oidc_routes.routes(settings),
    ]
    if STATIC_DIR.is_dir():
        routes.append(Mount("/", SpaFiles(directory=STATIC_DIR), name="spa"))
    else:
        routes.append(Route("/", landing))
    middleware = [
        # First: the request id is bound while everything below runs and logs.
        Middleware(RequestIds),
        Middleware(SecurityHeaders, hsts=settings.secure_cookies),
        Middleware(BodySizeLimit),
        Middleware(metrics_endpoint.TimedRequests, metrics=graphql.metrics),
    ]
    _live_gauges(graphql)
    app = Starlette(routes=routes, lifespan=lifespan, middleware=middleware)
    app.state.sockets = graphql.sockets  # the open websockets' sessions (tests read their checks)
    return app


def _live_gauges(graphql: GraphQLApp) -> None:
    """What /metrics reads from this process when scraped: its open GraphQL websockets and the
    status subscriptions they hold."""
    graphql.metrics.gauge_of(
        "gpupaas_websocket_connections",
        "Open GraphQL websocket connections (graphql-transport-ws) to this process.",
        lambda: len(graphql.sockets),
    )

    def subscriptions() -> float:
        broadcaster = graphql.runtime.broadcaster if graphql.runtime else None
        return broadcaster.subscriptions() if broadcaster is not None else 0

    graphql.metrics.gauge_of(
        "gpupaas_status_subscriptions",
        "Live status subscriptions (instance and project) this process delivers events to.",
        subscriptions,
    )


GC_THRESHOLDS = (50_000, 20, 100)


def tune_gc() -> None:
    """Once start-up is done: what is alive now (modules, the schema, caches) lives as long as the
    process, so gc.freeze() takes it out of every later collection, and higher thresholds make
    collections rarer (request garbage is mostly freed by reference counting). bench/fanout.py
    measures it: README, "Performance"."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


async def landing(request: Request) -> Response:
    """Until the SPA is built into static/, / says where the API is."""
    return HTMLResponse(
        "<!doctype html><title>gpupaas</title><h1>gpupaas is running</h1>"
        '<p>The GraphQL API (with GraphiQL) is at <a href="/graphql">/graphql</a>; '
        'health at <a href="/healthz">/healthz</a> and <a href="/readyz">/readyz</a>.</p>'
    )
