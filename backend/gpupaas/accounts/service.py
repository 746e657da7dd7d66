"""The rules for users, projects, memberships, API tokens and sessions.

Who may do what is decided here (and in the other domains' services) through `Actor`, never in
the GraphQL layer. Secrets (session cookies, API tokens) are stored as sha256 hashes only.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import uuid
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from tortoise.exceptions import IntegrityError
from tortoise.transactions import in_transaction

from gpupaas.accounts import throttle
from gpupaas.accounts.models import ApiToken, FormerName, Membership, Project, Session, User
from gpupaas.audit import recorder as audit
from gpupaas.core import validation
from gpupaas.core.actor import ANONYMOUS, Actor, Credential, Role
from gpupaas.core.errors import Collector, ErrorCode, NotFound, UserErrors
from gpupaas.core.hooks import Hook
from gpupaas.core.ids import parse_id
from gpupaas.core.natural import natural_sorted
from gpupaas.core.pagination import Page, paginate_by_name
from gpupaas.core.search import matching
from gpupaas.events import outbox
from gpupaas.events.bus import STATUS_TOPIC

SYSTEM_PROJECT = "gpupaas-system"
PROJECT_NAME_MAX = 63
TOKEN_PREFIX = "gpp_"
_USERNAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
_hasher = PasswordHasher()
# Verified against when the username does not exist, so that a wrong username costs as much
# time as a wrong password and cannot be told apart by timing.
_DUMMY_HASH = _hasher.hash("not a real password")
# lastUsedAt is written at most this often per token, not on every request.
_LAST_USED_GRANULARITY = timedelta(minutes=1)

# How many compute and service instances each project holds, from the domains that own them
# (bound in api/wiring.py): a project that holds any is not deleted.
InstanceCounter = Callable[[list[uuid.UUID]], Awaitable[dict[uuid.UUID, int]]]
INSTANCE_COUNTERS: Hook[tuple[InstanceCounter, ...]] = Hook("accounts.INSTANCE_COUNTERS")
# What a deleted user's instances hold is charged, from then on, to no owner (bound to metering's
# meter in api/wiring.py), in the transaction of the deletion.
OWNER_GONE: Hook[Callable[[uuid.UUID, datetime], Awaitable[None]]] = Hook("accounts.OWNER_GONE")


def now() -> datetime:
    return datetime.now(UTC)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


async def actor_for(user: User | None) -> Actor:
    if user is None:
        return ANONYMOUS
    rows = await Membership.filter(user_id=user.id).values_list("project_id", "role")
    return Actor(user=user, roles={pid: Role(role) for pid, role in rows})


# A credential's caller in the statement that finds the credential: its user's columns, then one
# membership a row (a user without any gives one row whose membership is None, None).
_USER_COLUMNS = tuple(User._meta.fields_db_projection.items())  # (field, column)
_CALLER = (
    *(f"user__{name}" for name, _ in _USER_COLUMNS),
    "user__memberships__project_id",
    "user__memberships__role",
)


def _caller_of(rows: Sequence[Sequence[Any]], start: int) -> Actor:
    """The actor from the rows of `_CALLER` values, which begin at `start` in each row; a disabled
    user's credentials sign nobody in (they are kept, for when the user is enabled again)."""
    first = rows[0]
    values = first[start : start + len(_USER_COLUMNS)]
    # As the ORM builds a row it fetched (the values are already converted: converting again
    # changes nothing), so that the user is as `User.get` would give it.
    user = User._init_from_db(
        **{column: value for (_, column), value in zip(_USER_COLUMNS, values, strict=True)}
    )
    if user.disabled_at is not None:
        return ANONYMOUS
    roles = {row[-2]: Role(row[-1]) for row in rows if row[-2] is not None}
    return Actor(user=user, roles=roles)


# ---------------------------------------------------------------- passwords and credentials


def hash_password(password: str) -> str:
    return _hasher.hash(password)


