"""GraphQL for quotas and capacity (thin: the rules are in quotas.service and quotas.capacity)."""

from __future__ import annotations

import strawberry

from gpupaas.core.gpus import Vendor
from gpupaas.graphql.common import UserError, attempt
from gpupaas.graphql.context import Info
from gpupaas.quotas import capacity as capacities
from gpupaas.quotas import service


@strawberry.type(description="A limit of GPUs of a vendor (model null: every model) or of a vendor's model.")
class GpuLimit:
    vendor: Vendor
    model: str | None
    count: int


@strawberry.type(description="A quota's limits; a null one is not limited.")
class QuotaLimits:
    gpus: int | None = strawberry.field(description="GPUs of every vendor and model together.")
    gpu_limits: list[GpuLimit]
    cpu: str | None = strawberry.field(description='CPU, a Kubernetes quantity ("32", "500m").')
    memory: str | None = strawberry.field(description='Memory, a Kubernetes quantity ("256Gi").')
    instances: int | None = strawberry.field(description="Deployed compute instances.")

    @classmethod
    def of(cls, limits: service.Limits) -> QuotaLimits:
        return cls(
            gpus=limits.gpus,
            gpu_limits=[
                GpuLimit(vendor=Vendor(g.vendor), model=g.model, count=g.count) for g in limits.gpu_limits
            ],
            cpu=limits.cpu,
            memory=limits.memory,
            instances=limits.instances,
        )


@strawberry.type(description="One dimension of a quota: what is used of it and its limit.")
class QuotaUsage:
    key: str = strawberry.field(
        description='"gpus", "gpus:<vendor>:<model>" (model empty: every model), "cpu", "memory", '
        '"instances".'
    )
    label: str
    used: float = strawberry.field(description="CPU in cores, memory in bytes, the rest in units.")
    limit: float | None = strawberry.field(description="Null: not limited.")
    used_shown: str = strawberry.field(description='As a person reads it ("48Gi", "12").')
    limit_shown: str | None

    @classmethod
    def of(cls, line: service.Line) -> QuotaUsage:
        return cls(
            key=line.key,
            label=line.label,
            used=float(line.used),
            limit=None if line.limit is None else float(line.limit),
            used_shown=line.shown(line.used),
            limit_shown=None if line.limit is None else line.shown(line.limit),
        )


def _usage(lines: list[service.Line]) -> list[QuotaUsage]:
    return [QuotaUsage.of(line) for line in lines]


@strawberry.type
class MemberQuota:
    username: str
    quota: QuotaLimits | None = strawberry.field(description="Null: the member has no quota of their own.")
    usage: list[QuotaUsage]


@strawberry.type(
    description="A project's quota and usage (what its deployed compute instances hold), and its "
    "members' (a MEMBER sees only their own; the project's admins every member's)."
)
class ProjectQuota:
    project: str
    quota: QuotaLimits | None = strawberry.field(description="Null: the project has no quota.")
    usage: list[QuotaUsage]
    members: list[MemberQuota]

    @classmethod
    def of(cls, found: service.ProjectUsage) -> ProjectQuota:
        return cls(
            project=found.project.name,
            quota=QuotaLimits.of(found.limits) if found.has_quota else None,
            usage=_usage(found.lines),
            members=[
                MemberQuota(
                    username=m.username,
                    quota=QuotaLimits.of(m.limits) if m.has_quota else None,
                    usage=_usage(m.lines),
                )
                for m in found.members
            ],
        )


@strawberry.input
class GpuLimitInput:
    vendor: Vendor
    model: str | None = strawberry.field(default=None, description="Empty: every model of the vendor.")
    count: int = 0


@strawberry.input(
    description="Sets a quota whole (a dimension left out or null is not limited). Without username: "
    "the project's (platform admins); with one: that member's within the project (the project's "
    "admins), never beyond the project's."
)
class SetQuotaInput:
    project: str
    username: str | None = None
    gpus: int | None = None
    gpu_limits: list[GpuLimitInput] | None = None
    cpu: str | None = None
    memory: str | None = None
    instances: int | None = None


