"""GraphQL for the catalog: environment templates, compute profiles, sharing and the catalog query.

Thin: every rule lives in `catalog.service`. The profile list and the catalog read each profile's
version, template and share targets in their own statement (catalog.reads), and their profiles
answer those fields from what was read, with plain resolvers (no coroutine, no asyncio task per
field); elsewhere related objects come through the request's DataLoaders, so lists cost a fixed
number of queries whatever their length.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any, TypeVar, cast

import strawberry
from strawberry.dataloader import DataLoader

from gpupaas.accounts import sharing
from gpupaas.accounts.graphql import ProjectType, project_of, projects_by_id
from gpupaas.accounts.models import Project
from gpupaas.accounts.sharing import SharingMode
from gpupaas.catalog import readme as readme_mod
from gpupaas.catalog.models import (
    AllocationType,
    ComputeProfile,
    ComputeProfileShare,
    EnvironmentTemplate,
    EnvironmentTemplateVersion,
    VersionState,
)
from gpupaas.catalog.reads import ListedProfile
from gpupaas.catalog.service import profile_settings, profiles, templates, visibility
from gpupaas.catalog.service.definitions import SENSITIVE_MASK
from gpupaas.clusters.graphql import ClusterType, clusters_by_id
from gpupaas.core.errors import InvalidArgument
from gpupaas.core.gpus import Vendor
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
from gpupaas.graphql.loaders import by_id, grouped, grouped_pairs

VersionStateEnum = strawberry.enum(VersionState, name="VersionState")
AllocationTypeEnum = strawberry.enum(AllocationType, name="AllocationType")
SharingModeEnum = strawberry.enum(SharingMode, name="SharingMode")
VendorEnum = strawberry.enum(Vendor, name="Vendor")


@strawberry.enum
class InputType(Enum):
    STRING = "STRING"
    NUMBER = "NUMBER"
    BOOLEAN = "BOOLEAN"
    QUANTITY = "QUANTITY"


@strawberry.enum
class OverridePolicy(Enum):
    NOT_ALLOWED = "NOT_ALLOWED"
    ALLOWED = "ALLOWED"
    RESTRICTED = "RESTRICTED"


T = TypeVar("T")


def _later(work: Awaitable[T]) -> T:
    """What a plain resolver returns when its value is still to be loaded: graphql-core awaits
    whatever awaitable a resolver returns, so one plain function answers at once when the value was
    read already and loads it otherwise (an async resolver costs a coroutine and a task per call)."""
    return cast(T, work)


def templates_by_id() -> DataLoader[uuid.UUID, EnvironmentTemplate | None]:
    return by_id(EnvironmentTemplate)


def versions_by_id() -> DataLoader[uuid.UUID, EnvironmentTemplateVersion | None]:
    return by_id(EnvironmentTemplateVersion)


def profiles_by_id() -> DataLoader[uuid.UUID, ComputeProfile | None]:
    return by_id(ComputeProfile)


def versions_of_template() -> DataLoader[uuid.UUID, list[EnvironmentTemplateVersion]]:
    """A template's versions, newest first."""

    async def rows(keys: list[uuid.UUID]) -> list[EnvironmentTemplateVersion]:
        return await EnvironmentTemplateVersion.filter(template_id__in=keys).order_by("-created_at", "-id")

    return grouped(rows, lambda version: version.template_id)


def shares_of_profile() -> DataLoader[uuid.UUID, list[uuid.UUID]]:
    """The projects a profile is shared with (by id)."""

    async def rows(keys: list[uuid.UUID]) -> list[tuple[uuid.UUID, uuid.UUID]]:
        pairs = await ComputeProfileShare.filter(profile_id__in=keys).values_list("profile_id", "project_id")
        return [(profile_id, project_id) for profile_id, project_id in pairs]

    return grouped_pairs(rows)


# ---------------------------------------------------------------- environment templates


@strawberry.type
class InputDefinition:
    name: str
    type: InputType
    description: str | None
    required: bool
    default: str | None
    options: list[str]
    pattern: str | None
    min: float | None
    max: float | None
    sensitive: bool

    @classmethod
    def of(cls, data: dict[str, Any]) -> InputDefinition:
        return cls(
            name=data["name"],
            type=InputType(data["type"]),
            description=data.get("description"),
            required=bool(data.get("required")),
            default=data.get("default"),
            options=list(data.get("options") or []),
            pattern=data.get("pattern"),
            min=data.get("min"),
            max=data.get("max"),
            sensitive=bool(data.get("sensitive")),
        )


