"""GraphQL for GPU service instances: queries, mutations, the status subscription and
`ComputeInstance.services`. Thin: every rule lives in `service_instances.service`."""

from __future__ import annotations

import functools
import uuid
from collections.abc import AsyncGenerator
from datetime import datetime
from enum import Enum
from typing import Annotated

import strawberry
from strawberry.dataloader import DataLoader

from gpupaas.accounts.graphql import ProjectType, project_of
from gpupaas.accounts.service import project_by_name
from gpupaas.clusters.graphql import cluster_of
from gpupaas.compute.graphql import (
    AFTER,
    ComputeInstanceType,
    InstanceOwner,
    compute_instances_by_id,
    owner_of,
)
from gpupaas.compute.models import ComputeInstance
from gpupaas.events.broadcast import StatusEvent
from gpupaas.graphql.common import (
    DeletePayload,
    KeyValue,
    KeyValueInput,
    UserError,
    attempt,
    delete_payload,
    pairs_in,
)
from gpupaas.graphql.connections import Connection, cursor_of
from gpupaas.graphql.context import Info
from gpupaas.graphql.follow import LIVE, Meta, StatusEventSource, follow_project, follow_status
from gpupaas.graphql.loaders import grouped
from gpupaas.graphql.time_limits import TimeLimits, time_limits_of
from gpupaas.instance_templates.graphql import (
    ContainerPort,
    ContainerPortInput,
    InstanceTemplateType,
    ServiceResources,
    ServiceResourcesInput,
    ServiceStorage,
    ServiceStorageInput,
    SshAccessType,
    instance_templates_by_id,
)
from gpupaas.instance_templates.models import ImagePullPolicy
from gpupaas.service_instances import service as instances
from gpupaas.service_instances.models import ServiceInstance
from gpupaas.service_instances.ssh_graphql import (
    ServiceInstanceSshKeyType,
    ServiceInstanceSshType,
    ssh_keys_of,
    ssh_of,
)
from gpupaas.service_instances.states import Request, ServiceStatus

ServiceStatusEnum = strawberry.enum(ServiceStatus, name="ServiceStatus")


def services_of_instance() -> DataLoader[uuid.UUID, list[ServiceInstance]]:
    """A compute instance's service instances, newest first."""

    async def rows(keys: list[uuid.UUID]) -> list[ServiceInstance]:
        return await ServiceInstance.filter(compute_instance_id__in=keys).order_by("-created_at", "-id")

    return grouped(rows, lambda service: service.compute_instance_id)


async def services_of(info: Info, instance: ComputeInstance) -> list[ServiceInstanceType]:
    """`ComputeInstance.services` (compute/graphql.py asks through its hook): what the caller may see."""
    actor = info.context.actor
    if not instances.may_see_services_of(actor, instance):
        return []
    rows = await info.context.loaders.get(services_of_instance).load(instance.id)
    see_all = info.context.settings.members_see_all_instances
    shown = [row for row in rows if instances.shown_to(actor, row, members_see_all=see_all)]
    return [ServiceInstanceType.of(row) for row in shown]


@strawberry.enum(description="What a person may ask of a GPU service instance.")
class ServiceInstanceActionName(Enum):
    START = "start"
    STOP = "stop"
    RESTART = "restart"
    DELETE = "delete"


@strawberry.type(
    description="Whether the caller may do this now; when not, why (what the mutation would answer)."
)
class ServiceInstanceAction:
    name: ServiceInstanceActionName
    allowed: bool
    reason: str | None


@strawberry.type(description="Where a person reaches a port: a URL to open, or an ssh command.")
class ConnectLink:
    port: str
    url: str


