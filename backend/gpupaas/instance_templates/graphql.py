"""GraphQL for instance templates. Thin: every rule lives in `instance_templates.service`."""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import Enum

import strawberry
from strawberry.dataloader import DataLoader

from gpupaas.accounts.graphql import ProjectType, projects_by_id
from gpupaas.core.gpus import Vendor
from gpupaas.graphql.common import (
    DeletePayload,
    KeyValue,
    KeyValueInput,
    UserError,
    attempt,
    delete_payload,
    pairs_in,
)
from gpupaas.graphql.context import Info
from gpupaas.graphql.loaders import by_id
from gpupaas.instance_templates import service
from gpupaas.instance_templates.models import ImagePullPolicy, InstanceTemplate, Protocol
from gpupaas.instance_templates.spec import (
    Port,
    Resources,
    ServiceSpec,
    SshAccess,
    Storage,
    port_kubernetes_names,
)

ImagePullPolicyEnum = strawberry.enum(ImagePullPolicy, name="ImagePullPolicy")
ProtocolEnum = strawberry.enum(Protocol, name="Protocol")


@strawberry.type(
    description="A port of the container. `accessParams` values may hold {{generated_token}}; they become "
    "the query string of the port's connect link."
)
class ContainerPort:
    name: str = strawberry.field(
        description='The label a person gave the port ("SSH", "Web UI"): unique among the ports, '
        "letter case aside."
    )
    port: int
    protocol: Protocol
    access_params: list[KeyValue]
    kubernetes_name: str = strawberry.field(
        description='The port\'s name in Kubernetes, derived from its label ("Web UI" -> "web-ui"): '
        "what the container's and the Service's ports are called."
    )

    @classmethod
    def all_of(cls, spec: ServiceSpec) -> list[ContainerPort]:
        return [
            cls(
                name=port.name,
                port=port.port,
                protocol=Protocol(port.protocol),
                access_params=[KeyValue(key=key, value=value) for key, value in port.access_params],
                kubernetes_name=k8s_name,
            )
            for port, k8s_name in zip(spec.ports, port_kubernetes_names(spec), strict=True)
        ]


@strawberry.input
class ContainerPortInput:
    name: str
    port: int
    protocol: Protocol | None = None
    access_params: list[KeyValueInput] | None = None

    def to_service(self) -> Port:
        return Port(
            name=self.name,
            port=self.port,
            protocol=Protocol(self.protocol or Protocol.TCP).value,
            access_params=tuple(pairs_in(self.access_params) or ()),
        )


@strawberry.enum(
    description="Where a service's workspace (at its mount path) lives. EPHEMERAL: an emptyDir on the "
    "node, gone at every stop, restart or move. NEW_VOLUME: a PersistentVolumeClaim of its own "
    "(<name>-workspace, or its claimName). EXISTING_CLAIM: a PersistentVolumeClaim the compute "
    "instance's namespace already has (its volumeClaims), by name; never created nor deleted by the service."
)
class StorageMode(Enum):
    EPHEMERAL = "EPHEMERAL"
    NEW_VOLUME = "NEW_VOLUME"
    EXISTING_CLAIM = "EXISTING_CLAIM"


@strawberry.enum(
    description="What deleting the service does with its NEW_VOLUME. RELEASE: deleted with it. KEEP: "
    "left in the namespace (without the service's labels), for another service to mount as an "
    "EXISTING_CLAIM."
)
class ReclaimPolicy(Enum):
    RELEASE = "RELEASE"
    KEEP = "KEEP"


@strawberry.type(description="A service's workspace storage.")
class ServiceStorage:
    mode: StorageMode
    size: str | None = strawberry.field(
        description='A quantity ("50Gi"), within the compute instance\'s storage. Null: for a '
        "NEW_VOLUME the GPUs' share of the compute instance's storage, for EPHEMERAL no limit."
    )
    reclaim: ReclaimPolicy
    claim_name: str | None = strawberry.field(
        description="The claim an EXISTING_CLAIM mounts, or the name of the claim a NEW_VOLUME creates "
        "(null: <name>-workspace)."
    )
    storage_class: str | None = strawberry.field(
        description="A NEW_VOLUME's storage class. Null: the cluster's default."
    )

    @classmethod
    def of(cls, storage: Storage) -> ServiceStorage:
        return cls(
            mode=StorageMode(storage.mode),
            size=storage.size,
            reclaim=ReclaimPolicy(storage.reclaim),
            claim_name=storage.claim_name,
            storage_class=storage.storage_class,
        )