def _password_problem(password: str) -> str | None:
    if len(password) < 8:
        return "must be at least 8 characters"
    if len(password) > 1024:
        return "must be at most 1024 characters"
    return None


async def authenticate(username: str, password: str) -> User | None:
    user = await User.get_or_none(username=username) if _USERNAME.match(username) else None
    try:
        _hasher.verify(user.password_hash if user else _DUMMY_HASH, password)
    except (VerificationError, InvalidHashError):
        return None
    if user is None:
        return None
    if _hasher.check_needs_rehash(user.password_hash):
        user.password_hash = hash_password(password)
        await user.save(update_fields=["password_hash"])
    return user


async def login(
    username: str,
    password: str,
    ttl: timedelta,
    *,
    address: str | None = None,
    rules: throttle.Rules | None = None,
) -> tuple[User, str]:
    """Check the credentials and open a session; returns the user and the session secret.
    Repeated failures for the username or from `address` are slowed, then refused (throttle.py)."""
    rules = rules or throttle.Rules()
    await throttle.check(username, address, rules)
    user = await authenticate(username, password)
    if user is None:
        await throttle.failed(username, address, rules)
        raise UserErrors.one(None, "Wrong username or password.", ErrorCode.INVALID)
    await throttle.succeeded(username)
    if user.disabled_at is not None:  # told only to whoever knows the password
        raise UserErrors.one(
            None, "This account is disabled: ask a platform admin to enable it.", ErrorCode.FORBIDDEN
        )
    return user, await open_session(user, ttl)


async def open_session(user: User, ttl: timedelta) -> str:
    """A new browser session of a user who proved who they are (a password, an OpenID Connect
    sign-in): its secret, for the cookie."""
    secret = secrets.token_urlsafe(32)
    moment = now()
    async with in_transaction():
        await Session.filter(user_id=user.id, expires_at__lte=moment).delete()  # sessions that ended unused
        session = await Session.create(user=user, token_hash=hash_secret(secret), expires_at=moment + ttl)
        user.last_sign_in_at = moment
        await user.save(update_fields=["last_sign_in_at"])
        await audit.record(
            "Session",
            session.id,
            user.username,
            user=user,
            after=audit.fields_of(session, omit=["token_hash"]),
        )
    return secret


# The status topic carries, besides instances' events, "this user's credentials or rights
# changed": every API process then checks that user's open websockets again (api/sockets.py).
CREDENTIALS_EVENT = "credentials"


async def credentials_changed(user_id: uuid.UUID) -> None:
    """Tells every API process that a user's sessions, tokens or memberships changed: an outbox
    row, written in the transaction of the change (so that a change is never left untold); the
    caller wakes the relay (`outbox.notify()`) once it is committed."""
    await outbox.add(STATUS_TOPIC, str(user_id), {"type": CREDENTIALS_EVENT, "userId": str(user_id)})


async def logout(session_secret: str | None) -> None:
    if not session_secret:
        return
    session = await Session.get_or_none(token_hash=hash_secret(session_secret))
    if session is not None:
        async with in_transaction():
            await session.delete()
            await audit.record("Session", session.id, before=audit.fields_of(session, omit=["token_hash"]))
            await credentials_changed(session.user_id)
        outbox.notify()


async def credential_expiry(authorization: str | None, cookie: str | None) -> datetime | None:
    """When the bearer token (or else the session cookie) stops signing anybody in; None: never,
    or it does not sign anybody in now."""
    if authorization:
        scheme, _, secret = authorization.partition(" ")
        if scheme.lower() != "bearer" or not secret.strip():
            return None
        token = await ApiToken.get_or_none(token_hash=hash_secret(secret.strip())).only("id", "expires_at")
        return token.expires_at if token is not None else None
    if cookie:
        session = await Session.get_or_none(token_hash=hash_secret(cookie)).only("id", "expires_at")
        return session.expires_at if session is not None else None
    return None