@strawberry.type(
    name="ServiceInstance",
    description="The spec is copied from the template at creation, with {{generated_*}} resolved once "
    "and kept (shown here as written; the connect links carry the values).",
)
class ServiceInstanceType:
    id: strawberry.ID
    name: str
    display_name: str
    image: str
    image_pull_policy: ImagePullPolicy
    command: list[str]
    container_disk: str
    mount_path: str
    ports: list[ContainerPort]
    env: list[KeyValue]
    gpu_count: int = strawberry.field(
        description="How many GPUs it asks for, or how many devices of its gpuPartition."
    )
    gpu_partition: str | None = strawberry.field(
        description="The GPU partition it asks for (a MIG profile's resource, like "
        '"nvidia.com/mig-1g.10gb"); null: whole GPUs.'
    )
    image_pull_secret: str | None = strawberry.field(
        description="The name of the project's image pull secret its image is pulled with; null: none."
    )
    storage: ServiceStorage = strawberry.field(description="Its workspace's storage.")
    resources: ServiceResources = strawberry.field(
        description="Its CPU and memory as given (by its template or at creation); null values follow "
        "the GPUs' share of the compute instance."
    )
    status: ServiceStatus
    status_message: str | None
    created_at: datetime
    updated_at: datetime
    _model: strawberry.Private[ServiceInstance]

    @strawberry.field(description="Its time limits and, while it runs, when it will be stopped.")
    def time_limits(self) -> TimeLimits:
        return time_limits_of(self._model)

    @strawberry.field
    async def project(self, info: Info) -> ProjectType:
        return await project_of(info, self._model.project_id)

    @strawberry.field(
        description="Its creator, or whom a project admin gave it to (transferServiceInstance). Null: "
        "no owner (made before instances had owners), so only the project's admins run it."
    )
    async def owner(self, info: Info) -> InstanceOwner | None:
        return await owner_of(info, self._model.owner_id)

    @strawberry.field(description="Null once the template is deleted (the instance keeps its copy).")
    async def template(self, info: Info) -> InstanceTemplateType | None:
        template_id = self._model.template_id
        loader = info.context.loaders.get(instance_templates_by_id)
        template = await loader.load(template_id) if template_id else None
        return InstanceTemplateType.of(template) if template else None

    @strawberry.field(description="The template's name when the instance was created.")
    def template_name(self) -> str:
        return self._model.template_name

    @strawberry.field
    async def compute_instance(self, info: Info) -> ComputeInstanceType:
        return ComputeInstanceType.of(await self._compute_instance(info))

    async def _compute_instance(self, info: Info) -> ComputeInstance:
        loader = info.context.loaders.get(compute_instances_by_id)
        instance = await loader.load(self._model.compute_instance_id)
        assert instance is not None  # a foreign key: the row exists
        return instance

    @strawberry.field(
        description="One link per web port (http(s)://<cluster access address>:<node port>/?<access "
        "params>) and ssh port (an ssh command), once the instance has started. The access params "
        "(a JupyterLab link's ?token=) only for its owner and the project's admins."
    )
    async def connect(self, info: Info) -> list[ConnectLink]:
        instance = await self._compute_instance(info)
        cluster = await cluster_of(info, instance.profile_snapshot.cluster_id)
        links = await instances.connect(
            info.context.settings.secret_key,
            self._model,
            cluster,
            access_params=instances.manages(info.context.actor, self._model),
        )
        return [ConnectLink(port=link.port, url=link.url) for link in links]

    @strawberry.field(
        description="The SSH access its spec declares (copied from its template), or null: none. "
        "`ssh` says how to log in once it runs."
    )
    def ssh_access(self) -> SshAccessType | None:
        return SshAccessType.of(self._model.spec_model())

    @strawberry.field(
        description="How to log in over SSH (the exact ssh command, the host key's fingerprint); null "
        "without SSH access, while STOPPING or STOPPED, or before its first start."
    )
    async def ssh(self, info: Info) -> ServiceInstanceSshType | None:
        instance = await self._compute_instance(info)
        return ssh_of(info, self._model, await cluster_of(info, instance.profile_snapshot.cluster_id))

    @strawberry.field(description="The SSH keys added to it, besides its owner's (by name).")
    async def ssh_keys(self) -> list[ServiceInstanceSshKeyType]:
        return await ssh_keys_of(self._model)

    @strawberry.field(
        description="What the caller may do with the service instance now (start, stop, restart, "
        "delete), by its rights, its status and its compute instance's."
    )
    async def actions(self, info: Info) -> list[ServiceInstanceAction]:
        instance = await self._compute_instance(info)
        return [
            ServiceInstanceAction(
                name=ServiceInstanceActionName(what.value), allowed=reason is None, reason=reason
            )
            for what, reason in instances.actions(info.context.actor, self._model, instance)
        ]

    @strawberry.field(
        description="Why the caller may not edit it now (updateServiceInstance), or null when they may: "
        "its owner and the project's admins edit a STOPPED or FAILED service instance."
    )
    def edit_refusal(self, info: Info) -> str | None:
        return instances.edit_refusal(info.context.actor, self._model)

    @classmethod
    def of(cls, service: ServiceInstance) -> ServiceInstanceType:
        spec = service.spec_model()
        return cls(
            id=strawberry.ID(str(service.id)),
            name=service.name,
            display_name=service.display_name,
            image=spec.image,
            image_pull_policy=ImagePullPolicy(spec.image_pull_policy),
            command=list(spec.command),
            container_disk=spec.container_disk,
            mount_path=spec.mount_path,
            ports=ContainerPort.all_of(spec),
            env=[KeyValue(key=k, value=v) for k, v in spec.env],
            gpu_count=service.gpu_count,
            gpu_partition=spec.gpu_partition,
            image_pull_secret=spec.image_pull_secret,
            storage=ServiceStorage.of(spec.storage),
            resources=ServiceResources.of(spec.resources),
            status=service.status,
            status_message=service.status_message,
            created_at=service.created_at,
            updated_at=service.updated_at,
            _model=service,
        )


