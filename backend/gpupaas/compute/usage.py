"""What a deployed compute instance's namespace uses of its ResourceQuota (hard and used, as the
API server's quota controller keeps `status.used`) and which PersistentVolumeClaims it holds (its
services' workspaces, and those kept after their service was deleted, which a new service may
mount as an EXISTING_CLAIM): read from its cluster's driver when asked, never stored."""

from __future__ import annotations

from dataclasses import dataclass

from gpupaas.accounts.models import Project
from gpupaas.clusters.service import target_for
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.states import DeploymentStatus
from gpupaas.provisioning.drivers.base import NamespaceUsage
from gpupaas.provisioning.plan import DriverError, namespace_for
from gpupaas.provisioning.registry import DriverRegistry

__all__ = ["InstanceUsage", "namespace_usage"]


@dataclass(frozen=True)
class InstanceUsage:
    namespace: str
    usage: NamespaceUsage
    # Why the cluster could not be read (unreachable, a right the worker lacks); usage is empty.
    problem: str | None = None


async def namespace_usage(instance: ComputeInstance, drivers: DriverRegistry) -> InstanceUsage | None:
    """The instance's namespace usage; None unless it is deployed (SUCCESS)."""
    if instance.status != DeploymentStatus.SUCCESS:
        return None
    project = await Project.get(id=instance.project_id)
    namespace = namespace_for(project.name, instance.name, str(instance.id))
    try:
        target = await target_for(instance.profile_snapshot.cluster_id)
        usage = await drivers.driver(target).namespace_usage(namespace)
    except DriverError as error:
        return InstanceUsage(namespace, NamespaceUsage(), f"the cluster could not be read: {error}")
    return InstanceUsage(namespace, usage)
