"""GraphQL of compute profiles: types, inputs, payloads, sharing, the loaders of profiles and
their share targets, and the lists' profiles (thin: the rules are catalog.service.profiles').

The profile list and the catalog read each profile's version, template and share targets in their
own statement (catalog.reads), and their profiles answer those fields from what was read, with
plain resolvers (no coroutine, no asyncio task per field); elsewhere related objects come through
the request's DataLoaders, so lists cost a fixed number of queries whatever their length.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any

import strawberry
from strawberry.dataloader import DataLoader

from gpupaas.accounts.graphql import ProjectType, project_of, projects_by_id
from gpupaas.accounts.models import Project
from gpupaas.accounts.sharing import SharingMode
from gpupaas.catalog.graphql.templates import (
    EnvironmentTemplateType,
    EnvironmentTemplateVersionType,
    templates_by_id,
    versions_by_id,
)
from gpupaas.catalog.models import (
    AllocationType,
    ComputeProfile,
    ComputeProfileShare,
    EnvironmentTemplateVersion,
)
from gpupaas.catalog.service import profile_settings, profiles, visibility
from gpupaas.catalog.service.visibility import ShownProfile
from gpupaas.clusters.graphql import ClusterType, clusters_by_id
from gpupaas.core.crypto import Sealer
from gpupaas.core.gpus import Vendor
from gpupaas.graphql.common import KeyValue, KeyValueInput, UserError, key_values, pairs_in
from gpupaas.graphql.context import Info
from gpupaas.graphql.loaders import by_id, grouped_pairs
from gpupaas.graphql.time_limits import TimeLimitSettings, TimeLimitsInput, settings_of

AllocationTypeEnum = strawberry.enum(AllocationType, name="AllocationType")
SharingModeEnum = strawberry.enum(SharingMode, name="SharingMode")
VendorEnum = strawberry.enum(Vendor, name="Vendor")


@strawberry.enum
class OverridePolicy(Enum):
    NOT_ALLOWED = "NOT_ALLOWED"
    ALLOWED = "ALLOWED"
    RESTRICTED = "RESTRICTED"


def profiles_by_id() -> DataLoader[uuid.UUID, ComputeProfile | None]:
    return by_id(ComputeProfile)


def shares_of_profile() -> DataLoader[uuid.UUID, list[uuid.UUID]]:
    """The projects a profile is shared with (by id)."""

    async def rows(keys: list[uuid.UUID]) -> list[tuple[uuid.UUID, uuid.UUID]]:
        pairs = await ComputeProfileShare.filter(profile_id__in=keys).values_list("profile_id", "project_id")
        return [(profile_id, project_id) for profile_id, project_id in pairs]

    return grouped_pairs(rows)


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
    # What a list read along with the profile (catalog.service.visibility.ShownProfile), as the
    # API shows it: the resolvers answer from it. None: they load what they show through the
    # DataLoaders.
    _read: strawberry.Private[_ReadWithProfile | None] = None

    @strawberry.field(
        description="Its instances' default auto-stop and maximum lifetime (instances copy them at launch)."
    )
    def time_limits(self) -> TimeLimitSettings:
        return settings_of(self._model)

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

    # The four fields a list read along with the profile are plain resolvers that give either
    # the value at once or an awaitable that loads it (graphql-core awaits whatever awaitable a
    # resolver returns): an async resolver would cost a coroutine and an asyncio task per field
    # and profile even when the value is at hand. Their Python type says so; `graphql_type` is
    # what the schema shows.
    @strawberry.field(
        description="One per input of the template version. A sensitive input's value shows as "
        '"********" to everyone; given back unchanged, it keeps the stored value. `reveal: true` shows '
        "it to the admins of the profile's project and is FORBIDDEN to anyone else.",
        graphql_type=list[InputSetting],
    )
    def input_settings(
        self, info: Info, reveal: bool = False
    ) -> list[InputSetting] | Awaitable[list[InputSetting]]:
        if reveal:
            return self._revealed_input_settings(info)
        if self._read is not None:
            return self._read.input_settings
        return self._load_input_settings(info)

    @strawberry.field(graphql_type=EnvironmentTemplateVersionType)
    def environment_template_version(
        self, info: Info
    ) -> EnvironmentTemplateVersionType | Awaitable[EnvironmentTemplateVersionType]:
        if self._read is not None:
            return self._read.version
        return self._load_version(info)

    @strawberry.field(graphql_type=EnvironmentTemplateType)
    def environment_template(
        self, info: Info
    ) -> EnvironmentTemplateType | Awaitable[EnvironmentTemplateType]:
        if self._read is not None:
            return self._read.template
        return self._load_template(info)

    @strawberry.field(graphql_type=SharingType)
    def sharing(self, info: Info) -> SharingType | Awaitable[SharingType]:
        if self._read is not None:
            return self._read.sharing
        return self._load_sharing(info)

    async def _version(self, info: Info) -> EnvironmentTemplateVersion:
        version = await info.context.loaders.get(versions_by_id).load(self._model.template_version_id)
        assert version is not None
        return version

    async def _load_input_settings(self, info: Info) -> list[InputSetting]:
        sensitive = visibility.sensitive_inputs(await self._version(info))
        return _input_settings(visibility.input_settings_shown(self._model, sensitive))

    async def _revealed_input_settings(self, info: Info) -> list[InputSetting]:
        sensitive = visibility.sensitive_inputs(await self._version(info))
        owner = await info.context.loaders.get(projects_by_id).load(self._model.project_id)
        assert owner is not None
        sealer = Sealer(info.context.settings.secret_key)
        return _input_settings(
            visibility.input_settings_revealed(info.context.actor, self._model, owner, sensitive, sealer)
        )

    async def _load_version(self, info: Info) -> EnvironmentTemplateVersionType:
        return EnvironmentTemplateVersionType.of(await self._version(info))

    async def _load_template(self, info: Info) -> EnvironmentTemplateType:
        version = await self._version(info)
        template = await info.context.loaders.get(templates_by_id).load(version.template_id)
        assert template is not None
        return EnvironmentTemplateType.of(template)

    async def _load_sharing(self, info: Info) -> SharingType:
        shared = await info.context.loaders.get(shares_of_profile).load(self._model.id)
        shown = visibility.share_targets_shown(info.context.actor, self._model, shared)
        loaded = await info.context.loaders.get(projects_by_id).load_many(shown)
        return _sharing(self._model, [p for p in loaded if p is not None], ProjectType.of)

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


def _input_settings(shown: list[dict[str, Any]]) -> list[InputSetting]:
    """Input settings as visibility.input_settings_shown gives them, as types."""
    return [
        InputSetting(
            name=s["name"],
            value=s.get("value"),
            required=bool(s.get("required")),
            override=OverridePolicy(s.get("override", "ALLOWED")),
            allowed_values=list(s.get("allowedValues") or []),
        )
        for s in shown
    ]


def _sharing(
    profile: ComputeProfile, shown: list[Project], project_type: Callable[[Project], ProjectType]
) -> SharingType:
    """The profile's sharing with the share targets shown (visibility.share_targets_shown), by name."""
    return SharingType(
        mode=profile.sharing_mode,
        projects=[project_type(p) for p in sorted(shown, key=_by_name)],
    )


