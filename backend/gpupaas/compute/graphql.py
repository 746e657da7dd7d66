"""GraphQL for compute instances: queries, mutations and the live status subscriptions.

Thin: every rule lives in `compute.service`. Subscriptions register with the process's status
broadcaster first and read the current state second, so no change between the two is lost; events
carry the instance's version, and a subscriber never goes backwards.
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any

import strawberry
from strawberry.dataloader import DataLoader

from gpupaas.accounts.graphql import ProjectType, project_of, projects_by_id
from gpupaas.accounts.service import project_by_name
from gpupaas.catalog.graphql.profiles import (
    ComputeProfileType,
    ComputeResources,
    SharingInput,
    SharingType,
    profiles_by_id,
    shares_of_profile,
)
from gpupaas.catalog.models import AllocationType
from gpupaas.catalog.service.visibility import profile_visible
from gpupaas.clusters.graphql import ClusterType, clusters_by_id
from gpupaas.compute import configuration, owners, service, usage
from gpupaas.compute.models import ComputeInstance, ComputeInstanceShare
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.crypto import Sealer
from gpupaas.core.gpus import Vendor
from gpupaas.core.hooks import Hook
from gpupaas.events.broadcast import StatusEvent
from gpupaas.graphql.common import (
    DeletePayload,
    KeyValue,
    KeyValueInput,
    UserError,
    attempt,
    delete_payload,
    key_values,
    pairs_in,
)
from gpupaas.graphql.connections import Connection, cursor_of
from gpupaas.graphql.context import Info
from gpupaas.graphql.follow import LIVE, Meta, StatusEventSource, follow_project, follow_status
from gpupaas.graphql.loaders import by_id, grouped, grouped_pairs
from gpupaas.graphql.time_limits import TimeLimits, time_limits_of
from gpupaas.runs.models import DeploymentRun
from gpupaas.runs.states import RunAction, RunStatus

if TYPE_CHECKING:
    # ComputeInstance.services shows GPU service instances, whose GraphQL sits above this package:
    # strawberry finds the type by the lazy reference; for mypy it is Any here.
    ServiceInstanceType = Any

# `ComputeInstance.services`: the service instances of a compute instance that the caller may see,
# as their GraphQL types (bound by gpupaas.api.wiring).
SERVICES_OF: Hook[Callable[[Info, ComputeInstance], Awaitable[list[Any]]]] = Hook("ComputeInstance.services")


def compute_instances_by_id() -> DataLoader[uuid.UUID, ComputeInstance | None]:
    return by_id(ComputeInstance)


def runs_of_instance() -> DataLoader[uuid.UUID, list[DeploymentRun]]:
    """A compute instance's own runs (not those of its service instances), newest first."""

    async def rows(keys: list[uuid.UUID]) -> list[DeploymentRun]:
        return await DeploymentRun.filter(instance_id__in=keys, service_id=None).order_by(
            "-created_at", "-id"
        )

    return grouped(rows, lambda run: run.instance_id)


def shares_of_instance() -> DataLoader[uuid.UUID, list[uuid.UUID]]:
    """The projects a compute instance is shared with (by id)."""

    async def rows(keys: list[uuid.UUID]) -> list[tuple[uuid.UUID, uuid.UUID]]:
        pairs = await ComputeInstanceShare.filter(instance_id__in=keys).values_list(
            "instance_id", "project_id"
        )
        return [(instance_id, project_id) for instance_id, project_id in pairs]

    return grouped_pairs(rows)


def service_names_in() -> DataLoader[uuid.UUID, list[str]]:
    """The names of what runs in each compute instance (its service instances)."""

    async def load(keys: Sequence[uuid.UUID]) -> list[list[str]]:
        found = await service.SERVICES_IN()(keys)
        return [found.get(key, []) for key in keys]

    return DataLoader(load_fn=load)


def owner_names() -> DataLoader[uuid.UUID, str | None]:
    """Owners' usernames, by user id (compute and service instances alike)."""

    async def load(keys: Sequence[uuid.UUID]) -> list[str | None]:
        found = await owners.usernames(keys)
        return [found.get(key) for key in keys]

    return DataLoader(load_fn=load)


@strawberry.type(
    description="Who owns an instance: with the project's admins, the only one who manages it and "
    "sees its secrets. Only the username: nothing else of the user is shown to the project."
)
class InstanceOwner:
    username: str


async def owner_of(info: Info, owner_id: uuid.UUID | None) -> InstanceOwner | None:
    """An instance's owner (compute and service instances alike), through the request's loader."""
    name = await info.context.loaders.get(owner_names).load(owner_id) if owner_id is not None else None
    return InstanceOwner(username=name) if name is not None else None


