"""Websocket sessions end with their credentials (README, "Security"): a revoked token, a logout, a
removed member or a lost role close that identity's open sockets with 4403 at once (through the
status topic, on the in-process bus and on Kafka), and so do an expiry and, at the next periodic
check, a credential deleted behind the API's back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import timedelta

import httpx
import pytest
import websockets

from gpupaas.accounts import service as accounts
from gpupaas.accounts.models import ApiToken, Session, User
from gpupaas.api.sockets import SocketSessions
from gpupaas.core.actor import Role
from tests import ws
from tests.conftest import serving
from tests.factories import make_instance, make_profile, make_project, make_user
from tests.workers.conftest import Pipeline, eventually

STATUS = "subscription($id: ID!) { computeInstanceStatus(id: $id) { status } }"


@pytest.fixture
async def served(pipeline: Pipeline) -> AsyncIterator[tuple[str, SocketSessions]]:
    """The app's address and its websockets' sessions."""
    from gpupaas.app import create_app

    settings = replace(pipeline.settings, ws_recheck_seconds=1.0)
    app = create_app(settings, migrate=False, runtime=pipeline.runtime)
    async with serving(app) as url:
        yield url, app.state.sockets


@pytest.fixture
def server(served: tuple[str, SocketSessions]) -> str:
    return served[0]


async def _closed_code(session: ws.Session, timeout: float = 15.0) -> int | None:
    """Reads until the server closes the socket; the close code."""
    try:
        while True:
            await session.receive(timeout)
    except websockets.ConnectionClosed as closed:
        return closed.rcvd.code if closed.rcvd else None


async def _watching(username: str, role: Role = Role.MEMBER) -> tuple[str, str]:
    """A user of project ml with an instance to watch: (token, instance id)."""
    user = await make_user(username)
    project = await make_project("ml", **{username: role})
    instance = await make_instance(project, await make_profile(project), name="nb")
    return user.token, str(instance.id)


async def test_revoking_the_token_closes_its_socket_at_once(db: object, server: str) -> None:
    token, iid = await _watching("alice")
    async with ws.connect(server, token=token) as session:
        await session.subscribe(STATUS, {"id": iid})
        assert (await session.next_data())["computeInstanceStatus"]["status"] == "NOT_DEPLOYED"
        # when the token is revoked (over HTTP, as the studio does)
        row = await ApiToken.get(user__username="alice")
        async with httpx.AsyncClient(base_url=server) as http:
            answer = await http.post(
                "/graphql",
                json={"query": f'mutation {{ revokeApiToken(id: "{row.id}") {{ deletedId }} }}'},
                headers={"authorization": f"Bearer {token}"},
            )
        assert answer.json()["data"]["revokeApiToken"]["deletedId"] == str(row.id)
        # then the socket is closed as Forbidden, before the periodic check could have run
        assert await _closed_code(session, timeout=0.9) == 4403


async def test_logging_out_closes_the_cookie_socket(db: object, server: str) -> None:
    await _watching("alice")
    async with httpx.AsyncClient(base_url=server) as http:
        login = await http.post(
            "/graphql",
            json={
                "query": 'mutation { login(username: "alice", password: "correct horse battery") { user { username } } }'
            },
        )
        cookie = login.cookies["gpupaas_session"]
        async with ws.connect(server, cookie=cookie) as session:
            await http.post("/graphql", json={"query": "mutation { logout }"})  # with the client's cookie
            assert await _closed_code(session, timeout=0.9) == 4403


async def test_a_lost_role_or_a_removed_member_closes_the_socket(db: object, server: str) -> None:
    await _watching("alice", Role.ADMIN)
    bob = await make_user("bob")
    await accounts.set_member(None, "ml", "bob", Role.ADMIN)
    async with ws.connect(server, token=bob.token) as session:
        await accounts.set_member(None, "ml", "bob", Role.MEMBER)  # ADMIN -> MEMBER
        assert await _closed_code(session, timeout=0.9) == 4403
    async with ws.connect(server, token=bob.token) as session:
        alice = await accounts.actor_for(await User.get(username="alice"))
        await accounts.remove_member(alice, "ml", "bob")
        assert await _closed_code(session, timeout=0.9) == 4403


async def test_disabling_a_user_closes_their_sockets_and_enabling_them_signs_them_in_again(
    db: object, server: str
) -> None:
    token, iid = await _watching("alice")
    root = await make_user("root", platform_admin=True)
    disable = 'mutation($d: Boolean!) { setUserDisabled(input: {username: "alice", disabled: $d}) { user { disabled } } }'
    async with httpx.AsyncClient(base_url=server) as http:

        async def as_root(disabled: bool) -> None:
            answer = await http.post(
                "/graphql",
                json={"query": disable, "variables": {"d": disabled}},
                headers={"authorization": f"Bearer {root.token}"},
            )
            assert answer.json()["data"]["setUserDisabled"]["user"] == {"disabled": disabled}

        async with ws.connect(server, token=token) as session:
            await session.subscribe(STATUS, {"id": iid})
            assert (await session.next_data())["computeInstanceStatus"]["status"] == "NOT_DEPLOYED"
            await as_root(True)
            assert await _closed_code(session, timeout=0.9) == 4403
        # the token signs nobody in while alice is disabled, over HTTP and on a new socket
        me = await http.post(
            "/graphql", json={"query": "{ me { username } }"}, headers={"authorization": f"Bearer {token}"}
        )
        assert me.json()["data"]["me"] is None
        with pytest.raises(websockets.ConnectionClosed) as refused:
            async with ws.connect(server, token=token):
                pass
        assert refused.value.rcvd is not None and refused.value.rcvd.code == 4403
        # and works again once she is enabled
        await as_root(False)
        me = await http.post(
            "/graphql", json={"query": "{ me { username } }"}, headers={"authorization": f"Bearer {token}"}
        )
        assert me.json()["data"]["me"] == {"username": "alice"}


async def test_deleting_a_user_closes_their_sockets_at_once(db: object, server: str) -> None:
    token, iid = await _watching("alice")
    root = await make_user("root", platform_admin=True)
    async with ws.connect(server, token=token) as session:
        await session.subscribe(STATUS, {"id": iid})
        assert (await session.next_data())["computeInstanceStatus"]["status"] == "NOT_DEPLOYED"
        async with httpx.AsyncClient(base_url=server) as http:
            answer = await http.post(
                "/graphql",
                json={"query": 'mutation { deleteUser(username: "alice") { deletedId } }'},
                headers={"authorization": f"Bearer {root.token}"},
            )
        assert answer.json()["data"]["deleteUser"]["deletedId"] is not None
        assert await _closed_code(session, timeout=0.9) == 4403


async def test_a_reset_password_closes_the_users_cookie_sockets(db: object, server: str) -> None:
    await _watching("alice")
    root = await make_user("root", platform_admin=True)
    async with httpx.AsyncClient(base_url=server) as http:
        login = await http.post(
            "/graphql",
            json={
                "query": 'mutation { login(username: "alice", password: "correct horse battery") { user { username } } }'
            },
        )
        cookie = login.cookies["gpupaas_session"]
        http.cookies.clear()
        async with ws.connect(server, cookie=cookie) as session:
            await http.post(
                "/graphql",
                json={
                    "query": 'mutation { resetPassword(input: {username: "alice", newPassword: "a new secret"}) '
                    "{ userErrors { code } } }"
                },
                headers={"authorization": f"Bearer {root.token}"},
            )
            assert await _closed_code(session, timeout=0.9) == 4403


async def test_a_gained_role_keeps_the_socket_open(db: object, served: tuple[str, SocketSessions]) -> None:
    server, sockets = served
    _, iid = await _watching("alice")
    bob = await make_user("bob")
    await accounts.set_member(None, "ml", "bob", Role.MEMBER)
    async with ws.connect(server, token=bob.token) as session:
        kept = sockets.kept
        await accounts.set_member(None, "ml", "bob", Role.ADMIN)

        # once the socket's credential was checked after the change, and kept
        async def checked() -> bool:
            return sockets.kept > kept

        await eventually(checked, what="the socket to be checked again")
        # it still answers, with the role gained
        await session.subscribe(STATUS, {"id": iid})
        assert (await session.next_data())["computeInstanceStatus"]["status"] == "NOT_DEPLOYED"
        assert len(sockets) == 1


async def test_an_expiring_session_closes_its_socket_when_it_ends(db: object, server: str) -> None:
    await _watching("alice")
    async with httpx.AsyncClient(base_url=server) as http:
        login = await http.post(
            "/graphql",
            json={
                "query": 'mutation { login(username: "alice", password: "correct horse battery") { user { username } } }'
            },
        )
    cookie = login.cookies["gpupaas_session"]
    await Session.all().update(expires_at=accounts.now() + timedelta(seconds=2))
    async with ws.connect(server, cookie=cookie) as session:
        assert await _closed_code(session, timeout=15) == 4403


async def test_a_token_deleted_behind_the_apis_back_is_caught_by_the_periodic_check(
    db: object, server: str
) -> None:
    token, _ = await _watching("alice")
    async with ws.connect(server, token=token) as session:
        await ApiToken.all().delete()  # no event: only the check every ws_recheck_seconds sees it
        assert await _closed_code(session, timeout=15) == 4403
