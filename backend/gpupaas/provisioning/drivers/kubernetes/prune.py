"""Pruning: on a deploy, deleting the instance's objects that the plan no longer has (an object that
a newer version of its template no longer renders), as kubectl's applyset does: by label, after
the new objects are applied, so that what is replaced never goes before its successor is there.

Which kinds are looked at: every namespaced kind that discovery lists (and that can be listed and
deleted) in the plan's namespaces, plus the Namespaces and the plan's own cluster-scoped kinds
across the cluster, each listed by the owner label (`Plan.owner_label=<instance id>`); the same
sweep that destroy makes. Why not a record of what was applied (applyset's contains-group-kinds
annotation on a parent object, or the last run's `applied` list): the tenant policy keeps an
instance's objects inside its own namespaces, where listing every kind finds all of them, and a
record can miss things the sweep cannot: a run that died after applying and before recording, an
object applied by an older gpupaas, a GPU service instance that has no parent object of its own
(it lives in its compute instance's namespace). The cost is one label-selected list per kind
(dozens, side by side; discovery is cached for five minutes). Not covered: a cluster-scoped kind
that only an earlier version of the template had (only a platform policy allows those at all).

Only what the driver applied itself is pruned (its field manager's Apply entry in managedFields):
the pods, ReplicaSets and volume claims that controllers made from the instance's templates carry
its labels too, and go with what made them. A namespace that holds any of the plan's objects
stays. A group version whose discovery fails is skipped (named in the progress) and looked at again
by the next deploy.
"""

from __future__ import annotations

from collections.abc import Sequence

from gpupaas.provisioning.drivers.base import Progress
from gpupaas.provisioning.drivers.k8s_manifests.objects import kind_rank, object_key
from gpupaas.provisioning.drivers.k8s_manifests.ownership import applied_by, located
from gpupaas.provisioning.drivers.kubernetes.api import NAMESPACES, KubeApi
from gpupaas.provisioning.drivers.kubernetes.items import Item
from gpupaas.provisioning.drivers.kubernetes.owned import delete_found, find_owned
from gpupaas.provisioning.plan import Plan
from gpupaas.provisioning.wording import plural

__all__ = ["prune"]

_NAMED = 5


async def prune(
    api: KubeApi, plan: Plan, items: Sequence[Item], report: Progress, *, field_manager: str
) -> None:
    """Deletes the objects labelled with the instance and applied by `field_manager` that `items`
    (the plan's objects, just applied) no longer have; see the module's docstring."""
    wanted = {object_key(item.manifest) for item in items}
    namespaces = {plan.namespace} | {item.namespace for item in items if item.namespace}
    owned = await find_owned(
        api,
        plan,
        namespaces,
        cluster_resources=[NAMESPACES, *(item.resource for item in items if not item.resource.namespaced)],
        needed={item.resource.group_version for item in items},
    )
    if owned.skipped:
        await report(
            "Could not look for objects the template no longer has among " + "; ".join(owned.skipped)
        )
    stale = [
        found
        for found in owned.found
        if object_key(found.item.manifest) not in wanted
        and applied_by(found.obj, field_manager)
        and not (found.item.kind == "Namespace" and found.item.name in namespaces)
    ]
    if not stale:
        return
    # Dependents first, namespaces last: the reverse of the order objects are applied in.
    stale.sort(key=lambda found: kind_rank(found.item.kind), reverse=True)
    names = ", ".join(located(found.obj) for found in stale[:_NAMED])
    more = f" and {len(stale) - _NAMED} more" if len(stale) > _NAMED else ""
    await report(f"Deleting {plural(len(stale), 'object')} the template no longer has: {names}{more}")
    for found in stale:
        await delete_found(api, found)