async def actor_for_session(secret: str) -> Actor:
    """The caller of a session cookie with their roles, in one statement; an ended session is
    deleted and signs nobody in."""
    rows = await Session.filter(token_hash=hash_secret(secret)).values_list("id", "expires_at", *_CALLER)
    if not rows:
        return ANONYMOUS
    session_id, expires_at = rows[0][:2]
    if expires_at <= now():
        await Session.filter(id=session_id).delete()
        return ANONYMOUS
    actor = _caller_of(rows, 2)
    if actor is ANONYMOUS:  # a disabled user
        return ANONYMOUS
    actor.credential = Credential("SESSION", session_id)
    return actor


async def actor_for_token(secret: str) -> Actor:
    """The caller of an API token with their roles, in one statement (and the token's last use
    written at most once a minute); an unknown, revoked or expired token signs nobody in."""
    if not secret.startswith(TOKEN_PREFIX):
        return ANONYMOUS
    rows = await ApiToken.filter(token_hash=hash_secret(secret)).values_list(
        "id", "expires_at", "last_used_at", "name", *_CALLER
    )
    if not rows:
        return ANONYMOUS
    token_id, expires_at, last_used_at, token_name = rows[0][:4]
    moment = now()
    if expires_at is not None and expires_at <= moment:
        return ANONYMOUS
    caller = _caller_of(rows, 4)
    if caller is ANONYMOUS:  # a disabled user
        return ANONYMOUS
    if last_used_at is None or moment - last_used_at >= _LAST_USED_GRANULARITY:
        await ApiToken.filter(id=token_id).update(last_used_at=moment)
    caller.credential = Credential("TOKEN", token_id, token_name)
    return caller


async def create_api_token(actor: Actor, name: str, expires_at: datetime | None) -> tuple[ApiToken, str]:
    user = actor.require_user()
    problems = Collector()
    name = name.strip()
    problems.check(("input", "name"), validation.display_name(name))
    if expires_at is not None:
        if expires_at.tzinfo is None:
            expires_at = expires_at.replace(tzinfo=UTC)
        if expires_at <= now():
            problems.add(("input", "expiresAt"), "must be in the future")
    if not problems and await ApiToken.exists(user_id=user.id, name=name):
        problems.add(("input", "name"), f'you already have a token named "{name}"', ErrorCode.TAKEN)
    problems.raise_if_any()
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    try:
        async with in_transaction():
            token = await ApiToken.create(
                user_id=user.id, name=name, token_hash=hash_secret(secret), expires_at=expires_at
            )
            await audit.record("ApiToken", token.id, name, after=audit.fields_of(token, omit=["token_hash"]))
    except IntegrityError:
        raise UserErrors.one(
            ("input", "name"), f'you already have a token named "{name}"', ErrorCode.TAKEN
        ) from None
    return token, secret


async def list_api_tokens(actor: Actor) -> list[ApiToken]:
    user = actor.require_user()
    return await ApiToken.filter(user_id=user.id).order_by("-created_at")


async def revoke_api_token(actor: Actor, token_id: str) -> str:
    user = actor.require_user()
    token_uuid = parse_id(token_id)
    query = ApiToken.filter(id=token_uuid) if token_uuid else None
    if query is not None and not actor.is_platform_admin:
        query = query.filter(user_id=user.id)
    tokens = await query if query is not None else []
    if query is None or not tokens:
        raise UserErrors.one(("id",), "No such API token.", ErrorCode.NOT_FOUND)
    async with in_transaction():
        # A new query: one built before the transaction would not run on its connection.
        if not await ApiToken.filter(id__in=[token.id for token in tokens]).delete():
            raise UserErrors.one(("id",), "No such API token.", ErrorCode.NOT_FOUND)
        for token in tokens:
            before = audit.fields_of(token, omit=["token_hash"])
            await audit.record("ApiToken", token.id, token.name, before=before)
        for owner in {token.user_id for token in tokens}:
            await credentials_changed(owner)
    outbox.notify()
    return token_id


