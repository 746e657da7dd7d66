"""Owners inside a project: whose instance it is, and what that lets a person do.

Every compute instance and GPU service instance has an owner, its creator (or whom a project admin
gave it to). Inside the instance's project:

- its owner (while a member of the project) and the project's admins (project ADMINs, platform
  admins) manage it: change, deploy, stop, destroy, delete, share it; they also see what it keeps
  secret (its connect links' access params, its sensitive outputs);
- every other member reads it, without those secrets; with `members_see_all` off (the
  GPUPAAS_MEMBERS_SEE_ALL_INSTANCES setting), other members' instances are hidden from a MEMBER
  entirely;
- an instance without an owner (made before owners existed, or whose user was deleted) is managed
  by the project's admins only.

Projects an instance is shared with read it (compute/service.py), never manage it. The rules are
here once; compute and service instances both ask them.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from tortoise.expressions import Q

from gpupaas.accounts.models import Membership, Project, User
from gpupaas.core.actor import Actor, Role
from gpupaas.core.errors import ErrorCode, UserErrors

# Longer strings cannot be usernames (accounts.service allows 64 characters).
USERNAME_MAX = 64


def manages(actor: Actor, project_id: uuid.UUID, owner_id: uuid.UUID | None) -> bool:
    """Whether the caller may manage an instance of `project_id` owned by `owner_id`: the project's
    admins, and its owner while a member of the project."""
    if actor.is_admin_of(project_id):
        return True
    user = actor.user
    return user is not None and owner_id is not None and owner_id == user.id and project_id in actor.roles


def not_manager(what: str, name: str, verb: str, owner_id: uuid.UUID | None) -> str:
    """Why a member who does not own it may not `verb` it: the message of the refusal and of the
    refused action alike."""
    if owner_id is None:
        return f'{what[0].upper()}{what[1:]} "{name}" has no owner: only a project admin may {verb} it.'
    return f'Only the owner or a project admin may {verb} {what} "{name}".'


def hidden_from(
    actor: Actor, project_id: uuid.UUID, owner_id: uuid.UUID | None, members_see_all: bool
) -> bool:
    """Whether the instance is left out of what the caller sees: only when members do not see each
    other's instances, for a MEMBER of its project who does not own it."""
    if members_see_all or actor.user is None or actor.is_platform_admin:
        return False
    return actor.roles.get(project_id) == Role.MEMBER and owner_id != actor.user.id


def visible_filter(actor: Actor, members_see_all: bool) -> Q | None:
    """The lists' filter that leaves out what `hidden_from` hides (None: nothing is hidden)."""
    if members_see_all or actor.user is None or actor.is_platform_admin:
        return None
    as_member = [project for project, role in actor.roles.items() if role == Role.MEMBER]
    if not as_member:
        return None
    return Q(owner_id=actor.user.id) | ~Q(project_id__in=as_member)


def mine_filter(actor: Actor) -> Q:
    """The lists' `mine` filter: what the caller owns."""
    user = actor.require_user()
    return Q(owner_id=user.id)


async def new_owner(project: Project, username: str, field: Sequence[str]) -> User:
    """The user a project admin gives an instance to: it must exist and be a member of the project
    (in any role). UserErrors on `field` otherwise."""
    # Only what could be a username reaches the database (PostgreSQL refuses NUL, for one).
    plausible = 0 < len(username) <= USERNAME_MAX and username.isascii() and username.isprintable()
    user = await User.get_or_none(username=username) if plausible else None
    if user is None:
        named = f'named "{username}"' if plausible else "by that name"
        message = f"no user {named}: give the instance to a member of the project"
        raise UserErrors.one(field, message, ErrorCode.NOT_FOUND)
    if not await Membership.exists(user_id=user.id, project_id=project.id):
        raise UserErrors.one(
            field,
            f'user "{username}" is not a member of project "{project.name}": add them to the project '
            "first (setProjectMember), then give them the instance",
        )
    return user


async def usernames(owner_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, str]:
    """The usernames of owners, by id (for the `owner` fields' loader)."""
    rows = await User.filter(id__in=list(owner_ids)).values_list("id", "username")
    return {user_id: str(name) for user_id, name in rows}