DeploymentStatusEnum = strawberry.enum(DeploymentStatus, name="DeploymentStatus")
RunActionEnum = strawberry.enum(RunAction, name="RunAction")
RunStatusEnum = strawberry.enum(RunStatus, name="RunStatus")


@strawberry.type(name="DeploymentRun")
class DeploymentRunType:
    id: strawberry.ID
    action: RunAction
    status: RunStatus
    message: str | None
    attempts: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None

    @classmethod
    def of(cls, run: DeploymentRun) -> DeploymentRunType:
        return cls(
            id=strawberry.ID(str(run.id)),
            action=run.action,
            status=run.status,
            message=run.message,
            attempts=run.attempts,
            created_at=run.created_at,
            started_at=run.started_at,
            finished_at=run.finished_at,
        )


@strawberry.enum(description="What a person may ask of a compute instance.")
class ComputeInstanceActionName(Enum):
    UPDATE = "update"
    DEPLOY = "deploy"
    DESTROY = "destroy"
    DELETE = "delete"
    SHARE = "share"


@strawberry.type(
    description="Whether the caller may do this now; when not, why (what the mutation would answer)."
)
class ComputeInstanceAction:
    name: ComputeInstanceActionName
    allowed: bool
    reason: str | None


@strawberry.type(name="QuotaUse", description="One resource of a ResourceQuota (quantities as written).")
class QuotaUseType:
    resource: str = strawberry.field(description='As the quota names it: "requests.cpu", "pods"...')
    hard: str
    used: str


@strawberry.type(name="ResourceQuotaUsage")
class ResourceQuotaUsageType:
    name: str
    uses: list[QuotaUseType]


@strawberry.type(
    name="VolumeClaim",
    description="A PersistentVolumeClaim of the compute instance's namespace: a service's workspace, "
    "or one kept after its service was deleted (which a service may mount as an EXISTING_CLAIM).",
)
class VolumeClaimType:
    name: str
    size: str | None = strawberry.field(description="Its requests.storage.")
    storage_class: str | None
    phase: str | None = strawberry.field(description="Pending, Bound or Lost.")
    service_id: strawberry.ID | None = strawberry.field(
        description="The service instance whose workspace it is; null: no service's (kept)."
    )
    kept_from: str | None = strawberry.field(description="The deleted service it was kept from.")
    keep: bool = strawberry.field(description="Its service's delete leaves it in the namespace.")


@strawberry.type(
    name="NamespaceUsage",
    description="What the compute instance's namespace uses of its ResourceQuotas, and its volume "
    "claims, read from the cluster when asked.",
)
class NamespaceUsageType:
    namespace: str
    quotas: list[ResourceQuotaUsageType]
    volume_claims: list[VolumeClaimType]
    problem: str | None = strawberry.field(
        description="Why the cluster could not be read (then the lists are empty)."
    )

    @classmethod
    def of(cls, found: usage.InstanceUsage) -> NamespaceUsageType:
        return cls(
            namespace=found.namespace,
            quotas=[
                ResourceQuotaUsageType(
                    name=quota.name,
                    uses=[QuotaUseType(resource=u.resource, hard=u.hard, used=u.used) for u in quota.uses],
                )
                for quota in found.usage.quotas
            ],
            volume_claims=[
                VolumeClaimType(
                    name=claim.name,
                    size=claim.size,
                    storage_class=claim.storage_class,
                    phase=claim.phase,
                    service_id=strawberry.ID(claim.service_id) if claim.service_id else None,
                    kept_from=claim.kept_from,
                    keep=claim.keep,
                )
                for claim in found.usage.claims
            ],
            problem=found.problem,
        )


