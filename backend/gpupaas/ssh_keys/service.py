"""The rules of a user's SSH public keys: each user sees, adds and deletes only their own (a
platform admin included: keys are credentials, and nobody adds a way into another person's
services). Every change is audited, the key line itself included (it is public), and reaches the
running services the user owns (`KEYS_CHANGED`)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

from tortoise.exceptions import IntegrityError
from tortoise.transactions import in_transaction

from gpupaas.audit import recorder as audit
from gpupaas.core import validation
from gpupaas.core.actor import Actor
from gpupaas.core.errors import Collector, ErrorCode, UserErrors
from gpupaas.core.hooks import Hook
from gpupaas.core.ids import parse_id
from gpupaas.events import outbox
from gpupaas.ssh_keys import keys
from gpupaas.ssh_keys.models import SshPublicKey

MAX_KEYS_PER_USER = 50
# A user's keys changed (inside the change's transaction): the services they own that run get the
# new keys (service_instances/ssh.py).
KEYS_CHANGED: Hook[Callable[[uuid.UUID], Awaitable[None]]] = Hook("the services of a user's SSH keys")
NAME = ("input", "name")
KEY = ("input", "publicKey")


def checked(name: str | None, text: str, problems: Collector) -> tuple[str, keys.PublicKey | None]:
    """The key's name (the comment when none is given) and the parsed key; problems collected."""
    parsed: keys.PublicKey | None = None
    try:
        parsed = keys.parse(text)
    except keys.KeyProblem as problem:
        code = ErrorCode.REQUIRED if not text.strip() else ErrorCode.INVALID
        problems.add(KEY, f"Public key {problem}", code)
    name = (name or "").strip()
    if not name and parsed is not None:
        name = parsed.comment.strip()[:128]
    if not name:
        if parsed is not None:  # no comment to name it after: a name is needed to tell keys apart
            message = "give the key a name (its line has no comment to take it from)"
            problems.add(NAME, message, ErrorCode.REQUIRED)
    else:
        problems.check(NAME, validation.display_name(name))
    return name, parsed


async def list_keys(actor: Actor) -> list[SshPublicKey]:
    user = actor.require_user()
    return await SshPublicKey.filter(user_id=user.id).order_by("name", "created_at")


async def add_key(actor: Actor, name: str | None, text: str) -> SshPublicKey:
    user = actor.require_user()
    problems = Collector()
    name, parsed = checked(name, text, problems)
    problems.raise_if_any()
    assert parsed is not None
    same = await SshPublicKey.filter(user_id=user.id, fingerprint=parsed.fingerprint).first()
    if same is not None:
        raise UserErrors.one(
            KEY, f'you already added this key, as "{same.name}" ({parsed.fingerprint})', ErrorCode.TAKEN
        )
    if await SshPublicKey.exists(user_id=user.id, name=name):
        raise UserErrors.one(NAME, f'you already have a key named "{name}"', ErrorCode.TAKEN)
    if await SshPublicKey.filter(user_id=user.id).count() >= MAX_KEYS_PER_USER:
        raise UserErrors.one(
            KEY,
            f"you have {MAX_KEYS_PER_USER} keys, the most one person may keep: delete one first",
            ErrorCode.INVALID_STATE,
        )
    try:
        async with in_transaction():
            key = await SshPublicKey.create(
                user_id=user.id,
                name=name,
                key_type=parsed.key_type,
                bits=parsed.bits,
                fingerprint=parsed.fingerprint,
                public_key=parsed.line,
            )
            await audit.record("SshPublicKey", key.id, name, after=audit.fields_of(key))
            await KEYS_CHANGED()(user.id)
    except IntegrityError:  # the same key or name, added at the same moment
        message = "you already added this key, or one of this name"
        raise UserErrors.one(KEY, message, ErrorCode.TAKEN) from None
    outbox.notify()
    return key


async def delete_key(actor: Actor, key_id: str) -> str:
    user = actor.require_user()
    key_uuid = parse_id(key_id)
    key = await SshPublicKey.get_or_none(id=key_uuid, user_id=user.id) if key_uuid else None
    if key is None:
        raise UserErrors.one(("id",), "No such SSH key among yours.", ErrorCode.NOT_FOUND)
    async with in_transaction():
        if not await SshPublicKey.filter(id=key.id).delete():
            raise UserErrors.one(("id",), "No such SSH key among yours.", ErrorCode.NOT_FOUND)
        await audit.record("SshPublicKey", key.id, key.name, before=audit.fields_of(key))
        await KEYS_CHANGED()(user.id)
    outbox.notify()
    return key_id
