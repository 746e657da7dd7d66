"""The rules of an OpenID Connect sign-in, once the provider has vouched for an identity.

The protocol (the redirect, PKCE, the code exchange, the ID token's checks) is `api/oidc.py`'s; this
module gets the identity it proved and decides who that is here:

- A user is linked to an identity by (issuer, subject), never by name. The first sign-in creates
  the user, named after `preferred_username` (or the email's local part), made valid; when that
  name is taken, by a local account or another identity, a suffix is added ("alice-2"): an identity
  never takes over an account it was not created for.
- A user made here has no password (an empty hash that no password matches), so only the provider
  signs them in. A disabled user is refused.
- At each sign-in the groups claim decides the platform admin flag (when an admin group is set) and
  the project roles its groups name. A role a group gave is taken back at the next sign-in without
  that group; a membership a project admin set by hand is never touched, unless a group names its
  project (then the group's role wins).
"""

from __future__ import annotations

import logging
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

from tortoise.exceptions import IntegrityError
from tortoise.transactions import in_transaction

from gpupaas.accounts import service
from gpupaas.accounts.models import Membership, Project, User
from gpupaas.audit import recorder as audit
from gpupaas.core.actor import Role
from gpupaas.core.errors import ErrorCode, UserErrors
from gpupaas.events import outbox
from gpupaas.settings import OidcSettings

log = logging.getLogger("gpupaas.oidc")

USERNAME_MAX = 64
_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9._@-]+")
_RANK = {Role.MEMBER: 1, Role.ADMIN: 2}


@dataclass(frozen=True)
class Identity:
    """What a valid ID token says about who signed in."""

    issuer: str
    subject: str
    preferred_username: str | None = None
    email: str | None = None
    groups: tuple[str, ...] = ()


def groups_of(claims: dict[str, object], claim: str) -> tuple[str, ...]:
    """The groups claim as strings: a list (Keycloak, Okta, Entra ID), or one space- or
    comma-separated string; anything else gives no group."""
    value = claims.get(claim)
    if isinstance(value, str):
        return tuple(g for g in re.split(r"[\s,]+", value) if g)
    if isinstance(value, list):
        return tuple(str(g) for g in value if isinstance(g, str | int))
    return ()


def project_roles(groups: Iterable[str], settings: OidcSettings) -> dict[str, Role]:
    """The project roles the groups give ({project name: role}); ADMIN wins over MEMBER."""
    pattern = settings.role_pattern()
    pairs: dict[str, list[tuple[str, str]]] = {}
    for group, project, role in settings.group_roles:
        pairs.setdefault(group, []).append((project, role))
    roles: dict[str, Role] = {}

    def give(project: str, role: Role) -> None:
        if project not in roles or _RANK[role] > _RANK[roles[project]]:
            roles[project] = role

    for group in groups:
        # Keycloak sends group paths ("/gpupaas:ml:admin") unless told not to.
        name = group.removeprefix("/")
        match = pattern.match(name) if pattern is not None else None
        if match is not None:
            give(match["project"], Role(match["role"].upper()))
        for project, role in pairs.get(group, ()):
            give(project, Role(role))
    return roles


def username_base(identity: Identity) -> str:
    """A valid username from the identity's claims: `preferred_username`, else the email's local
    part, else "user"; characters a username may not hold become "-"."""
    for raw in (identity.preferred_username, (identity.email or "").partition("@")[0]):
        # Accents dropped ("Álvaro" -> "Alvaro"), then what is still not allowed made "-".
        ascii_name = unicodedata.normalize("NFKD", (raw or "").strip()).encode("ascii", "ignore").decode()
        name = _NOT_ALLOWED.sub("-", ascii_name).lstrip("._@-")[:USERNAME_MAX]
        if name:
            return name
    return "user"


def _candidates(base: str) -> Iterable[str]:
    yield base
    for n in range(2, 1000):
        suffix = f"-{n}"
        yield base[: USERNAME_MAX - len(suffix)] + suffix