# ---------------------------------------------------------------- users, projects, members


async def create_user(actor: Actor | None, username: str, password: str, is_platform_admin: bool) -> User:
    """Platform admins create users; `actor=None` is the trusted CLI."""
    if actor is not None:
        actor.require_platform_admin()
    problems = Collector()
    if not _USERNAME.match(username):
        problems.add(
            ("input", "username"),
            'must be 1-64 characters: letters, digits, ".", "_", "@" or "-", starting with a letter or digit',
        )
    problems.check(("input", "password"), _password_problem(password))
    if not problems and await User.exists(username=username):
        problems.add(("input", "username"), f'username "{username}" is taken', ErrorCode.TAKEN)
    problems.raise_if_any()
    try:
        async with in_transaction():
            user = await User.create(
                username=username, password_hash=hash_password(password), is_platform_admin=is_platform_admin
            )
            await audit.record("User", user.id, username, after=audit.fields_of(user))
        return user
    except IntegrityError:
        raise UserErrors.one(
            ("input", "username"), f'username "{username}" is taken', ErrorCode.TAKEN
        ) from None


async def set_user_disabled(actor: Actor | None, username: str, disabled: bool) -> User:
    """Platform admins disable a user (their sessions and API tokens sign nobody in, their open
    websockets close at once, they cannot sign in) or enable them again; `actor=None` is the
    trusted CLI. Nobody disables themselves (a platform admin could lock everybody out)."""
    if actor is not None:
        actor.require_platform_admin()
    user = await User.get_or_none(username=username) if _USERNAME.match(username) else None
    if user is None:
        raise UserErrors.one(("input", "username"), f'user "{username[:64]}" not found', ErrorCode.NOT_FOUND)
    if disabled and actor is not None and actor.user is not None and actor.user.id == user.id:
        raise UserErrors.one(("input", "username"), "you cannot disable yourself", ErrorCode.INVALID)
    was = {"disabled": user.disabled_at is not None}
    changed = was["disabled"] != disabled
    async with in_transaction():
        if changed:
            user.disabled_at = now() if disabled else None
            await user.save(update_fields=["disabled_at"])
            await credentials_changed(user.id)
        # recorded even when it was already so: the call was made
        await audit.record("User", user.id, user.username, before=was, after={"disabled": disabled})
    if changed:
        outbox.notify()
    return user


async def create_project(actor: Actor | None, name: str, display_name: str | None) -> Project:
    if actor is not None:
        actor.require_platform_admin()
    problems = Collector()
    problems.check(("input", "name"), validation.dns_label(name))
    display = (display_name or "").strip() or name
    problems.check(("input", "displayName"), validation.display_name(display))
    if not problems and await Project.exists(name=name):
        problems.add(("input", "name"), f'project "{name}" already exists', ErrorCode.TAKEN)
    problems.raise_if_any()
    try:
        async with in_transaction():
            project = await Project.create(name=name, display_name=display)
            await audit.record("Project", project.id, name, project=project, after=audit.fields_of(project))
        return project
    except IntegrityError:
        raise UserErrors.one(("input", "name"), f'project "{name}" already exists', ErrorCode.TAKEN) from None


async def ensure_system_project() -> Project:
    """The project that owns the built-in templates (created once; idempotent)."""
    project = await Project.get_or_none(name=SYSTEM_PROJECT)
    if project is None:
        try:
            project = await Project.create(name=SYSTEM_PROJECT, display_name="Built-in", is_system=True)
        except IntegrityError:  # another process created it first
            project = await Project.get(name=SYSTEM_PROJECT)
    return project


async def project_named(name: str) -> Project | None:
    """The project of a name, whoever asks (the audit log decides rights itself)."""
    return await Project.get_or_none(name=name) if len(name) <= PROJECT_NAME_MAX else None