@strawberry.type(name="ComputeInstance")
class ComputeInstanceType:
    id: strawberry.ID
    name: str
    display_name: str
    description: str | None
    profile_name: str
    status: DeploymentStatus
    status_message: str | None
    labels: list[KeyValue]
    annotations: list[KeyValue]
    allocation_type: AllocationType = strawberry.field(description="From the profile's snapshot.")
    resources: ComputeResources = strawberry.field(description="From the profile's snapshot.")
    template_name: str = strawberry.field(description="The environment template of the snapshot.")
    template_version: str = strawberry.field(description="The template version of the snapshot.")
    created_at: datetime
    updated_at: datetime
    _model: strawberry.Private[ComputeInstance]

    @strawberry.field
    async def project(self, info: Info) -> ProjectType:
        return await project_of(info, self._model.project_id)

    @strawberry.field(
        description="Its creator, or whom a project admin gave it to (transferComputeInstance). Null: "
        "no owner (made before instances had owners), so only the project's admins manage it."
    )
    async def owner(self, info: Info) -> InstanceOwner | None:
        return await owner_of(info, self._model.owner_id)

    @strawberry.field(description="Its time limits and, while it runs, when it will be destroyed.")
    def time_limits(self) -> TimeLimits:
        return time_limits_of(self._model)

    # Computed when asked for only: a status event's subscribers mostly are not.
    @strawberry.field(description="Effective input values; sensitive ones masked.")
    def inputs(self) -> list[KeyValue]:
        return key_values(configuration.masked_inputs(self._model))

    @strawberry.field(
        description="Visible outputs, once deployed. A sensitive output's value (one that reads a "
        "sensitive input, the generated token or a Secret) is masked for all but the instance's "
        "owner and the project's admins."
    )
    def outputs(self, info: Info) -> list[KeyValue]:
        reveal = service.manages(info.context.actor, self._model)
        sealer = Sealer(info.context.settings.secret_key)
        return key_values(configuration.visible_outputs(self._model, reveal_sensitive=reveal, sealer=sealer))

    @strawberry.field(description="Null once the profile is deleted or no longer visible.")
    async def profile(self, info: Info) -> ComputeProfileType | None:
        profile_id = self._model.profile_id
        if profile_id is None:
            return None
        loaders = info.context.loaders
        profile = await loaders.get(profiles_by_id).load(profile_id)
        if profile is None:
            return None
        owner = await loaders.get(projects_by_id).load(profile.project_id)
        assert owner is not None
        shares = functools.partial(loaders.get(shares_of_profile).load, profile_id)
        visible = await profile_visible(info.context.actor, profile, owner, shares)
        return ComputeProfileType.of(profile) if visible else None

    @strawberry.field(description="The profile changed after this instance took its snapshot of it.")
    async def outdated(self, info: Info) -> bool:
        profile_id = self._model.profile_id
        if profile_id is None:
            return False
        profile = await info.context.loaders.get(profiles_by_id).load(profile_id)
        return profile is not None and profile.revision != self._model.profile_revision

    @strawberry.field
    async def sharing(self, info: Info) -> SharingType:
        shared = await info.context.loaders.get(shares_of_instance).load(self._model.id)
        visible = service.share_targets_shown(info.context.actor, self._model, shared)
        loaded = await info.context.loaders.get(projects_by_id).load_many(visible)
        projects = [p for p in loaded if p is not None]
        return SharingType(
            mode=self._model.sharing_mode,
            projects=[ProjectType.of(p) for p in sorted(projects, key=lambda p: p.name)],
        )

    @strawberry.field(description="The cluster of the snapshot (where it is deployed).")
    async def cluster(self, info: Info) -> ClusterType | None:
        cluster_id = self._model.profile_snapshot.cluster_id
        cluster = (
            await info.context.loaders.get(clusters_by_id).load(uuid.UUID(cluster_id)) if cluster_id else None
        )
        return ClusterType.of(cluster) if cluster else None

    @strawberry.field(description="Its GPU service instances, newest first.")
    async def services(
        self, info: Info
    ) -> list[Annotated[ServiceInstanceType, strawberry.lazy("gpupaas.service_instances.graphql")]]:
        return await SERVICES_OF()(info, self._model)

    @strawberry.field(
        description="What the caller may do with the instance now (update, deploy, destroy, delete, "
        "share), by its rights, its status and its service instances."
    )
    async def actions(self, info: Info) -> list[ComputeInstanceAction]:
        names = await info.context.loaders.get(service_names_in).load(self._model.id)
        return [
            ComputeInstanceAction(
                name=ComputeInstanceActionName(request.value), allowed=reason is None, reason=reason
            )
            for request, reason in service.actions(info.context.actor, self._model, names)
        ]

    @strawberry.field(
        description="Its namespace's quota usage and volume claims, from the cluster. Null unless it "
        "is deployed (SUCCESS)."
    )
    async def namespace_usage(self, info: Info) -> NamespaceUsageType | None:
        found = await usage.namespace_usage(self._model, info.context.drivers)
        return NamespaceUsageType.of(found) if found is not None else None

    @strawberry.field(description="Newest first.")
    async def runs(self, info: Info) -> list[DeploymentRunType]:
        return [
            DeploymentRunType.of(r)
            for r in await info.context.loaders.get(runs_of_instance).load(self._model.id)
        ]

    @classmethod
    def of(cls, instance: ComputeInstance) -> ComputeInstanceType:
        snapshot = instance.profile_snapshot
        resources = snapshot.resources
        return cls(
            id=strawberry.ID(str(instance.id)),
            name=instance.name,
            display_name=instance.display_name,
            description=instance.description,
            profile_name=instance.profile_name,
            status=instance.status,
            status_message=instance.status_message,
            labels=key_values(instance.labels),
            annotations=key_values(instance.annotations),
            allocation_type=snapshot.allocation_type,
            resources=ComputeResources(
                cpu=resources.cpu,
                memory=resources.memory,
                storage=resources.storage,
                gpu_count=resources.gpu_count,
                gpu_vendor=Vendor(resources.gpu_vendor),
                gpu_model=resources.gpu_model,
            ),
            template_name=snapshot.template_name,
            template_version=snapshot.template_version,
            created_at=instance.created_at,
            updated_at=instance.updated_at,
            _model=instance,
        )


