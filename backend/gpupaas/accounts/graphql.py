"""GraphQL for accounts: me, users, projects, members, API tokens, passwords, login and logout
(thin: calls the service)."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

import strawberry
from strawberry.dataloader import DataLoader

from gpupaas.accounts import service, throttle
from gpupaas.accounts.models import ApiToken, Membership, Project, User
from gpupaas.audit import recorder as audit
from gpupaas.audit.graphql import request_address
from gpupaas.core.actor import Principal, Role
from gpupaas.core.pagination import encode_name_cursor
from gpupaas.graphql.common import DeletePayload, UserError, attempt, delete_payload
from gpupaas.graphql.connections import Connection
from gpupaas.graphql.context import SESSION_COOKIE, Info
from gpupaas.graphql.loaders import by_id, grouped
from gpupaas.settings import Settings

RoleEnum = strawberry.enum(Role, name="Role")


def projects_by_id() -> DataLoader[uuid.UUID, Project | None]:
    return by_id(Project)


def memberships_by_user() -> DataLoader[uuid.UUID, list[Membership]]:
    return grouped(service.memberships_of_users, lambda m: m.user_id)


def members_by_project() -> DataLoader[uuid.UUID, list[Membership]]:
    return grouped(service.members_of, lambda m: m.project_id)


def instance_counts() -> DataLoader[uuid.UUID, int]:
    async def load(keys: list[uuid.UUID]) -> list[int]:
        counts = await service.instance_counts(list(keys))
        return [counts.get(key, 0) for key in keys]

    return DataLoader(load_fn=load)


def throttle_rules(settings: Settings) -> throttle.Rules:
    return throttle.Rules(
        enabled=settings.login_throttle,
        window_minutes=settings.login_window_minutes,
        delay_after=settings.login_delay_after,
        delay_seconds=settings.login_delay_seconds,
        max_delay_seconds=settings.login_max_delay_seconds,
        lock_after=settings.login_lock_after,
        lock_minutes=settings.login_lock_minutes,
        address_delay_after=settings.login_address_delay_after,
        address_lock_after=settings.login_address_lock_after,
    )


async def project_of(info: Info, project_id: uuid.UUID) -> ProjectType:
    """The project an object belongs to (a foreign key: it exists), through the request's loader."""
    project = await info.context.loaders.get(projects_by_id).load(project_id)
    assert project is not None
    return ProjectType.of(project)


@strawberry.type(name="ProjectMember")
class ProjectMemberType:
    username: str
    role: Role
    disabled: bool
    added_at: datetime

    @classmethod
    def of(cls, membership: Membership) -> ProjectMemberType:
        return cls(
            username=membership.user.username,
            role=membership.role,
            disabled=membership.user.disabled_at is not None,
            added_at=membership.created_at,
        )


@strawberry.type(name="Project")
class ProjectType:
    id: strawberry.ID
    name: str
    display_name: str
    created_at: datetime
    _model: strawberry.Private[Project]

    @strawberry.field(
        description="The project's members by username: its members read it (sharing needs the "
        "names); others: the project is not found."
    )
    async def members(self, info: Info) -> list[ProjectMemberType]:
        service.require_reader_of(info.context.actor, self._model)
        rows = await info.context.loaders.get(members_by_project).load(self._model.id)
        return [ProjectMemberType.of(m) for m in rows]

    @strawberry.field(
        description="How many compute and service instances the project holds (deleteProject is "
        "refused while > 0)."
    )
    async def instance_count(self, info: Info) -> int:
        service.require_reader_of(info.context.actor, self._model)
        return await info.context.loaders.get(instance_counts).load(self._model.id)

    @classmethod
    def of(cls, project: Project) -> ProjectType:
        return cls(
            id=strawberry.ID(str(project.id)),
            name=project.name,
            display_name=project.display_name,
            created_at=project.created_at,
            _model=project,
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
    created_at: datetime
    last_sign_in_at: datetime | None = strawberry.field(
        description="The last successful sign-in with the password (null: never)."
    )
    _model: strawberry.Private[Principal]

    @strawberry.field
    async def memberships(self, info: Info) -> list[MembershipType]:
        rows = await info.context.loaders.get(memberships_by_user).load(self._model.id)
        return [MembershipType.of(m) for m in rows]

    @classmethod
    def of(cls, user: Principal) -> UserType:
        return cls(
            id=strawberry.ID(str(user.id)),
            username=user.username,
            is_platform_admin=user.is_platform_admin,
            disabled=user.disabled_at is not None,
            created_at=getattr(user, "created_at"),  # noqa: B009
            last_sign_in_at=getattr(user, "last_sign_in_at", None),
            _model=user,
        )


def user_cursor(user: User) -> str:
    return encode_name_cursor(user.username)


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
class ResetPasswordInput:
    username: str
    new_password: str


@strawberry.input
class ChangePasswordInput:
    current_password: str
    new_password: str


@strawberry.input
class RenameProjectInput:
    project: str
    display_name: str


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
        description="Platform admins: every user, by username; `search` matches a part of the "
        "username. Others: FORBIDDEN."
    )
    async def users(
        self, info: Info, search: str | None = None, first: int | None = None, after: str | None = None
    ) -> Connection[UserType]:
        page = await service.list_users(info.context.actor, search, first, after)
        return Connection[UserType].of(page, UserType.of, user_cursor)

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
            service.login(
                username,
                password,
                timedelta(hours=settings.session_ttl_hours),
                address=request_address(info.context),
                rules=throttle_rules(settings),
            )
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

    @strawberry.mutation(
        description="Platform admins delete a user (not themselves): sessions and tokens stop at "
        "once, open sockets close 4403; their instances stay, without an owner, for the project admins."
    )
    async def delete_user(self, info: Info, username: str) -> DeletePayload:
        return await delete_payload(service.delete_user(info.context.actor, username))

    @strawberry.mutation(
        description="Platform admins set a user's password; every session of that user ends."
    )
    async def reset_password(self, info: Info, input: ResetPasswordInput) -> UserPayload:
        user, errors = await attempt(
            service.reset_password(info.context.actor, input.username, input.new_password)
        )
        return UserPayload(user=UserType.of(user) if user else None, user_errors=errors)

    @strawberry.mutation(
        description="Anyone signed in with a password changes their own: the current password is "
        "required; their other sessions end."
    )
    async def change_password(self, info: Info, input: ChangePasswordInput) -> UserPayload:
        user, errors = await attempt(
            service.change_password(
                info.context.actor,
                input.current_password,
                input.new_password,
                address=request_address(info.context),
                rules=throttle_rules(info.context.settings),
            )
        )
        return UserPayload(user=UserType.of(user) if user else None, user_errors=errors)

    @strawberry.mutation(
        description="Platform admins and the project's ADMINs change a project's display name (the "
        "name, used in URLs and namespaces, does not change)."
    )
    async def rename_project(self, info: Info, input: RenameProjectInput) -> ProjectPayload:
        project, errors = await attempt(
            service.rename_project(info.context.actor, input.project, input.display_name)
        )
        return ProjectPayload(project=ProjectType.of(project) if project else None, user_errors=errors)

    @strawberry.mutation(
        description="Platform admins delete a project: refused (userErrors, code INVALID_STATE) "
        "while it has compute or service instances; never the system project."
    )
    async def delete_project(self, info: Info, name: str) -> DeletePayload:
        return await delete_payload(service.delete_project(info.context.actor, name))
