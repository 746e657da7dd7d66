"""Destroying what a plan applied, and waiting until it is gone.

Deletes only what carries the instance's owner label: the plan's objects are read first, and one
that exists without the label (a namespace someone made beforehand, another instance's object) is
left alone and named in the progress. Then, in reverse order (foreground propagation: dependents
first), the plan's objects; anything else labelled with the instance in the plan's namespaces
(every namespaced kind discovery lists that can be listed and deleted) and the namespaces labelled
with it; then the plan's namespaces; and waits until all of it is gone (a namespace may be
Terminating for a while). Each delete names the uid that was read, so that an object made since
under the same name is not deleted. A discovery group that does not answer (a broken aggregated
API) does not stop the sweep: its kinds are skipped, and named in the progress. 404 is fine: it is
idempotent. Requests ride out transient faults within the run's deadline (api.py).

An object whose manifest in the plan carries `gpupaas.io/reclaim: Keep` (a service's workspace
claim with reclaim KEEP, service_instances/podspec.py) is not deleted: its owner label is taken off
(a JSON merge patch) and `gpupaas.io/kept-from` names the instance it was kept from, so that it
stays in the namespace for others to mount and no later sweep finds it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import Any

from gpupaas.provisioning.drivers.base import Progress
from gpupaas.provisioning.drivers.k8s_manifests.api import release_request
from gpupaas.provisioning.drivers.k8s_manifests.objects import metadata_of
from gpupaas.provisioning.drivers.k8s_manifests.ownership import located, owned_by
from gpupaas.provisioning.drivers.kubernetes.api import NAMESPACES, KubeApi
from gpupaas.provisioning.drivers.kubernetes.items import plan_items, read
from gpupaas.provisioning.drivers.kubernetes.owned import (
    Found,
    delete_found,
    find_owned,
    found_on_server,
    uid_of,
)
from gpupaas.provisioning.plan import (
    KEPT_FROM_ANNOTATION,
    RECLAIM_ANNOTATION,
    RECLAIM_KEEP,
    PermanentError,
    Plan,
)
from gpupaas.provisioning.wording import plural

__all__ = ["destroy_plan"]


async def destroy_plan(
    api: KubeApi, plan: Plan, report: Progress, *, readiness_timeout: float, poll_interval: float
) -> None:
    """Deletes what the plan applied and what else is labelled with its instance, and waits until
    all of it is gone (see the module's docstring)."""
    deadline = time.monotonic() + readiness_timeout
    with api.patient(deadline):
        await _destroy(
            api, plan, report, deadline, readiness_timeout=readiness_timeout, poll_interval=poll_interval
        )


async def _destroy(
    api: KubeApi,
    plan: Plan,
    report: Progress,
    deadline: float,
    *,
    readiness_timeout: float,
    poll_interval: float,
) -> None:
    items = await plan_items(api, plan, strict=False)
    existing = await found_on_server(api, items)
    foreign = [found for found in existing if not owned_by(found.obj, plan.instance_id, plan.owner_label)]
    ours = [found for found in existing if owned_by(found.obj, plan.instance_id, plan.owner_label)]
    if foreign:
        await report(
            "Leaving alone what gpupaas did not create for this instance: "
            + "; ".join(located(found.obj) for found in foreign)
        )
    kept = [found for found in ours if _kept(found)]
    for found in kept:
        await _release(api, plan, found)
    if kept:
        await report("Keeping " + "; ".join(located(found.obj) for found in kept) + " (reclaim Keep)")
    ours = [found for found in ours if not _kept(found)]
    namespaces = [found for found in ours if found.item.kind == "Namespace"]
    others = [found for found in ours if found.item.kind != "Namespace"]
    await report(f"Deleting {plural(len(ours), 'object')}")
    for found in reversed(others):
        await delete_found(api, found)
    # What the plan does not name: an older template's objects, what controllers made. Before
    # the namespace goes, so that the namespace's deletion has nothing of ours left to wait for.
    spaces = {plan.namespace} | {item.namespace for item in items if item.namespace}
    owned = await find_owned(
        api,
        plan,
        spaces,
        cluster_resources=[NAMESPACES],
        needed={item.resource.group_version for item in items},
    )
    if owned.skipped:
        await report("Could not look for leftovers of " + "; ".join(owned.skipped))
    named = {(found.item.resource.path(found.item.name, found.item.namespace)) for found in ours}
    leftovers = [
        found
        for found in owned.found
        if found.item.resource.path(found.item.name, found.item.namespace) not in named
    ]
    for found in sorted(leftovers, key=lambda found: found.item.kind == "Namespace"):
        await delete_found(api, found)
    for found in namespaces:
        await delete_found(api, found)
    gone_namespaces = [found for found in [*namespaces, *leftovers] if found.item.kind == "Namespace"]
    if gone_namespaces:
        await report(
            f"Waiting for namespace {', '.join(found.item.name for found in gone_namespaces)} to terminate"
        )
    await _wait_gone(
        api,
        [*others, *leftovers, *namespaces],
        deadline,
        readiness_timeout=readiness_timeout,
        poll_interval=poll_interval,
    )


def _kept(found: Found) -> bool:
    """Whether the plan keeps the object on a delete (its manifest's reclaim annotation)."""
    annotations = metadata_of(found.item.manifest).get("annotations")
    return isinstance(annotations, Mapping) and annotations.get(RECLAIM_ANNOTATION) == RECLAIM_KEEP


async def _release(api: KubeApi, plan: Plan, found: Found) -> None:
    """Takes the instance's owner label off a kept object (the sweep goes by it), and says whose it was."""
    name = (
        metadata_of(found.item.manifest).get("labels", {}).get("app.kubernetes.io/name") or plan.instance_name
    )
    await api.call(
        release_request(
            found.item.resource,
            found.item.name,
            found.item.namespace,
            labels=[plan.owner_label],
            annotations={RECLAIM_ANNOTATION: None, KEPT_FROM_ANNOTATION: str(name)},
        ),
        f"keeping {found.item.label}",
    )


async def _wait_gone(
    api: KubeApi, deleted: Sequence[Found], deadline: float, *, readiness_timeout: float, poll_interval: float
) -> None:
    """Until every deleted object is gone: not there, or there under another uid (made since)."""
    remaining = list(deleted)
    while True:
        objects = await read(api, [found.item for found in remaining])
        left = [
            (found, obj)
            for found, obj in zip(remaining, objects, strict=True)
            if obj is not None and uid_of(obj) == found.uid
        ]
        if not left:
            return
        remaining = [found for found, _ in left]
        time_left = deadline - time.monotonic()
        if time_left <= 0:
            raise PermanentError(
                f"still there {readiness_timeout:g} s after it was deleted: "
                + "; ".join(_terminating(found.item.label, obj) for found, obj in left[:3])
            )
        await asyncio.sleep(min(poll_interval, time_left))


def _terminating(label: str, obj: Mapping[str, Any]) -> str:
    """What holds an object that was deleted: a namespace's conditions say what is left in it."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    details = [
        str(c.get("message"))
        for c in conditions
        if isinstance(c, dict) and c.get("status") == "True" and c.get("message")
    ]
    finalizers = (obj.get("metadata") or {}).get("finalizers") or []
    if not details and finalizers:
        details.append("finalizers: " + ", ".join(str(f) for f in finalizers))
    return label + (f" ({'; '.join(details)})" if details else "")
