"""What a caller may see of the catalog, decided here and nowhere else (the GraphQL layer shows
what these functions give): the projects its lists are for, template internals, which versions of
a template another project sees, the defaults and values of inputs (sensitive ones masked for
everyone, unsealed for the owning project's admins who ask) and the projects a profile is shared
with."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tortoise.expressions import Q

from gpupaas.accounts import sharing
from gpupaas.accounts.models import Project
from gpupaas.accounts.service import project_by_name
from gpupaas.accounts.sharing import SharingMode
from gpupaas.catalog.models import ComputeProfile, EnvironmentTemplate, EnvironmentTemplateVersion
from gpupaas.catalog.reads import ListedProfile
from gpupaas.catalog.service.definitions import (
    SENSITIVE_MASK,
    sensitive_names,
    settings_with_values,
    unsealing,
)
from gpupaas.core.actor import Actor
from gpupaas.core.crypto import Sealer
from gpupaas.core.errors import Forbidden, NotFound


async def project_for_listing(actor: Actor, project: str) -> Project:
    """The project a list is asked for; one the caller cannot see is reported as not found."""
    found = await project_by_name(actor, project)
    if found is None:
        raise NotFound(f'project "{project}" not found')
    return found


# ---------------------------------------------------------------- template internals


async def profile_visible(
    actor: Actor,
    profile: ComputeProfile,
    owner: Project,
    shares: Callable[[], Awaitable[Sequence[uuid.UUID]]],
) -> bool:
    """Whether the caller sees the profile (its project's members, or a project it is shared with);
    `shares` gives the projects it is shared with, asked for only when they decide."""

    async def shared_with_any(project_ids: list[uuid.UUID]) -> bool:
        return any(p in project_ids for p in await shares())

    return await sharing.visible_to(actor, owner, profile.sharing_mode, shared_with_any)


def can_see_internals(actor: Actor, template: EnvironmentTemplate, owner: Project) -> bool:
    """Template YAML is for the owning project's admins; built-in YAML for any project admin."""
    if actor.is_admin_of(owner.id):
        return True
    return owner.is_system and any(actor.is_admin_of(pid) for pid in actor.roles)


async def resources_shown(
    actor: Actor, template: EnvironmentTemplate, owner: Project, read: Callable[[], Awaitable[str]]
) -> str | None:
    """A version of `template` (owned by `owner`) as the caller sees its manifests: `read()`'s
    text for those who may see template internals, None for the others, for whom it is not read
    (the lists read versions without their manifests; reading them costs a query)."""
    if not can_see_internals(actor, template, owner):
        return None
    return await read()


async def versions_shown(
    actor: Actor,
    template: EnvironmentTemplate,
    owner: Project,
    versions: Sequence[EnvironmentTemplateVersion],
) -> list[EnvironmentTemplateVersion]:
    """Which of the template's versions (`versions`) the caller sees: every one to those who see
    its project (its members, platform admins; everyone for the built-in ones); to another project
    only those that a profile shared with it pins (how it reached the template)."""
    if actor.can_see(owner):
        return list(versions)
    if not actor.roles:
        return []
    mine = list(actor.roles)
    shared = Q(sharing_mode=SharingMode.ALL_PROJECTS) | Q(
        sharing_mode=SharingMode.SELECTED_PROJECTS, shares__project_id__in=mine
    )
    pinned = set(
        await ComputeProfile.filter(shared, template_version__template_id=template.id).values_list(
            "template_version_id", flat=True
        )
    )
    return [version for version in versions if version.id in pinned]


# ---------------------------------------------------------------- input values


def sensitive_inputs(version: EnvironmentTemplateVersion) -> frozenset[str]:
    """The names of the version's inputs whose values are never shown."""
    return sensitive_names(version.inputs)


def _mask(value: str) -> str:
    return SENSITIVE_MASK


def require_reveal(actor: Actor, owner: Project, what: str) -> None:
    """Sensitive values are unsealed for the admins of the project that holds them (`owner`;
    platform admins for the built-in templates), when they ask: `what` they asked for."""
    if not actor.is_admin_of(owner.id):
        raise Forbidden(
            f'Only admins of project "{owner.name}" may reveal the sensitive values of its {what}; '
            f'others see "{SENSITIVE_MASK}" (leave out reveal).'
        )


def definitions_shown(definitions: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """A version's input definitions (as stored) as everyone, its admins included, is shown them:
    the default of a sensitive input that has one is SENSITIVE_MASK."""
    return [
        {**d, "default": SENSITIVE_MASK} if d.get("sensitive") and d.get("default") is not None else d
        for d in definitions
    ]


def definitions_revealed(
    actor: Actor, owner: Project, definitions: Sequence[dict[str, Any]], sealer: Sealer
) -> list[dict[str, Any]]:
    """A version's input definitions with the sensitive defaults unsealed, for the admins of its
    template's project (`owner`); Forbidden for anyone else."""
    require_reveal(actor, owner, "environment templates")
    unseal = unsealing(sealer, "template version")
    return [
        {**d, "default": unseal(d["default"])} if d.get("sensitive") and d.get("default") is not None else d
        for d in definitions
    ]


def input_settings_shown(profile: ComputeProfile, sensitive: frozenset[str]) -> list[dict[str, Any]]:
    """The profile's input settings (as stored) as everyone, its admins included, is shown them:
    the value of a `sensitive` input that has one is SENSITIVE_MASK (which, given back, keeps it:
    profile_settings). The stored settings are left as they are."""
    return settings_with_values(profile.input_settings, sensitive, _mask)


def input_settings_revealed(
    actor: Actor, profile: ComputeProfile, owner: Project, sensitive: frozenset[str], sealer: Sealer
) -> list[dict[str, Any]]:
    """The profile's input settings with the sensitive values unsealed, for the admins of its
    project (`owner`); Forbidden for anyone else (the projects it is shared with included)."""
    require_reveal(actor, owner, "compute profiles")
    return settings_with_values(profile.input_settings, sensitive, unsealing(sealer, "compute profile"))


# ---------------------------------------------------------------- share targets


def share_targets_shown(
    actor: Actor, profile: ComputeProfile, shared: Sequence[uuid.UUID]
) -> list[uuid.UUID]:
    """Which of the projects the profile is shared with (`shared`, by id) the caller is shown:
    every one to the owning project's members and platform admins, only their own projects to
    the members of the others."""
    return sharing.visible_targets(actor, profile.project_id, shared)


# ---------------------------------------------------------------- the lists


@dataclass(frozen=True)
class ShownProfile:
    """A profile of the profile list or the catalog as the caller may see it: the version it pins
    (without its manifests: resources_shown) and that version's template, its input settings as
    shown and the projects it is shared with that the caller is shown."""

    profile: ComputeProfile
    version: EnvironmentTemplateVersion
    template: EnvironmentTemplate
    input_settings: list[dict[str, Any]]
    shared_with: list[Project]


def profiles_shown(actor: Actor, rows: Sequence[ListedProfile]) -> list[ShownProfile]:
    """The listed profiles (catalog.reads) as the caller may see them; the versions, templates and
    projects the rows share stay shared, and each version's sensitive inputs are found once."""
    sensitive: dict[uuid.UUID, frozenset[str]] = {}
    shown = []
    for row in rows:
        secret = sensitive.get(row.version.id)
        if secret is None:
            secret = sensitive[row.version.id] = sensitive_inputs(row.version)
        targets = {project.id: project for project in row.shared_with}
        shown.append(
            ShownProfile(
                profile=row.profile,
                version=row.version,
                template=row.template,
                input_settings=input_settings_shown(row.profile, secret),
                shared_with=[targets[pid] for pid in share_targets_shown(actor, row.profile, list(targets))],
            )
        )
    return shown