@strawberry.input
class InputDefinitionInput:
    name: str
    type: InputType
    description: str | None = None
    required: bool | None = None
    default: str | None = None
    options: list[str] | None = None
    pattern: str | None = None
    min: float | None = None
    max: float | None = None
    sensitive: bool | None = None


@strawberry.type
class OutputDefinition:
    name: str
    description: str | None
    value: str


@strawberry.input
class OutputDefinitionInput:
    name: str
    value: str
    description: str | None = None


@strawberry.type(
    name="EnvironmentTemplateVersion",
    description="A version is immutable once created, but for its state. `resources` is null for callers who "
    "may not see template internals (anyone but the owning project's admins).",
)
class EnvironmentTemplateVersionType:
    id: strawberry.ID
    version: str
    state: VersionState
    inputs: list[InputDefinition]
    outputs: list[OutputDefinition]
    created_at: datetime
    _model: strawberry.Private[EnvironmentTemplateVersion]

    @strawberry.field
    async def resources(self, info: Info) -> str | None:
        template = await info.context.loaders.get(templates_by_id).load(self._model.template_id)
        assert template is not None
        owner = await info.context.loaders.get(projects_by_id).load(template.project_id)
        assert owner is not None
        if not visibility.can_see_internals(info.context.actor, template, owner):
            return None
        version = self._model
        # The lists read versions without their resources (catalog.reads): a partial model, on
        # which the attribute is missing.
        if getattr(version, "resources", None) is None:
            loaded = await info.context.loaders.get(versions_by_id).load(version.id)
            assert loaded is not None
            version = loaded
        return version.resources

    @strawberry.field
    async def template(self, info: Info) -> EnvironmentTemplateType:
        template = await info.context.loaders.get(templates_by_id).load(self._model.template_id)
        assert template is not None
        return EnvironmentTemplateType.of(template)

    @classmethod
    def of(cls, version: EnvironmentTemplateVersion) -> EnvironmentTemplateVersionType:
        return cls(
            id=strawberry.ID(str(version.id)),
            version=version.version,
            state=version.state,
            inputs=[InputDefinition.of(d) for d in version.inputs],
            outputs=[
                OutputDefinition(name=o["name"], description=o.get("description"), value=o["value"])
                for o in version.outputs
            ],
            created_at=version.created_at,
            _model=version,
        )


@strawberry.type(name="EnvironmentTemplate")
class EnvironmentTemplateType:
    id: strawberry.ID
    name: str
    display_name: str
    description: str | None
    built_in: bool = strawberry.field(description="Shipped with gpupaas; every project may pin its versions.")
    created_at: datetime
    updated_at: datetime
    _model: strawberry.Private[EnvironmentTemplate]

    @strawberry.field
    async def project(self, info: Info) -> ProjectType:
        return await project_of(info, self._model.project_id)

    @strawberry.field(description="Newest first.")
    async def versions(self, info: Info) -> list[EnvironmentTemplateVersionType]:
        rows = await info.context.loaders.get(versions_of_template).load(self._model.id)
        return [EnvironmentTemplateVersionType.of(v) for v in rows]

    @classmethod
    def of(cls, template: EnvironmentTemplate) -> EnvironmentTemplateType:
        return cls(
            id=strawberry.ID(str(template.id)),
            name=template.name,
            display_name=template.display_name,
            description=template.description,
            built_in=template.built_in,
            created_at=template.created_at,
            updated_at=template.updated_at,
            _model=template,
        )


@strawberry.input
class CreateEnvironmentTemplateInput:
    project: str
    name: str
    display_name: str | None = None
    description: str | None = None


@strawberry.input
class UpdateEnvironmentTemplateInput:
    id: strawberry.ID
    name: str | None = None
    display_name: str | None = None
    description: str | None = None


@strawberry.input
class AddEnvironmentTemplateVersionInput:
    template: strawberry.ID
    version: str
    resources: str
    inputs: list[InputDefinitionInput] | None = None
    outputs: list[OutputDefinitionInput] | None = None
    state: VersionState | None = None


@strawberry.type
class EnvironmentTemplatePayload:
    environment_template: EnvironmentTemplateType | None
    user_errors: list[UserError]