def _by_name(project: Project) -> str:
    return project.name


@dataclass(frozen=True)
class _ReadWithProfile:
    input_settings: list[InputSetting]
    version: EnvironmentTemplateVersionType
    template: EnvironmentTemplateType
    sharing: SharingType


class Listing:
    """The types of a list's profiles (ShownProfile): each version, template and project made
    once, and shared by the profiles that show it."""

    def __init__(self) -> None:
        self.versions: dict[uuid.UUID, EnvironmentTemplateVersionType] = {}
        self.templates: dict[uuid.UUID, EnvironmentTemplateType] = {}
        self.projects: dict[uuid.UUID, ProjectType] = {}

    def profile(self, shown: ShownProfile) -> ComputeProfileType:
        version = self.versions.get(shown.version.id)
        if version is None:
            version = self.versions[shown.version.id] = EnvironmentTemplateVersionType.of(shown.version)
        template = self.templates.get(shown.template.id)
        if template is None:
            template = self.templates[shown.template.id] = EnvironmentTemplateType.of(shown.template)
        return ComputeProfileType.of(
            shown.profile,
            _ReadWithProfile(
                input_settings=_input_settings(shown.input_settings),
                version=version,
                template=template,
                sharing=_sharing(shown.profile, shown.shared_with, self.project),
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
    time_limits: TimeLimitsInput | None = strawberry.field(
        default=None,
        description="The default auto-stop and the maximum lifetime of its instances (both at once).",
    )


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
    time_limits: TimeLimitsInput | None = strawberry.field(
        default=None,
        description="The default auto-stop and the maximum lifetime of its instances (both at once).",
    )


def profile_in(data: CreateComputeProfileInput | UpdateComputeProfileInput) -> profiles.ProfileIn:
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
        time_limits=data.time_limits.to_service() if data.time_limits else None,
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
    warnings: list[UserError] = strawberry.field(
        default_factory=list,
        description="What the saved profile may want fixed, without it being refused: its GPU model "
        "on no registered cluster (code NOT_FOUND, field input.resources.gpuModel).",
    )


def profile_payload(profile: ComputeProfile | None, errors: list[UserError]) -> ComputeProfilePayload:
    return ComputeProfilePayload(
        compute_profile=ComputeProfileType.of(profile) if profile else None, user_errors=errors
    )


async def saved_profile_payload(
    profile: ComputeProfile | None, errors: list[UserError]
) -> ComputeProfilePayload:
    """The payload of a create or update, with the saved profile's warnings."""
    payload = profile_payload(profile, errors)
    if profile is not None:
        payload.warnings = [
            UserError(field=list(p.field) if p.field else None, message=p.message, code=p.code)
            for p in await profiles.gpu_model_warnings(profile)
        ]
    return payload
