"""Which driver serves which cluster: the simulated driver for SIMULATED clusters (one shared
in-database simulation), a KubernetesDriver per KUBERNETES cluster (built from its decrypted
kubeconfig and its placement settings, rebuilt when the cluster is edited). Also checks clusters
(reachable, version, nodes and their GPUs, and which of the catalog's GPU models no node has).

A cluster comes in as a `ClusterTarget`: what the drivers need of it, made by the clusters domain
from its row (clusters/service.py), so that this layer knows no domain."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Any, Protocol

from gpupaas.core import crypto
from gpupaas.provisioning.drivers.base import Driver, NodeInfo
from gpupaas.provisioning.drivers.k8s_manifests.placement import (
    DEFAULT_GPU_MODEL_LABELS,
    PlacementSettings,
    parse_node_label,
    parse_taint,
)
from gpupaas.provisioning.plan import GPU_RESOURCE_NAMES
from gpupaas.provisioning.render.policy import TemplatePolicy
from gpupaas.settings import Settings


class ClusterDriver(str, Enum):
    SIMULATED = "SIMULATED"
    KUBERNETES = "KUBERNETES"


@dataclass(frozen=True)
class ClusterTarget:
    """A registered cluster as the drivers see it."""

    id: uuid.UUID
    driver: ClusterDriver
    # When the cluster was last edited: a driver built before is rebuilt.
    updated_at: datetime
    kubeconfig_encrypted: str | None = None
    in_cluster: bool = False
    context: str | None = None
    # The cluster's own GPU resource names per vendor, over the defaults.
    gpu_resource_names: Mapping[str, str] = field(default_factory=dict)
    # Whom the cluster trusts with more than the tenant confinement.
    template_policy: TemplatePolicy = TemplatePolicy.CONFINED
    # Placement: the cluster's own GPU model node labels per vendor (over the defaults), and its
    # dedicated nodes' label ("key=value") and taint ("key=value:Effect"), if it has any.
    gpu_model_labels: Mapping[str, str] = field(default_factory=dict)
    dedicated_node_label: str | None = None
    dedicated_node_taint: str | None = None


@dataclass(frozen=True)
class ClusterCheck:
    reachable: bool
    message: str | None = None
    server_version: str | None = None
    nodes: list[dict[str, Any]] = field(default_factory=list)
    # Of the GPU models asked about, those no node has (in the order asked).
    missing_gpu_models: list[str] = field(default_factory=list)


class Checker(Protocol):
    async def check(self, target: ClusterTarget, gpu_models: Sequence[str] = ()) -> ClusterCheck: ...


def resource_names(target: ClusterTarget | None) -> dict[str, str]:
    """The GPU resource name per vendor on this cluster: its own settings over the defaults."""
    names = dict(GPU_RESOURCE_NAMES)
    if target is not None:
        names.update(target.gpu_resource_names)
    return names


def model_labels(target: ClusterTarget | None) -> dict[str, str]:
    """The node label holding the GPU model per vendor on this cluster: its own over the defaults."""
    labels = dict(DEFAULT_GPU_MODEL_LABELS)
    if target is not None:
        labels.update(target.gpu_model_labels)
    return labels


def placement_settings(target: ClusterTarget) -> PlacementSettings:
    """The cluster's placement settings, as the kubernetes driver applies them (they were checked
    when saved: clusters/service.py)."""
    return PlacementSettings(
        gpu_model_labels=model_labels(target),
        dedicated_label=parse_node_label(target.dedicated_node_label)
        if target.dedicated_node_label
        else None,
        dedicated_taint=parse_taint(target.dedicated_node_taint) if target.dedicated_node_taint else None,
    )


def missing_models(models: Iterable[str], nodes: Iterable[NodeInfo], *, exact: bool) -> list[str]:
    """The models that no node has. `exact`: the node's GPU model label must equal the model, as the
    node affinity the kubernetes driver adds requires; otherwise (the simulated cluster, whose
    admission does the same) the model need only be part of it, case aside ("H100" of "H100 80GB")."""
    found = [node.gpu_model for node in nodes if node.gpu_model]
    missing: list[str] = []
    for model in dict.fromkeys(m.strip() for m in models if m and m.strip()):
        present = model in found if exact else any(model.lower() in value.lower() for value in found)
        if not present:
            missing.append(model)
    return missing


class DriverRegistry:
    def __init__(self, settings: Settings, *, simulated: Driver | None = None) -> None:
        self.settings = settings
        self._simulated = simulated
        self._kubernetes: dict[uuid.UUID, tuple[datetime, Driver]] = {}
        self._retired: list[Driver] = []

    @property
    def simulated(self) -> Driver:
        if self._simulated is None:
            from gpupaas.provisioning.drivers.simulated.driver import SimulatedDriver
            from gpupaas.provisioning.inventory import DEFAULT_INVENTORY, load_inventory

            path = self.settings.simulated_inventory
            inventory = load_inventory(path) if path else DEFAULT_INVENTORY
            self._simulated = SimulatedDriver(inventory, phase_seconds=self.settings.simulated_phase_seconds)
        return self._simulated

    def driver(self, target: ClusterTarget | None) -> Driver:
        """The cluster's driver (None: no cluster is registered, the simulated one)."""
        if target is None or target.driver == ClusterDriver.SIMULATED:
            return self.simulated
        cached = self._kubernetes.get(target.id)
        if cached is not None and cached[0] == target.updated_at:
            return cached[1]
        if cached is not None:  # the cluster was edited: its old client goes
            self._retired.append(cached[1])
        from gpupaas.provisioning.drivers.k8s_manifests.pods import Graces
        from gpupaas.provisioning.drivers.kubernetes.connection import ClusterConnection
        from gpupaas.provisioning.drivers.kubernetes.driver import KubernetesDriver

        kubeconfig = (
            crypto.decrypt(self.settings.secret_key, target.kubeconfig_encrypted)
            if target.kubeconfig_encrypted
            else None
        )
        driver = KubernetesDriver(
            ClusterConnection(kubeconfig=kubeconfig, in_cluster=target.in_cluster, context=target.context),
            readiness_timeout=self.settings.kubernetes_readiness_timeout_seconds,
            request_timeout=self.settings.kubernetes_request_timeout_seconds,
            poll_interval=self.settings.kubernetes_poll_seconds,
            graces=Graces(
                crash_restarts=self.settings.kubernetes_crash_restarts,
                image_pull_seconds=self.settings.kubernetes_image_pull_grace_seconds,
                scheduling_seconds=self.settings.kubernetes_scheduling_grace_seconds,
            ),
            retry_seconds=self.settings.kubernetes_retry_seconds,
            placement=placement_settings(target),
        )
        self._kubernetes[target.id] = (target.updated_at, driver)
        return driver

    async def close(self) -> None:
        """Releases the Kubernetes clients (their threads and connections)."""
        drivers = [d for _, d in self._kubernetes.values()] + self._retired
        self._kubernetes.clear()
        self._retired.clear()
        for driver in drivers:
            await driver.close()

    async def check(self, target: ClusterTarget, gpu_models: Sequence[str] = ()) -> ClusterCheck:
        """Whether the cluster answers, and what it has; a failure is what the operator reads.
        `gpu_models`: those the catalog's profiles deploying here ask for; the ones no node has
        come back in `missing_gpu_models`."""
        try:
            info = await self.driver(target).check(resource_names(target))
        except Exception as error:
            return ClusterCheck(reachable=False, message=str(error) or type(error).__name__)
        return ClusterCheck(
            reachable=True,
            server_version=info.server_version,
            nodes=[node.to_json() for node in info.nodes],
            missing_gpu_models=missing_models(
                gpu_models, info.nodes, exact=target.driver == ClusterDriver.KUBERNETES
            ),
        )