@strawberry.input(description="A service's workspace storage; fields left out take their defaults.")
class ServiceStorageInput:
    mode: StorageMode | None = strawberry.field(default=None, description="Defaults to NEW_VOLUME.")
    size: str | None = None
    reclaim: ReclaimPolicy | None = strawberry.field(default=None, description="Defaults to RELEASE.")
    claim_name: str | None = strawberry.field(
        default=None,
        description="EXISTING_CLAIM: the claim of the namespace to mount (required). NEW_VOLUME: the "
        "new claim's name (null: <name>-workspace).",
    )
    storage_class: str | None = strawberry.field(
        default=None, description="NEW_VOLUME only: the new claim's storage class (null: the default)."
    )

    def to_service(self) -> Storage:
        return Storage(
            mode=(self.mode or StorageMode.NEW_VOLUME).value,
            size=(self.size or "").strip() or None,
            reclaim=(self.reclaim or ReclaimPolicy.RELEASE).value,
            claim_name=(self.claim_name or "").strip() or None,
            storage_class=(self.storage_class or "").strip() or None,
        )


@strawberry.type(
    description="The container's CPU and memory (quantities). Null: a request is its limit and a "
    "limit its request; neither given: the GPUs' share of the compute instance."
)
class ServiceResources:
    cpu_request: str | None
    cpu_limit: str | None
    memory_request: str | None
    memory_limit: str | None

    @classmethod
    def of(cls, resources: Resources) -> ServiceResources:
        return cls(
            cpu_request=resources.cpu_request,
            cpu_limit=resources.cpu_limit,
            memory_request=resources.memory_request,
            memory_limit=resources.memory_limit,
        )


@strawberry.input(description="The container's CPU and memory; a request at most its limit.")
class ServiceResourcesInput:
    cpu_request: str | None = None
    cpu_limit: str | None = None
    memory_request: str | None = None
    memory_limit: str | None = None

    def to_service(self) -> Resources:
        def text(value: str | None) -> str | None:
            return (value or "").strip() or None

        return Resources(
            cpu_request=text(self.cpu_request),
            cpu_limit=text(self.cpu_limit),
            memory_request=text(self.memory_request),
            memory_limit=text(self.memory_limit),
        )


@strawberry.type(
    description="SSH access: gpupaas starts an SSH server on the port `port` names, beside the command, "
    "that lets `user` in with the keys of the service's owner and those added to the service."
)
class SshAccessType:
    port: str = strawberry.field(description='The name (label) of one of the TCP ports, like "SSH".')
    user: str = strawberry.field(description="The image's user the SSH server logs in, like root.")

    @classmethod
    def of(cls, spec: ServiceSpec) -> SshAccessType | None:
        return None if spec.ssh is None else cls(port=spec.ssh.port, user=spec.ssh.user)


@strawberry.input(description='SSH access; on an update, port "" removes it.')
class SshAccessInput:
    port: str = strawberry.field(description='The name (label) of one of the TCP ports, like "SSH".')
    user: str | None = strawberry.field(default=None, description="Defaults to root.")

    def to_service(self) -> SshAccess:
        return SshAccess(port=self.port, user="root" if self.user is None else self.user)


def instance_templates_by_id() -> DataLoader[uuid.UUID, InstanceTemplate | None]:
    return by_id(InstanceTemplate)


@strawberry.type(name="InstanceTemplate")
class InstanceTemplateType:
    id: strawberry.ID
    name: str
    display_name: str
    description: str | None
    vendor: Vendor
    image: str
    image_pull_policy: ImagePullPolicy
    command: list[str] = strawberry.field(
        description="Replaces the image's entrypoint when not empty; may hold {{generated_token}}."
    )
    container_disk: str = strawberry.field(description='A quantity, like "15Gi".')
    mount_path: str = strawberry.field(description="Where the workspace volume is mounted.")
    ports: list[ContainerPort]
    env: list[KeyValue]
    gpu_partition: str | None = strawberry.field(
        description="A GPU partition its services ask for instead of whole GPUs: a MIG profile's "
        'resource, like "nvidia.com/mig-1g.10gb" (NVIDIA only). Null: whole GPUs.',
    )
    image_pull_secret: str | None = strawberry.field(
        description="The name of an image pull secret its services pull the image with (a project "
        "template: one of the project's; a global one: each project's secret of that name).",
    )
    storage: ServiceStorage = strawberry.field(description="Its services' workspace storage.")
    resources: ServiceResources = strawberry.field(description="Its services' CPU and memory.")
    ssh: SshAccessType | None = strawberry.field(description="SSH access, or null for none.")
    built_in: bool = strawberry.field(
        description="Shipped with gpupaas (global); platform admins may edit it but not delete it."
    )
    created_at: datetime
    updated_at: datetime
    _model: strawberry.Private[InstanceTemplate]

    @strawberry.field(description="Null: a global template, written by platform admins only.")
    async def project(self, info: Info) -> ProjectType | None:
        owner = await info.context.loaders.get(projects_by_id).load(self._model.project_id)
        assert owner is not None  # a foreign key: the row exists
        return None if service.is_global(owner) else ProjectType.of(owner)

    @classmethod
    def of(cls, template: InstanceTemplate) -> InstanceTemplateType:
        spec = template.spec()
        return cls(
            id=strawberry.ID(str(template.id)),
            name=template.name,
            display_name=template.display_name,
            description=template.description,
            vendor=Vendor(template.vendor),
            image=template.image,
            image_pull_policy=ImagePullPolicy(template.image_pull_policy),
            command=list(template.command),
            container_disk=template.container_disk,
            mount_path=template.mount_path,
            ports=ContainerPort.all_of(spec),
            env=[KeyValue(key=e["key"], value=e["value"]) for e in template.env],
            gpu_partition=template.gpu_partition,
            image_pull_secret=template.image_pull_secret,
            storage=ServiceStorage.of(spec.storage),
            resources=ServiceResources.of(spec.resources),
            ssh=SshAccessType.of(template.spec()),
            built_in=template.built_in,
            created_at=template.created_at,
            updated_at=template.updated_at,
            _model=template,
        )


