"""The rules of image pull secrets: a project's admins create, change and delete them; its members
list them (name, registry, user: never the password) and choose one by name for a service, and a
template names one (`imagePullSecret`). The password is encrypted at rest (core.crypto) and
decrypted only where a pod needs it: the worker's plan of a service, which renders it as a Secret
`<service>-registry` of type kubernetes.io/dockerconfigjson in the compute instance's namespace.

A secret that a template or a service instance names is not deleted (INVALID_STATE naming them):
their next start would fail to pull. Renaming is not offered for the same reason; update changes
the registry, the user and the password, which the next start of each service uses.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from tortoise.exceptions import IntegrityError
from tortoise.transactions import in_transaction

from gpupaas.accounts.models import Project
from gpupaas.accounts.service import project_by_name, require_project
from gpupaas.audit import recorder as audit
from gpupaas.core import crypto, validation
from gpupaas.core.actor import Actor
from gpupaas.core.errors import Collector, ErrorCode, Forbidden, NotFound, UserErrors
from gpupaas.core.hooks import Hook
from gpupaas.core.ids import parse_id
from gpupaas.pull_secrets.models import ImagePullSecret

__all__ = [
    "SECRET_USERS",
    "Credentials",
    "PullSecretIn",
    "create_secret",
    "credentials",
    "delete_secret",
    "find",
    "list_secrets",
    "name_problem",
    "update_secret",
]

# Who names a project's secret, as the domains that use them say (bound by gpupaas.api.wiring:
# instance templates, service instances): (project id, secret name) -> what uses it, or None.
SECRET_USERS: Hook[Sequence[Callable[[Project, str], Awaitable[str | None]]]] = Hook(
    "the users of pull secrets"
)

MAX_USERNAME = 255
MAX_PASSWORD = 4096
# A registry as `docker login` and a dockerconfigjson's `auths` name it: a host (with a port), maybe a
# path ("ghcr.io", "registry.example.com:5000", "https://index.docker.io/v1/").
_REGISTRY = re.compile(
    r"(?:https?://)?(?P<host>[A-Za-z0-9.-]+|\[[0-9A-Fa-f:]+\])(?::(?P<port>[0-9]{1,5}))?(?P<path>/[A-Za-z0-9._~/-]*)?"
)
_OMIT = ("password_encrypted",)


@dataclass
class PullSecretIn:
    """Create: every field. Update: None leaves it as it is."""

    name: str | None = None
    registry: str | None = None
    username: str | None = None
    password: str | None = None


@dataclass(frozen=True)
class Credentials:
    """What a pod's Secret holds (the password decrypted: not for logs)."""

    registry: str
    username: str
    password: str


def name_problem(name: str) -> str | None:
    """A secret's name: a DNS label (it is chosen by name, and shown in pods' messages)."""
    return validation.dns_label(name)


def _registry_problem(registry: str) -> str | None:
    if not registry:
        return 'must not be empty: give the registry\'s host, like "ghcr.io" or "registry.example.com:5000"'
    if len(registry) > 255:
        return f"must be at most 255 characters (it has {len(registry)})"
    match = _REGISTRY.fullmatch(registry)
    if match is None:
        return (
            'must be a registry host with an optional port and path, like "ghcr.io" or '
            '"registry.example.com:5000"'
        )
    host = match.group("host")
    if not host.startswith("[") and validation.dns_subdomain(host.lower()) is not None:
        return f'"{host}" is not a host name: use lowercase letters, digits, "-" and "."'
    port = match.group("port")
    if port is not None and not 0 < int(port) < 65536:
        return "the port must be a number from 1 to 65535"
    return None


def _text_problem(value: str, what: str, limit: int) -> str | None:
    if not value:
        return f"must not be empty: give the registry {what}"
    if len(value) > limit:
        return f"must be at most {limit} characters (it has {len(value)})"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in value):
        return "must not contain control characters (a line break pasted with it?)"
    return None


def _check(problems: Collector, secret: ImagePullSecret, data: PullSecretIn, secret_key: str) -> None:
    if data.registry is not None:
        registry = data.registry.strip()
        problems.check(("input", "registry"), _registry_problem(registry))
        secret.registry = registry
    if data.username is not None:
        problem = _text_problem(data.username, "user", MAX_USERNAME)
        if problem is None and ":" in data.username:
            problem = 'must not contain ":" (the registry login is "user:password")'
        problems.check(("input", "username"), problem)
        secret.username = data.username
    if data.password is not None:
        problem = _text_problem(data.password, "password (or access token)", MAX_PASSWORD)
        problems.check(("input", "password"), problem)
        if problem is None:
            secret.password_encrypted = crypto.encrypt(secret_key, data.password)


