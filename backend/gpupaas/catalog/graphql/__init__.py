"""GraphQL for the catalog: environment templates (templates.py), compute profiles and sharing
(profiles.py), and here the catalog's root fields, each a call to catalog.service and a
conversion of what it gives."""

from __future__ import annotations

import strawberry

from gpupaas.catalog.graphql.profiles import (
    ComputeProfilePayload,
    ComputeProfileType,
    CreateComputeProfileInput,
    Listing,
    SharingInput,
    UpdateComputeProfileInput,
    profile_in,
    profile_payload,
    saved_profile_payload,
)
from gpupaas.catalog.graphql.templates import (
    AddEnvironmentTemplateVersionInput,
    CreateEnvironmentTemplateInput,
    EnvironmentTemplatePayload,
    EnvironmentTemplateType,
    EnvironmentTemplateVersionPayload,
    UpdateEnvironmentTemplateInput,
    template_payload,
    version_payload,
)
from gpupaas.catalog.models import VersionState
from gpupaas.catalog.service import profiles, templates
from gpupaas.graphql.common import DeletePayload, attempt, delete_payload
from gpupaas.graphql.connections import Connection, cursor_of
from gpupaas.graphql.context import Info


@strawberry.type
class CatalogQuery:
    @strawberry.field(
        description="A readme as the catalog would show it: markdown rendered and sanitized by the "
        "server (the profile form's live preview). Null when empty; a readme that cannot be stored "
        "(too long, control characters) is an INVALID error saying why."
    )
    async def render_readme(self, info: Info, markdown: str) -> str | None:
        return profiles.readme_preview(info.context.actor, markdown)

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
        return Connection.of(page, Listing().profile, lambda row: cursor_of(row.profile))

    @strawberry.field
    async def compute_profile(self, info: Info, id: strawberry.ID) -> ComputeProfileType | None:
        profile = await profiles.get_profile(info.context.actor, id)
        return ComputeProfileType.of(profile) if profile else None

    @strawberry.field(
        description="The SKUs a project's users may launch: its own profiles and those shared with it."
    )
    async def catalog(self, info: Info, project: str, search: str | None = None) -> list[ComputeProfileType]:
        listing = Listing()
        return [listing.profile(row) for row in await profiles.catalog(info.context.actor, project, search)]


@strawberry.type
class CatalogMutation:
    @strawberry.mutation
    async def create_environment_template(
        self, info: Info, input: CreateEnvironmentTemplateInput
    ) -> EnvironmentTemplatePayload:
        return template_payload(
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
        return template_payload(
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
        version, errors = await attempt(
            templates.add_version(
                info.context.actor,
                input.template,
                input.version,
                input.resources,
                [i.to_service() for i in input.inputs or []],
                [o.to_service() for o in input.outputs or []],
                input.state,
                secret_key=info.context.settings.secret_key,
            )
        )
        return version_payload(version, errors)

    @strawberry.mutation
    async def set_environment_template_version_state(
        self, info: Info, id: strawberry.ID, state: VersionState
    ) -> EnvironmentTemplateVersionPayload:
        version, errors = await attempt(templates.set_version_state(info.context.actor, id, state))
        return version_payload(version, errors)

    @strawberry.mutation
    async def delete_environment_template(self, info: Info, id: strawberry.ID) -> DeletePayload:
        return await delete_payload(templates.delete_template(info.context.actor, id))

    @strawberry.mutation
    async def create_compute_profile(
        self, info: Info, input: CreateComputeProfileInput
    ) -> ComputeProfilePayload:
        return await saved_profile_payload(
            *await attempt(
                profiles.create_profile(
                    info.context.actor,
                    input.project,
                    profile_in(input),
                    secret_key=info.context.settings.secret_key,
                )
            )
        )

    @strawberry.mutation
    async def update_compute_profile(
        self, info: Info, input: UpdateComputeProfileInput
    ) -> ComputeProfilePayload:
        return await saved_profile_payload(
            *await attempt(
                profiles.update_profile(
                    info.context.actor,
                    input.id,
                    profile_in(input),
                    secret_key=info.context.settings.secret_key,
                )
            )
        )

    @strawberry.mutation
    async def set_compute_profile_sharing(
        self, info: Info, id: strawberry.ID, sharing: SharingInput
    ) -> ComputeProfilePayload:
        return profile_payload(
            *await attempt(
                profiles.set_profile_sharing(info.context.actor, id, sharing.mode, sharing.projects)
            )
        )

    @strawberry.mutation
    async def delete_compute_profile(self, info: Info, id: strawberry.ID) -> DeletePayload:
        return await delete_payload(profiles.delete_profile(info.context.actor, id))