@strawberry.type
class EnvironmentTemplateVersionPayload:
    version: EnvironmentTemplateVersionType | None
    user_errors: list[UserError]


# ---------------------------------------------------------------- compute profiles


@strawberry.type(name="Sharing")
class SharingType:
    mode: SharingMode
    projects: list[ProjectType]


@strawberry.input
class SharingInput:
    mode: SharingMode
    projects: list[str] | None = None


@strawberry.type(
    description='Quantities use Kubernetes notation: cpu "8" or "500m", memory and storage "64Gi".'
)
class ComputeResources:
    cpu: str
    memory: str
    storage: str
    gpu_count: int
    gpu_vendor: Vendor
    gpu_model: str | None


@strawberry.input
class ComputeResourcesInput:
    cpu: str
    memory: str
    storage: str
    gpu_count: int
    gpu_vendor: Vendor
    gpu_model: str | None = None

    def to_service(self) -> profiles.ResourcesIn:
        return profiles.ResourcesIn(
            cpu=self.cpu,
            memory=self.memory,
            storage=self.storage,
            gpu_count=self.gpu_count,
            gpu_vendor=self.gpu_vendor,
            gpu_model=self.gpu_model,
        )


@strawberry.type
class InputSetting:
    name: str
    value: str | None
    required: bool
    override: OverridePolicy
    allowed_values: list[str]


@strawberry.input
class InputSettingInput:
    name: str
    value: str | None = None
    required: bool | None = None
    override: OverridePolicy | None = None
    allowed_values: list[str] | None = None


@strawberry.type
class OutputSetting:
    name: str
    display_name: str | None
    visible: bool


@strawberry.input
class OutputSettingInput:
    name: str
    display_name: str | None = None
    visible: bool | None = None


@strawberry.type(name="ComputeProfile")
class ComputeProfileType:
    id: strawberry.ID
    name: str
    display_name: str
    description: str | None
    allocation_type: AllocationType
    resources: ComputeResources
    labels: list[KeyValue]
    annotations: list[KeyValue]
    icon_url: str | None
    readme: str | None = strawberry.field(description="Markdown source.")
    readme_html: str | None = strawberry.field(
        description="Rendered and sanitized: safe to put into a page as it is."
    )
    output_settings: list[OutputSetting]
    created_at: datetime
    updated_at: datetime
    _model: strawberry.Private[ComputeProfile]
    # What a list read along with the profile (catalog.reads.ListedProfile), as the API shows it:
    # the resolvers answer from it. None: they load what they show through the DataLoaders.
    _read: strawberry.Private[_ReadWithProfile | None] = None

    @strawberry.field
    async def project(self, info: Info) -> ProjectType:
        return await project_of(info, self._model.project_id)

    @strawberry.field(description="Where its instances go; null: the default cluster.")
    async def cluster(self, info: Info) -> ClusterType | None:
        cluster_id = self._model.cluster_id
        if cluster_id is None:
            return None
        cluster = await info.context.loaders.get(clusters_by_id).load(cluster_id)
        return ClusterType.of(cluster) if cluster else None

    @strawberry.field(
        description="One per input of the template version. A sensitive input's value shows as "
        '"********"; given back unchanged, it keeps the stored value.'
    )
    def input_settings(self, info: Info) -> list[InputSetting]:
        if self._read is not None:
            return self._read.input_settings
        return _later(self._load_input_settings(info))

    @strawberry.field
    def environment_template_version(self, info: Info) -> EnvironmentTemplateVersionType:
        if self._read is not None:
            return self._read.version
        return _later(self._load_version(info))

    @strawberry.field
    def environment_template(self, info: Info) -> EnvironmentTemplateType:
        if self._read is not None:
            return self._read.template
        return _later(self._load_template(info))

    @strawberry.field
    def sharing(self, info: Info) -> SharingType:
        if self._read is not None:
            return self._read.sharing
        return _later(self._load_sharing(info))

    async def _version(self, info: Info) -> EnvironmentTemplateVersion:
        version = await info.context.loaders.get(versions_by_id).load(self._model.template_version_id)
        assert version is not None
        return version

    async def _load_input_settings(self, info: Info) -> list[InputSetting]:
        return _input_settings(self._model, _sensitive_inputs(await self._version(info)))

    async def _load_version(self, info: Info) -> EnvironmentTemplateVersionType:
        return EnvironmentTemplateVersionType.of(await self._version(info))

    async def _load_template(self, info: Info) -> EnvironmentTemplateType:
        version = await self._version(info)
        template = await info.context.loaders.get(templates_by_id).load(version.template_id)
        assert template is not None
        return EnvironmentTemplateType.of(template)

    async def _load_sharing(self, info: Info) -> SharingType:
        shared = await info.context.loaders.get(shares_of_profile).load(self._model.id)
        visible = sharing.visible_targets(info.context.actor, self._model.project_id, shared)
        loaded = await info.context.loaders.get(projects_by_id).load_many(visible)
        projects = [p for p in loaded if p is not None]
        return SharingType(
            mode=self._model.sharing_mode,
            projects=[ProjectType.of(p) for p in sorted(projects, key=_by_name)],
        )

    @classmethod
    def of(cls, profile: ComputeProfile, read: _ReadWithProfile | None = None) -> ComputeProfileType:
        return cls(
            id=strawberry.ID(str(profile.id)),
            name=profile.name,
            display_name=profile.display_name,
            description=profile.description,
            allocation_type=profile.allocation_type,
            resources=ComputeResources(
                cpu=profile.cpu,
                memory=profile.memory,
                storage=profile.storage,
                gpu_count=profile.gpu_count,
                gpu_vendor=profile.gpu_vendor,
                gpu_model=profile.gpu_model,
            ),
            labels=key_values(profile.labels),
            annotations=key_values(profile.annotations),
            icon_url=profile.icon_url,
            readme=profile.readme,
            readme_html=profile.readme_html,
            output_settings=[
                OutputSetting(
                    name=s["name"], display_name=s.get("displayName"), visible=bool(s.get("visible", True))
                )
                for s in profile.output_settings
            ],
            created_at=profile.created_at,
            updated_at=profile.updated_at,
            _model=profile,
            _read=read,
        )