@strawberry.input(
    description="A service instance from a template, in a SUCCESS compute instance of the project. "
    "command, env and ports replace the template's when given; gpuCount defaults to 1 (0 for a CPU "
    "template); start defaults to true (false: created STOPPED)."
)
class CreateServiceInstanceInput:
    project: str
    compute_instance: strawberry.ID
    template: strawberry.ID
    name: str
    display_name: str | None = None
    gpu_count: int | None = None
    command: list[str] | None = None
    env: list[KeyValueInput] | None = None
    ports: list[ContainerPortInput] | None = None
    gpu_partition: str | None = strawberry.field(
        default=None,
        description="Null: the template's; \"\" for whole GPUs; else a partition the compute instance's "
        "cluster advertises for its GPU model (Cluster.gpuPartitions).",
    )
    image_pull_secret: str | None = strawberry.field(
        default=None,
        description="Null: the template's; \"\" for none; else one of the project's imagePullSecrets "
        "by name.",
    )
    storage: ServiceStorageInput | None = strawberry.field(
        default=None,
        description="Null: the template's. A size within the compute instance's storage; an "
        "EXISTING_CLAIM one of its volumeClaims.",
    )
    resources: ServiceResourcesInput | None = strawberry.field(
        default=None,
        description="Null: the template's. Requests at most their limits, within the compute "
        "instance's CPU and memory.",
    )
    start: bool | None = None


@strawberry.input(
    description="Fields left out stay as they are; lists given replace the old ones. Saved now, applied "
    "at the next start."
)
class UpdateServiceInstanceInput:
    id: strawberry.ID
    display_name: str | None = None
    gpu_count: int | None = None
    command: list[str] | None = None
    env: list[KeyValueInput] | None = None
    ports: list[ContainerPortInput] | None = None
    storage: ServiceStorageInput | None = strawberry.field(
        default=None,
        description="Replaces it. Once its own volume (NEW_VOLUME) exists, only reclaim may change.",
    )
    resources: ServiceResourcesInput | None = strawberry.field(
        default=None, description="Replaces it ({} for the GPUs' share)."
    )


@strawberry.type
class ServiceInstancePayload:
    service_instance: ServiceInstanceType | None
    user_errors: list[UserError]


