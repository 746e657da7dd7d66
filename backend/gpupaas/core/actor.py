"""Who is calling: the signed-in user (or nobody) and their role in each project, loaded once per
request. Every domain decides who may do what through `Actor`, never the GraphQL layer.

The user is anything with an id, a username, the platform admin flag and when it was disabled
(`Principal`): the
accounts domain builds actors from its `User` rows; the layers below it need no more.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from enum import Enum
from typing import Protocol

from gpupaas.core.errors import Forbidden, NotAuthenticated


class Role(str, Enum):
    ADMIN = "ADMIN"  # the project's PaaS admin
    MEMBER = "MEMBER"  # an end user of the project


class Principal(Protocol):
    """A signed-in user, as far as rights go."""

    @property
    def id(self) -> uuid.UUID: ...

    @property
    def username(self) -> str: ...

    @property
    def is_platform_admin(self) -> bool: ...

    @property
    def disabled_at(self) -> datetime | None: ...


class Owner(Protocol):
    """A project, as far as seeing it goes."""

    @property
    def id(self) -> uuid.UUID: ...

    @property
    def name(self) -> str: ...

    @property
    def is_system(self) -> bool: ...


@dataclass(frozen=True)
class Credential:
    """What signed the caller in: a session (its id) or an API token (its id and name), never
    the secret. The audit log names it."""

    kind: str  # "SESSION" or "TOKEN"
    id: uuid.UUID
    name: str | None = None


@dataclass
class Actor:
    """Who is calling, with their roles loaded once per request."""

    user: Principal | None
    roles: dict[uuid.UUID, Role] = field(default_factory=dict)
    credential: Credential | None = None

    @property
    def is_platform_admin(self) -> bool:
        return self.user is not None and self.user.is_platform_admin

    def require_user(self) -> Principal:
        if self.user is None:
            raise NotAuthenticated()
        return self.user

    def role_in(self, project_id: uuid.UUID) -> Role | None:
        return self.roles.get(project_id)

    def can_see(self, project: Owner) -> bool:
        """Whether the project exists for this caller (its members, platform admins; the system one: all)."""
        if self.user is None:
            return False
        return self.is_platform_admin or project.id in self.roles or project.is_system

    def is_member_of(self, project_id: uuid.UUID) -> bool:
        """A member of the project in any role (platform admins are members of every project)."""
        return self.is_platform_admin or project_id in self.roles

    def is_admin_of(self, project_id: uuid.UUID) -> bool:
        return self.is_platform_admin or self.roles.get(project_id) == Role.ADMIN

    def require_platform_admin(self) -> Principal:
        user = self.require_user()
        if not user.is_platform_admin:
            raise Forbidden("Only platform admins may do this.")
        return user

    def require_admin_of(self, project: Owner) -> None:
        self.require_user()
        if not self.is_admin_of(project.id):
            raise Forbidden(f'Only admins of project "{project.name}" may do this.')

    def visible_project_ids(self) -> set[uuid.UUID]:
        return set(self.roles)


ANONYMOUS = Actor(user=None)
