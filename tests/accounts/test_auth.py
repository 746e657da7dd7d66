"""Signing in: sessions (cookie), API tokens (bearer), and the request rules that keep CSRF out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from gpupaas.accounts import service as accounts
from gpupaas.accounts.models import ApiToken, Session, User
from gpupaas.app import actor_from_credentials
from gpupaas.core.actor import Actor, Role
from tests.conftest import GraphQLClient, QueryCounter
from tests.factories import make_project, make_user

LOGIN = """
mutation($u: String!, $p: String!) {
  login(username: $u, password: $p) { user { username isPlatformAdmin } userErrors { field message code } }
}"""
ME = "{ me { username memberships { project { name } role } } }"
LOGOUT = "mutation { logout }"
CREATE_TOKEN = """
mutation($name: String!, $expiresAt: DateTime) {
  createApiToken(input: {name: $name, expiresAt: $expiresAt}) {
    token apiToken { id name createdAt lastUsedAt expiresAt } userErrors { field message code }
  }
}"""
REVOKE = "mutation($id: ID!) { revokeApiToken(id: $id) { deletedId userErrors { field message code } } }"
TOKENS = "{ apiTokens { id name lastUsedAt } }"


async def test_login_sets_an_httponly_lax_cookie_that_signs_in(db: object, gql: GraphQLClient) -> None:
    await make_user("alice")
    response = await gql.post(LOGIN, {"u": "alice", "p": "correct horse battery"})
    assert response.json()["data"]["login"] == {
        "user": {"username": "alice", "isPlatformAdmin": False},
        "userErrors": [],
    }
    cookie = response.headers["set-cookie"]
    assert "gpupaas_session=" in cookie
    assert "HttpOnly" in cookie
    assert "SameSite=lax" in cookie or "SameSite=Lax" in cookie
    # the client keeps the cookie: the next request is alice's
    assert (await gql.data(ME))["me"]["username"] == "alice"
    await gql.data(LOGOUT)
    assert (await gql.data(ME))["me"] is None


async def test_logout_ends_the_session_on_the_server(db: object, gql: GraphQLClient) -> None:
    await make_user("alice")
    response = await gql.post(LOGIN, {"u": "alice", "p": "correct horse battery"})
    session = response.cookies["gpupaas_session"]
    await gql.data(LOGOUT)
    # replaying the old cookie does not work any more
    gql.http.cookies.set("gpupaas_session", session)
    assert (await gql.data(ME))["me"] is None


async def test_wrong_password_and_unknown_user_get_the_same_answer(db: object, gql: GraphQLClient) -> None:
    await make_user("alice")
    wrong = (await gql.data(LOGIN, {"u": "alice", "p": "nope nope nope"}))["login"]
    unknown = (await gql.data(LOGIN, {"u": "nobody", "p": "nope nope nope"}))["login"]
    assert (
        wrong
        == unknown
        == {
            "user": None,
            "userErrors": [{"field": None, "message": "Wrong username or password.", "code": "INVALID"}],
        }
    )


async def test_api_token_signs_in_records_use_and_can_be_revoked(db: object, gql: GraphQLClient) -> None:
    alice = await make_user("alice")
    created = (await gql.data(CREATE_TOKEN, {"name": "ci"}, token=alice.token))["createApiToken"]
    secret = created["token"]
    assert secret.startswith("gpp_") and created["userErrors"] == []
    assert created["apiToken"]["lastUsedAt"] is None
    # the server keeps only a hash
    stored = await ApiToken.get(id=created["apiToken"]["id"])
    assert secret not in stored.token_hash
    assert (await gql.data(ME, token=secret))["me"]["username"] == "alice"
    tokens = {t["name"]: t for t in (await gql.data(TOKENS, token=secret))["apiTokens"]}
    assert tokens["ci"]["lastUsedAt"] is not None
    revoked = (await gql.data(REVOKE, {"id": created["apiToken"]["id"]}, token=alice.token))["revokeApiToken"]
    assert revoked == {"deletedId": created["apiToken"]["id"], "userErrors": []}
    assert (await gql.data(ME, token=secret))["me"] is None


async def test_expired_tokens_do_not_sign_in(db: object, gql: GraphQLClient) -> None:
    alice = await make_user("alice")
    soon = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    created = (await gql.data(CREATE_TOKEN, {"name": "short", "expiresAt": soon}, token=alice.token))[
        "createApiToken"
    ]
    await ApiToken.filter(id=created["apiToken"]["id"]).update(
        expires_at=datetime.now(UTC) - timedelta(seconds=1)
    )
    assert (await gql.data(ME, token=created["token"]))["me"] is None


async def test_each_request_finds_its_caller_in_one_statement(
    db: object, count_queries: QueryCounter
) -> None:
    """The credential, its user and the user's roles come in one statement; a token's last use is
    written at most once a minute, an ended session is deleted; nothing else is run."""
    alice, bob = await make_user("alice"), await make_user("bob")
    root = await make_user("root", platform_admin=True)
    ml = await make_project("ml", alice=Role.ADMIN)
    research = await make_project("research", alice=Role.MEMBER)
    _, session = await accounts.login("alice", "correct horse battery", timedelta(hours=1))

    async def caller(authorization: str | None, cookie: str | None) -> tuple[Actor, int]:
        count_queries.statements.clear()
        actor, _ = await actor_from_credentials(authorization, cookie)
        return actor, len(count_queries.statements)

    first, statements = await caller(f"Bearer {alice.token}", None)
    assert statements == 2  # the first use is written down
    again, statements = await caller(f"Bearer {alice.token}", None)
    assert statements == 1
    for actor in (first, again):
        assert actor.roles == {ml.id: Role.ADMIN, research.id: Role.MEMBER}
        assert actor.user is not None
        stored = await User.get(id=alice.user.id)
        assert {name: getattr(actor.user, name) for name in User._meta.fields_db_projection} == {
            name: getattr(stored, name) for name in User._meta.fields_db_projection
        }
    await caller(f"Bearer {bob.token}", None)
    lonely, statements = await caller(f"Bearer {bob.token}", None)
    assert (lonely.user is not None and lonely.user.username, lonely.roles, statements) == ("bob", {}, 1)
    await caller(f"Bearer {root.token}", None)
    admin, _ = await caller(f"Bearer {root.token}", None)
    assert admin.is_platform_admin and admin.roles == {}

    by_cookie, statements = await caller(None, session)
    assert (by_cookie.user is not None and by_cookie.user.username, statements) == ("alice", 1)
    assert by_cookie.roles == first.roles
    token_wins, _ = await caller(f"Bearer {bob.token}", session)
    assert token_wins.user is not None and token_wins.user.username == "bob"

    for authorization, cookie, most in [
        ("Bearer gpp_unknown", None, 1),
        ("Bearer not-a-token", None, 0),
        ("Basic Zm9vOmJhcg==", None, 0),
        ("Bearer ", None, 0),
        (None, "no-such-session", 1),
        (None, None, 0),
    ]:
        nobody, statements = await caller(authorization, cookie)
        assert nobody.user is None and nobody.roles == {}, authorization
        assert statements <= most, authorization

    await ApiToken.filter(user_id=alice.user.id).update(expires_at=datetime.now(UTC) - timedelta(seconds=1))
    expired, statements = await caller(f"Bearer {alice.token}", None)
    assert (expired.user, statements) == (None, 1)
    await Session.filter(user_id=alice.user.id).update(expires_at=datetime.now(UTC) - timedelta(seconds=1))
    ended, statements = await caller(None, session)
    assert (ended.user, statements) == (None, 2)  # found, then deleted
    assert not await Session.exists(user_id=alice.user.id)


async def test_token_input_errors(db: object, gql: GraphQLClient) -> None:
    alice = await make_user("alice")
    past = (datetime.now(UTC) - timedelta(days=1)).isoformat()
    errors = (await gql.data(CREATE_TOKEN, {"name": "old", "expiresAt": past}, token=alice.token))[
        "createApiToken"
    ]
    assert errors["userErrors"] == [
        {"field": ["input", "expiresAt"], "message": "must be in the future", "code": "INVALID"}
    ]
    taken = (await gql.data(CREATE_TOKEN, {"name": "tests"}, token=alice.token))["createApiToken"]
    assert taken["userErrors"][0]["code"] == "TAKEN"


async def test_someone_elses_token_cannot_be_revoked(db: object, gql: GraphQLClient) -> None:
    alice, bob = await make_user("alice"), await make_user("bob")
    bobs = (await gql.data(TOKENS, token=bob.token))["apiTokens"][0]["id"]
    result = (await gql.data(REVOKE, {"id": bobs}, token=alice.token))["revokeApiToken"]
    assert result["userErrors"][0]["code"] == "NOT_FOUND"
    assert (await gql.data(ME, token=bob.token))["me"]["username"] == "bob"


async def test_posts_must_be_json(db: object, gql: GraphQLClient) -> None:
    # a form on another site can post urlencoded or multipart bodies with the cookie: refused
    for content_type, body in [
        ("application/x-www-form-urlencoded", "query=mutation%20%7B%20logout%20%7D"),
        ("text/plain", '{"query": "mutation { logout }"}'),
        ("multipart/form-data; boundary=x", "--x\r\n"),
    ]:
        response = await gql.http.post("/graphql", content=body, headers={"content-type": content_type})
        assert response.status_code in (400, 415), (content_type, response.status_code)


async def test_mutations_over_get_are_refused(db: object, gql: GraphQLClient) -> None:
    response = await gql.http.get("/graphql", params={"query": "mutation { logout }"})
    assert response.status_code in (400, 405)
    ok = await gql.http.get("/graphql", params={"query": "{ me { username } }"})
    assert ok.status_code == 200 and ok.json() == {"data": {"me": None}}


DISABLE = """
mutation($u: String!, $d: Boolean!) {
  setUserDisabled(input: {username: $u, disabled: $d}) { user { username disabled } userErrors { field message code } }
}"""


async def test_a_disabled_user_cannot_sign_in_and_their_credentials_sign_nobody_in(
    db: object, gql: GraphQLClient
) -> None:
    alice = await make_user("alice")
    root = await make_user("root", platform_admin=True)
    session = (await gql.post(LOGIN, {"u": "alice", "p": "correct horse battery"})).cookies["gpupaas_session"]
    gql.http.cookies.clear()

    answer = await gql.data(DISABLE, {"u": "alice", "d": True}, token=root.token)
    assert answer["setUserDisabled"] == {"user": {"username": "alice", "disabled": True}, "userErrors": []}
    # her token and her open session sign nobody in; the token is not marked used
    assert (await gql.data(ME, token=alice.token))["me"] is None
    gql.http.cookies.set("gpupaas_session", session)
    assert (await gql.data(ME))["me"] is None
    gql.http.cookies.clear()
    # signing in is refused with the reason, told only to whoever knows the password
    refused = (await gql.data(LOGIN, {"u": "alice", "p": "correct horse battery"}))["login"]
    assert refused["userErrors"] == [
        {
            "field": None,
            "message": "This account is disabled: ask a platform admin to enable it.",
            "code": "FORBIDDEN",
        }
    ]
    wrong = (await gql.data(LOGIN, {"u": "alice", "p": "nope nope nope"}))["login"]
    assert wrong["userErrors"][0]["message"] == "Wrong username or password."
    # enabled again, the same token and session work
    await gql.data(DISABLE, {"u": "alice", "d": False}, token=root.token)
    assert (await gql.data(ME, token=alice.token))["me"]["username"] == "alice"
    gql.http.cookies.set("gpupaas_session", session)
    assert (await gql.data(ME))["me"]["username"] == "alice"


async def test_only_platform_admins_disable_users_and_nobody_disables_themselves(
    db: object, gql: GraphQLClient
) -> None:
    await make_user("alice")
    bob = await make_user("bob")
    await make_project("ml", bob=Role.ADMIN)
    root = await make_user("root", platform_admin=True)
    forbidden = await gql(DISABLE, {"u": "alice", "d": True}, token=bob.token)
    assert forbidden["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    mine = (await gql.data(DISABLE, {"u": "root", "d": True}, token=root.token))["setUserDisabled"]
    assert mine == {
        "user": None,
        "userErrors": [
            {"field": ["input", "username"], "message": "you cannot disable yourself", "code": "INVALID"}
        ],
    }
    unknown = (await gql.data(DISABLE, {"u": "nobody", "d": True}, token=root.token))["setUserDisabled"]
    assert unknown["userErrors"][0]["code"] == "NOT_FOUND"
    assert (await User.get(username="alice")).disabled_at is None