def _by_name(project: Project) -> str:
    return project.name


def _sensitive_inputs(version: EnvironmentTemplateVersion) -> frozenset[str]:
    return frozenset(d["name"] for d in version.inputs if d.get("sensitive"))


def _input_settings(profile: ComputeProfile, sensitive: frozenset[str]) -> list[InputSetting]:
    """The profile's settings as the API shows them: a sensitive input's value masked."""
    return [
        InputSetting(
            name=s["name"],
            value=SENSITIVE_MASK if s["name"] in sensitive and s.get("value") is not None else s.get("value"),
            required=bool(s.get("required")),
            override=OverridePolicy(s.get("override", "ALLOWED")),
            allowed_values=list(s.get("allowedValues") or []),
        )
        for s in profile.input_settings
    ]


@dataclass(frozen=True)
class _ReadWithProfile:
    input_settings: list[InputSetting]
    version: EnvironmentTemplateVersionType
    template: EnvironmentTemplateType
    sharing: SharingType


class _Listing:
    """The types of a list's profiles (ListedProfile) for one caller: each version, template and
    project made once, and shared by the profiles that show it."""

    def __init__(self, info: Info) -> None:
        self.actor = info.context.actor
        self.versions: dict[uuid.UUID, tuple[EnvironmentTemplateVersionType, frozenset[str]]] = {}
        self.templates: dict[uuid.UUID, EnvironmentTemplateType] = {}
        self.projects: dict[uuid.UUID, ProjectType] = {}

    def profile(self, listed: ListedProfile) -> ComputeProfileType:
        profile = listed.profile
        known = self.versions.get(listed.version.id)
        if known is None:
            known = self.versions[listed.version.id] = (
                EnvironmentTemplateVersionType.of(listed.version),
                _sensitive_inputs(listed.version),
            )
        version, sensitive = known
        template = self.templates.get(listed.template.id)
        if template is None:
            template = self.templates[listed.template.id] = EnvironmentTemplateType.of(listed.template)
        by_id = {p.id: p for p in listed.shared_with}
        visible = sharing.visible_targets(self.actor, profile.project_id, list(by_id))
        projects = sorted((by_id[pid] for pid in visible), key=_by_name)
        return ComputeProfileType.of(
            profile,
            _ReadWithProfile(
                input_settings=_input_settings(profile, sensitive),
                version=version,
                template=template,
                sharing=SharingType(mode=profile.sharing_mode, projects=[self.project(p) for p in projects]),
            ),
        )

    def project(self, project: Project) -> ProjectType:
        made = self.projects.get(project.id)
        if made is None:
            made = self.projects[project.id] = ProjectType.of(project)
        return made