async def visible_projects(actor: Actor) -> list[Project]:
    actor.require_user()
    if actor.is_platform_admin:
        return natural_sorted(await Project.all(), lambda p: p.name)
    return natural_sorted(await Project.filter(id__in=list(actor.roles)), lambda p: p.name)


async def project_by_name(actor: Actor, name: str) -> Project | None:
    """The project, or None when it does not exist *or* the caller may not see it."""
    actor.require_user()
    project = await Project.get_or_none(name=name) if len(name) <= PROJECT_NAME_MAX else None
    if project is None or not actor.can_see(project):
        return None
    return project


async def require_project(actor: Actor, name: str, field_path: tuple[str, ...]) -> Project:
    project = await project_by_name(actor, name)
    if project is None:
        raise UserErrors.one(field_path, f'project "{name}" not found', ErrorCode.NOT_FOUND)
    return project


async def set_member(actor: Actor | None, project_name: str, username: str, role: Role) -> Membership:
    if actor is not None:
        project = await require_project(actor, project_name, ("input", "project"))
        actor.require_admin_of(project)
    else:
        maybe = (
            await Project.get_or_none(name=project_name) if len(project_name) <= PROJECT_NAME_MAX else None
        )
        if maybe is None:
            raise UserErrors.one(
                ("input", "project"), f'project "{project_name}" not found', ErrorCode.NOT_FOUND
            )
        project = maybe
    if project.is_system:
        raise UserErrors.one(("input", "project"), "the built-in project has no members", ErrorCode.INVALID)
    user = await User.get_or_none(username=username) if _USERNAME.match(username) else None
    if user is None:
        raise UserErrors.one(("input", "username"), f'user "{username[:64]}" not found', ErrorCode.NOT_FOUND)
    async with in_transaction():
        membership = await Membership.get_or_none(user_id=user.id, project_id=project.id)
        created = membership is None
        old_role = membership.role if membership is not None else None
        if membership is None:
            try:
                membership = await Membership.create(user=user, project=project, role=role)
            except IntegrityError:
                membership = await Membership.get(user_id=user.id, project_id=project.id)
        changed = membership.role != role
        if changed:
            membership.role = role
            await membership.save(update_fields=["role"])
            await credentials_changed(user.id)
        # Setting a member's role is recorded even when it was already that role: the call was made.
        await audit.record(
            "Membership",
            membership.id,
            user.username,
            project=project,
            before={"user": user.username, "role": None if created else old_role},
            after={"user": user.username, "role": role},
        )
    if changed:
        outbox.notify()
    membership.project = project
    return membership


async def remove_member(actor: Actor, project_name: str, username: str) -> str:
    """Project admins remove a member; the member's open websockets close at once (the user's
    other sessions stay). The id of the membership removed."""
    project = await require_project(actor, project_name, ("input", "project"))
    actor.require_admin_of(project)
    user = await User.get_or_none(username=username) if _USERNAME.match(username) else None
    membership = (
        await Membership.get_or_none(user_id=user.id, project_id=project.id) if user is not None else None
    )
    if user is None or membership is None:
        raise UserErrors.one(
            ("input", "username"), f'"{username[:64]}" is not a member of {project.name}', ErrorCode.NOT_FOUND
        )
    async with in_transaction():
        await membership.delete()
        await audit.record(
            "Membership",
            membership.id,
            user.username,
            project=project,
            before={"user": user.username, "role": membership.role},
        )
        await credentials_changed(user.id)
    outbox.notify()
    return str(membership.id)


# ---------------------------------------------------------------- people management


async def _user_named(username: str, field_path: tuple[str, ...]) -> User:
    user = await User.get_or_none(username=username) if _USERNAME.match(username) else None
    if user is None:
        raise UserErrors.one(field_path, f'user "{username[:64]}" not found', ErrorCode.NOT_FOUND)
    return user