@strawberry.input(
    description="deploy false or absent: saved as NOT_DEPLOYED. deploy true: queued at once (WAITING)."
)
class CreateComputeInstanceInput:
    project: str
    profile: strawberry.ID
    name: str
    display_name: str | None = None
    description: str | None = None
    labels: list[KeyValueInput] | None = None
    annotations: list[KeyValueInput] | None = None
    inputs: list[KeyValueInput] | None = None
    deploy: bool | None = None


@strawberry.input
class UpdateComputeInstanceInput:
    id: strawberry.ID
    name: str | None = None
    display_name: str | None = None
    description: str | None = None
    labels: list[KeyValueInput] | None = None
    annotations: list[KeyValueInput] | None = None
    inputs: list[KeyValueInput] | None = None


@strawberry.type
class ComputeInstancePayload:
    compute_instance: ComputeInstanceType | None
    user_errors: list[UserError]


@strawberry.type
class ComputeInstanceStatusEvent:
    instance: ComputeInstanceType
    status: DeploymentStatus
    message: str | None
    at: datetime
    cursor: str | None = strawberry.field(
        default=None,
        description="Its place in its project's status stream: pass the last one you received as "
        "`after` when you subscribe again, to get what you missed. Null for an instance shared from "
        "another project (a resumed subscription sends those as they are now).",
    )
    source: StatusEventSource = strawberry.field(default=StatusEventSource.LIVE)
    missed_events: bool = strawberry.field(
        default=False,
        description="True on the snapshot sent instead of a replay: the `after` cursor was older than "
        "the replay retention (GPUPAAS_STATUS_REPLAY_HOURS) or unknown, so events were missed.",
    )


def _payload(instance: ComputeInstance | None, errors: list[UserError]) -> ComputeInstancePayload:
    return ComputeInstancePayload(
        compute_instance=ComputeInstanceType.of(instance) if instance else None, user_errors=errors
    )


def _instance_in(data: CreateComputeInstanceInput | UpdateComputeInstanceInput) -> service.InstanceIn:
    return service.InstanceIn(
        name=data.name,
        display_name=data.display_name,
        description=data.description,
        labels=pairs_in(data.labels),
        annotations=pairs_in(data.annotations),
        inputs=pairs_in(data.inputs),
    )


@strawberry.type
class ComputeQuery:
    @strawberry.field(
        description="A project's instances and those shared with it, newest first. mine: only those "
        "the caller owns."
    )
    async def compute_instances(
        self,
        info: Info,
        project: str,
        search: str | None = None,
        status: list[DeploymentStatus] | None = None,
        first: int | None = None,
        after: str | None = None,
        mine: bool | None = None,
    ) -> Connection[ComputeInstanceType]:
        page = await service.list_instances(
            info.context.actor,
            project,
            search,
            status,
            first,
            after,
            mine=bool(mine),
            members_see_all=info.context.settings.members_see_all_instances,
        )
        return Connection.of(page, ComputeInstanceType.of, cursor_of)

    @strawberry.field
    async def compute_instance(self, info: Info, id: strawberry.ID) -> ComputeInstanceType | None:
        instance = await service.get_instance(
            info.context.actor, id, members_see_all=info.context.settings.members_see_all_instances
        )
        return ComputeInstanceType.of(instance) if instance else None


