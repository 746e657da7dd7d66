"""Login throttling: failed sign-ins slow down, then lock, a username and a client address.

Failures are counted per key ("user:<username given>", "address:<client address>") in a sliding
window. From `delay_after` failures on, each further attempt waits first (`delay_seconds`, doubling
with every failure past the threshold, at most `max_delay_seconds`); at `lock_after` failures the
key is locked for `lock_minutes` and its failures are forgotten (the lock replaces them). While a
username or an address is locked every attempt is refused before the password is looked at, so
a right password during the lock is refused like a wrong one and reveals nothing. A success
forgets the username's failures (not the address's: one's own account must not reset an
attacker's count). The state is in the database, so every API replica sees the same counts; each
failure deletes the rows that no longer count, so the tables stay small.

Usernames that do not exist are counted too: otherwise the lock would tell which names exist.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from tortoise.exceptions import IntegrityError
from tortoise.transactions import in_transaction

from gpupaas.accounts.models import SignInFailure, SignInLock
from gpupaas.core.errors import ErrorCode, UserErrors

Sleep = Callable[[float], Awaitable[None]]


def now() -> datetime:
    """The clock of throttling (tests replace it)."""
    return datetime.now(UTC)


async def sleep(seconds: float) -> None:
    """How an attempt waits (tests replace it: no real sleeps)."""
    await asyncio.sleep(seconds)


@dataclass(frozen=True)
class Rules:
    """The settings of throttling (GPUPAAS_LOGIN_*, README "Settings")."""

    enabled: bool = True
    window_minutes: float = 15.0
    delay_after: int = 5
    delay_seconds: float = 1.0
    max_delay_seconds: float = 30.0
    lock_after: int = 10
    lock_minutes: float = 15.0
    # An address has higher thresholds: people behind one NAT share it, and so does everybody
    # behind a reverse proxy that GPUPAAS_TRUSTED_PROXIES does not name.
    address_delay_after: int = 20
    address_lock_after: int = 50

    def thresholds(self, key: str) -> tuple[int, int]:
        """(delay after, lock after) of a key."""
        if key.startswith("address:"):
            return self.address_delay_after, self.address_lock_after
        return self.delay_after, self.lock_after


def user_key(username: str) -> str:
    return f"user:{username[:64]}"


def address_key(address: str) -> str:
    return f"address:{address[:64]}"


def _keys(username: str, address: str | None) -> list[str]:
    return [user_key(username)] + ([address_key(address)] if address else [])


def _minutes(left: timedelta) -> str:
    count = max(1, math.ceil(left.total_seconds() / 60))
    return f"{count} minute{'s' if count != 1 else ''}"


async def check(username: str, address: str | None, rules: Rules) -> None:
    """Before the password is checked: refuses (THROTTLED) while the username or the address is
    locked, and waits when they have failed often."""
    if not rules.enabled:
        return
    moment = now()
    keys = _keys(username, address)
    locks = {lock.key: lock.until for lock in await SignInLock.filter(key__in=keys, until__gt=moment)}
    if user_key(username) in locks:
        left = locks[user_key(username)] - moment
        raise UserErrors.one(
            None,
            f'Too many failed sign-ins for "{username[:64]}": try again in {_minutes(left)}.',
            ErrorCode.THROTTLED,
        )
    if locks:
        left = max(locks.values()) - moment
        raise UserErrors.one(
            None,
            f"Too many failed sign-ins from your address: try again in {_minutes(left)}.",
            ErrorCode.THROTTLED,
        )
    since = moment - timedelta(minutes=rules.window_minutes)
    beyond = [
        await SignInFailure.filter(key=key, at__gt=since).count() - rules.thresholds(key)[0] for key in keys
    ]
    if max(beyond) >= 0:
        delay = rules.delay_seconds * 2 ** max(beyond)
        await sleep(min(delay, rules.max_delay_seconds))


async def failed(username: str, address: str | None, rules: Rules) -> None:
    """Counts a failed sign-in for the username and the address; locks a key that reached its
    lock threshold in the window."""
    if not rules.enabled:
        return
    moment = now()
    since = moment - timedelta(minutes=rules.window_minutes)
    async with in_transaction():
        # Whatever fell out of the window, and ended locks, of every key: the tables hold only what
        # still counts (no purge job needed; only failures pay for it).
        await SignInFailure.filter(at__lte=since).delete()
        await SignInLock.filter(until__lte=moment).delete()
        for key in _keys(username, address):
            await SignInFailure.create(key=key, at=moment)
            if await SignInFailure.filter(key=key).count() >= rules.thresholds(key)[1]:
                until = moment + timedelta(minutes=rules.lock_minutes)
                await SignInFailure.filter(key=key).delete()
                updated = await SignInLock.filter(key=key).update(until=until)
                if not updated:
                    try:
                        async with in_transaction():  # a savepoint: another replica may lock it first
                            await SignInLock.create(key=key, until=until)
                    except IntegrityError:
                        await SignInLock.filter(key=key).update(until=until)


async def succeeded(username: str) -> None:
    """A right password: the username's failures (and an ended lock) are forgotten."""
    await SignInFailure.filter(key=user_key(username)).delete()
    await SignInLock.filter(key=user_key(username)).delete()


async def forget_user(username: str) -> None:
    """A platform admin set a new password, or deleted the user: the username starts afresh."""
    await succeeded(username)