@strawberry.input(description="`project` null (left out): a global template, for platform admins only.")
class CreateInstanceTemplateInput:
    project: str | None = None
    name: str
    display_name: str | None = strawberry.field(default=None, description="Defaults to the name.")
    description: str | None = None
    vendor: Vendor
    image: str
    image_pull_policy: ImagePullPolicy | None = strawberry.field(
        default=None, description="Defaults to IF_NOT_PRESENT."
    )
    command: list[str] | None = None
    container_disk: str | None = strawberry.field(default=None, description='Defaults to "15Gi".')
    mount_path: str | None = strawberry.field(default=None, description='Defaults to "/workspace".')
    ports: list[ContainerPortInput] | None = None
    env: list[KeyValueInput] | None = None
    gpu_partition: str | None = strawberry.field(
        default=None,
        description="A GPU partition its services ask for instead of whole GPUs: a MIG profile's "
        'resource, like "nvidia.com/mig-1g.10gb" (NVIDIA only). Null: whole GPUs.',
    )
    image_pull_secret: str | None = strawberry.field(
        default=None,
        description="The name of an image pull secret its services pull the image with (a project "
        "template: one of the project's; a global one: each project's secret of that name).",
    )
    storage: ServiceStorageInput | None = strawberry.field(
        default=None, description="Defaults to a NEW_VOLUME released on delete."
    )
    resources: ServiceResourcesInput | None = strawberry.field(
        default=None, description="Defaults to the GPUs' share of the compute instance."
    )
    ssh: SshAccessInput | None = strawberry.field(
        default=None,
        description="SSH access: an SSH server beside the command (which it needs), on one of the ports.",
    )


@strawberry.input(
    description="Fields left out stay as they are; lists given replace the old ones. `name` may be given "
    "only with its current value: another value is an IMMUTABLE error."
)
class UpdateInstanceTemplateInput:
    id: strawberry.ID
    name: str | None = None
    display_name: str | None = None
    description: str | None = None
    vendor: Vendor | None = None
    image: str | None = None
    image_pull_policy: ImagePullPolicy | None = None
    command: list[str] | None = None
    container_disk: str | None = None
    mount_path: str | None = None
    ports: list[ContainerPortInput] | None = None
    env: list[KeyValueInput] | None = None
    gpu_partition: str | None = strawberry.field(default=None, description='"" clears it (whole GPUs).')
    image_pull_secret: str | None = strawberry.field(default=None, description='"" clears it.')
    storage: ServiceStorageInput | None = strawberry.field(
        default=None, description="Replaces it when given."
    )
    resources: ServiceResourcesInput | None = strawberry.field(
        default=None, description="Replaces it when given ({} for the defaults)."
    )
    ssh: SshAccessInput | None = strawberry.field(default=None, description='port "" removes it.')


@strawberry.type
class InstanceTemplatePayload:
    instance_template: InstanceTemplateType | None
    user_errors: list[UserError]


def _template_in(data: CreateInstanceTemplateInput | UpdateInstanceTemplateInput) -> service.TemplateIn:
    return service.TemplateIn(
        name=data.name,
        display_name=data.display_name,
        description=data.description,
        vendor=data.vendor,
        image=data.image,
        image_pull_policy=data.image_pull_policy,
        command=data.command,
        container_disk=data.container_disk,
        mount_path=data.mount_path,
        ports=None if data.ports is None else [p.to_service() for p in data.ports],
        env=pairs_in(data.env),
        gpu_partition=data.gpu_partition,
        image_pull_secret=data.image_pull_secret,
        storage=None if data.storage is None else data.storage.to_service(),
        resources=None if data.resources is None else data.resources.to_service(),
        ssh=None if data.ssh is None else data.ssh.to_service(),
    )


