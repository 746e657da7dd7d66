"""GraphQL for clusters (thin: the rules are in clusters.service). Kubeconfigs go in, never out."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime

import strawberry
from strawberry.dataloader import DataLoader

from gpupaas.clusters import service
from gpupaas.clusters.models import Cluster, ClusterStatus
from gpupaas.core import gpu_resources
from gpupaas.core.gpus import Vendor
from gpupaas.graphql.common import DeletePayload, UserError, attempt, delete_payload
from gpupaas.graphql.context import Info
from gpupaas.graphql.loaders import by_id
from gpupaas.provisioning.registry import ClusterDriver
from gpupaas.provisioning.render.policy import TemplatePolicy

ClusterDriverEnum = strawberry.enum(ClusterDriver, name="ClusterDriver")
TemplatePolicyEnum = strawberry.enum(
    TemplatePolicy,
    name="TemplatePolicy",
    description=(
        "What a cluster lets environment templates do. CONFINED: every template keeps to the tenant "
        "confinement (namespaced objects of the allowed kinds in the instance's namespace, no cluster "
        "roles, nothing privileged in pods). TRUST_PLATFORM_TEMPLATES: templates of platform admins "
        "(built-in and global) may go beyond it; a project's own templates are still confined."
    ),
)


def clusters_by_id() -> DataLoader[uuid.UUID, Cluster | None]:
    return by_id(Cluster)


def default_cluster() -> DataLoader[bool, Cluster | None]:
    """The default cluster (the key is ignored: one query however many ask)."""

    async def load(keys: Sequence[bool]) -> list[Cluster | None]:
        found = await service.default_cluster()
        return [found for _ in keys]

    return DataLoader(load_fn=load)


async def cluster_of(info: Info, cluster_id: str | uuid.UUID | None) -> Cluster | None:
    """A snapshot's cluster, or the default one when it names none."""
    if cluster_id:
        return await info.context.loaders.get(clusters_by_id).load(uuid.UUID(str(cluster_id)))
    return await info.context.loaders.get(default_cluster).load(True)


ClusterStatusEnum = strawberry.enum(ClusterStatus, name="ClusterStatus")


@strawberry.type
class GpuResourceName:
    vendor: Vendor
    resource_name: str


@strawberry.type(description="A GPU resource that the cluster's nodes of one GPU model advertise.")
class ClusterGpuResource:
    resource_name: str = strawberry.field(
        description="nvidia.com/gpu, huawei.com/Ascend310P, nvidia.com/mig-1g.10gb"
    )
    vendor: Vendor | None = strawberry.field(
        description="Null: a resource of a vendor gpupaas does not know."
    )
    gpu_model: str | None = strawberry.field(
        description="The nodes' GPU model label; null: nodes without one."
    )
    partition: bool = strawberry.field(description="A partition of a GPU (a MIG profile), not whole GPUs.")
    count: int = strawberry.field(description="Devices over the ready nodes that advertise it (allocatable).")
    nodes: int = strawberry.field(description="How many ready nodes advertise it.")


@strawberry.type(description="A GPU partition a service may ask for (gpuPartition) on this cluster.")
class GpuPartition:
    resource_name: str = strawberry.field(
        description='The MIG profile\'s resource: "nvidia.com/mig-1g.10gb".'
    )
    profile: str = strawberry.field(description='As nvidia-smi names it: "1g.10gb".')
    gpu_model: str | None = strawberry.field(description="The GPU model of the nodes that advertise it.")


@strawberry.input
class GpuResourceNameInput:
    vendor: Vendor
    resource_name: str


@strawberry.type(description="The node label that holds the GPU model of a vendor's nodes.")
class GpuModelLabel:
    vendor: Vendor
    label: str = strawberry.field(description="Empty: the vendor's profiles get no GPU model placement.")


@strawberry.input
class GpuModelLabelInput:
    vendor: Vendor
    label: str = strawberry.field(description="Empty: no GPU model placement for the vendor's profiles.")


@strawberry.type(description="A node as the last check saw it.")
class ClusterNode:
    name: str
    cpu: str | None
    memory: str | None
    gpu_resource: str | None
    gpu_count: int
    gpu_model: str | None


