"""Login throttling through the `login` mutation: failures slow a username and an address down,
then lock them for a while; a right password during a lock is refused alike; a success forgets the
username's failures; the setting turns it off. The clock and the sleep are replaced (no waiting)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest

from gpupaas.accounts import throttle
from gpupaas.app import create_app
from gpupaas.audit.models import AuditEntry
from gpupaas.settings import Settings
from tests.conftest import GraphQLClient
from tests.factories import make_user

PASSWORD = "correct horse battery"
LOGIN = """
mutation($u: String!, $p: String!) {
  login(username: $u, password: $p) { user { username } userErrors { field message code } }
}"""
T0 = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = T0
        self.slept: list[float] = []

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    made = Clock()
    monkeypatch.setattr(throttle, "now", lambda: made.now)
    monkeypatch.setattr(throttle, "sleep", made.sleep)
    return made


RULES: dict[str, Any] = {
    "login_delay_after": 3,
    "login_lock_after": 5,
    "login_address_delay_after": 3,
    "login_address_lock_after": 5,
    "login_lock_minutes": 15.0,
    "login_window_minutes": 15.0,
    "login_delay_seconds": 1.0,
    "login_max_delay_seconds": 4.0,
}


def ruled(settings: Settings, **more: Any) -> Settings:
    return replace(settings, **{**RULES, **more})


async def _client(settings: Settings, address: str = "203.0.113.7") -> AsyncIterator[GraphQLClient]:
    app = create_app(settings, migrate=False)
    transport = httpx.ASGITransport(app=app, client=(address, 4321))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
        yield GraphQLClient(http)


@pytest.fixture
async def throttled(settings: Settings) -> AsyncIterator[GraphQLClient]:
    async for client in _client(ruled(settings)):
        yield client


async def login(gql: GraphQLClient, username: str, password: str) -> dict[str, Any]:
    result: dict[str, Any] = (await gql.data(LOGIN, {"u": username, "p": password}))["login"]
    return result


def code(result: dict[str, Any]) -> str | None:
    return result["userErrors"][0]["code"] if result["userErrors"] else None


async def test_a_username_is_slowed_then_locked_and_a_right_password_does_not_get_through(
    db: object, throttled: GraphQLClient, clock: Clock
) -> None:
    await make_user("bob")
    codes = [code(await login(throttled, "bob", "wrong password")) for _ in range(5)]
    assert codes == ["INVALID"] * 5
    # from the 3rd failure on, each attempt waited first: 1 s, then 2 s (doubling)
    assert clock.slept == [1.0, 2.0]
    clock.advance(minutes=1)
    locked = await login(throttled, "bob", PASSWORD)
    assert locked == {
        "user": None,
        "userErrors": [
            {
                "field": None,
                "message": 'Too many failed sign-ins for "bob": try again in 14 minutes.',
                "code": "THROTTLED",
            }
        ],
    }
    # a wrong password during the lock gets the very same answer: nothing is revealed
    assert await login(throttled, "bob", "wrong password") == locked
    refused = await AuditEntry.filter(action="login", error_code="THROTTLED").count()
    assert refused == 2


async def test_the_lock_ends_after_its_time_and_a_success_forgets_the_failures(
    db: object, throttled: GraphQLClient, clock: Clock
) -> None:
    await make_user("bob")
    for _ in range(5):
        await login(throttled, "bob", "wrong password")
    clock.advance(minutes=14, seconds=59)
    assert code(await login(throttled, "bob", PASSWORD)) == "THROTTLED"
    clock.advance(seconds=2)
    assert await login(throttled, "bob", PASSWORD) == {"user": {"username": "bob"}, "userErrors": []}
    # the success forgot bob's failures: two more are not slowed down
    clock.slept.clear()
    for _ in range(2):
        assert code(await login(throttled, "bob", "wrong password")) == "INVALID"
    assert clock.slept == []


async def test_failures_out_of_the_window_do_not_count(
    db: object, throttled: GraphQLClient, clock: Clock
) -> None:
    await make_user("bob")
    for _ in range(4):
        await login(throttled, "bob", "wrong password")
        clock.advance(minutes=6)
    # at most 3 of them were ever in one 15-minute window: never locked
    assert await login(throttled, "bob", PASSWORD) == {"user": {"username": "bob"}, "userErrors": []}


async def test_an_address_trying_many_usernames_is_locked_for_all_of_them(
    db: object, settings: Settings, throttled: GraphQLClient, clock: Clock
) -> None:
    await make_user("alice")
    await make_user("bob")
    # guesses spread over usernames: no username reaches the lock, the address does
    for name in ("alice", "bob", "nobody", "alice", "bob"):
        assert code(await login(throttled, name, "wrong password")) == "INVALID"
    result = await login(throttled, "alice", PASSWORD)
    assert result["userErrors"] == [
        {
            "field": None,
            "message": "Too many failed sign-ins from your address: try again in 15 minutes.",
            "code": "THROTTLED",
        }
    ]
    # another address signs alice in: her username itself is not locked
    async for elsewhere in _client(ruled(settings), address="198.51.100.9"):
        assert (await login(elsewhere, "alice", PASSWORD))["user"] == {"username": "alice"}
    clock.advance(minutes=15, seconds=1)
    assert (await login(throttled, "bob", PASSWORD))["user"] == {"username": "bob"}


async def test_unknown_usernames_are_locked_as_known_ones(
    db: object, settings: Settings, clock: Clock
) -> None:
    """Otherwise the lock would tell which usernames exist. Each attempt from its own address."""
    await make_user("bob")
    answers = {}
    for name in ("bob", "nobody"):
        for i in range(6):
            async for client in _client(ruled(settings), address=f"192.0.2.{i}"):
                answers[name] = await login(client, name, "wrong password")
    assert answers["bob"]["userErrors"][0]["message"].replace("bob", "X") == answers["nobody"]["userErrors"][
        0
    ]["message"].replace("nobody", "X")
    assert code(answers["bob"]) == code(answers["nobody"]) == "THROTTLED"


async def test_the_setting_turns_throttling_off(db: object, settings: Settings, clock: Clock) -> None:
    await make_user("bob")
    off = ruled(settings, login_throttle=False)
    async for client in _client(off):
        for _ in range(12):
            assert code(await login(client, "bob", "wrong password")) == "INVALID"
        assert (await login(client, "bob", PASSWORD))["user"] == {"username": "bob"}
    assert clock.slept == []


async def test_reset_password_lifts_a_lock_on_the_username(
    db: object, settings: Settings, throttled: GraphQLClient, clock: Clock
) -> None:
    root = await make_user("root", platform_admin=True)
    await make_user("bob")
    for i in range(5):
        async for client in _client(ruled(settings), address=f"192.0.2.{i}"):
            await login(client, "bob", "wrong password")
    assert code(await login(throttled, "bob", PASSWORD)) == "THROTTLED"
    reset = """mutation { resetPassword(input: {username: "bob", newPassword: "a brand new secret"}) {
      userErrors { code } } }"""
    assert (await throttled.data(reset, token=root.token))["resetPassword"]["userErrors"] == []
    assert (await login(throttled, "bob", "a brand new secret"))["user"] == {"username": "bob"}


def test_the_settings_come_from_the_environment() -> None:
    env = {
        "GPUPAAS_DATABASE_URL": "sqlite:///tmp/x.db",
        "GPUPAAS_SECRET_KEY": "k" * 32,
        "GPUPAAS_LOGIN_THROTTLE": "false",
        "GPUPAAS_LOGIN_LOCK_AFTER": "20",
        "GPUPAAS_LOGIN_LOCK_MINUTES": "60",
        "GPUPAAS_LOGIN_DELAY_AFTER": "3",
        "GPUPAAS_LOGIN_WINDOW_MINUTES": "30",
        "GPUPAAS_LOGIN_ADDRESS_LOCK_AFTER": "100",
    }
    settings = Settings.from_env(env)
    assert (settings.login_throttle, settings.login_lock_after, settings.login_lock_minutes) == (
        False,
        20,
        60.0,
    )
    assert (settings.login_delay_after, settings.login_window_minutes) == (3, 30.0)
    assert settings.login_address_lock_after == 100
    defaults = Settings.from_env(
        {"GPUPAAS_DATABASE_URL": "sqlite:///tmp/x.db", "GPUPAAS_SECRET_KEY": "k" * 32}
    )
    assert (defaults.login_throttle, defaults.login_delay_after, defaults.login_lock_after) == (True, 5, 10)
    assert defaults.login_lock_minutes == 15.0
    assert (defaults.login_address_delay_after, defaults.login_address_lock_after) == (20, 50)


async def test_rows_that_no_longer_count_are_deleted(
    db: object, throttled: GraphQLClient, clock: Clock
) -> None:
    from gpupaas.accounts.models import SignInFailure, SignInLock

    for _ in range(5):
        await login(throttled, "nobody", "wrong password")  # locks "nobody" and the address
    assert await SignInLock.all().count() == 2
    clock.advance(minutes=16)
    await login(throttled, "someone", "wrong password")
    # the ended locks and the failures out of the window are gone: only this failure's rows stay
    assert await SignInLock.all().count() == 0
    assert sorted(failure.key for failure in await SignInFailure.all()) == [
        "address:203.0.113.7",
        "user:someone",
    ]


async def test_guessing_the_current_password_counts_as_failed_sign_ins(
    db: object, throttled: GraphQLClient, clock: Clock
) -> None:
    bob = await make_user("bob")
    change = """mutation($c: String!) { changePassword(input: {currentPassword: $c, newPassword: "a brand new one"}) {
      userErrors { field code } } }"""
    for _ in range(5):
        wrong = (await throttled.data(change, {"c": "a guess"}, token=bob.token))["changePassword"]
        assert wrong["userErrors"] == [{"field": ["input", "currentPassword"], "code": "INVALID"}]
    # bob's username is locked now: for changing the password, right or not, and for signing in
    right = (await throttled.data(change, {"c": PASSWORD}, token=bob.token))["changePassword"]
    assert right["userErrors"] == [{"field": None, "code": "THROTTLED"}]
    assert code(await login(throttled, "bob", PASSWORD)) == "THROTTLED"
    clock.advance(minutes=16)
    done = (await throttled.data(change, {"c": PASSWORD}, token=bob.token))["changePassword"]
    assert done["userErrors"] == []


async def test_an_address_has_thresholds_of_its_own(db: object, settings: Settings, clock: Clock) -> None:
    """Many people may share an address: with its thresholds higher, guesses spread over usernames
    are neither slowed nor locked before the address's own counts are reached."""
    for name in ("alice", "bob"):
        await make_user(name)
    async for client in _client(ruled(settings, login_address_delay_after=8, login_address_lock_after=10)):
        for name in ("alice", "bob", "carol", "dave") * 2:  # 8 failures, 2 per username
            assert code(await login(client, name, "wrong password")) == "INVALID"
        assert clock.slept == []  # no username reached 3, the address not 8 before an attempt
        assert (await login(client, "alice", PASSWORD))["user"] == {"username": "alice"}
        assert clock.slept == [1.0]  # 8 failures from the address before it: it waited
        for name in ("erin", "frank"):  # the 9th and 10th failures from the address
            assert code(await login(client, name, "wrong password")) == "INVALID"
        assert clock.slept == [1.0, 1.0, 2.0]
        result = await login(client, "bob", PASSWORD)
        assert code(result) == "THROTTLED" and "from your address" in result["userErrors"][0]["message"]
