"""create_app(): the Starlette application with its routes, lifespan and the GraphQL endpoint.

/graphql serves HTTP (JSON POST, GET for queries only) and graphql-transport-ws; /healthz says
the process is up, /readyz that the database answers; the SPA is mounted last.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket
from strawberry.asgi import GraphQL
from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL
from tortoise import Tortoise

from gpupaas import db
from gpupaas.accounts import service as accounts
from gpupaas.catalog import service as catalog
from gpupaas.graphql.context import SESSION_COOKIE, Context
from gpupaas.graphql.schema import build_schema
from gpupaas.settings import Settings

log = logging.getLogger("gpupaas")
STATIC_DIR = Path(__file__).parent / "static"


async def actor_from_credentials(
    authorization: str | None, cookie: str | None
) -> tuple[accounts.Actor, str | None]:
    """The caller from a bearer token or the session cookie (the token wins when both are sent)."""
    user = None
    if authorization:
        scheme, _, secret = authorization.partition(" ")
        if scheme.lower() == "bearer" and secret.strip():
            user = await accounts.user_for_token(secret.strip())
    elif cookie:
        user = await accounts.user_for_session(cookie)
    return await accounts.actor_for(user), cookie


class GraphQLApp(GraphQL[Context, None]):
    def __init__(self, settings: Settings) -> None:
        super().__init__(
            build_schema(settings),
            graphql_ide="graphiql" if settings.graphiql else None,
            subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL,),
            allowed_origins=settings.allowed_origins,
        )
        self.settings = settings

    async def get_context(self, request: Request | WebSocket, response: Response | WebSocket) -> Context:
        actor, session = await actor_from_credentials(
            request.headers.get("authorization"), request.cookies.get(SESSION_COOKIE)
        )
        return Context(
            request=request,
            response=response if isinstance(response, Response) else None,
            settings=self.settings,
            actor=actor,
            session_secret=session,
        )


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def readyz(request: Request) -> Response:
    try:
        await Tortoise.get_connection("default").execute_query("SELECT 1")
    except Exception as error:  # any failure means "not ready"; the reason is logged, not shown
        log.warning("readiness check failed: %s", error)
        return JSONResponse({"status": "unavailable", "database": "unreachable"}, status_code=503)
    return JSONResponse({"status": "ok", "database": "ok"})


def create_app(settings: Settings, *, migrate: bool = True) -> Starlette:
    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if migrate:
            await db.migrate_database(settings.database_url)
        await db.connect(settings.database_url)
        await catalog.sync_builtin_templates()
        try:
            yield
        finally:
            await db.close()

    graphql = GraphQLApp(settings)
    routes: list[Any] = [
        Route("/healthz", healthz),
        Route("/readyz", readyz),
        Route("/graphql", graphql, methods=["GET", "POST"]),
        WebSocketRoute("/graphql", graphql),
    ]
    if STATIC_DIR.is_dir():
        routes.append(Mount("/", StaticFiles(directory=STATIC_DIR, html=True), name="spa"))
    return Starlette(routes=routes, lifespan=lifespan)