@strawberry.type
class ServiceInstanceStatusEvent:
    instance: ServiceInstanceType
    status: ServiceStatus
    message: str | None
    at: datetime
    cursor: str | None = strawberry.field(
        default=None,
        description="Its place in its project's status stream: pass the last one you received as "
        "`after` when you subscribe again, to get what you missed.",
    )
    source: StatusEventSource = strawberry.field(default=StatusEventSource.LIVE)
    missed_events: bool = strawberry.field(
        default=False,
        description="True on the snapshot sent instead of a replay: the `after` cursor was older than "
        "the replay retention (GPUPAAS_STATUS_REPLAY_HOURS) or unknown, so events were missed.",
    )


def _payload(found: ServiceInstance | None, errors: list[UserError]) -> ServiceInstancePayload:
    return ServiceInstancePayload(
        service_instance=ServiceInstanceType.of(found) if found else None, user_errors=errors
    )


@strawberry.type
class ServiceInstanceQuery:
    @strawberry.field(
        description="A project's service instances (of one compute instance), newest first. mine: only "
        "those the caller owns."
    )
    async def service_instances(
        self,
        info: Info,
        project: str,
        compute_instance: strawberry.ID | None = None,
        first: int | None = None,
        after: str | None = None,
        mine: bool | None = None,
    ) -> Connection[ServiceInstanceType]:
        page = await instances.list_services(
            info.context.actor,
            project,
            compute_instance,
            first,
            after,
            mine=bool(mine),
            members_see_all=info.context.settings.members_see_all_instances,
        )
        return Connection.of(page, ServiceInstanceType.of, cursor_of)

    @strawberry.field
    async def service_instance(self, info: Info, id: strawberry.ID) -> ServiceInstanceType | None:
        see_all = info.context.settings.members_see_all_instances
        found = await instances.get_service(info.context.actor, id, members_see_all=see_all)
        return ServiceInstanceType.of(found) if found else None


@strawberry.type
class ServiceInstanceMutation:
    @strawberry.mutation
    async def create_service_instance(
        self, info: Info, input: CreateServiceInstanceInput
    ) -> ServiceInstancePayload:
        data = instances.ServiceIn(
            project=input.project,
            compute_instance=input.compute_instance,
            template=input.template,
            name=input.name,
            display_name=input.display_name,
            gpu_count=input.gpu_count,
            gpu_partition=input.gpu_partition,
            image_pull_secret=input.image_pull_secret,
            command=input.command,
            env=pairs_in(input.env),
            ports=None if input.ports is None else [p.to_service() for p in input.ports],
            storage=None if input.storage is None else input.storage.to_service(),
            resources=None if input.resources is None else input.resources.to_service(),
            start=input.start is not False,
        )
        secret_key = info.context.settings.secret_key
        return _payload(
            *await attempt(instances.create_service(info.context.actor, data, secret_key=secret_key))
        )

    @strawberry.mutation(
        description="Edits a STOPPED or FAILED service instance (its owner and the project's admins): "
        "command, env, ports, GPUs, CPU and memory, storage while its volume allows; applied at its "
        "next start. Refused (INVALID_STATE) in any other status."
    )
    async def update_service_instance(
        self, info: Info, input: UpdateServiceInstanceInput
    ) -> ServiceInstancePayload:
        data = instances.ServiceUpdate(
            display_name=input.display_name,
            gpu_count=input.gpu_count,
            command=input.command,
            env=pairs_in(input.env),
            ports=None if input.ports is None else [p.to_service() for p in input.ports],
            storage=None if input.storage is None else input.storage.to_service(),
            resources=None if input.resources is None else input.resources.to_service(),
        )
        secret_key = info.context.settings.secret_key
        return _payload(
            *await attempt(
                instances.update_service(info.context.actor, input.id, data, secret_key=secret_key)
            )
        )

    @strawberry.mutation(description="STOPPED or FAILED -> PENDING -> STARTING -> RUNNING.")
    async def start_service_instance(self, info: Info, id: strawberry.ID) -> ServiceInstancePayload:
        return _payload(*await attempt(instances.request(info.context.actor, id, Request.START)))

    @strawberry.mutation(
        description="RUNNING or FAILED -> STOPPING -> STOPPED: the pod is removed; the spec, its "
        "generated values (the token) and the workspace are kept."
    )
    async def stop_service_instance(self, info: Info, id: strawberry.ID) -> ServiceInstancePayload:
        return _payload(*await attempt(instances.request(info.context.actor, id, Request.STOP)))

    @strawberry.mutation(description="RUNNING -> PENDING -> STARTING -> RUNNING, with a new pod.")
    async def restart_service_instance(self, info: Info, id: strawberry.ID) -> ServiceInstancePayload:
        return _payload(*await attempt(instances.request(info.context.actor, id, Request.RESTART)))

    @strawberry.mutation(
        description="From any status: its pod, Service and workspace are deleted, then the instance. "
        "Idempotent while DELETING."
    )
    async def delete_service_instance(self, info: Info, id: strawberry.ID) -> DeletePayload:
        return await delete_payload(instances.delete_service(info.context.actor, id))

    @strawberry.mutation(
        description="Project admins give the service instance to another member of its project "
        "(owner: their username). It runs on untouched; its link and token stay the same."
    )
    async def transfer_service_instance(
        self, info: Info, id: strawberry.ID, owner: str
    ) -> ServiceInstancePayload:
        return _payload(*await attempt(instances.transfer(info.context.actor, id, owner)))


