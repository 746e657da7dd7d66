"""The `kubernetes` driver: applies plans to a real cluster through the official client.

`KubernetesDriver` holds one connection (connection.py, api.py) and its settings, and hands each
call of the Driver protocol to the module that carries it out: apply.py, destroy.py, observe.py,
drift.py; `check` reads the server's version and its nodes. Before a plan is applied, its pod
templates get the cluster's placement (k8s_manifests/placement.py: the GPU model's node affinity,
the dedicated nodes' label and toleration).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from gpupaas.provisioning.drivers.base import Applied, ClusterInfo, Observed, OnDrift, Progress
from gpupaas.provisioning.drivers.k8s_manifests.api import Request
from gpupaas.provisioning.drivers.k8s_manifests.nodes import GPU_MODEL_LABELS, node_info
from gpupaas.provisioning.drivers.k8s_manifests.placement import PlacementSettings, placed
from gpupaas.provisioning.drivers.kubernetes.api import NODES, KubeApi
from gpupaas.provisioning.drivers.kubernetes.apply import apply_plan
from gpupaas.provisioning.drivers.kubernetes.connection import ClusterConnection, Transport
from gpupaas.provisioning.drivers.kubernetes.destroy import destroy_plan
from gpupaas.provisioning.drivers.kubernetes.drift import watch_drift
from gpupaas.provisioning.drivers.kubernetes.observe import observe_plan
from gpupaas.provisioning.plan import Plan

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
        placement: PlacementSettings | None = None,
    ) -> None:
        for name, value in (
            ("readiness_timeout", readiness_timeout),
            ("request_timeout", request_timeout),
            ("poll_interval", poll_interval),
        ):
            if not value > 0:
                raise ValueError(f"{name} must be more than 0, not {value}")
        if not field_manager:
            raise ValueError("field_manager must not be empty")
        self.connection = connection
        self.field_manager = field_manager
        self.readiness_timeout = float(readiness_timeout)
        self.request_timeout = float(request_timeout)
        self.poll_interval = float(poll_interval)
        # The cluster's placement settings (the registry passes the cluster's); none: pods go
        # wherever the scheduler puts them.
        self.placement = placement or PlacementSettings()
        self._api = KubeApi(Transport(connection, request_timeout=self.request_timeout))

    async def apply(self, plan: Plan, progress: Progress | None = None) -> Applied:
        return await apply_plan(
            self._api,
            placed(plan, self.placement),
            progress or _silent,
            field_manager=self.field_manager,
            readiness_timeout=self.readiness_timeout,
            poll_interval=self.poll_interval,
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
        return await observe_plan(self._api, plan)

    async def watch_drift(self, on_change: OnDrift, *, stop: asyncio.Event) -> None:
        """Until `stop` is set, reports the owners whose pods fail or recover (drift.py)."""
        await watch_drift(self._api, on_change, stop=stop, poll_interval=self.poll_interval)

    async def check(self, gpu_resource_names: Mapping[str, str] | None = None) -> ClusterInfo:
        """The API server's version and its nodes (allocatable CPU and memory, GPUs per extended
        resource as the nodes report them, GPU model). Raises DriverError saying what is wrong:
        unreachable, credentials refused, or which permission (RBAC) is missing."""
        version = await self._api.get(Request("GET", "/version"), "reading the API server's version")
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

    async def close(self) -> None:
        """Releases the connections, threads and files of the driver; later calls fail."""
        await self._api.transport.close()