async def list_users(actor: Actor, search: str | None, first: int | None, after: str | None) -> Page[User]:
    """Platform admins: every user, by username; `search` matches a part of the username."""
    actor.require_platform_admin()
    return await paginate_by_name(matching(User.all(), search, "username"), "username", first, after)


async def memberships_of_users(user_ids: list[uuid.UUID]) -> list[Membership]:
    """The memberships of several users with their projects, in one statement."""
    return await Membership.filter(user_id__in=user_ids).select_related("project").order_by("project__name")


async def members_of(project_ids: list[uuid.UUID]) -> list[Membership]:
    """The members of several projects with their users, by username, in one statement."""
    return (
        await Membership.filter(project_id__in=project_ids).select_related("user").order_by("user__username")
    )


def require_reader_of(actor: Actor, project: Project) -> None:
    """A project's members and the platform admins read its members and counts; to anyone else
    (who may see the project through something shared with them) it does not exist."""
    actor.require_user()
    if not (actor.is_platform_admin or actor.is_member_of(project.id)):
        raise NotFound(f'project "{project.name}" not found')


async def instance_counts(project_ids: list[uuid.UUID]) -> dict[uuid.UUID, int]:
    """How many compute and service instances each project holds."""
    counts: dict[uuid.UUID, int] = dict.fromkeys(project_ids, 0)
    for counter in INSTANCE_COUNTERS():
        for project_id, count in (await counter(project_ids)).items():
            counts[project_id] = counts.get(project_id, 0) + count
    return counts


async def _end_sessions(user_id: uuid.UUID, keep: uuid.UUID | None = None) -> int:
    query = Session.filter(user_id=user_id)
    if keep is not None:
        query = query.exclude(id=keep)
    return await query.delete()


async def _set_password(
    user: User, new_password: str, *, keep: uuid.UUID | None, forget_failures: bool
) -> None:
    """A new password: every session of the user but `keep` ends, their open websockets are
    checked again, and the change is audited, in one transaction (the relay woken after it).
    `forget_failures`: a platform admin's reset also lifts a sign-in lock on the username."""
    async with in_transaction():
        user.password_hash = hash_password(new_password)
        await user.save(update_fields=["password_hash"])
        ended = await _end_sessions(user.id, keep)
        if forget_failures:
            await throttle.forget_user(user.username)
        await credentials_changed(user.id)
        await audit.record(
            "User",
            user.id,
            user.username,
            before={"password": "old"},
            after={"password": "new", "sessionsEnded": ended},
        )
    outbox.notify()


async def delete_user(actor: Actor, username: str) -> str:
    """Platform admins delete a user (not themselves). Their sessions, tokens, memberships and
    member quotas go with them and their open websockets close at once; their instances stay,
    without an owner (the project's admins manage them); usage and the audit log keep their id
    and read with their name (`FormerName`)."""
    me = actor.require_platform_admin()
    user = await _user_named(username, ("username",))
    if user.id == me.id:
        raise UserErrors.one(("username",), "you cannot delete yourself", ErrorCode.INVALID)
    async with in_transaction():
        before = audit.fields_of(user, omit=["password_hash"])
        await OWNER_GONE()(user.id, now())
        await user.delete()
        await FormerName.filter(id=user.id).delete()
        await FormerName.create(id=user.id, kind="user", name=user.username, deleted_at=now())
        await throttle.forget_user(user.username)
        await credentials_changed(user.id)
        await audit.record("User", user.id, user.username, before=before)
    outbox.notify()
    return str(user.id)


async def reset_password(actor: Actor, username: str, new_password: str) -> User:
    """Platform admins set a user's password; every session of that user ends (their API tokens
    stay: they are not the password) and a lock on the username is lifted."""
    actor.require_platform_admin()
    problems = Collector()
    problems.check(("input", "newPassword"), _password_problem(new_password))
    user = await User.get_or_none(username=username) if _USERNAME.match(username) else None
    if user is None:
        problems.add(("input", "username"), f'user "{username[:64]}" not found', ErrorCode.NOT_FOUND)
    problems.raise_if_any()
    assert user is not None
    await _set_password(user, new_password, keep=None, forget_failures=True)
    return user


