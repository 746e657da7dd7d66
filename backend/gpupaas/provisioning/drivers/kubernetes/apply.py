"""Applying a plan to the cluster and waiting until it is ready.

First every object of the plan (items.py) is read: one that exists without the instance's owner
label (someone else's, another instance's) fails the run before anything is applied, since a
forced apply would take it over (owned.py). Then every object is applied in dependency order by
server-side apply (PATCH application/apply-patch+yaml, fieldManager, force=true): applying again
changes nothing, and a run that died half-way is finished by the next. The instance's objects that
the plan no longer has are pruned (prune.py). Then it waits, polling every `poll_interval`, until
namespaces are Active, claims Bound (or their storage class binds on first use), pods Ready,
Deployments/StatefulSets rolled out and LoadBalancer Services given an address, for at most
`readiness_timeout` seconds (on `clock`) from the start of the run; requests that ride out a
transient fault (api.py) do not move that deadline, and the timeout fails the run naming what it
waited for. A namespace still terminating from a destroy is a TemporaryError.

Readiness tells the truth (k8s_manifests/readiness.py, pods.py):
- A Deployment's or StatefulSet's status is believed only once `observedGeneration` has caught
  up with its generation; only the pods of its current revision are judged (the ReplicaSet of
  the Deployment's `deployment.kubernetes.io/revision`, the StatefulSet's `updateRevision`), so
  a re-apply that fixes an image is not failed by the old pod's ImagePullBackOff nor by the
  old generation's ProgressDeadlineExceeded.
- What usually passes by itself is waited for within its grace (`graces`), with the run's
  status message saying why ("Waiting for GPU nodes for pod jupyter-5d9c7-x2kq4: 0/4 nodes are
  available: 4 Insufficient nvidia.com/gpu. ..."), and fails the run after it, with the reason:
  a pod no node fits or pods the quota refuses (scale-up grace), a container the kubelet cannot
  pull or create (time), a crash loop (restarts). What waiting cannot cure (an invalid image
  name, a pod that failed and is not restarted, a failed Job, a webhook refusing the pods, the
  Deployment's own progress deadline) fails the run at once (PermanentError).

The outputs are rendered from the objects as the server holds them once all is ready: a
LoadBalancer Service's address (`objects.Service.status.loadBalancer.ingress.0.ip`, or
`.hostname`) is in them because the run waits for it. They are rendered within the run, not again
later through drift: a cloud load balancer keeps its address for the life of its Service, and a
Service made again (a new address) comes from a deploy, which renders the outputs again.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from gpupaas.provisioning.drivers.base import Applied, Progress
from gpupaas.provisioning.drivers.k8s_manifests.api import apply_request
from gpupaas.provisioning.drivers.k8s_manifests.pods import FirstSeen, Graces, counts, judge_pod
from gpupaas.provisioning.drivers.k8s_manifests.readiness import WAITED_KINDS, readiness
from gpupaas.provisioning.drivers.kubernetes.api import KubeApi
from gpupaas.provisioning.drivers.kubernetes.items import (
    POD_MAKERS,
    Item,
    binds_on_first_consumer,
    plan_items,
    read,
)
from gpupaas.provisioning.drivers.kubernetes.owned import check_ownership
from gpupaas.provisioning.drivers.kubernetes.pods import plan_pods
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
    graces: Graces | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Applied:
    """Applies the plan and waits until it is ready (see the module's docstring); the outputs
    rendered from the objects as the server holds them, and the objects applied."""
    deadline = clock() + readiness_timeout
    # The retries' deadline is the same moment on the monotonic clock they sleep by.
    with api.patient(time.monotonic() + readiness_timeout):
        return await _apply(
            api,
            plan,
            report,
            deadline,
            field_manager=field_manager,
            readiness_timeout=readiness_timeout,
            poll_interval=poll_interval,
            graces=graces,
            clock=clock,
        )


def _graces_for(plan: Plan, graces: Graces) -> Graces:
    """A service instance's run (`plan.within`: inside its compute instance's namespace) fails at
    once when the namespace's quota refuses its pods, with the API server's words: that quota is
    its compute instance's, and nothing frees it but its owners stopping another of its services,
    which a run left waiting in STARTING would not tell them."""
    return replace(graces, quota_seconds=0.0) if plan.within is not None else graces


async def _apply(
    api: KubeApi,
    plan: Plan,
    report: Progress,
    deadline: float,
    *,
    field_manager: str,
    readiness_timeout: float,
    poll_interval: float,
    graces: Graces | None,
    clock: Callable[[], float],
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
        api,
        plan,
        items,
        deadline,
        report,
        readiness_timeout=readiness_timeout,
        poll_interval=poll_interval,
        graces=_graces_for(plan, graces or Graces()),
        clock=clock,
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
    graces: Graces,
    clock: Callable[[], float],
) -> None:
    """Polls until every object the plan waits for is ready; fails on what waiting cannot cure,
    on a trouble past its grace, and when the deadline passes. The status message is what it
    waits for first: a pod's trouble (no node, no image, a crash) before the counts of its
    controller."""
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
    seen = FirstSeen(clock)
    last_message: str | None = None
    while True:
        waiting: list[str] = []
        failures: list[tuple[Item, str]] = []
        controllers: list[dict[str, Any]] = []
        for item, obj in zip(waited, await read(api, waited), strict=True):
            if obj is None:
                waiting.append(f"{item.label} to exist")
                continue
            if item.kind == "Namespace" and (obj.get("status") or {}).get("phase") == "Terminating":
                raise TemporaryError(
                    f"{item.label} is terminating (a destroy has not finished); try again when it is gone"
                )
            if item.kind in ("Deployment", "StatefulSet"):
                controllers.append(obj)
            first_consumer = False
            if item.kind == "PersistentVolumeClaim" and (obj.get("status") or {}).get("phase") != "Bound":
                first_consumer = await binds_on_first_consumer(api, obj, storage_classes)
            state = readiness(obj, wait_for_first_consumer=first_consumer, graces=graces, seen=seen)
            if state.failed:
                failures.append((item, state.message or f"{item.label} failed"))
            elif not state.ready:
                waiting.append(state.message or item.label)
        troubles: list[tuple[Mapping[str, Any], str]] = []
        if makes_pods:
            pods = await plan_pods(api, plan, namespaces, controllers)
            for pod in pods.current:
                failure, trouble = judge_pod(pod, graces, seen) if counts(pod) else (None, None)
                if failure is not None:
                    raise PermanentError(failure)
                if trouble is not None:
                    troubles.append((pod, trouble))
            if stopping and pods.all:
                waiting.append(f"pod {pods.all[0]['metadata']['name']} to terminate")
        seen.sweep()  # troubles that passed are forgotten: if they come back, with a whole grace
        if failures:
            item, failure = failures[0]
            # Its pods' troubles say why a Deployment gave up ("progress deadline exceeded").
            why = next((trouble for pod, trouble in troubles if _made_by(pod, item)), None)
            raise PermanentError(failure + (f" ({why})" if why else ""))
        waiting = list(dict.fromkeys([trouble for _, trouble in troubles] + waiting))
        if not waiting:
            return
        if waiting[0] != last_message:
            last_message = waiting[0]
            await report(f"Waiting for {last_message}")
        remaining = deadline - clock()
        if remaining <= 0:
            more = len(waiting) - 3
            raise PermanentError(
                f"not ready after {readiness_timeout:g} s: "
                + "; ".join(waiting[:3])
                + (f"; and {more} more" if more > 0 else "")
            )
        await asyncio.sleep(min(poll_interval, remaining))


def _made_by(pod: Mapping[str, Any], item: Item) -> bool:
    """Whether a pod is one of a Deployment's (through a ReplicaSet named <deployment>-<hash>) or a
    StatefulSet's."""
    metadata = pod.get("metadata") or {}
    if item.kind not in ("Deployment", "StatefulSet") or metadata.get("namespace") != item.namespace:
        return False
    owners = [o for o in metadata.get("ownerReferences") or [] if o.get("controller")]
    owner = str(owners[0].get("name") or "") if owners else ""
    kind = owners[0].get("kind") if owners else None
    if item.kind == "Deployment":
        return kind == "ReplicaSet" and owner.startswith(f"{item.name}-")
    return kind == "StatefulSet" and owner == item.name
