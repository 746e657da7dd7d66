"""The pods of a plan as the cluster holds them, and those of them that belong to the current
revision of their Deployment or StatefulSet (k8s_manifests/pods.py: current_pods)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpupaas.provisioning.drivers.k8s_manifests.pods import current_pods
from gpupaas.provisioning.drivers.kubernetes.api import PODS, REPLICASETS, KubeApi
from gpupaas.provisioning.plan import Plan

__all__ = ["PlanPods", "plan_pods"]


@dataclass(frozen=True)
class PlanPods:
    """Every pod labelled with the plan's owner, and the current ones among them."""

    all: list[dict[str, Any]]
    current: list[Mapping[str, Any]]


async def plan_pods(
    api: KubeApi, plan: Plan, namespaces: Sequence[str], controllers: Sequence[Mapping[str, Any]]
) -> PlanPods:
    """The pods of the plan in `namespaces`; `controllers` are its Deployments and StatefulSets as
    just read, by which the current pods are told from those of older revisions (the
    ReplicaSets are listed only when a Deployment needs them)."""
    selector = f"{plan.owner_label}={plan.instance_id}"
    everything: list[dict[str, Any]] = []
    current: list[Mapping[str, Any]] = []
    deployments = {
        str((c.get("metadata") or {}).get("namespace") or "")
        for c in controllers
        if c.get("kind") == "Deployment"
    }
    for namespace in namespaces:
        pods, _ = await api.list_objects(PODS, namespace, selector, f"listing the pods of {namespace}")
        replicasets: list[dict[str, Any]] = []
        if namespace in deployments and pods:
            replicasets, _ = await api.list_objects(
                REPLICASETS, namespace, selector, f"listing the replicasets of {namespace}"
            )
        everything.extend(pods)
        current.extend(current_pods(pods, replicasets, controllers))
    return PlanPods(everything, current)