async def change_password(
    actor: Actor,
    current_password: str,
    new_password: str,
    *,
    address: str | None = None,
    rules: throttle.Rules | None = None,
) -> User:
    """Anyone signed in changes their own password, giving the current one; their other
    sessions end (the one they use stays, as do their API tokens). A wrong current password
    counts as a failed sign-in (throttle.py): a stolen session cannot guess it at leisure."""
    me = actor.require_user()
    rules = rules or throttle.Rules()
    await throttle.check(me.username, address, rules)
    user = await User.get(id=me.id)
    problems = Collector()
    try:
        _hasher.verify(user.password_hash, current_password[:1024])
    except (VerificationError, InvalidHashError):
        await throttle.failed(me.username, address, rules)
        problems.add(("input", "currentPassword"), "is not your current password")
    problems.check(("input", "newPassword"), _password_problem(new_password))
    if not problems and new_password == current_password:
        problems.add(("input", "newPassword"), "must differ from the current password")
    problems.raise_if_any()
    keep = (
        actor.credential.id if actor.credential is not None and actor.credential.kind == "SESSION" else None
    )
    await _set_password(user, new_password, keep=keep, forget_failures=False)
    return user


async def rename_project(actor: Actor, name: str, display_name: str) -> Project:
    """Platform admins and the project's ADMINs change its display name (never its name)."""
    project = await require_project(actor, name, ("input", "project"))
    actor.require_admin_of(project)
    display = display_name.strip()
    problems = Collector()
    problems.check(("input", "displayName"), validation.display_name(display))
    problems.raise_if_any()
    async with in_transaction():
        before = {"displayName": project.display_name}
        project.display_name = display
        await project.save(update_fields=["display_name"])
        await audit.record(
            "Project",
            project.id,
            project.name,
            project=project,
            before=before,
            after={"displayName": display},
        )
    return project


async def delete_project(actor: Actor, name: str) -> str:
    """Platform admins delete a project and everything it owns (templates, profiles, members,
    quotas, schedules, webhooks...); refused while it holds compute or service instances, and
    never the built-in project. Its usage stays, read with its name (`FormerName`)."""
    actor.require_platform_admin()
    project = await project_named(name)
    if project is None:
        raise UserErrors.one(("name",), f'project "{name[:63]}" not found', ErrorCode.NOT_FOUND)
    if project.is_system:
        raise UserErrors.one(("name",), "the built-in project cannot be deleted", ErrorCode.INVALID)
    held = (await instance_counts([project.id]))[project.id]
    if held:
        raise UserErrors.one(
            ("name",),
            f'project "{project.name}" still holds {held} instance{"s" if held != 1 else ""}: '
            "delete its compute and service instances first",
            ErrorCode.INVALID_STATE,
        )
    async with in_transaction():
        # The project's row locked (PostgreSQL), then counted again: an instance created since
        # the first count is seen, and one created from now on waits and then fails its foreign key.
        await Project.filter(id=project.id).select_for_update().first()
        members = [m.user_id for m in await Membership.filter(project_id=project.id).only("id", "user_id")]
        if (await instance_counts([project.id]))[project.id]:
            raise UserErrors.one(
                ("name",), f'project "{project.name}" holds instances now: try again', ErrorCode.INVALID_STATE
            )
        before = audit.fields_of(project)
        await audit.record("Project", project.id, project.name, project=project, before=before)
        await project.delete()
        await FormerName.filter(id=project.id).delete()
        await FormerName.create(id=project.id, kind="project", name=project.name, deleted_at=now())
        for user_id in members:
            await credentials_changed(user_id)
    outbox.notify()
    return str(project.id)