async def _project_for(actor: Actor, project: str) -> Project:
    owner = await project_by_name(actor, project)
    if owner is None:
        raise NotFound(f'project "{project}" not found')
    return owner


async def list_secrets(actor: Actor, project: str) -> list[ImagePullSecret]:
    """The project's secrets by name: for its members (to choose one) and platform admins."""
    owner = await _project_for(actor, project)
    if not actor.is_member_of(owner.id):
        raise Forbidden(f'Only members of project "{owner.name}" see its image pull secrets.')
    rows: list[ImagePullSecret] = await ImagePullSecret.filter(project_id=owner.id).order_by("name")
    for row in rows:
        row.project = owner
    return rows


async def _secret_for(actor: Actor, secret_id: str) -> ImagePullSecret:
    """The secret, for its project's admins; NOT_FOUND for whoever may not see its project."""
    actor.require_user()
    sid = parse_id(secret_id)
    found = await ImagePullSecret.get_or_none(id=sid).select_related("project") if sid else None
    if found is None or not actor.can_see(found.project) or not actor.is_member_of(found.project_id):
        raise UserErrors.one(("id",), "No such image pull secret.", ErrorCode.NOT_FOUND)
    actor.require_admin_of(found.project)
    return found


def _taken(name: str, project: Project) -> UserErrors:
    return UserErrors.one(
        ("input", "name"),
        f'project "{project.name}" already has an image pull secret "{name}"',
        ErrorCode.TAKEN,
    )


async def create_secret(
    actor: Actor, project: str, data: PullSecretIn, *, secret_key: str
) -> ImagePullSecret:
    owner = await require_project(actor, project, ("project",))
    actor.require_admin_of(owner)
    problems = Collector()
    name = (data.name or "").strip()
    problems.check(("input", "name"), name_problem(name))
    secret = ImagePullSecret(project=owner, name=name)
    for field, value in (
        ("registry", data.registry),
        ("username", data.username),
        ("password", data.password),
    ):
        if value is None:
            problems.add(("input", field), "is required", ErrorCode.REQUIRED)
    _check(problems, secret, data, secret_key)
    problems.raise_if_any()
    if await ImagePullSecret.exists(project_id=owner.id, name=name):
        raise _taken(name, owner)
    try:
        async with in_transaction():
            await secret.save()
            await audit.record(
                "ImagePullSecret", secret.id, name, project=owner, after=audit.fields_of(secret, omit=_OMIT)
            )
    except IntegrityError:
        raise _taken(name, owner) from None
    return secret


async def update_secret(
    actor: Actor, secret_id: str, data: PullSecretIn, *, secret_key: str
) -> ImagePullSecret:
    secret = await _secret_for(actor, secret_id)
    if data.name is not None and data.name != secret.name:
        raise UserErrors.one(
            ("input", "name"),
            "a secret keeps its name (templates and services name it): create another one instead",
            ErrorCode.IMMUTABLE,
        )
    before = audit.fields_of(secret, omit=_OMIT)
    problems = Collector()
    _check(problems, secret, data, secret_key)
    problems.raise_if_any()
    async with in_transaction():
        await secret.save()
        after = audit.fields_of(secret, omit=_OMIT)
        if data.password is not None:
            after["password"] = "changed"  # that it changed, never what to
        await audit.record(
            "ImagePullSecret", secret.id, secret.name, project=secret.project, before=before, after=after
        )
    return secret


async def delete_secret(actor: Actor, secret_id: str) -> str:
    secret = await _secret_for(actor, secret_id)
    for in_use in SECRET_USERS():
        problem = await in_use(secret.project, secret.name)
        if problem is not None:
            raise UserErrors.one(
                ("id",),
                f'image pull secret "{secret.name}" is in use: {problem}; choose another secret there first',
                ErrorCode.INVALID_STATE,
            )
    async with in_transaction():
        await secret.delete()
        await audit.record(
            "ImagePullSecret",
            secret.id,
            secret.name,
            project=secret.project,
            before=audit.fields_of(secret, omit=_OMIT),
        )
    return secret_id


async def find(project_id: object, name: str) -> ImagePullSecret | None:
    """The project's secret of that name (for the domains that choose one)."""
    return await ImagePullSecret.get_or_none(project_id=project_id, name=name)


def credentials(secret: ImagePullSecret, secret_key: str) -> Credentials:
    """The secret as a pod's Secret needs it; DecryptionError when written with another key."""
    return Credentials(
        registry=secret.registry,
        username=secret.username,
        password=crypto.decrypt(secret_key, secret.password_encrypted),
    )
