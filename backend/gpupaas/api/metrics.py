"""/metrics: the process's metrics (core/metrics.py) in the Prometheus text format.

Served by `gpupaas serve` beside /graphql and by `gpupaas worker` on GPUPAAS_METRICS_PORT, only
to `Authorization: Bearer <GPUPAAS_METRICS_TOKEN>`: without the setting the endpoint does not
exist (404), a missing or wrong token gets 401. What lives in the database (the outbox's backlog
and its oldest row's age, instances by status, GPUs per cluster and model) is read at scrape time,
six statements per scrape whatever the number of rows, and none per request.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from tortoise.functions import Count

from gpupaas.compute.models import ComputeInstance
from gpupaas.core.metrics import Metrics
from gpupaas.events.models import OutboxMessage
from gpupaas.quotas import capacity
from gpupaas.service_instances.models import ServiceInstance
from gpupaas.settings import Settings

Clock = Callable[[], datetime]
log = logging.getLogger("gpupaas.metrics")


def _utcnow() -> datetime:
    return datetime.now(UTC)


def authorized(settings: Settings, authorization: str | None) -> bool:
    scheme, _, secret = (authorization or "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        secret.strip().encode(), settings.metrics_token.encode()
    )


async def read_database(metrics: Metrics, clock: Clock = _utcnow) -> None:
    """The gauges that come from the database, as they are now."""
    backlog = OutboxMessage.filter(sent_at=None)
    metrics.outbox_backlog.set(await backlog.count())
    oldest = await backlog.order_by("id").first().values_list("created_at", flat=True)
    age = (clock() - oldest).total_seconds() if isinstance(oldest, datetime) else 0.0
    metrics.outbox_oldest_age.set(max(age, 0.0))
    for kind, model in (("compute", ComputeInstance), ("service", ServiceInstance)):
        rows = await model.annotate(count=Count("id")).group_by("status").values("status", "count")
        metrics.set_instances(kind, {_status(row["status"]): int(row["count"]) for row in rows})
    metrics.set_gpus(
        [
            (cluster.name, entry.vendor, entry.model or "", entry.capacity, entry.allocated, entry.free)
            for cluster, entry in await capacity.totals()
        ]
    )


def _status(value: object) -> str:
    return str(getattr(value, "value", value))


def endpoint(
    metrics: Metrics, settings: Settings, clock: Clock = _utcnow
) -> Callable[[Request], Awaitable[Response]]:
    async def scrape(request: Request) -> Response:
        if not settings.metrics_token:
            return PlainTextResponse("Not Found", status_code=404)
        if not authorized(settings, request.headers.get("authorization")):
            return PlainTextResponse(
                "Send Authorization: Bearer <GPUPAAS_METRICS_TOKEN>.",
                status_code=401,
                headers={"www-authenticate": 'Bearer realm="metrics"'},
            )
        await read_database(metrics, clock)
        for read in metrics.scrape_readers:
            try:
                await read()
            except Exception:  # a broker that does not answer leaves the last values, not a 500
                log.exception("a metrics reader failed")
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return scrape


# Routes by name; anything else (the studio's files and pages) is "other", so that no path a
# client invents becomes a label.
ROUTES = frozenset({"/graphql", "/healthz", "/readyz", "/metrics"})
METHODS = frozenset({"GET", "POST", "HEAD", "OPTIONS", "PUT", "PATCH", "DELETE"})


class TimedRequests:
    """ASGI middleware: every HTTP request's time into `gpupaas_http_request_seconds`."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500  # what the client sees when the app fails before answering

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            path = scope["path"]
            method = scope["method"]
            self.metrics.request_seconds.labels(
                method if method in METHODS else "other",
                path if path in ROUTES else "other",
                str(status),
            ).observe(time.perf_counter() - started)


def metrics_app(metrics: Metrics, settings: Settings, clock: Clock = _utcnow) -> Starlette:
    """The worker's HTTP server: /metrics and nothing else."""
    return Starlette(routes=[Route("/metrics", endpoint(metrics, settings, clock))])


async def serve_metrics(metrics: Metrics, settings: Settings, stop: asyncio.Event) -> None:
    """`gpupaas worker`: /metrics on GPUPAAS_METRICS_HOST:GPUPAAS_METRICS_PORT until `stop` is set."""
    import uvicorn

    config = uvicorn.Config(
        metrics_app(metrics, settings),
        host=settings.metrics_host,
        port=settings.metrics_port,
        lifespan="off",
        log_level="warning",
        access_log=False,
        # The process's logging is configured already (core/logs.py): uvicorn's lines go through it.
        log_config=None,
    )
    server = uvicorn.Server(config)
    # The worker handles SIGINT/SIGTERM itself (and sets `stop`): uvicorn's own handlers stay out.
    task = asyncio.create_task(server._serve(), name="metrics-server")
    try:
        await stop.wait()
    finally:
        server.should_exit = True
        await task
