"""Drift: one watch per registered Kubernetes cluster on the objects gpupaas manages. A pod that
dies turns its SUCCESS instance FAILED with the reason; when it recovers, the instance turns
SUCCESS again; a GPU service instance's pod does the same to its service instance (RUNNING ->
FAILED -> RUNNING). The driver keeps the watch's resourceVersion and re-lists after 410 Gone, so no
event is lost across a restart of the watch; this loop restarts a watch that failed."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid

from gpupaas.clusters.models import Cluster, ClusterDriver
from gpupaas.compute.run_kind import COMPUTE
from gpupaas.provisioning.drivers.base import Observed, Phase
from gpupaas.provisioning.drivers.k8s_manifests import SERVICE_DRIFT_PREFIX
from gpupaas.provisioning.registry import DriverRegistry
from gpupaas.runs import lifecycle as runs
from gpupaas.service_instances.run_kind import SERVICES

log = logging.getLogger("gpupaas.drift")


class DriftWatcher:
    def __init__(
        self, drivers: DriverRegistry, *, rescan_seconds: float = 30.0, backoff_seconds: float = 5.0
    ) -> None:
        self.drivers = drivers
        self.rescan_seconds = rescan_seconds
        self.backoff_seconds = backoff_seconds
        self._stop = asyncio.Event()
        self._watches: dict[uuid.UUID, asyncio.Task[None]] = {}
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._stop.clear()
        self._task = asyncio.create_task(self._scan(), name="drift-scan")

    async def stop(self) -> None:
        self._stop.set()
        tasks = [t for t in (self._task, *self._watches.values()) if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._watches.clear()

    async def _scan(self) -> None:
        while not self._stop.is_set():
            try:
                clusters = await Cluster.filter(driver=ClusterDriver.KUBERNETES)
                for cluster in clusters:
                    task = self._watches.get(cluster.id)
                    if task is None or task.done():
                        self._watches[cluster.id] = asyncio.create_task(
                            self._watch(cluster.id), name=f"drift-{cluster.name}"
                        )
            except Exception:
                log.exception("listing clusters for drift watches failed")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=self.rescan_seconds)

    async def _watch(self, cluster_id: uuid.UUID) -> None:
        async def on_change(instance_id: str, observed: Observed) -> None:
            if observed.phase not in (Phase.FAILED, Phase.READY):
                return
            failed = observed.phase == Phase.FAILED
            if instance_id.startswith(SERVICE_DRIFT_PREFIX):
                service_id = instance_id.removeprefix(SERVICE_DRIFT_PREFIX)
                await runs.report_drift(SERVICES, service_id, failed, observed.message)
            else:
                await runs.report_drift(COMPUTE, instance_id, failed, observed.message)

        while not self._stop.is_set():
            try:
                driver, _ = await self.drivers.driver_for(str(cluster_id))
                await driver.watch_drift(on_change, stop=self._stop)  # type: ignore[attr-defined]
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("the drift watch of cluster %s failed; starting it again", cluster_id)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=self.backoff_seconds)
