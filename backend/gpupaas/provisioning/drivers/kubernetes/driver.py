"""The `kubernetes` driver: applies plans to a real cluster through the official client.

`KubernetesDriver` holds one connection (connection.py, api.py) and its settings, and hands each
call of the Driver protocol to the module that carries it out: apply.py, destroy.py, observe.py,
drift.py; `check` reads the server's version and its nodes. Before a plan is applied, its pod
templates get the cluster's placement (k8s_manifests/placement.py: the GPU model's node affinity,
the dedicated nodes' label and toleration).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable, Mapping

from gpupaas.provisioning.drivers.base import (
    Applied,
    ClusterEvent,
    ClusterInfo,
    EventQuery,
    LogLine,
    LogQuery,
    NamespaceUsage,
    Observed,
    OnDrift,
    Progress,
    namespace_usage_of,
)
from gpupaas.provisioning.drivers.k8s_manifests.access import missing_text
from gpupaas.provisioning.drivers.k8s_manifests.api import Request
from gpupaas.provisioning.drivers.k8s_manifests.nodes import GPU_MODEL_LABELS, node_info
from gpupaas.provisioning.drivers.k8s_manifests.placement import PlacementSettings, placed
from gpupaas.provisioning.drivers.k8s_manifests.pods import Graces
from gpupaas.provisioning.drivers.kubernetes.access import missing_permissions
from gpupaas.provisioning.drivers.kubernetes.api import CLAIMS, NODES, RESOURCE_QUOTAS, KubeApi
from gpupaas.provisioning.drivers.kubernetes.apply import apply_plan
from gpupaas.provisioning.drivers.kubernetes.connection import ClusterConnection, Transport
from gpupaas.provisioning.drivers.kubernetes.destroy import destroy_plan
from gpupaas.provisioning.drivers.kubernetes.drift import watch_drift
from gpupaas.provisioning.drivers.kubernetes.logs import read_events, read_logs, stream_executor
from gpupaas.provisioning.drivers.kubernetes.observe import observe_plan
from gpupaas.provisioning.plan import PermanentError, Plan

__all__ = ["KubernetesDriver"]


async def _silent(message: str) -> None:
    return None


class KubernetesDriver:
    """A Driver (drivers/base.py) over a Kubernetes cluster; see the package's docstring."""

    def __init__(
        self,
        connection: ClusterConnection,
        *,
        field_manager: str = "gpupaas",
        readiness_timeout: float = 600,
        request_timeout: float = 30,
        poll_interval: float = 1.0,
        graces: Graces | None = None,
        clock: Callable[[], float] = time.monotonic,
        retry_seconds: float = 300,
        retry_first_pause: float = 0.5,
        placement: PlacementSettings | None = None,
    ) -> None:
        """`graces`: how long what usually passes by itself (a crash the kubelet restarts, an
        image pull it retries, a pod waiting for a node) is waited for before it fails a run or,
        in the drift watch, its instance. `clock` (seconds) times the readiness deadline and the
        graces; tests give one they move."""
        graces = graces or Graces()
        if (
            graces.crash_restarts < 0
            or not graces.image_pull_seconds >= 0
            or not graces.scheduling_seconds >= 0
        ):
            raise ValueError(f"graces must not be negative: {graces}")
        for name, value in (
            ("readiness_timeout", readiness_timeout),
            ("request_timeout", request_timeout),
            ("poll_interval", poll_interval),
            ("retry_first_pause", retry_first_pause),
        ):
            if not value > 0:
                raise ValueError(f"{name} must be more than 0, not {value}")
        if not retry_seconds >= 0:
            raise ValueError(f"retry_seconds must be 0 or more, not {retry_seconds}")
        if not field_manager:
            raise ValueError("field_manager must not be empty")
        self.connection = connection
        self.field_manager = field_manager
        self.readiness_timeout = float(readiness_timeout)
        self.request_timeout = float(request_timeout)
        self.poll_interval = float(poll_interval)
        self.graces = graces
        self.clock = clock
        # How long an apply or destroy retries a request that meets a transient fault (api.py).
        self.retry_seconds = float(retry_seconds)
        self._api = KubeApi(
            Transport(connection, request_timeout=self.request_timeout),
            retry_seconds=self.retry_seconds,
            first_pause=float(retry_first_pause),
        )
        # The cluster's placement settings (the registry passes the cluster's); none: pods go
        # wherever the scheduler puts them.
        self.placement = placement or PlacementSettings()
        # Followed logs and events hold a thread each while they last (logs.py).
        self._streams = stream_executor()

    async def apply(self, plan: Plan, progress: Progress | None = None) -> Applied:
        return await apply_plan(
            self._api,
            placed(plan, self.placement),
            progress or _silent,
            field_manager=self.field_manager,
            readiness_timeout=self.readiness_timeout,
            poll_interval=self.poll_interval,
            graces=self.graces,
            clock=self.clock,
        )

    async def destroy(self, plan: Plan, progress: Progress | None = None) -> None:
        await destroy_plan(
            self._api,
            plan,
            progress or _silent,
            readiness_timeout=self.readiness_timeout,
            poll_interval=self.poll_interval,
        )

    async def observe(self, plan: Plan) -> Observed:
        return await observe_plan(self._api, plan, self.graces)

    async def watch_drift(self, on_change: OnDrift, *, stop: asyncio.Event) -> None:
        """Until `stop` is set, reports the owners whose pods fail or recover (drift.py)."""
        await watch_drift(
            self._api,
            on_change,
            stop=stop,
            poll_interval=self.poll_interval,
            graces=self.graces,
            clock=self.clock,
        )

    async def logs(self, query: LogQuery) -> AsyncIterator[LogLine]:
        """A container's log through pods/log (logs.py)."""
        async for line in read_logs(self._api, self._streams, query):
            yield line

    async def events(self, query: EventQuery) -> AsyncIterator[ClusterEvent]:
        """The events of the owner's objects, listed and watched (logs.py)."""
        async for event in read_events(self._api, self._streams, query):
            yield event

    async def check(self, gpu_resource_names: Mapping[str, str] | None = None) -> ClusterInfo:
        """The API server's version and its nodes (allocatable CPU and memory, GPUs per extended
        resource as the nodes report them, GPU model). Raises DriverError saying what is wrong:
        unreachable, credentials refused, or which permission (RBAC) is missing."""
        version = await self._api.get(Request("GET", "/version"), "reading the API server's version")
        missing = await missing_permissions(self._api)
        if missing:
            raise PermanentError(missing_text(missing))
        nodes, _ = await self._api.list_objects(
            NODES, None, None, "listing the nodes (the driver needs list on nodes)"
        )
        # The cluster's own GPU model labels first: they are what the placement requires.
        own = [label for label in self.placement.gpu_model_labels.values() if label]
        model_labels = tuple(dict.fromkeys([*own, *GPU_MODEL_LABELS]))
        server = str(version.get("gitVersion") or f"v{version.get('major', '?')}.{version.get('minor', '?')}")
        return ClusterInfo(
            server_version=server,
            nodes=tuple(sorted((node_info(node, model_labels) for node in nodes), key=lambda n: n.name)),
        )

    async def namespace_usage(self, namespace: str) -> NamespaceUsage:
        """The namespace's ResourceQuotas (their status, as the quota controller keeps it) and
        its PersistentVolumeClaims; none when the namespace is not there."""
        quotas, _ = await self._api.list_objects(
            RESOURCE_QUOTAS, namespace, None, f"listing the resource quotas of namespace {namespace}"
        )
        claims, _ = await self._api.list_objects(
            CLAIMS, namespace, None, f"listing the persistent volume claims of namespace {namespace}"
        )
        return namespace_usage_of([*quotas, *claims])

    async def close(self) -> None:
        """Releases the connections, threads and files of the driver; later calls fail."""
        await self._api.transport.close()
        self._streams.shutdown(wait=False, cancel_futures=True)
