"""A plan's objects as the driver applies them, and reading them back from the server.

Every manifest of the plan gets its namespace defaulted to the plan's and its pod templates
stamped with the instance's labels (so that pods can be found and watched), and is paired with the
`ApiResource` discovery found for its kind; they come in dependency order (k8s_manifests/objects.py).
A plan refused by the tenant confinement (`Plan.refused`) is not applied: nothing reaches the
cluster.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gpupaas.provisioning.drivers.base import ObjectRef
from gpupaas.provisioning.drivers.k8s_manifests.api import ApiResource, get_request
from gpupaas.provisioning.drivers.k8s_manifests.objects import (
    apply_order,
    describe,
    label_problem,
    object_key,
    stamp_pod_templates,
    with_namespace,
)
from gpupaas.provisioning.drivers.kubernetes.api import STORAGE_CLASSES, KubeApi
from gpupaas.provisioning.plan import PermanentError, Plan

__all__ = ["POD_MAKERS", "Item", "binds_on_first_consumer", "plan_items", "read"]

# Kinds whose controllers make pods that carry the instance's labels (see stamp_pod_templates).
POD_MAKERS = frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob"})


@dataclass(frozen=True)
class Item:
    """One object of a plan, ready to apply: the manifest as sent and where it lives."""

    manifest: dict[str, Any]
    resource: ApiResource

    @property
    def kind(self) -> str:
        return self.resource.kind

    @property
    def name(self) -> str:
        return str(self.manifest["metadata"]["name"])

    @property
    def namespace(self) -> str | None:
        namespace = self.manifest["metadata"].get("namespace")
        return str(namespace) if namespace else None

    @property
    def label(self) -> str:
        return describe(self.manifest)

    @property
    def ref(self) -> ObjectRef:
        return ObjectRef(
            api_version=str(self.manifest["apiVersion"]),
            kind=self.kind,
            name=self.name,
            namespace=self.namespace,
        )


async def plan_items(api: KubeApi, plan: Plan, *, strict: bool) -> list[Item]:
    """The plan's objects as they are applied, in order. `strict`: a plan the tenant confinement
    refused, a kind the cluster does not serve, or an object without the instance's labels, fails
    (apply); otherwise it is skipped (destroy, observe: what cannot exist is not there)."""
    if strict:
        plan.check_admissible()
    problems: list[str] = []
    prepared: list[tuple[dict[str, Any], ApiResource]] = []
    for manifest in plan.manifests:
        api_version, kind = str(manifest.get("apiVersion", "")), str(manifest.get("kind", ""))
        problem = label_problem(manifest, plan.instance_id, plan.owner_label)
        if problem is not None and strict:
            problems.append(problem)
            continue
        resource = await api.resource(api_version, kind)
        if resource is None:
            if strict:
                problems.append(
                    f"{describe(manifest)}: the cluster does not serve kind {kind} of {api_version} "
                    "(is its CustomResourceDefinition installed?)"
                )
            continue
        obj = with_namespace(manifest, plan.namespace, resource.namespaced)
        prepared.append((stamp_pod_templates(obj, plan.instance_id, plan.owner_label), resource))
    if problems:
        raise PermanentError("; ".join(problems))
    by_key = {object_key(obj): resource for obj, resource in prepared}
    return [Item(obj, by_key[object_key(obj)]) for obj in apply_order(obj for obj, _ in prepared)]


async def read(api: KubeApi, items: Sequence[Item]) -> list[dict[str, Any] | None]:
    """The objects as the server holds them now (None: not there), read side by side."""
    return list(
        await asyncio.gather(
            *(
                api.call(
                    get_request(item.resource, item.name, item.namespace),
                    f"reading {item.label}",
                    missing_ok=True,
                )
                for item in items
            )
        )
    )


async def binds_on_first_consumer(api: KubeApi, claim: Mapping[str, Any], cache: dict[str, bool]) -> bool:
    """Whether the claim's storage class binds only when a pod uses it (WaitForFirstConsumer).
    The DefaultStorageClass admission plugin has already filled in the default class."""
    name = (claim.get("spec") or {}).get("storageClassName")
    if not name:
        return False
    if name not in cache:
        try:
            storage_class = await api.call(
                get_request(STORAGE_CLASSES, str(name), None),
                f"reading storageclass {name}",
                missing_ok=True,
            )
        except PermanentError:  # not allowed to read storage classes: wait for Bound
            storage_class = None
        mode = (storage_class or {}).get("volumeBindingMode")
        cache[name] = mode == "WaitForFirstConsumer"
    return cache[name]