@strawberry.type
class ComputeMutation:
    @strawberry.mutation
    async def create_compute_instance(
        self, info: Info, input: CreateComputeInstanceInput
    ) -> ComputeInstancePayload:
        return _payload(
            *await attempt(
                service.create_instance(
                    info.context.actor,
                    input.project,
                    input.profile,
                    _instance_in(input),
                    bool(input.deploy),
                    secret_key=info.context.settings.secret_key,
                )
            )
        )

    @strawberry.mutation(description='"Save Changes": the status stays; the next deploy applies the changes.')
    async def update_compute_instance(
        self, info: Info, input: UpdateComputeInstanceInput
    ) -> ComputeInstancePayload:
        return _payload(
            *await attempt(
                service.update_instance(
                    info.context.actor,
                    input.id,
                    _instance_in(input),
                    secret_key=info.context.settings.secret_key,
                )
            )
        )

    @strawberry.mutation
    async def deploy_compute_instance(self, info: Info, id: strawberry.ID) -> ComputeInstancePayload:
        return _payload(*await attempt(service.deploy(info.context.actor, id)))

    @strawberry.mutation
    async def destroy_compute_instance(self, info: Info, id: strawberry.ID) -> ComputeInstancePayload:
        return _payload(*await attempt(service.destroy(info.context.actor, id)))

    @strawberry.mutation
    async def set_compute_instance_sharing(
        self, info: Info, id: strawberry.ID, sharing: SharingInput
    ) -> ComputeInstancePayload:
        return _payload(
            *await attempt(service.set_sharing(info.context.actor, id, sharing.mode, sharing.projects))
        )

    @strawberry.mutation(
        description="Project admins give the instance to another member of its project (owner: their "
        "username), with the service instances in it that its old owner owned. The instance runs on "
        "untouched."
    )
    async def transfer_compute_instance(
        self, info: Info, id: strawberry.ID, owner: str
    ) -> ComputeInstancePayload:
        return _payload(*await attempt(service.transfer(info.context.actor, id, owner)))

    @strawberry.mutation(description="Deployed instances are destroyed first, then removed.")
    async def delete_compute_instance(self, info: Info, id: strawberry.ID) -> DeletePayload:
        return await delete_payload(service.delete(info.context.actor, id))


def _event(
    instance: ComputeInstance, status: str, message: str | None, at: datetime, meta: Meta = LIVE
) -> ComputeInstanceStatusEvent:
    return ComputeInstanceStatusEvent(
        instance=ComputeInstanceType.of(instance),
        status=DeploymentStatus(status),
        message=message,
        at=at,
        cursor=meta.cursor_text,
        source=meta.source,
        missed_events=meta.missed,
    )


async def _shown(item: StatusEvent, meta: Meta) -> ComputeInstanceStatusEvent | None:
    current = await service.instance_of_event(item)
    return (
        _event(current, item.status, item.message, datetime.fromisoformat(item.at), meta) if current else None
    )


AFTER = strawberry.argument(
    description="The `cursor` of the last event received: first the events since then (source "
    "REPLAY), then live ones. Without it the subscription starts with a snapshot."
)


@strawberry.type
class ComputeSubscription:
    @strawberry.subscription(
        description="First the instance's current state (source SNAPSHOT) or, with `after`, what "
        "changed since that cursor (REPLAY); then one event per change, in order. Ends when the "
        "instance is deleted."
    )
    async def compute_instance_status(
        self, info: Info, id: strawberry.ID, after: Annotated[str | None, AFTER] = None
    ) -> AsyncGenerator[ComputeInstanceStatusEvent, None]:
        actor = info.context.actor
        see_all = info.context.settings.members_see_all_instances
        load = functools.partial(service.get_instance, actor, id, members_see_all=see_all)
        async for event in follow_status(
            info, load, _event, missing="No such compute instance.", after=after
        ):
            yield event

    @strawberry.subscription(
        description="Every status change of the project's instances (and those shared with it), "
        "for dashboards: first each instance's current state (source SNAPSHOT) or, with `after`, "
        "what changed since that cursor (REPLAY), then live, in order."
    )
    async def compute_instance_events(
        self, info: Info, project: str, after: Annotated[str | None, AFTER] = None
    ) -> AsyncGenerator[ComputeInstanceStatusEvent, None]:
        actor = info.context.actor
        see_all = info.context.settings.members_see_all_instances

        async def find() -> uuid.UUID | None:
            owner = await project_by_name(actor, project)
            return owner.id if owner is not None else None

        async def snapshot(shared_only: bool) -> list[ComputeInstance]:
            owner = await project_by_name(actor, project)
            if owner is None:
                return []
            return await service.current_instances(
                actor, owner, shared_only=shared_only, members_see_all=see_all
            )

        async for event in follow_project(
            info,
            project,
            after,
            kind="compute",
            find=find,
            snapshot=snapshot,
            of_event=_shown,
            shown_to=lambda event: service.shown_to(actor, event.instance._model, members_see_all=see_all),
            make=_event,
        ):
            yield event