ImportOutcomeEnum = strawberry.enum(
    service.ImportOutcome,
    name="InstanceTemplateImportOutcome",
    description="What importing one template of a file did.",
)


@strawberry.type(description="A reason a template of an imported file was refused.")
class ImportProblem:
    field: str = strawberry.field(
        description='Where in the file, in GPUStack\'s field names: "items[3].spec.ports[0].port".'
    )
    message: str


@strawberry.type(description="One template of an imported file: what became of it, and why when REFUSED.")
class InstanceTemplateImport:
    index: int = strawberry.field(description="The template's place in the file's items, from 0.")
    name: str | None
    outcome: service.ImportOutcome
    instance_template: InstanceTemplateType | None = strawberry.field(
        description="The template as it is now; null when REFUSED."
    )
    problems: list[ImportProblem]

    @classmethod
    def of(cls, result: service.ImportResult) -> InstanceTemplateImport:
        return cls(
            index=result.index,
            name=result.name,
            outcome=result.outcome,
            instance_template=InstanceTemplateType.of(result.template) if result.template else None,
            problems=[ImportProblem(field=field, message=message) for field, message in result.problems],
        )


@strawberry.type
class ImportInstanceTemplatesPayload:
    results: list[InstanceTemplateImport] = strawberry.field(
        description="One per template of the file, in its order; empty when the file could not be read."
    )
    user_errors: list[UserError]


def _payload(template: InstanceTemplate | None, errors: list[UserError]) -> InstanceTemplatePayload:
    return InstanceTemplatePayload(
        instance_template=InstanceTemplateType.of(template) if template else None, user_errors=errors
    )


@strawberry.type
class GpuServiceQuery:
    @strawberry.field(
        description="Global templates and the project's own; search matches name and display name. "
        'Built-in ones first, then in the natural order of names ("pytorch-2-6" before "pytorch-2-10").'
    )
    async def instance_templates(
        self, info: Info, project: str, search: str | None = None, vendor: Vendor | None = None
    ) -> list[InstanceTemplateType]:
        rows = await service.list_templates(info.context.actor, project, search, vendor)
        return [InstanceTemplateType.of(t) for t in rows]

    @strawberry.field(
        description="Templates as a file in GPUStack's catalog format (YAML): the project's own, or, with "
        "project left out, the global ones. `names` picks some (an unknown one: NOT_FOUND). gpupaas's "
        "own fields go under each item's `x-gpupaas` key: importing the file again changes nothing."
    )
    async def export_instance_templates(
        self, info: Info, project: str | None = None, names: list[str] | None = None
    ) -> str:
        return await service.export_templates(info.context.actor, project, names)

    @strawberry.field
    async def instance_template(self, info: Info, id: strawberry.ID) -> InstanceTemplateType | None:
        template = await service.get_template(info.context.actor, id)
        return InstanceTemplateType.of(template) if template else None


@strawberry.type
class GpuServiceMutation:
    @strawberry.mutation
    async def create_instance_template(
        self, info: Info, input: CreateInstanceTemplateInput
    ) -> InstanceTemplatePayload:
        return _payload(
            *await attempt(service.create_template(info.context.actor, input.project, _template_in(input)))
        )

    @strawberry.mutation
    async def update_instance_template(
        self, info: Info, input: UpdateInstanceTemplateInput
    ) -> InstanceTemplatePayload:
        return _payload(
            *await attempt(service.update_template(info.context.actor, input.id, _template_in(input)))
        )

    @strawberry.mutation(
        description="Imports templates from a file in GPUStack's catalog format (YAML, at most 1 MiB and "
        "500 templates) into the project, or with project left out the global templates (platform admins "
        "only; a project's: its admins). Each template is CREATED, UPDATED, UNCHANGED or REFUSED (with "
        "the field and why) on its own: one refused does not stop the others."
    )
    async def import_instance_templates(
        self, info: Info, yaml: str, project: str | None = None
    ) -> ImportInstanceTemplatesPayload:
        results, errors = await attempt(service.import_templates(info.context.actor, project, yaml))
        return ImportInstanceTemplatesPayload(
            results=[InstanceTemplateImport.of(result) for result in results or []], user_errors=errors
        )

    @strawberry.mutation(
        description="Built-in templates cannot be deleted (INVALID_STATE): edit them instead."
    )
    async def delete_instance_template(self, info: Info, id: strawberry.ID) -> DeletePayload:
        return await delete_payload(service.delete_template(info.context.actor, id))
