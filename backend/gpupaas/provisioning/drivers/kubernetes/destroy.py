"""Destroying what a plan applied, and waiting until it is gone.

Deletes the plan's objects in reverse order (foreground propagation: dependents first), then
anything else labelled gpupaas.io/instance=<id> in the plan's namespaces (every namespaced kind
discovery lists that can be listed and deleted), then the plan's namespaces, and waits until all
of it is gone (a namespace may be Terminating for a while). A discovery group that does not
answer (a broken aggregated API such as metrics.k8s.io) does not stop the sweep: its kinds are
skipped, and named in the progress. 404 is fine: it is idempotent.
Requests ride out transient faults within the run's deadline (api.py).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from typing import Any

from gpupaas.provisioning.drivers.base import Progress
from gpupaas.provisioning.drivers.k8s_manifests.api import ApiResource, delete_request
from gpupaas.provisioning.drivers.k8s_manifests.errors import RetriesExhausted
from gpupaas.provisioning.drivers.kubernetes.api import KubeApi
from gpupaas.provisioning.drivers.kubernetes.items import Item, plan_items, read
from gpupaas.provisioning.plan import PermanentError, Plan
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
    namespaces = [item for item in items if item.kind == "Namespace"]
    others = [item for item in items if item.kind != "Namespace"]
    await report(f"Deleting {plural(len(items), 'object')}")
    for item in reversed(others):
        await _delete(api, item)
    # What the plan does not name: an older template's objects, what controllers made. Before
    # the namespace goes, so that the namespace's deletion has nothing of ours left to wait for.
    spaces = sorted({plan.namespace} | {item.namespace for item in others if item.namespace})
    leftovers = await _leftovers(api, plan, spaces, report, {item.resource.group_version for item in items})
    for item in leftovers:
        await _delete(api, item)
    for item in namespaces:
        await _delete(api, item)
    if namespaces:
        await report(f"Waiting for namespace {', '.join(item.name for item in namespaces)} to terminate")
    await _wait_gone(
        api,
        [*others, *leftovers, *namespaces],
        deadline,
        readiness_timeout=readiness_timeout,
        poll_interval=poll_interval,
    )


async def _delete(api: KubeApi, item: Item) -> None:
    try:
        await api.call(
            delete_request(item.resource, item.name, item.namespace),
            f"deleting {item.label}",
            missing_ok=True,
        )
    except PermanentError as error:
        # 409: already being deleted with other options, which is as good.
        if "HTTP 409" not in str(error):
            raise


async def _leftovers(
    api: KubeApi, plan: Plan, namespaces: Sequence[str], report: Progress, needed: set[str]
) -> list[Item]:
    """The objects labelled with the instance in its namespaces (every namespaced kind that can
    be listed and deleted), but those already being deleted. A group version whose discovery
    fails is skipped and reported, unless the plan's own kinds are in its group (`needed`)."""
    selector = f"{plan.owner_label}={plan.instance_id}"
    discovered = await api.sweepable_resources(needed)
    if discovered.skipped:
        await report("Could not look for leftovers of " + "; ".join(discovered.skipped))

    async def listed(resource: ApiResource, namespace: str) -> list[dict[str, Any]]:
        try:
            objects, _ = await api.list_objects(
                resource, namespace, selector, f"listing the {resource.plural} of {namespace}"
            )
        except RetriesExhausted:
            raise
        except PermanentError:  # not allowed to list this kind: nothing of ours can be there
            return []
        return objects

    # One list per kind and namespace: dozens on a real cluster, so side by side.
    pairs = [(r, ns) for r in discovered.resources for ns in namespaces]
    answers = await asyncio.gather(*(listed(r, ns) for r, ns in pairs))
    return [
        Item(
            {
                "apiVersion": resource.group_version,
                "kind": resource.kind,
                "metadata": {"name": obj["metadata"]["name"], "namespace": namespace},
            },
            resource,
        )
        for (resource, namespace), objects in zip(pairs, answers, strict=True)
        for obj in objects
        if not (obj.get("metadata") or {}).get("deletionTimestamp")
    ]


async def _wait_gone(
    api: KubeApi, items: Sequence[Item], deadline: float, *, readiness_timeout: float, poll_interval: float
) -> None:
    remaining_items = list(items)
    while True:
        objects = await read(api, remaining_items)
        left = [(item, obj) for item, obj in zip(remaining_items, objects, strict=True) if obj is not None]
        if not left:
            return
        remaining_items = [item for item, _ in left]
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise PermanentError(
                f"still there {readiness_timeout:g} s after it was deleted: "
                + "; ".join(_terminating(item.label, obj) for item, obj in left[:3])
            )
        await asyncio.sleep(min(poll_interval, remaining))


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
