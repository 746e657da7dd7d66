"""What the cluster holds of a plan now: ABSENT when none of the plan's objects exist (a
claim a delete kept, without the instance's label, is not one of them); FAILED with
the reason when an object or a pod of the instance failed; PROGRESSING with what it waits for;
READY.

It is one look, judged as a run judges (readiness.py; only the pods of the current revisions):
a crash loop past the restart grace is FAILED, but a trouble whose grace is a time (a pod waiting
for a node, an image pull retried) is PROGRESSING with its reason, since one look cannot tell how
long it has lasted.
"""

from __future__ import annotations

from typing import Any

from gpupaas.provisioning.drivers.base import Observed, Phase
from gpupaas.provisioning.drivers.k8s_manifests.drift import instance_health
from gpupaas.provisioning.drivers.k8s_manifests.ownership import owned_by
from gpupaas.provisioning.drivers.k8s_manifests.pods import Graces
from gpupaas.provisioning.drivers.k8s_manifests.readiness import readiness
from gpupaas.provisioning.drivers.kubernetes.api import KubeApi
from gpupaas.provisioning.drivers.kubernetes.items import (
    POD_MAKERS,
    Item,
    binds_on_first_consumer,
    plan_items,
    read,
)
from gpupaas.provisioning.drivers.kubernetes.pods import plan_pods
from gpupaas.provisioning.plan import RECLAIM_ANNOTATION, RECLAIM_KEEP, Plan

__all__ = ["observe_plan", "released"]


def released(manifest: dict[str, Any], obj: dict[str, Any], plan: Plan) -> bool:
    """Whether a destroy kept the object and let go of it: the plan keeps it on a delete and it
    no longer carries the instance's owner label."""
    annotations = (manifest.get("metadata") or {}).get("annotations") or {}
    return annotations.get(RECLAIM_ANNOTATION) == RECLAIM_KEEP and not owned_by(
        obj, plan.instance_id, plan.owner_label
    )


async def observe_plan(api: KubeApi, plan: Plan, graces: Graces | None = None) -> Observed:
    """What the cluster holds of the plan now; see the module's docstring."""
    items = await plan_items(api, plan, strict=False)
    found: list[tuple[Item, dict[str, Any]]] = []
    missing: list[str] = []
    for item, obj in zip(items, await read(api, items), strict=True):
        if obj is not None and released(item.manifest, obj, plan):
            obj = None  # a claim a delete kept (reclaim Keep) is no longer the instance's
        if obj is None:
            missing.append(item.label)
        else:
            found.append((item, obj))
    if not found:
        return Observed(Phase.ABSENT)
    problems: list[str] = []
    waiting: list[str] = []
    storage_classes: dict[str, bool] = {}
    for item, obj in found:
        if (obj.get("metadata") or {}).get("deletionTimestamp"):
            waiting.append(f"{item.label} is being deleted")
            continue
        first_consumer = False
        if item.kind == "PersistentVolumeClaim" and (obj.get("status") or {}).get("phase") != "Bound":
            first_consumer = await binds_on_first_consumer(api, obj, storage_classes)
        state = readiness(obj, wait_for_first_consumer=first_consumer, graces=graces)
        if state.failed:
            problems.append(state.message or item.label)
        elif not state.ready:
            waiting.append(state.message or item.label)
    if any(item.kind in POD_MAKERS or item.kind == "Pod" for item in items):
        namespaces = sorted({item.namespace for item, _ in found if item.namespace})
        controllers = [obj for item, obj in found if item.kind in ("Deployment", "StatefulSet")]
        pods = await plan_pods(api, plan, namespaces, controllers)
        health = instance_health(pods.current, graces)
        if health is not None and health.phase == Phase.FAILED and health.message not in problems:
            problems.append(str(health.message))
    if problems:
        return Observed(Phase.FAILED, "; ".join(dict.fromkeys(problems)))
    if missing:
        return Observed(Phase.PROGRESSING, f"missing: {', '.join(missing)}")
    if waiting:
        return Observed(Phase.PROGRESSING, waiting[0])
    return Observed(Phase.READY)