@strawberry.type
class QuotaPayload:
    quota: ProjectQuota | None
    user_errors: list[UserError]


def _payload(found: service.ProjectUsage | None, errors: list[UserError]) -> QuotaPayload:
    return QuotaPayload(quota=ProjectQuota.of(found) if found else None, user_errors=errors)


@strawberry.type
class GpuHolder:
    project: str
    owner: str | None
    instance_id: strawberry.ID
    instance_name: str
    gpus: int


@strawberry.type(description="GPUs of one model on a cluster.")
class GpuModelCapacity:
    vendor: str
    model: str | None
    capacity: int = strawberry.field(description="What the cluster's nodes have, as its last check saw them.")
    allocated: int = strawberry.field(description="Held by deployed compute instances.")
    free: int
    holders: list[GpuHolder] = strawberry.field(description="Those the caller may see.")
    others: int = strawberry.field(description="GPUs held by instances the caller may not see.")


@strawberry.type
class ClusterCapacity:
    cluster_id: strawberry.ID
    cluster_name: str
    display_name: str
    models: list[GpuModelCapacity]

    @classmethod
    def of(cls, found: capacities.ClusterCapacity) -> ClusterCapacity:
        return cls(
            cluster_id=strawberry.ID(str(found.cluster.id)),
            cluster_name=found.cluster.name,
            display_name=found.cluster.display_name,
            models=[
                GpuModelCapacity(
                    vendor=m.vendor,
                    model=m.model,
                    capacity=m.capacity,
                    allocated=m.allocated,
                    free=m.free,
                    others=m.others,
                    holders=[
                        GpuHolder(
                            project=h.project_name,
                            owner=h.username,
                            instance_id=strawberry.ID(str(h.instance_id)),
                            instance_name=h.instance_name,
                            gpus=h.gpus,
                        )
                        for h in m.holders
                    ],
                )
                for m in found.models
            ],
        )


@strawberry.type
class QuotasQuery:
    @strawberry.field(description="The project's quota and usage: for its members.")
    async def project_quota(self, info: Info, project: str) -> ProjectQuota | None:
        found = await service.project_usage(info.context.actor, project)
        return ProjectQuota.of(found) if found else None

    @strawberry.field(
        description="GPUs per model of each cluster: capacity, allocated, free and who holds them. "
        "Without project: every cluster and holder, for platform admins. With project: for its "
        "members, the clusters it uses, holders of that project only. `cluster`: that one only."
    )
    async def gpu_capacity(
        self, info: Info, project: str | None = None, cluster: strawberry.ID | None = None
    ) -> list[ClusterCapacity]:
        found = await capacities.capacity(
            info.context.actor,
            project,
            cluster,
            members_see_all=info.context.settings.members_see_all_instances,
        )
        return [ClusterCapacity.of(c) for c in found]


@strawberry.type
class QuotasMutation:
    @strawberry.mutation(
        description="Platform admins: a project's quota; project admins: a member's (input.username)."
    )
    async def set_quota(self, info: Info, input: SetQuotaInput) -> QuotaPayload:
        data = service.QuotaIn(
            project=input.project,
            username=input.username,
            gpus=input.gpus,
            gpu_limits=[
                service.GpuLimitIn(vendor=g.vendor, model=g.model, count=g.count)
                for g in input.gpu_limits or []
            ],
            cpu=input.cpu,
            memory=input.memory,
            instances=input.instances,
        )
        return _payload(*await attempt(service.set_quota(info.context.actor, data)))

    @strawberry.mutation(
        description="Removes a quota: the project's (platform admins) or a member's (admins)."
    )
    async def clear_quota(self, info: Info, project: str, username: str | None = None) -> QuotaPayload:
        return _payload(*await attempt(service.clear_quota(info.context.actor, project, username)))