@strawberry.type(
    name="Cluster",
    description="Platform admins see every field. Everyone else sees a cluster only as where an "
    "instance or profile they see runs, and project admins every cluster (to choose one for a "
    "profile): its id, name, display name and GPU models; any other field is FORBIDDEN to them.",
)
class ClusterType:
    id: strawberry.ID
    name: str
    display_name: str
    _model: strawberry.Private[Cluster]

    def _details(self, info: Info) -> Cluster:
        """The cluster, for a field only platform admins see (Forbidden for anyone else)."""
        return service.details_of(info.context.actor, self._model, info.field_name)

    @strawberry.field(description="The GPU models of its nodes, as its last check saw them.")
    def gpu_models(self) -> list[str]:
        return service.gpu_models(self._model)

    @strawberry.field(
        description="The GPU partitions its nodes advertise, per GPU model, as its last check saw them "
        "(what a service's gpuPartition may name)."
    )
    def gpu_partitions(self) -> list[GpuPartition]:
        return [
            GpuPartition(resource_name=found.resource, profile=profile, gpu_model=found.model)
            for found, profile in service.gpu_partitions(self._model)
        ]

    @strawberry.field(
        description="Every GPU resource its ready nodes advertise per GPU model, whole GPUs and "
        "partitions, with how many (its last check)."
    )
    def gpu_resources(self, info: Info) -> list[ClusterGpuResource]:
        return [
            ClusterGpuResource(
                resource_name=found.resource,
                vendor=Vendor(found.vendor) if found.vendor else None,
                gpu_model=found.model,
                partition=found.partition,
                count=found.count,
                nodes=found.nodes,
            )
            for found in gpu_resources.advertised(self._details(info).nodes)
        ]

    @strawberry.field
    def driver(self, info: Info) -> ClusterDriver:
        return self._details(info).driver

    @strawberry.field
    def is_default(self, info: Info) -> bool:
        return self._details(info).is_default

    @strawberry.field
    def in_cluster(self, info: Info) -> bool:
        return self._details(info).in_cluster

    @strawberry.field(description="A kubeconfig is stored (encrypted); it is never returned.")
    def has_kubeconfig(self, info: Info) -> bool:
        return self._details(info).kubeconfig_encrypted is not None

    @strawberry.field(description="The host users reach services on (connect links).")
    def access_address(self, info: Info) -> str | None:
        return self._details(info).access_address

    @strawberry.field
    def gpu_resource_names(self, info: Info) -> list[GpuResourceName]:
        return [
            GpuResourceName(vendor=Vendor(vendor), resource_name=name)
            for vendor, name in service.gpu_resource_names(self._details(info)).items()
            if vendor != Vendor.CPU.value
        ]

    @strawberry.field
    def template_policy(self, info: Info) -> TemplatePolicy:
        return self._details(info).template_policy

    @strawberry.field(
        description="Where the driver reads a node's GPU model; a profile's pods require its model there."
    )
    def gpu_model_labels(self, info: Info) -> list[GpuModelLabel]:
        return [
            GpuModelLabel(vendor=Vendor(vendor), label=label)
            for vendor, label in sorted(service.gpu_model_labels(self._details(info)).items())
        ]

    @strawberry.field(description="key=value: DEDICATED profiles' pods require it, SHARED ones' its absence.")
    def dedicated_node_label(self, info: Info) -> str | None:
        return self._details(info).dedicated_node_label

    @strawberry.field(
        description="key=value:Effect: the dedicated nodes' taint, which DEDICATED profiles' pods tolerate."
    )
    def dedicated_node_taint(self, info: Info) -> str | None:
        return self._details(info).dedicated_node_taint

    @strawberry.field
    def status(self, info: Info) -> ClusterStatus:
        return self._details(info).status

    @strawberry.field
    def status_message(self, info: Info) -> str | None:
        return self._details(info).status_message

    @strawberry.field
    def server_version(self, info: Info) -> str | None:
        return self._details(info).server_version

    @strawberry.field
    def nodes(self, info: Info) -> list[ClusterNode]:
        return [
            ClusterNode(
                name=str(node.get("name")),
                cpu=node.get("cpu"),
                memory=node.get("memory"),
                gpu_resource=node.get("gpuResource"),
                gpu_count=int(node.get("gpuCount") or 0),
                gpu_model=node.get("gpuModel"),
            )
            for node in self._details(info).nodes
        ]

    @strawberry.field(
        description="GPU models of the profiles deploying here that the last check found on no node."
    )
    def missing_gpu_models(self, info: Info) -> list[str]:
        return list(self._details(info).missing_gpu_models or [])

    @strawberry.field
    def checked_at(self, info: Info) -> datetime | None:
        return self._details(info).checked_at

    @strawberry.field
    def created_at(self, info: Info) -> datetime:
        return self._details(info).created_at

    @strawberry.field
    def updated_at(self, info: Info) -> datetime:
        return self._details(info).updated_at

    @classmethod
    def of(cls, cluster: Cluster) -> ClusterType:
        return cls(
            id=strawberry.ID(str(cluster.id)),
            name=cluster.name,
            display_name=cluster.display_name,
            _model=cluster,
        )


