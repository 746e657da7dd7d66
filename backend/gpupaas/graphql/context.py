"""The typed context every resolver gets: the caller, per-request DataLoaders and settings."""

from __future__ import annotations

from dataclasses import dataclass, field

from starlette.requests import Request
from starlette.responses import Response
from starlette.websockets import WebSocket
from strawberry.types import Info as _Info

from gpupaas.accounts.service import Actor
from gpupaas.graphql.dataloaders import Loaders
from gpupaas.settings import Settings

SESSION_COOKIE = "gpupaas_session"


@dataclass
class Context:
    request: Request | WebSocket
    response: Response | None
    settings: Settings
    actor: Actor
    session_secret: str | None = None
    loaders: Loaders = field(default_factory=Loaders)


Info = _Info[Context, None]
