"""What an instance owns on the cluster: checking before an apply that nothing of the plan belongs to
someone else, finding the objects labelled with the instance, and deleting exactly those
(k8s_manifests/ownership.py says whose an object is).

Deletes name the uid of the object that was read (a DeleteOptions precondition): an object that
someone made since under the same name is answered 409 Conflict and stays.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gpupaas.provisioning.drivers.k8s_manifests.api import ApiResource, delete_request
from gpupaas.provisioning.drivers.k8s_manifests.errors import RetriesExhausted
from gpupaas.provisioning.drivers.k8s_manifests.objects import metadata_of
from gpupaas.provisioning.drivers.k8s_manifests.ownership import ownership_problem, refusal
from gpupaas.provisioning.drivers.kubernetes.api import KubeApi
from gpupaas.provisioning.drivers.kubernetes.items import Item, read
from gpupaas.provisioning.plan import PermanentError, Plan

__all__ = ["Found", "Owned", "check_ownership", "delete_found", "find_owned", "found_on_server", "uid_of"]


@dataclass(frozen=True)
class Found:
    """An object as the server holds it, with the `Item` to delete it by."""

    item: Item
    obj: dict[str, Any]

    @property
    def uid(self) -> str | None:
        return uid_of(self.obj)


@dataclass(frozen=True)
class Owned:
    """The objects labelled with an instance, and the group versions that could not be looked at
    (their discovery failed), with why."""

    found: tuple[Found, ...]
    skipped: tuple[str, ...] = ()


def uid_of(obj: dict[str, Any] | None) -> str | None:
    uid = metadata_of(obj or {}).get("uid")
    return str(uid) if uid else None


async def found_on_server(api: KubeApi, items: Sequence[Item]) -> list[Found]:
    """The items that exist, as the server holds them (read side by side)."""
    return [
        Found(item, obj) for item, obj in zip(items, await read(api, items), strict=True) if obj is not None
    ]


async def check_ownership(api: KubeApi, plan: Plan, items: Sequence[Item]) -> None:
    """Raises PermanentError when an object of the plan exists and does not carry the instance's
    owner label: a forced server-side apply would take it over ("namespace team-a exists and is
    not managed by gpupaas"). Every object is read first, side by side, so that all are named.
    An object made between this read and the apply is not seen: the window is one request long."""
    problems = [
        problem
        for found in await found_on_server(api, items)
        if (problem := ownership_problem(found.obj, plan.instance_id, plan.owner_label)) is not None
    ]
    if problems:
        raise PermanentError(refusal(problems))


async def find_owned(
    api: KubeApi,
    plan: Plan,
    namespaces: Iterable[str],
    *,
    cluster_resources: Iterable[ApiResource] = (),
    needed: Iterable[str] = (),
) -> Owned:
    """Every object labelled with the instance (`plan.owner_label`) but those already being deleted:
    of each namespaced kind discovery lists that can be listed and deleted, in `namespaces`, and of
    `cluster_resources` across the cluster. A kind the driver may not list is skipped (nothing of
    the instance can be there); a group version whose discovery fails is skipped and named in
    `skipped`, unless it is one of the `needed` group versions (then it fails the call)."""
    selector = f"{plan.owner_label}={plan.instance_id}"
    discovered = await api.sweepable_resources(needed)

    async def listed(resource: ApiResource, namespace: str | None) -> list[dict[str, Any]]:
        where = f" of {namespace}" if namespace else ""
        try:
            objects, _ = await api.list_objects(
                resource, namespace, selector, f"listing the {resource.plural}{where}"
            )
        except RetriesExhausted:
            raise
        except PermanentError:  # not allowed to list this kind: nothing of ours can be there
            return []
        return objects

    # One list per kind and namespace: dozens on a real cluster, so side by side.
    pairs: list[tuple[ApiResource, str | None]] = [
        (resource, namespace) for resource in discovered.resources for namespace in sorted(set(namespaces))
    ]
    pairs += [(resource, None) for resource in {r.path(): r for r in cluster_resources}.values()]
    answers = await asyncio.gather(*(listed(resource, namespace) for resource, namespace in pairs))
    found = [
        Found(
            Item(
                {
                    "apiVersion": resource.group_version,
                    "kind": resource.kind,
                    "metadata": {
                        "name": obj["metadata"]["name"],
                        **({"namespace": namespace} if namespace else {}),
                    },
                },
                resource,
            ),
            obj,
        )
        for (resource, namespace), objects in zip(pairs, answers, strict=True)
        for obj in objects
        if not (obj.get("metadata") or {}).get("deletionTimestamp")
    ]
    return Owned(tuple(found), discovered.skipped)


async def delete_found(api: KubeApi, found: Found) -> None:
    """Deletes the object that was read (its uid); gone already (404) or answered 409 (being deleted
    with other options, or replaced by someone else's since) is as good."""
    try:
        await api.call(
            delete_request(found.item.resource, found.item.name, found.item.namespace, uid=found.uid),
            f"deleting {found.item.label}",
            missing_ok=True,
        )
    except PermanentError as error:
        if "HTTP 409" not in str(error):
            raise
