"""GraphQL for accounts: me, projects, members, API tokens, login and logout (thin: calls the service)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import strawberry
from strawberry.dataloader import DataLoader

from gpupaas.accounts import service
from gpupaas.accounts.models import ApiToken, Membership, Project
from gpupaas.audit import recorder as audit
from gpupaas.core.actor import Principal, Role
from gpupaas.graphql.common import DeletePayload, UserError, attempt, delete_payload
from gpupaas.graphql.context import SESSION_COOKIE, Info
from gpupaas.graphql.loaders import by_id

RoleEnum = strawberry.enum(Role, name="Role")


def projects_by_id() -> DataLoader[uuid.UUID, Project | None]:
    return by_id(Project)


async def project_of(info: Info, project_id: uuid.UUID) -> ProjectType:
    """The project an object belongs to (a foreign key: it exists), through the request's loader."""
    project = await info.context.loaders.get(projects_by_id).load(project_id)
    assert project is not None
    return ProjectType.of(project)


@strawberry.type(name="Project")
class ProjectType:
    id: strawberry.ID
    name: str
    display_name: str
    created_at: datetime

    @classmethod
    def of(cls, project: Project) -> ProjectType:
        return cls(
            id=strawberry.ID(str(project.id)),
            name=project.name,
            display_name=project.display_name,
            created_at=project.created_at,
        )


@strawberry.type(name="Membership")
class MembershipType:
    project: ProjectType
    role: Role

    @classmethod
    def of(cls, membership: Membership) -> MembershipType:
        return cls(project=ProjectType.of(membership.project), role=membership.role)


@strawberry.type(name="User")
class UserType:
    id: strawberry.ID
    username: str
    is_platform_admin: bool
    disabled: bool = strawberry.field(
        description="A disabled user's sessions and API tokens sign nobody in (setUserDisabled)."
    )
    _model: strawberry.Private[Principal]

    @strawberry.field
    async def memberships(self) -> list[MembershipType]:
        return [MembershipType.of(m) for m in await service.memberships_of(self._model)]

    @classmethod
    def of(cls, user: Principal) -> UserType:
        return cls(
            id=strawberry.ID(str(user.id)),
            username=user.username,
            is_platform_admin=user.is_platform_admin,
            disabled=user.disabled_at is not None,
            _model=user,
        )


@strawberry.type(name="ApiToken")
class ApiTokenType:
    id: strawberry.ID
    name: str
    created_at: datetime
    last_used_at: datetime | None
    expires_at: datetime | None

    @classmethod
    def of(cls, token: ApiToken) -> ApiTokenType:
        return cls(
            id=strawberry.ID(str(token.id)),
            name=token.name,
            created_at=token.created_at,
            last_used_at=token.last_used_at,
            expires_at=token.expires_at,
        )


@strawberry.input
class CreateProjectInput:
    name: str
    display_name: str | None = None


@strawberry.input
class CreateUserInput:
    username: str
    password: str
    is_platform_admin: bool | None = None


@strawberry.input
class SetProjectMemberInput:
    project: str
    username: str
    role: Role


@strawberry.input
class RemoveProjectMemberInput:
    project: str
    username: str


@strawberry.input
class SetUserDisabledInput:
    username: str
    disabled: bool


@strawberry.input
class CreateApiTokenInput:
    name: str
    expires_at: datetime | None = None


@strawberry.type
class ProjectPayload:
    project: ProjectType | None
    user_errors: list[UserError]


@strawberry.type
class UserPayload:
    user: UserType | None
    user_errors: list[UserError]


@strawberry.type
class MembershipPayload:
    membership: MembershipType | None
    user_errors: list[UserError]


@strawberry.type(
    description="`token` is the secret, shown in this payload only; the server keeps only a hash of it."
)
class CreateApiTokenPayload:
    token: str | None
    api_token: ApiTokenType | None
    user_errors: list[UserError]


@strawberry.type
class LoginPayload:
    user: UserType | None
    user_errors: list[UserError]


