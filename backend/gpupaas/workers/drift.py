"""Drift: one watch per registered Kubernetes cluster on the objects gpupaas manages. A pod that
dies turns its subject FAILED with the reason, and healthy again when it recovers: a compute
instance SUCCESS -> FAILED -> SUCCESS, a GPU service instance RUNNING -> FAILED -> RUNNING. The
driver reports each change by the owner label of the objects (`Owner`), which names the kind
(workers/kinds.py). It keeps the watch's resourceVersion and re-lists after 410 Gone, so no event
is lost across a restart of the watch; this loop restarts a watch that failed."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid

from gpupaas.clusters import service as clusters
from gpupaas.provisioning.drivers.base import Observed, Owner, Phase
from gpupaas.provisioning.registry import DriverRegistry
from gpupaas.runs import lifecycle as runs
from gpupaas.workers.kinds import BY_OWNER_LABEL

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
                for cluster in await clusters.kubernetes_clusters():
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
        async def on_change(owner: Owner, observed: Observed) -> None:
            kind = BY_OWNER_LABEL.get(owner.label)
            if kind is None or observed.phase not in (Phase.FAILED, Phase.READY):
                return
            await runs.report_drift(kind, owner.id, observed.phase == Phase.FAILED, observed.message)

        while not self._stop.is_set():
            try:
                driver = self.drivers.driver(await clusters.target_for(str(cluster_id)))
                await driver.watch_drift(on_change, stop=self._stop)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("the drift watch of cluster %s failed; starting it again", cluster_id)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), timeout=self.backoff_seconds)