@strawberry.input(description="A kubeconfig (the output of `kubectl config view --raw`) is stored encrypted.")
class CreateClusterInput:
    name: str
    driver: ClusterDriver
    display_name: str | None = None
    kubeconfig: str | None = None
    in_cluster: bool | None = None
    context: str | None = None
    access_address: str | None = None
    gpu_resource_names: list[GpuResourceNameInput] | None = None
    is_default: bool | None = None
    template_policy: TemplatePolicy | None = None
    gpu_model_labels: list[GpuModelLabelInput] | None = None
    dedicated_node_label: str | None = None
    dedicated_node_taint: str | None = None


@strawberry.input(description="`kubeconfig`: a new one replaces the stored one; an empty string removes it.")
class UpdateClusterInput:
    id: strawberry.ID
    name: str | None = None
    driver: ClusterDriver | None = None
    display_name: str | None = None
    kubeconfig: str | None = None
    in_cluster: bool | None = None
    context: str | None = None
    access_address: str | None = None
    gpu_resource_names: list[GpuResourceNameInput] | None = None
    is_default: bool | None = None
    template_policy: TemplatePolicy | None = None
    gpu_model_labels: list[GpuModelLabelInput] | None = None
    dedicated_node_label: str | None = strawberry.field(
        default=None, description="An empty string removes it."
    )
    dedicated_node_taint: str | None = strawberry.field(
        default=None, description="An empty string removes it."
    )


@strawberry.type
class ClusterPayload:
    cluster: ClusterType | None
    user_errors: list[UserError]


def _cluster_in(data: CreateClusterInput | UpdateClusterInput) -> service.ClusterIn:
    return service.ClusterIn(
        name=data.name,
        display_name=data.display_name,
        driver=data.driver,
        kubeconfig=data.kubeconfig,
        in_cluster=data.in_cluster,
        context=data.context,
        access_address=data.access_address,
        gpu_resource_names=None
        if data.gpu_resource_names is None
        else [(g.vendor.value, g.resource_name) for g in data.gpu_resource_names],
        is_default=data.is_default,
        template_policy=data.template_policy,
        gpu_model_labels=None
        if data.gpu_model_labels is None
        else [(g.vendor.value, g.label) for g in data.gpu_model_labels],
        dedicated_node_label=data.dedicated_node_label,
        dedicated_node_taint=data.dedicated_node_taint,
    )


def _payload(cluster: Cluster | None, errors: list[UserError]) -> ClusterPayload:
    return ClusterPayload(cluster=ClusterType.of(cluster) if cluster else None, user_errors=errors)


@strawberry.type
class ClustersQuery:
    @strawberry.field(
        description="Every registered cluster, the default first: for platform admins, and for "
        "project admins to choose one for a profile (they see its name, display name and GPU models)."
    )
    async def clusters(self, info: Info) -> list[ClusterType]:
        return [ClusterType.of(c) for c in await service.list_clusters(info.context.actor)]

    @strawberry.field
    async def cluster(self, info: Info, id: strawberry.ID) -> ClusterType | None:
        cluster = await service.get_cluster(info.context.actor, id)
        return ClusterType.of(cluster) if cluster else None


@strawberry.type
class ClustersMutation:
    @strawberry.mutation(description="Platform admins: register a cluster; it is checked at once.")
    async def create_cluster(self, info: Info, input: CreateClusterInput) -> ClusterPayload:
        context = info.context
        return _payload(
            *await attempt(
                service.create_cluster(
                    context.actor,
                    _cluster_in(input),
                    secret_key=context.settings.secret_key,
                    checker=context.drivers,
                )
            )
        )

    @strawberry.mutation
    async def update_cluster(self, info: Info, input: UpdateClusterInput) -> ClusterPayload:
        context = info.context
        return _payload(
            *await attempt(
                service.update_cluster(
                    context.actor,
                    input.id,
                    _cluster_in(input),
                    secret_key=context.settings.secret_key,
                    checker=context.drivers,
                )
            )
        )

    @strawberry.mutation(description="Checks again: reachable, version, nodes and their GPUs.")
    async def check_cluster(self, info: Info, id: strawberry.ID) -> ClusterPayload:
        return _payload(
            *await attempt(service.check_cluster(info.context.actor, id, checker=info.context.drivers))
        )

    @strawberry.mutation
    async def delete_cluster(self, info: Info, id: strawberry.ID) -> DeletePayload:
        return await delete_payload(service.delete_cluster(info.context.actor, id))
