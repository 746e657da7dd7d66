"""What a caller may see of the catalog: the projects its lists are for (a project the caller
cannot see is reported as not existing) and template internals (the owning project's admins)."""

from __future__ import annotations

from gpupaas.accounts.models import Project
from gpupaas.accounts.service import project_by_name
from gpupaas.catalog.models import EnvironmentTemplate
from gpupaas.core.actor import Actor
from gpupaas.core.errors import NotFound


async def project_for_listing(actor: Actor, project: str) -> Project:
    """The project a list is asked for; one the caller cannot see is reported as not found."""
    found = await project_by_name(actor, project)
    if found is None:
        raise NotFound(f'project "{project}" not found')
    return found


def can_see_internals(actor: Actor, template: EnvironmentTemplate, owner: Project) -> bool:
    """Template YAML is for the owning project's admins; built-in YAML for any project admin."""
    if actor.is_admin_of(owner.id):
        return True
    return owner.is_system and any(actor.is_admin_of(pid) for pid in actor.roles)
