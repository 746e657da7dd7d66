"""The typed context every resolver gets: the caller, per-request DataLoaders and settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.websockets import WebSocket
from strawberry.types import Info as _Info

from gpupaas.core.actor import Actor
from gpupaas.core.metrics import Metrics
from gpupaas.events.broadcast import StatusBroadcaster
from gpupaas.graphql.loaders import Loaders
from gpupaas.provisioning.registry import DriverRegistry
from gpupaas.settings import Settings

SESSION_COOKIE = "gpupaas_session"


@dataclass
class Context:
    request: Request | WebSocket
    response: Response | None
    settings: Settings
    actor: Actor
    drivers: DriverRegistry
    session_secret: str | None = None
    loaders: Loaders = field(default_factory=Loaders)
    # Subscriptions read status events from the process's broadcaster (None: no runtime started).
    broadcaster: StatusBroadcaster | None = None
    # The graphql-transport-ws connection_init payload (strawberry sets it).
    connection_params: dict[str, Any] | None = None
    # The app's metrics (core/metrics.py), which graphql/extensions.py Measured records into.
    metrics: Metrics | None = None


Info = _Info[Context, None]