async def _create_user(identity: Identity) -> User:
    """A user for a first sign-in, under the first free name (never an existing account's)."""
    base = username_base(identity)
    for username in _candidates(base):
        if await User.exists(username=username):
            continue
        try:
            async with in_transaction():
                user = await User.create(
                    username=username,
                    password_hash="",
                    oidc_issuer=identity.issuer,
                    oidc_subject=identity.subject,
                )
                await audit.record(
                    "User", user.id, username, user=user, after=audit.fields_of(user, omit=["oidc_roles"])
                )
            return user
        except IntegrityError:
            # The name was taken meanwhile, or this identity signed in twice at once.
            existing = await User.get_or_none(oidc_issuer=identity.issuer, oidc_subject=identity.subject)
            if existing is not None:
                return existing
    raise UserErrors.one(None, f'No free username is left for "{base}".', ErrorCode.CONFLICT)


async def _apply_groups(user: User, identity: Identity, settings: OidcSettings) -> bool:
    """The platform admin flag and the project roles the groups give; whether anything changed."""
    wanted_names = project_roles(identity.groups, settings)
    projects = await Project.filter(name__in=list(wanted_names), is_system=False) if wanted_names else []
    missing = set(wanted_names) - {p.name for p in projects}
    if missing:
        log.warning(
            "OpenID Connect sign-in of %s: groups name projects that do not exist: %s",
            user.username,
            ", ".join(sorted(missing)),
        )
    wanted: dict[str, str] = {str(p.id): wanted_names[p.name].value for p in projects}
    by_id = {str(p.id): p for p in projects}
    previous = dict(user.oidc_roles or {})
    changed = False
    async with in_transaction():
        if settings.admin_group is not None:
            is_admin = settings.admin_group in identity.groups
            if is_admin != user.is_platform_admin:
                before = {"is_platform_admin": user.is_platform_admin}
                user.is_platform_admin = is_admin
                await user.save(update_fields=["is_platform_admin"])
                await audit.record(
                    "User",
                    user.id,
                    user.username,
                    user=user,
                    before=before,
                    after={"is_platform_admin": is_admin},
                )
                changed = True
        memberships = {
            str(m.project_id): m
            for m in await Membership.filter(user_id=user.id, project_id__in=list(wanted | previous))
        }
        for project_id, role in wanted.items():
            project = by_id[project_id]
            membership = memberships.get(project_id)
            if membership is None:
                membership = await Membership.create(user=user, project=project, role=Role(role))
                before_role: Role | None = None
            elif membership.role != role:
                before_role = membership.role
                membership.role = Role(role)
                await membership.save(update_fields=["role"])
            else:
                continue
            await audit.record(
                "Membership",
                membership.id,
                user.username,
                project=project,
                user=user,
                before={"user": user.username, "role": before_role},
                after={"user": user.username, "role": Role(role)},
            )
            changed = True
        gone = [pid for pid in previous if pid not in wanted and pid in memberships]
        for project_id in gone:
            membership = memberships[project_id]
            await membership.delete()
            owner = await Project.get(id=membership.project_id)
            await audit.record(
                "Membership",
                membership.id,
                user.username,
                project=owner,
                user=user,
                before={"user": user.username, "role": membership.role},
            )
            changed = True
        if wanted != previous:
            user.oidc_roles = wanted
            await user.save(update_fields=["oidc_roles"])
        if changed:
            await service.credentials_changed(user.id)
    if changed:
        outbox.notify()
    return changed


async def sign_in(identity: Identity, settings: OidcSettings, ttl: timedelta) -> tuple[User, str]:
    """The user of a proven identity (created at its first sign-in), with the groups' rights
    applied, and a new session's secret. A disabled user is refused (UserErrors, FORBIDDEN)."""
    user = await User.get_or_none(oidc_issuer=identity.issuer, oidc_subject=identity.subject)
    if user is None:
        user = await _create_user(identity)
    if user.disabled_at is not None:
        raise UserErrors.one(
            None, "This account is disabled: ask a platform admin to enable it.", ErrorCode.FORBIDDEN
        )
    try:
        await _apply_groups(user, identity, settings)
    except IntegrityError:
        # The same person signing in twice at once: the other sign-in gave the membership first.
        await user.refresh_from_db()
        await _apply_groups(user, identity, settings)
    return user, await service.open_session(user, ttl)


def identity_of(claims: dict[str, object], settings: OidcSettings) -> Identity:
    """The identity a validated ID token's claims describe."""

    def text(name: str) -> str | None:
        value = claims.get(name)
        return value if isinstance(value, str) else None

    return Identity(
        issuer=str(claims["iss"]),
        subject=str(claims["sub"]),
        preferred_username=text("preferred_username"),
        email=text("email"),
        groups=groups_of(claims, settings.groups_claim),
    )
