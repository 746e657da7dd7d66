"""Sharing, the same for compute profiles and compute instances: NONE (the owning project only),
ALL_PROJECTS, or SELECTED_PROJECTS named by the caller. The rules live here once."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from enum import Enum

from gpupaas.accounts.models import Project
from gpupaas.accounts.service import PROJECT_NAME_MAX
from gpupaas.core.actor import Actor, Owner
from gpupaas.core.errors import Collector, ErrorCode


class SharingMode(str, Enum):
    NONE = "NONE"
    ALL_PROJECTS = "ALL_PROJECTS"
    SELECTED_PROJECTS = "SELECTED_PROJECTS"


async def visible_to(
    actor: Actor,
    owner: Owner,
    mode: SharingMode,
    shared_with_any: Callable[[list[uuid.UUID]], Awaitable[bool]],
) -> bool:
    """Whether the caller may see an object of `owner`: its members (and platform admins) always;
    others when it is shared with all projects, or with one of theirs."""
    if actor.can_see(owner):
        return True
    if mode == SharingMode.ALL_PROJECTS:
        return bool(actor.roles)
    if mode == SharingMode.SELECTED_PROJECTS and actor.roles:
        return await shared_with_any(list(actor.roles))
    return False


async def targets(
    actor: Actor, owner: Project, mode: SharingMode, names: Sequence[str] | None, *, what: str
) -> list[Project]:
    """The projects to share with, checked: each must exist for the caller (projects it cannot see
    are reported as missing) and not be the owner. Raises UserErrors on the `sharing` argument."""
    problems = Collector()
    chosen: list[Project] = []
    names = list(names or ())
    if mode == SharingMode.SELECTED_PROJECTS:
        if not names:
            problems.add(
                ("sharing", "projects"), "name at least one project to share with", ErrorCode.REQUIRED
            )
        # longer strings cannot be project names (and the ORM refuses to compare them)
        found = {
            p.name: p for p in await Project.filter(name__in=[n for n in names if len(n) <= PROJECT_NAME_MAX])
        }
        for index, name in enumerate(names):
            target = found.get(name)
            if target is None or not actor.can_see(target) or target.is_system:
                problems.add(
                    ("sharing", "projects", index), f'project "{name}" not found', ErrorCode.NOT_FOUND
                )
            elif target.id == owner.id:
                problems.add(("sharing", "projects", index), f"{what} always belongs to its own project")
            elif target not in chosen:
                chosen.append(target)
    elif names:
        problems.add(("sharing", "projects"), "projects are named only with SELECTED_PROJECTS")
    problems.raise_if_any()
    return chosen


def visible_targets(actor: Actor, owner_id: uuid.UUID, shared: Sequence[uuid.UUID]) -> list[uuid.UUID]:
    """Which share targets the caller may see: all for the owner's members, else only their own."""
    if actor.is_platform_admin or owner_id in actor.roles:
        return list(shared)
    return [pid for pid in shared if pid in actor.roles]
