"""Which driver serves which cluster: the simulated driver for SIMULATED clusters (one shared
in-database simulation), a KubernetesDriver per registered KUBERNETES cluster (built from its
decrypted kubeconfig, rebuilt when the cluster is edited). Also checks clusters when they are
registered (reachable, version, nodes and their GPUs)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from gpupaas.clusters.models import Cluster, ClusterDriver
from gpupaas.core import crypto
from gpupaas.provisioning.drivers.base import Driver
from gpupaas.provisioning.plan import GPU_RESOURCE_NAMES, PermanentError
from gpupaas.settings import Settings


@dataclass(frozen=True)
class ClusterCheck:
    reachable: bool
    message: str | None = None
    server_version: str | None = None
    nodes: list[dict[str, Any]] = field(default_factory=list)


class Checker(Protocol):
    async def check(self, cluster: Cluster) -> ClusterCheck: ...


def resource_names(cluster: Cluster | None) -> dict[str, str]:
    """The GPU resource name per vendor on this cluster: its own settings over the defaults."""
    names = dict(GPU_RESOURCE_NAMES)
    if cluster is not None:
        names.update(cluster.gpu_resource_names or {})
    return names


class DriverRegistry:
    def __init__(self, settings: Settings, *, simulated: Driver | None = None) -> None:
        self.settings = settings
        self._simulated = simulated
        self._kubernetes: dict[uuid.UUID, tuple[datetime, Driver]] = {}
        self._retired: list[Driver] = []

    @property
    def simulated(self) -> Driver:
        if self._simulated is None:
            from gpupaas.provisioning.drivers.simulated import SimulatedDriver
            from gpupaas.provisioning.inventory import DEFAULT_INVENTORY, load_inventory

            path = self.settings.simulated_inventory
            inventory = load_inventory(path) if path else DEFAULT_INVENTORY
            self._simulated = SimulatedDriver(inventory, phase_seconds=self.settings.simulated_phase_seconds)
        return self._simulated

    def kubernetes_clusters(self) -> list[tuple[uuid.UUID, Driver]]:
        return [(cid, driver) for cid, (_, driver) in self._kubernetes.items()]

    async def driver_for(self, cluster_id: str | None) -> tuple[Driver, Cluster | None]:
        """The driver of the cluster (the default cluster when None). A cluster deleted since the
        snapshot was taken fails the run: there is nowhere to apply it."""
        cluster = await self._cluster(cluster_id)
        if cluster is None or cluster.driver == ClusterDriver.SIMULATED:
            return self.simulated, cluster
        return self._kubernetes_driver(cluster), cluster

    async def _cluster(self, cluster_id: str | None) -> Cluster | None:
        if cluster_id:
            cluster = await Cluster.get_or_none(id=cluster_id)
            if cluster is None:
                raise PermanentError(
                    "the instance's cluster was deleted; register it again or launch a new instance"
                )
            return cluster
        return await Cluster.get_or_none(is_default=True)

    def _kubernetes_driver(self, cluster: Cluster) -> Driver:
        cached = self._kubernetes.get(cluster.id)
        if cached is not None and cached[0] == cluster.updated_at:
            return cached[1]
        if cached is not None:  # the cluster was edited: its old client goes
            self._retired.append(cached[1])
        from gpupaas.provisioning.drivers.kubernetes import ClusterConnection, KubernetesDriver

        kubeconfig = (
            crypto.decrypt(self.settings.secret_key, cluster.kubeconfig_encrypted)
            if cluster.kubeconfig_encrypted
            else None
        )
        driver = KubernetesDriver(
            ClusterConnection(kubeconfig=kubeconfig, in_cluster=cluster.in_cluster, context=cluster.context),
            readiness_timeout=self.settings.kubernetes_readiness_timeout_seconds,
            request_timeout=self.settings.kubernetes_request_timeout_seconds,
            poll_interval=self.settings.kubernetes_poll_seconds,
        )
        self._kubernetes[cluster.id] = (cluster.updated_at, driver)
        return driver

    async def close(self) -> None:
        """Releases the Kubernetes clients (their threads and connections)."""
        drivers = [d for _, d in self._kubernetes.values()] + self._retired
        self._kubernetes.clear()
        self._retired.clear()
        for driver in drivers:
            await driver.close()  # type: ignore[attr-defined]

    async def check(self, cluster: Cluster) -> ClusterCheck:
        if cluster.driver == ClusterDriver.SIMULATED:
            from gpupaas.provisioning.drivers.simulated import SimulatedDriver

            simulated = self.simulated
            nodes = []
            if isinstance(simulated, SimulatedDriver):
                for node in simulated.inventory.nodes:
                    nodes.append(
                        {
                            "name": node.name,
                            "cpu": node.cpu,
                            "memory": node.memory,
                            "gpuResource": resource_names(cluster).get(node.gpu_vendor)
                            if node.gpu_count
                            else None,
                            "gpuCount": node.gpu_count,
                            "gpuModel": node.gpu_model,
                        }
                    )
            return ClusterCheck(reachable=True, server_version="simulated", nodes=nodes)
        try:
            driver = self._kubernetes_driver(cluster)
            info = await driver.check()  # type: ignore[attr-defined]
        except Exception as error:  # any failure is what the operator needs to read
            return ClusterCheck(reachable=False, message=str(error) or type(error).__name__)
        return ClusterCheck(
            reachable=True,
            server_version=info.server_version,
            nodes=[node.to_json() for node in info.nodes],
        )
