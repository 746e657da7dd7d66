"""Applying a plan to the cluster and waiting until it is ready.

First every object of the plan (items.py) is read: one that exists without the instance's owner
label (someone else's, another instance's) fails the run before anything is applied, since a
forced apply would take it over (owned.py). Then every object is applied in dependency order by
server-side apply (PATCH application/apply-patch+yaml, fieldManager, force=true): applying again
changes nothing, and a run that died half-way is finished by the next. The instance's objects that
the plan no longer has are pruned (prune.py). Then it waits, polling every `poll_interval`, until
namespaces are Active, claims Bound (or their storage class binds on first use), pods Ready and
Deployments/StatefulSets rolled out, for at most `readiness_timeout` seconds from the start of the
run: requests that ride out a transient fault (api.py) do not move that deadline. A pod that cannot
be scheduled ("0/4 nodes are available: 4 Insufficient nvidia.com/gpu."), a crash-looping or
failed container, a failed Job or a Deployment that cannot create its pods fails the run at once
(PermanentError); so does the timeout, naming what it waited for. A namespace still terminating
from a destroy is a TemporaryError. The outputs are rendered from the objects as the server holds
them afterwards.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import Any

from gpupaas.provisioning.drivers.base import Applied, Progress
from gpupaas.provisioning.drivers.k8s_manifests.api import apply_request
from gpupaas.provisioning.drivers.k8s_manifests.pods import counts, current_pods, pod_problem
from gpupaas.provisioning.drivers.k8s_manifests.readiness import WAITED_KINDS, readiness
from gpupaas.provisioning.drivers.kubernetes.api import PODS, REPLICASETS, KubeApi
from gpupaas.provisioning.drivers.kubernetes.items import (
    POD_MAKERS,
    Item,
    binds_on_first_consumer,
    plan_items,
    read,
)
from gpupaas.provisioning.drivers.kubernetes.owned import check_ownership
from gpupaas.provisioning.drivers.kubernetes.prune import prune
from gpupaas.provisioning.plan import PermanentError, Plan, TemporaryError
from gpupaas.provisioning.render.problems import TemplateError
from gpupaas.provisioning.render.rendering import render_outputs
from gpupaas.provisioning.wording import plural

__all__ = ["apply_plan"]


async def apply_plan(
    api: KubeApi,
    plan: Plan,
    report: Progress,
    *,
    field_manager: str,
    readiness_timeout: float,
    poll_interval: float,
) -> Applied:
    """Applies the plan and waits until it is ready (see the module's docstring); the outputs
    rendered from the objects as the server holds them, and the objects applied."""
    deadline = time.monotonic() + readiness_timeout
    with api.patient(deadline):
        return await _apply(
            api,
            plan,
            report,
            deadline,
            field_manager=field_manager,
            readiness_timeout=readiness_timeout,
            poll_interval=poll_interval,
        )


async def _apply(
    api: KubeApi,
    plan: Plan,
    report: Progress,
    deadline: float,
    *,
    field_manager: str,
    readiness_timeout: float,
    poll_interval: float,
) -> Applied:
    items = await plan_items(api, plan, strict=True)
    await check_ownership(api, plan, items)
    await report(f"Applying {plural(len(items), 'object')}")
    for item in items:
        request = apply_request(item.manifest, item.resource, field_manager=field_manager, force=True)
        applied = await api.get(request, f"applying {item.label}")
        if item.kind == "Namespace" and (applied.get("status") or {}).get("phase") == "Terminating":
            raise TemporaryError(
                f"{item.label} is still terminating (a destroy has not finished); try again later"
            )
    await prune(api, plan, items, report, field_manager=field_manager)
    await report(f"Waiting for {plural(len(items), 'object')} to be ready")
    await _wait_ready(
        api, plan, items, deadline, report, readiness_timeout=readiness_timeout, poll_interval=poll_interval
    )
    objects: list[dict[str, Any]] = []
    for item, obj in zip(items, await read(api, items), strict=True):
        if obj is None:
            raise TemporaryError(f"{item.label} was deleted while it was being applied; try again")
        objects.append(obj)
    try:
        outputs = render_outputs(plan.outputs, plan.context, objects)
    except TemplateError as error:
        raise PermanentError(f"the outputs cannot be rendered: {error}") from None
    return Applied(outputs=outputs, objects=tuple(item.ref for item in items))


async def _wait_ready(
    api: KubeApi,
    plan: Plan,
    items: Sequence[Item],
    deadline: float,
    report: Progress,
    *,
    readiness_timeout: float,
    poll_interval: float,
) -> None:
    """Polls until every object the plan waits for is ready; fails at once on what waiting cannot
    cure, and when the deadline passes."""
    waited = [item for item in items if item.kind in WAITED_KINDS]
    makers = [item for item in items if item.kind in POD_MAKERS]
    makes_pods = bool(makers)
    # Every controller scaled to zero (a stopped service): ready once its pods are gone.
    stopping = makes_pods and all(
        item.kind == "Deployment" and (item.manifest.get("spec") or {}).get("replicas") == 0
        for item in makers
    )
    namespaces = sorted({item.namespace for item in items if item.namespace})
    storage_classes: dict[str, bool] = {}
    last_message: str | None = None
    while True:
        waiting: list[str] = []
        deployments: list[dict[str, Any]] = []
        for item, obj in zip(waited, await read(api, waited), strict=True):
            if obj is None:
                waiting.append(f"{item.label} to exist")
                continue
            if item.kind == "Namespace" and (obj.get("status") or {}).get("phase") == "Terminating":
                raise TemporaryError(
                    f"{item.label} is terminating (a destroy has not finished); try again when it is gone"
                )
            if item.kind == "Deployment":
                deployments.append(obj)
            first_consumer = False
            if item.kind == "PersistentVolumeClaim" and (obj.get("status") or {}).get("phase") != "Bound":
                first_consumer = await binds_on_first_consumer(api, obj, storage_classes)
            state = readiness(obj, wait_for_first_consumer=first_consumer)
            if state.failed:
                raise PermanentError(state.message or f"{item.label} failed")
            if not state.ready:
                waiting.append(state.message or item.label)
        if makes_pods:
            pods = await _check_pods(api, plan, namespaces, deployments)
            if stopping and pods:
                waiting.append(f"pod {pods[0]} to terminate")
        if not waiting:
            return
        if waiting[0] != last_message:
            last_message = waiting[0]
            await report(f"Waiting for {last_message}")
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            more = len(waiting) - 3
            raise PermanentError(
                f"not ready after {readiness_timeout:g} s: "
                + "; ".join(waiting[:3])
                + (f"; and {more} more" if more > 0 else "")
            )
        await asyncio.sleep(min(poll_interval, remaining))


async def _check_pods(
    api: KubeApi, plan: Plan, namespaces: Sequence[str], deployments: Sequence[Mapping[str, Any]]
) -> list[str]:
    """Fails the run when a pod the plan's controllers made cannot run (their own status only
    says that replicas are missing, not why). The names of the plan's pods."""
    selector = f"{plan.owner_label}={plan.instance_id}"
    names: list[str] = []
    for namespace in namespaces:
        pods, _ = await api.list_objects(PODS, namespace, selector, f"listing the pods of {namespace}")
        replicasets: list[dict[str, Any]] = []
        if deployments and any(p.get("metadata", {}).get("ownerReferences") for p in pods):
            replicasets, _ = await api.list_objects(
                REPLICASETS, namespace, selector, f"listing the replicasets of {namespace}"
            )
        names.extend(str((pod.get("metadata") or {}).get("name")) for pod in pods)
        for pod in current_pods(pods, replicasets, deployments):
            problem = pod_problem(pod) if counts(pod) else None
            if problem is not None:
                raise PermanentError(problem)
    return names