def _event(
    found: ServiceInstance, status: str, message: str | None, at: datetime, meta: Meta = LIVE
) -> ServiceInstanceStatusEvent:
    return ServiceInstanceStatusEvent(
        instance=ServiceInstanceType.of(found),
        status=ServiceStatus(status),
        message=message,
        at=at,
        cursor=meta.cursor_text,
        source=meta.source,
        missed_events=meta.missed,
    )


async def _shown(item: StatusEvent, meta: Meta) -> ServiceInstanceStatusEvent | None:
    current = await instances.service_of_event(item.instance_id)
    return (
        _event(current, item.status, item.message, datetime.fromisoformat(item.at), meta) if current else None
    )


@strawberry.type
class ServiceInstanceSubscription:
    @strawberry.subscription(
        description="First the service instance's current state (source SNAPSHOT) or, with `after`, "
        "what changed since that cursor (REPLAY); then one event per change, in order. Ends when "
        "the service instance is deleted."
    )
    async def service_instance_status(
        self, info: Info, id: strawberry.ID, after: Annotated[str | None, AFTER] = None
    ) -> AsyncGenerator[ServiceInstanceStatusEvent, None]:
        see_all = info.context.settings.members_see_all_instances
        load = functools.partial(instances.get_service, info.context.actor, id, members_see_all=see_all)
        async for event in follow_status(
            info, load, _event, missing="No such service instance.", after=after
        ):
            yield event

    @strawberry.subscription(
        description="Every status change of the project's service instances, for dashboards: first "
        "each one's current state (source SNAPSHOT) or, with `after`, what changed since that "
        "cursor (REPLAY), then live, in order."
    )
    async def service_instance_events(
        self, info: Info, project: str, after: Annotated[str | None, AFTER] = None
    ) -> AsyncGenerator[ServiceInstanceStatusEvent, None]:
        actor = info.context.actor
        see_all = info.context.settings.members_see_all_instances

        async def find() -> uuid.UUID | None:
            owner = await project_by_name(actor, project)
            return owner.id if owner is not None else None

        async def snapshot(shared_only: bool) -> list[ServiceInstance]:
            # service instances are never shared: another project's stream holds none of ours
            owner = None if shared_only else await project_by_name(actor, project)
            return (
                []
                if owner is None
                else await instances.current_services(actor, owner, members_see_all=see_all)
            )

        async for event in follow_project(
            info,
            project,
            after,
            kind="service",
            find=find,
            snapshot=snapshot,
            of_event=_shown,
            shown_to=lambda event: instances.shown_to(actor, event.instance._model, members_see_all=see_all),
            make=_event,
        ):
            yield event