@strawberry.input
class CreateComputeProfileInput:
    project: str
    name: str
    display_name: str
    allocation_type: AllocationType
    environment_template_version: strawberry.ID
    resources: ComputeResourcesInput
    description: str | None = None
    labels: list[KeyValueInput] | None = None
    annotations: list[KeyValueInput] | None = None
    icon_url: str | None = None
    readme: str | None = None
    input_settings: list[InputSettingInput] | None = None
    output_settings: list[OutputSettingInput] | None = None
    cluster: strawberry.ID | None = None


@strawberry.input(
    description="`name` may be given only with its current value: another value is an IMMUTABLE error."
)
class UpdateComputeProfileInput:
    id: strawberry.ID
    name: str | None = None
    display_name: str | None = None
    description: str | None = None
    allocation_type: AllocationType | None = None
    environment_template_version: strawberry.ID | None = None
    resources: ComputeResourcesInput | None = None
    labels: list[KeyValueInput] | None = None
    annotations: list[KeyValueInput] | None = None
    icon_url: str | None = None
    readme: str | None = None
    input_settings: list[InputSettingInput] | None = None
    output_settings: list[OutputSettingInput] | None = None
    cluster: strawberry.ID | None = None


def _profile_in(data: CreateComputeProfileInput | UpdateComputeProfileInput) -> profiles.ProfileIn:
    return profiles.ProfileIn(
        name=data.name,
        display_name=data.display_name,
        description=data.description,
        allocation_type=data.allocation_type,
        template_version_id=data.environment_template_version,
        resources=data.resources.to_service() if data.resources else None,
        labels=pairs_in(data.labels),
        annotations=pairs_in(data.annotations),
        icon_url=data.icon_url,
        readme=data.readme,
        cluster_id=data.cluster,
        input_settings=None
        if data.input_settings is None
        else [
            profile_settings.InputSettingIn(
                name=s.name,
                value=s.value,
                required=s.required,
                override=s.override.value if s.override else None,
                allowed_values=s.allowed_values,
            )
            for s in data.input_settings
        ],
        output_settings=None
        if data.output_settings is None
        else [
            profile_settings.OutputSettingIn(name=s.name, display_name=s.display_name, visible=s.visible)
            for s in data.output_settings
        ],
    )


@strawberry.type
class ComputeProfilePayload:
    compute_profile: ComputeProfileType | None
    user_errors: list[UserError]


def _template_payload(
    template: EnvironmentTemplate | None, errors: list[UserError]
) -> EnvironmentTemplatePayload:
    return EnvironmentTemplatePayload(
        environment_template=EnvironmentTemplateType.of(template) if template else None, user_errors=errors
    )


def _version_payload(
    version: EnvironmentTemplateVersion | None, errors: list[UserError]
) -> EnvironmentTemplateVersionPayload:
    return EnvironmentTemplateVersionPayload(
        version=EnvironmentTemplateVersionType.of(version) if version else None, user_errors=errors
    )


def _profile_payload(profile: ComputeProfile | None, errors: list[UserError]) -> ComputeProfilePayload:
    return ComputeProfilePayload(
        compute_profile=ComputeProfileType.of(profile) if profile else None, user_errors=errors
    )


# ---------------------------------------------------------------- roots


