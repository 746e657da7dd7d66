"""The background parts of a gpupaas process: the bus, the outbox relay, the webhook dispatcher,
the status broadcaster and (in the embedded default, or `gpupaas worker`) a worker with its driver,
its drift watch and the simulated services' endpoints.

`gpupaas serve` starts all that its settings ask for inside the app's lifespan; `gpupaas worker`
starts the bus, the relay and the worker only.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta

from gpupaas.audit.service import AuditPurger
from gpupaas.core.metrics import Metrics
from gpupaas.events import outbox
from gpupaas.events.broadcast import StatusBroadcaster
from gpupaas.events.bus import Bus
from gpupaas.events.relay import TOPICS, Relay
from gpupaas.events.watchdog import StatusWatchdog
from gpupaas.provisioning.drivers.base import Driver
from gpupaas.provisioning.drivers.simulated.endpoints import SimulatedEndpoints
from gpupaas.provisioning.plan import Plan
from gpupaas.provisioning.registry import DriverRegistry
from gpupaas.service_instances.endpoints import ready_endpoints, wanted_endpoints
from gpupaas.settings import Settings
from gpupaas.webhooks.dispatch import DeliveryPolicy, Dispatcher
from gpupaas.workers.drift import DriftWatcher
from gpupaas.workers.scheduler import Scheduler
from gpupaas.workers.worker import Worker, WorkerSettings

log = logging.getLogger("gpupaas.runtime")

# Each part of a process gets this long to stop; Kubernetes' default grace period is 30 s.
STOP_TIMEOUT_SECONDS = 10.0


def make_bus(settings: Settings, *, client_id: str = "gpupaas") -> Bus:
    if settings.kafka_bootstrap_servers:
        from gpupaas.events.kafka import KafkaBus
        from gpupaas.events.namespaced import NamespacedBus

        kafka = KafkaBus(
            settings.kafka_bootstrap_servers,
            client_id=client_id,
            idempotence=settings.kafka_idempotence,
            partitions=settings.kafka_partitions,
            replication_factor=settings.kafka_replication_factor,
            fetch_max_wait_ms=settings.kafka_fetch_max_wait_ms,
            idle_fetch_max_wait_ms=settings.kafka_idle_fetch_max_wait_ms,
            session_timeout_ms=settings.kafka_session_timeout_ms,
            heartbeat_interval_ms=settings.kafka_heartbeat_interval_ms,
            metadata_max_age_ms=settings.kafka_metadata_max_age_ms,
        )
        return NamespacedBus(kafka, settings.kafka_namespace) if settings.kafka_namespace else kafka
    from gpupaas.events.memory import InProcessBus

    return InProcessBus()


def worker_settings(settings: Settings) -> WorkerSettings:
    return WorkerSettings(
        lease=timedelta(seconds=settings.run_lease_seconds),
        max_attempts=settings.run_max_attempts,
        retry_backoff_seconds=settings.run_retry_backoff_seconds,
        requeue_after=timedelta(seconds=settings.run_requeue_after_seconds),
        # a third of the requeue time (10 s by default): a stale run waits at most that much more
        reaper_interval_seconds=max(0.05, min(10.0, settings.run_requeue_after_seconds / 3)),
        concurrency=settings.worker_concurrency,
    )


def delivery_policy(settings: Settings) -> DeliveryPolicy:
    return DeliveryPolicy(
        allow_private_networks=settings.webhook_allow_private_networks,
        timeout_seconds=settings.webhook_timeout_seconds,
        max_attempts=settings.webhook_max_attempts,
        backoff_seconds=settings.webhook_backoff_seconds,
        max_backoff_seconds=settings.webhook_max_backoff_seconds,
        keep_days=settings.webhook_log_days,
    )


class Runtime:
    def __init__(
        self,
        settings: Settings,
        *,
        serve_api: bool = True,
        run_worker: bool | None = None,
        bus: Bus | None = None,
        driver: Driver | None = None,
        drivers: DriverRegistry | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        """`driver`: the simulated driver to use (tests pass one with their own timing); `metrics`:
        the registry /metrics exports (the app's, when the app starts the runtime)."""
        self.settings = settings
        self.metrics = metrics or Metrics()
        self.bus = bus or make_bus(settings)
        self.drivers = drivers or DriverRegistry(settings, simulated=driver)
        self.relay = Relay(self.bus, keep_status=timedelta(hours=settings.status_replay_hours))
        # Every process sends webhook deliveries; several share them through their claims.
        self.webhooks = Dispatcher(settings.secret_key, delivery_policy(settings))
        self.broadcaster = StatusBroadcaster(self.bus, metrics=self.metrics) if serve_api else None
        # Live status must not go silent: /readyz reports a deaf status consumer (events/watchdog.py).
        self.watchdog = (
            StatusWatchdog(self.broadcaster, settings.status_watchdog_seconds, metrics=self.metrics)
            if self.broadcaster is not None
            else None
        )
        worker_wanted = settings.run_worker if run_worker is None else run_worker
        self.worker = (
            Worker(self.bus, self.drivers, worker_settings(settings), metrics=self.metrics)
            if worker_wanted
            else None
        )
        # Workers watch their clusters for drift (pods that die after a successful deploy).
        self.drift = DriftWatcher(self.drivers) if self.worker is not None else None
        # Auto-stops and schedules (workers/scheduler.py), where a worker runs.
        self.scheduler = (
            Scheduler(
                warning_minutes=settings.auto_stop_warning_minutes,
                interval_seconds=settings.scheduler_interval_seconds,
            )
            if self.worker is not None
            else None
        )
        # What answers at simulated services' Connect links (service_instances/endpoints.py).
        self.endpoints = (
            SimulatedEndpoints(functools.partial(wanted_endpoints, settings.secret_key))
            if self.worker is not None and settings.simulated_endpoints
            else None
        )
        if self.endpoints is not None:
            self._bind_endpoints()

        # The audit log's retention, applied in every process (purging twice deletes nothing more).
        self.audit_purger = AuditPurger(settings.audit_retention_days)
        self._started = False
        # how long stop() waits for each part (tests make it short)
        self.stop_timeout = STOP_TIMEOUT_SECONDS

    def _bind_endpoints(self) -> None:
        """RUNNING means the Connect link answers: the simulated driver opens a service's
        endpoints before it reports the service ready (imported here: as the registry does, only
        where the simulated driver is used)."""
        from gpupaas.provisioning.drivers.simulated.driver import SimulatedDriver

        if isinstance(self.drivers.simulated, SimulatedDriver):
            self.drivers.simulated.on_service_ready = self._open_endpoints

    async def _open_endpoints(self, plan: Plan, outputs: Mapping[str, str]) -> None:
        assert self.endpoints is not None  # only bound when there are endpoints
        await self.endpoints.open_now(await ready_endpoints(self.settings.secret_key, plan, outputs))

    async def start(self) -> None:
        await self.bus.start()
        await self.bus.ensure_topics(TOPICS)
        if self.broadcaster is not None:
            await self.broadcaster.start()
        if self.watchdog is not None:
            await self.watchdog.start()
        if self.worker is not None:
            await self.worker.start()
        if self.drift is not None:
            await self.drift.start()
        if self.scheduler is not None:
            await self.scheduler.start()
        if self.endpoints is not None:
            outbox.register(self.endpoints.woken)  # a commit here may start or stop a service
            await self.endpoints.start()
        await self.relay.start()
        await self.webhooks.start()
        await self.audit_purger.start()
        self._started = True

    async def stop(self) -> None:
        """Stops every part, in order. A part that does not stop within `stop_timeout` seconds is
        logged by name and left behind, so that a process told to stop (SIGTERM) always exits:
        what a worker leaves unfinished, another takes over after the lease."""
        if not self._started:
            return
        self._started = False
        if self.endpoints is not None:
            outbox.unregister(self.endpoints.woken)
        parts: list[tuple[str, Callable[[], Awaitable[object]] | None]] = [
            ("webhooks", self.webhooks.stop),
            ("audit purger", self.audit_purger.stop),
            ("relay", self.relay.stop),
            ("simulated endpoints", self.endpoints.stop if self.endpoints else None),
            ("scheduler", self.scheduler.stop if self.scheduler else None),
            ("drift watch", self.drift.stop if self.drift else None),
            ("worker", self.worker.stop if self.worker else None),
            ("status watchdog", self.watchdog.stop if self.watchdog else None),
            ("status broadcaster", self.broadcaster.stop if self.broadcaster else None),
            ("bus", self.bus.stop),
            ("drivers", self.drivers.close),
        ]
        for name, stop in parts:
            if stop is None:
                continue
            try:
                await asyncio.wait_for(stop(), self.stop_timeout)
            except TimeoutError:
                log.error("stopping the %s took over %s s; going on without it", name, self.stop_timeout)
