"""GraphQL of environment templates and their versions: types, inputs, payloads and the loaders
of templates and versions (thin: the rules are catalog.service.templates')."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable
from datetime import datetime
from enum import Enum
from typing import Any

import strawberry
from strawberry.dataloader import DataLoader

from gpupaas.accounts.graphql import ProjectType, project_of, projects_by_id
from gpupaas.catalog.models import EnvironmentTemplate, EnvironmentTemplateVersion, VersionState
from gpupaas.catalog.service import templates, visibility
from gpupaas.core.crypto import Sealer
from gpupaas.graphql.common import UserError
from gpupaas.graphql.context import Info
from gpupaas.graphql.loaders import by_id, grouped

VersionStateEnum = strawberry.enum(VersionState, name="VersionState")


@strawberry.enum
class InputType(Enum):
    STRING = "STRING"
    NUMBER = "NUMBER"
    BOOLEAN = "BOOLEAN"
    QUANTITY = "QUANTITY"


def templates_by_id() -> DataLoader[uuid.UUID, EnvironmentTemplate | None]:
    return by_id(EnvironmentTemplate)


def versions_by_id() -> DataLoader[uuid.UUID, EnvironmentTemplateVersion | None]:
    return by_id(EnvironmentTemplateVersion)


def versions_of_template() -> DataLoader[uuid.UUID, list[EnvironmentTemplateVersion]]:
    """A template's versions, newest first."""

    async def rows(keys: list[uuid.UUID]) -> list[EnvironmentTemplateVersion]:
        return await EnvironmentTemplateVersion.filter(template_id__in=keys).order_by("-created_at", "-id")

    return grouped(rows, lambda version: version.template_id)


@strawberry.type(
    description='A sensitive input\'s `default` shows as "********" (see EnvironmentTemplateVersion.inputs).'
)
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

    def to_service(self) -> templates.InputDefinitionIn:
        return templates.InputDefinitionIn(
            name=self.name,
            type=self.type.value,
            description=self.description,
            required=self.required,
            default=self.default,
            options=self.options,
            pattern=self.pattern,
            min=self.min,
            max=self.max,
            sensitive=self.sensitive,
        )


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

    def to_service(self) -> templates.OutputDefinitionIn:
        return templates.OutputDefinitionIn(name=self.name, value=self.value, description=self.description)


@strawberry.type(
    name="EnvironmentTemplateVersion",
    description="A version is immutable once created, but for its state. `resources` is null for callers who "
    "may not see template internals (anyone but the owning project's admins).",
)
class EnvironmentTemplateVersionType:
    id: strawberry.ID
    version: str
    state: VersionState
    outputs: list[OutputDefinition]
    created_at: datetime
    _model: strawberry.Private[EnvironmentTemplateVersion]
    _shown_inputs: strawberry.Private[list[InputDefinition] | None] = None

    # A plain resolver (no coroutine unless `reveal` needs the template's project): the lists share
    # one version object among the profiles that pin it.
    @strawberry.field(
        description='A sensitive input\'s default shows as "********" to everyone; `reveal: true` shows '
        "it to the admins of the template's project (platform admins for built-in templates) and is "
        "FORBIDDEN to anyone else.",
        graphql_type=list[InputDefinition],
    )
    def inputs(
        self, info: Info, reveal: bool = False
    ) -> list[InputDefinition] | Awaitable[list[InputDefinition]]:
        if reveal:
            return self._revealed_inputs(info)
        if self._shown_inputs is None:
            self._shown_inputs = [
                InputDefinition.of(d) for d in visibility.definitions_shown(self._model.inputs)
            ]
        return self._shown_inputs

    async def _revealed_inputs(self, info: Info) -> list[InputDefinition]:
        template = await info.context.loaders.get(templates_by_id).load(self._model.template_id)
        assert template is not None
        owner = await info.context.loaders.get(projects_by_id).load(template.project_id)
        assert owner is not None
        sealer = Sealer(info.context.settings.secret_key)
        revealed = visibility.definitions_revealed(info.context.actor, owner, self._model.inputs, sealer)
        return [InputDefinition.of(d) for d in revealed]

    @strawberry.field
    async def resources(self, info: Info) -> str | None:
        template = await info.context.loaders.get(templates_by_id).load(self._model.template_id)
        assert template is not None
        owner = await info.context.loaders.get(projects_by_id).load(template.project_id)
        assert owner is not None
        return await visibility.resources_shown(
            info.context.actor, template, owner, lambda: self._load_resources(info)
        )

    async def _load_resources(self, info: Info) -> str:
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

    @strawberry.field(
        description="Newest first. Another project (one a profile pinning this template is shared "
        "with) sees only the versions such profiles pin."
    )
    async def versions(self, info: Info) -> list[EnvironmentTemplateVersionType]:
        rows = await info.context.loaders.get(versions_of_template).load(self._model.id)
        owner = await info.context.loaders.get(projects_by_id).load(self._model.project_id)
        assert owner is not None
        shown = await visibility.versions_shown(info.context.actor, self._model, owner, rows)
        return [EnvironmentTemplateVersionType.of(v) for v in shown]

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


def template_payload(
    template: EnvironmentTemplate | None, errors: list[UserError]
) -> EnvironmentTemplatePayload:
    return EnvironmentTemplatePayload(
        environment_template=EnvironmentTemplateType.of(template) if template else None, user_errors=errors
    )


def version_payload(
    version: EnvironmentTemplateVersion | None, errors: list[UserError]
) -> EnvironmentTemplateVersionPayload:
    return EnvironmentTemplateVersionPayload(
        version=EnvironmentTemplateVersionType.of(version) if version else None, user_errors=errors
    )