@strawberry.type
class CatalogQuery:
    @strawberry.field(
        description="A readme as the catalog would show it: markdown rendered and sanitized by the "
        "server (the profile form's live preview). Null when empty; a readme that cannot be stored "
        "(too long, control characters) is an INVALID error saying why."
    )
    async def render_readme(self, info: Info, markdown: str) -> str | None:
        info.context.actor.require_user()
        problem = readme_mod.readme_problem(markdown)
        if problem is not None:
            raise InvalidArgument(f"markdown: {problem}")
        return readme_mod.render_readme(markdown)

    @strawberry.field(
        description="The project's templates and the built-in ones; "
        "search matches name, display name and description."
    )
    async def environment_templates(
        self, info: Info, project: str, search: str | None = None
    ) -> list[EnvironmentTemplateType]:
        rows = await templates.list_templates(info.context.actor, project, search)
        return [EnvironmentTemplateType.of(t) for t in rows]

    @strawberry.field
    async def environment_template(self, info: Info, id: strawberry.ID) -> EnvironmentTemplateType | None:
        template = await templates.get_template(info.context.actor, id)
        return EnvironmentTemplateType.of(template) if template else None

    @strawberry.field(description="The profiles a project owns (its PaaS admin's view), newest first.")
    async def compute_profiles(
        self,
        info: Info,
        project: str,
        search: str | None = None,
        first: int | None = None,
        after: str | None = None,
    ) -> Connection[ComputeProfileType]:
        page = await profiles.list_profiles(info.context.actor, project, search, first, after)
        return Connection.of(page, _Listing(info).profile, lambda row: cursor_of(row.profile))

    @strawberry.field
    async def compute_profile(self, info: Info, id: strawberry.ID) -> ComputeProfileType | None:
        profile = await profiles.get_profile(info.context.actor, id)
        return ComputeProfileType.of(profile) if profile else None

    @strawberry.field(
        description="The SKUs a project's users may launch: its own profiles and those shared with it."
    )
    async def catalog(self, info: Info, project: str, search: str | None = None) -> list[ComputeProfileType]:
        listing = _Listing(info)
        return [listing.profile(row) for row in await profiles.catalog(info.context.actor, project, search)]


@strawberry.type
class CatalogMutation:
    @strawberry.mutation
    async def create_environment_template(
        self, info: Info, input: CreateEnvironmentTemplateInput
    ) -> EnvironmentTemplatePayload:
        return _template_payload(
            *await attempt(
                templates.create_template(
                    info.context.actor, input.project, input.name, input.display_name, input.description
                )
            )
        )

    @strawberry.mutation
    async def update_environment_template(
        self, info: Info, input: UpdateEnvironmentTemplateInput
    ) -> EnvironmentTemplatePayload:
        return _template_payload(
            *await attempt(
                templates.update_template(
                    info.context.actor, input.id, input.name, input.display_name, input.description
                )
            )
        )

    @strawberry.mutation
    async def add_environment_template_version(
        self, info: Info, input: AddEnvironmentTemplateVersionInput
    ) -> EnvironmentTemplateVersionPayload:
        inputs = [
            templates.InputDefinitionIn(
                name=i.name,
                type=i.type.value,
                description=i.description,
                required=i.required,
                default=i.default,
                options=i.options,
                pattern=i.pattern,
                min=i.min,
                max=i.max,
                sensitive=i.sensitive,
            )
            for i in input.inputs or []
        ]
        outputs = [
            templates.OutputDefinitionIn(name=o.name, value=o.value, description=o.description)
            for o in input.outputs or []
        ]
        version, errors = await attempt(
            templates.add_version(
                info.context.actor,
                input.template,
                input.version,
                input.resources,
                inputs,
                outputs,
                input.state,
            )
        )
        return _version_payload(version, errors)

    @strawberry.mutation
    async def set_environment_template_version_state(
        self, info: Info, id: strawberry.ID, state: VersionState
    ) -> EnvironmentTemplateVersionPayload:
        version, errors = await attempt(templates.set_version_state(info.context.actor, id, state))
        return _version_payload(version, errors)

    @strawberry.mutation
    async def delete_environment_template(self, info: Info, id: strawberry.ID) -> DeletePayload:
        return await delete_payload(templates.delete_template(info.context.actor, id))

    @strawberry.mutation
    async def create_compute_profile(
        self, info: Info, input: CreateComputeProfileInput
    ) -> ComputeProfilePayload:
        return _profile_payload(
            *await attempt(profiles.create_profile(info.context.actor, input.project, _profile_in(input)))
        )

    @strawberry.mutation
    async def update_compute_profile(
        self, info: Info, input: UpdateComputeProfileInput
    ) -> ComputeProfilePayload:
        return _profile_payload(
            *await attempt(profiles.update_profile(info.context.actor, input.id, _profile_in(input)))
        )

    @strawberry.mutation
    async def set_compute_profile_sharing(
        self, info: Info, id: strawberry.ID, sharing: SharingInput
    ) -> ComputeProfilePayload:
        return _profile_payload(
            *await attempt(
                profiles.set_profile_sharing(info.context.actor, id, sharing.mode, sharing.projects)
            )
        )

    @strawberry.mutation
    async def delete_compute_profile(self, info: Info, id: strawberry.ID) -> DeletePayload:
        return await delete_payload(profiles.delete_profile(info.context.actor, id))