@strawberry.type
class AccountsQuery:
    @strawberry.field(description="The caller, or null when not signed in.")
    def me(self, info: Info) -> UserType | None:
        user = info.context.actor.user
        return UserType.of(user) if user else None

    @strawberry.field(description="The projects the caller belongs to (every project, for platform admins).")
    async def projects(self, info: Info) -> list[ProjectType]:
        return [ProjectType.of(p) for p in await service.visible_projects(info.context.actor)]

    @strawberry.field
    async def project(self, info: Info, name: str) -> ProjectType | None:
        project = await service.project_by_name(info.context.actor, name)
        return ProjectType.of(project) if project else None

    @strawberry.field(
        description="The caller's API tokens, newest first (the secrets are never shown again)."
    )
    async def api_tokens(self, info: Info) -> list[ApiTokenType]:
        return [ApiTokenType.of(t) for t in await service.list_api_tokens(info.context.actor)]


@strawberry.type
class AccountsMutation:
    @strawberry.mutation(description="Signs in and sets the HttpOnly session cookie.")
    async def login(self, info: Info, username: str, password: str) -> LoginPayload:
        settings = info.context.settings
        scope = audit.current()
        if scope is not None and info.context.actor.user is None:
            scope.name = username[:128]  # who tried: a failed sign-in is recorded under the name given
        found, errors = await attempt(
            service.login(username, password, timedelta(hours=settings.session_ttl_hours))
        )
        if found is None:
            return LoginPayload(user=None, user_errors=errors)
        user, secret = found
        response = info.context.response
        if response is not None:
            response.set_cookie(
                SESSION_COOKIE,
                secret,
                max_age=settings.session_ttl_hours * 3600,
                httponly=True,
                samesite="lax",
                secure=settings.secure_cookies,
                path="/",
            )
        info.context.actor = await service.actor_for(user)
        return LoginPayload(user=UserType.of(user), user_errors=[])

    @strawberry.mutation(description="Ends the browser session and clears its cookie.")
    async def logout(self, info: Info) -> bool:
        await service.logout(info.context.session_secret)
        if info.context.response is not None:
            info.context.response.delete_cookie(SESSION_COOKIE, path="/", httponly=True, samesite="lax")
        return True

    @strawberry.mutation
    async def create_api_token(self, info: Info, input: CreateApiTokenInput) -> CreateApiTokenPayload:
        created, errors = await attempt(
            service.create_api_token(info.context.actor, input.name, input.expires_at)
        )
        if created is None:
            return CreateApiTokenPayload(token=None, api_token=None, user_errors=errors)
        token, secret = created
        return CreateApiTokenPayload(token=secret, api_token=ApiTokenType.of(token), user_errors=[])

    @strawberry.mutation
    async def revoke_api_token(self, info: Info, id: strawberry.ID) -> DeletePayload:
        return await delete_payload(service.revoke_api_token(info.context.actor, id))

    @strawberry.mutation
    async def create_user(self, info: Info, input: CreateUserInput) -> UserPayload:
        user, errors = await attempt(
            service.create_user(
                info.context.actor, input.username, input.password, bool(input.is_platform_admin)
            )
        )
        return UserPayload(user=UserType.of(user) if user else None, user_errors=errors)

    @strawberry.mutation
    async def create_project(self, info: Info, input: CreateProjectInput) -> ProjectPayload:
        project, errors = await attempt(
            service.create_project(info.context.actor, input.name, input.display_name)
        )
        return ProjectPayload(project=ProjectType.of(project) if project else None, user_errors=errors)

    @strawberry.mutation
    async def set_project_member(self, info: Info, input: SetProjectMemberInput) -> MembershipPayload:
        membership, errors = await attempt(
            service.set_member(info.context.actor, input.project, input.username, input.role)
        )
        return MembershipPayload(
            membership=MembershipType.of(membership) if membership else None, user_errors=errors
        )

    @strawberry.mutation(
        description="Project admins remove a member; the member's open websockets are closed (4403)."
    )
    async def remove_project_member(self, info: Info, input: RemoveProjectMemberInput) -> DeletePayload:
        return await delete_payload(service.remove_member(info.context.actor, input.project, input.username))

    @strawberry.mutation(
        description="Platform admins disable a user (sign-in refused, sessions and API tokens sign "
        "nobody in, open websockets closed with 4403) or enable them again."
    )
    async def set_user_disabled(self, info: Info, input: SetUserDisabledInput) -> UserPayload:
        user, errors = await attempt(
            service.set_user_disabled(info.context.actor, input.username, input.disabled)
        )
        return UserPayload(user=UserType.of(user) if user else None, user_errors=errors)
