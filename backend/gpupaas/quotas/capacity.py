"""Capacity at a glance: per cluster and GPU model, the GPUs its nodes have (as its last check saw
them), those held by deployed compute instances (quotas.service: what counts as held), those free,
and who holds them.

Platform admins see every cluster and every holder. A project's members see the clusters their
project uses (the default one, those its profiles name, those its instances hold GPUs on) with
their totals, and of the holders only their own project's instances they may see; what others
hold is one number (`others`)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from gpupaas.accounts.models import Project, User
from gpupaas.accounts.service import project_by_name
from gpupaas.catalog.models import ComputeProfile
from gpupaas.clusters import service as clusters
from gpupaas.clusters.models import Cluster
from gpupaas.compute import owners
from gpupaas.core import gpu_resources
from gpupaas.core.actor import Actor
from gpupaas.core.errors import NotFound
from gpupaas.core.gpus import Vendor
from gpupaas.core.ids import parse_id
from gpupaas.provisioning.registry import ClusterDriver
from gpupaas.quotas.service import Holding, holdings


@dataclass
class Holder:
    project_name: str
    username: str | None
    instance_id: uuid.UUID
    instance_name: str
    gpus: int


@dataclass
class ModelCapacity:
    vendor: str
    model: str | None
    capacity: int
    allocated: int = 0
    holders: list[Holder] = field(default_factory=list)
    # GPUs held by instances the caller may not see.
    others: int = 0

    @property
    def free(self) -> int:
        return max(self.capacity - self.allocated, 0)


@dataclass
class ClusterCapacity:
    cluster: Cluster
    models: list[ModelCapacity]


def _on(holding: Holding, cluster: Cluster) -> bool:
    return holding.cluster_id == str(cluster.id) or (holding.cluster_id is None and cluster.is_default)


def _matches(cluster: Cluster, wanted: str | None, node_model: str | None) -> bool:
    """Whether an instance asking `wanted` runs on nodes of `node_model`, as the driver places it:
    exactly on Kubernetes, as part of the name (case aside) on the simulated cluster."""
    if wanted is None:
        return True
    if node_model is None:
        return False
    if cluster.driver == ClusterDriver.KUBERNETES:
        return wanted == node_model
    return wanted.lower() in node_model.lower()


def _ordered(keys: Iterable[tuple[str, str | None]]) -> list[tuple[str, str | None]]:
    return sorted(keys, key=lambda k: (k[0], k[1] or ""))


def _key(
    found: dict[tuple[str, str | None], ModelCapacity], cluster: Cluster, holding: Holding
) -> tuple[str, str | None]:
    """The (vendor, node model) whose GPUs the holding takes; its own when no node has them."""
    for key in _ordered(found):
        if key[0] == holding.vendor and _matches(cluster, holding.model, key[1]):
            return key
    return (holding.vendor, holding.model)


def _models(cluster: Cluster, held: Sequence[Holding]) -> dict[tuple[str, str | None], ModelCapacity]:
    vendors = {
        resource: vendor
        for vendor, resource in clusters.gpu_resource_names(cluster).items()
        if vendor != Vendor.CPU.value  # CPU names a GPU resource only to quota it at 0
    }
    found: dict[tuple[str, str | None], ModelCapacity] = {}
    for node in cluster.nodes:
        count = int(node.get("gpuCount") or 0)
        if count <= 0:
            continue
        resource = str(node.get("gpuResource") or "")
        vendor = vendors.get(resource) or gpu_resources.vendor_of(resource) or resource or "GPU"
        model = str(node.get("gpuModel") or "").strip() or None
        key = (vendor, model)
        found.setdefault(key, ModelCapacity(vendor=vendor, model=model, capacity=0)).capacity += count
    for holding in held:
        if holding.gpus <= 0 or not _on(holding, cluster):
            continue
        key = _key(found, cluster, holding)
        found.setdefault(
            key, ModelCapacity(vendor=key[0], model=key[1], capacity=0)
        ).allocated += holding.gpus
    return found


async def _names(held: Sequence[Holding]) -> tuple[dict[uuid.UUID, str], dict[uuid.UUID, str]]:
    projects = dict(await Project.filter(id__in=list({h.project_id for h in held})).values_list("id", "name"))
    users = dict(
        await User.filter(id__in=list({h.owner_id for h in held if h.owner_id})).values_list("id", "username")
    )
    return projects, users


async def capacity(
    actor: Actor, project: str | None, cluster_id: str | None, *, members_see_all: bool
) -> list[ClusterCapacity]:
    """GPUs per model of each cluster the caller may look at (see the module's docstring)."""
    actor.require_user()
    owner: Project | None = None
    if project is None:
        actor.require_platform_admin()
        chosen = await Cluster.all().order_by("-is_default", "name")
    else:
        owner = await project_by_name(actor, project)
        if owner is None or not actor.is_member_of(owner.id):
            raise NotFound(f'project "{project}" not found')
        chosen = await Cluster.all().order_by("-is_default", "name")
    if cluster_id is not None:
        cid = parse_id(cluster_id)
        chosen = [c for c in chosen if c.id == cid]
    held = [h for h in await holdings() if h.gpus > 0]
    if owner is not None:
        profile_clusters = {
            str(c)
            for c in await ComputeProfile.filter(project_id=owner.id).values_list("cluster_id", flat=True)
        }
        ours = {h.cluster_id for h in held if h.project_id == owner.id}
        chosen = [c for c in chosen if c.is_default or str(c.id) in profile_clusters or str(c.id) in ours]
    projects, users = await _names(held)
    result = []
    for cluster in chosen:
        models = _models(cluster, held)
        on_cluster = [h for h in held if _on(h, cluster)]
        for holding in on_cluster:
            entry = models[_key(models, cluster, holding)]
            visible = owner is None or (
                holding.project_id == owner.id
                and not owners.hidden_from(actor, holding.project_id, holding.owner_id, members_see_all)
            )
            if not visible:
                entry.others += holding.gpus
                continue
            assert holding.instance_id is not None
            entry.holders.append(
                Holder(
                    project_name=projects.get(holding.project_id, "?"),
                    username=users.get(holding.owner_id) if holding.owner_id else None,
                    instance_id=holding.instance_id,
                    instance_name=holding.instance_name,
                    gpus=holding.gpus,
                )
            )
        for entry in models.values():
            entry.holders.sort(key=lambda h: (h.project_name, h.instance_name))
        result.append(
            ClusterCapacity(
                cluster=cluster,
                models=[models[k] for k in _ordered(models)],
            )
        )
    return result


async def totals() -> list[tuple[Cluster, ModelCapacity]]:
    """Every cluster's GPUs per model, allocated and free, without holders (for /metrics, whose
    token is the operator's): two statements whatever the number of clusters."""
    held = [h for h in await holdings() if h.gpus > 0]
    result: list[tuple[Cluster, ModelCapacity]] = []
    for cluster in await Cluster.all().order_by("name"):
        models = _models(cluster, held)
        result.extend((cluster, models[k]) for k in _ordered(models))
    return result
