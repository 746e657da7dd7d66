"""OpenID Connect sign-in, end to end: the app under uvicorn, a real provider (oidc-provider-mock,
tests/oidc_provider.py) on another loopback port, and httpx walking the browser's way through the
authorization code flow with PKCE: /auth/oidc/login, the provider's form, /auth/oidc/callback."""

from __future__ import annotations

import base64
import hashlib
import logging
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import httpx
import pytest

from gpupaas.accounts import service as accounts
from gpupaas.accounts.models import Membership, Session, User
from gpupaas.api.oidc import FLOW_COOKIE, Provider, SignInFailed, safe_next
from gpupaas.app import create_app
from gpupaas.audit.models import AuditEntry, AuditOutcome
from gpupaas.core.actor import Role
from gpupaas.settings import OidcSettings, Settings
from tests.conftest import QueryCounter, serving
from tests.factories import make_project, make_user
from tests.oidc_provider import RunningProvider, running_provider

ME = "{ me { username isPlatformAdmin memberships { project { name } role } } }"
OPTIONS = "{ signInOptions { oidc { name loginUrl } } }"
LOGIN = """
mutation($u: String!, $p: String!) { login(username: $u, password: $p) { user { username } userErrors { message } } }"""


@pytest.fixture
def provider() -> Iterator[RunningProvider]:
    with running_provider() as running:
        yield running


def oidc_of(provider: RunningProvider, **changes: Any) -> OidcSettings:
    base = OidcSettings(
        issuer=provider.url,
        client_id="gpupaas",
        client_secret="client secret at the provider",
        name="Acme SSO",
        admin_group="gpupaas-admins",
        project_role_pattern="gpupaas:{project}:{role}",
    )
    return replace(base, **changes)


@pytest.fixture
async def site(settings: Settings, provider: RunningProvider) -> AsyncIterator[str]:
    async with serving(create_app(replace(settings, oidc=oidc_of(provider)), migrate=False)) as url:
        yield url


@pytest.fixture
async def browser() -> AsyncIterator[httpx.AsyncClient]:
    """A cookie jar that goes where it is sent (redirects are followed by hand, to see them)."""
    async with httpx.AsyncClient(timeout=10) as http:
        yield http


async def start(http: httpx.AsyncClient, site: str, next_path: str | None = None) -> str:
    """/auth/oidc/login: the provider's authorization URL it redirects to."""
    query = f"?{urlencode({'next': next_path})}" if next_path is not None else ""
    response = await http.get(f"{site}/auth/oidc/login{query}")
    assert response.status_code == 302, response.text
    return response.headers["location"]


async def at_provider(http: httpx.AsyncClient, authorize_url: str, subject: str | None) -> str:
    """The person at the provider's form: authorizes as `subject`, or denies (None). The callback
    URL the provider sends the browser back to."""
    form = await http.get(authorize_url)
    assert form.status_code == 200 and "Authorize" in form.text
    answer = await http.post(authorize_url, data={"sub": subject} if subject else {"action": "deny"})
    assert answer.status_code == 302, answer.text
    return answer.headers["location"]


async def sign_in(
    http: httpx.AsyncClient, site: str, subject: str | None, next_path: str | None = None
) -> httpx.Response:
    """The whole flow; the callback's answer (a redirect to `next`, or to /login with an error)."""
    callback = await at_provider(http, await start(http, site, next_path), subject)
    assert callback.startswith(f"{site}/auth/oidc/callback?")
    return await http.get(callback)


async def me(http: httpx.AsyncClient, site: str) -> Any:
    response = await http.post(f"{site}/graphql", json={"query": ME})
    return response.json()["data"]["me"]


def error_of(response: httpx.Response) -> str | None:
    assert response.status_code == 303
    location = urlsplit(response.headers["location"])
    assert location.path == "/login", response.headers["location"]
    return parse_qs(location.query)["oidc_error"][0]


async def test_first_sign_in_creates_the_user_and_the_next_reuses_it(
    db: object, site: str, provider: RunningProvider, browser: httpx.AsyncClient
) -> None:
    await make_project("ml")
    provider.set_user("sub-1", {"preferred_username": "alice", "email": "alice@example.com"})

    response = await sign_in(browser, site, "sub-1", "/p/ml/dashboard")

    assert response.status_code == 303 and response.headers["location"] == "/p/ml/dashboard"
    cookie = next(c for c in response.headers.get_list("set-cookie") if c.startswith("gpupaas_session="))
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Path=/" in cookie
    assert await me(browser, site) == {"username": "alice", "isPlatformAdmin": False, "memberships": []}
    user = await User.get(username="alice")
    assert (user.oidc_issuer, user.oidc_subject, user.password_hash) == (provider.url, "sub-1", "")
    # the flow's cookie is gone, and no password signs the new user in
    assert FLOW_COOKIE not in browser.cookies
    refused = await browser.post(
        f"{site}/graphql", json={"query": LOGIN, "variables": {"u": "alice", "p": ""}}
    )
    assert refused.json()["data"]["login"]["userErrors"] == [{"message": "Wrong username or password."}]

    # signed out, the same identity signs in again as the same user, with a new session
    browser.cookies.clear()
    again = await sign_in(browser, site, "sub-1")
    assert again.headers["location"] == "/"
    assert (await me(browser, site))["username"] == "alice"
    assert await User.filter(oidc_subject="sub-1").count() == 1
    assert await Session.filter(user_id=user.id).count() == 2


async def test_the_flow_uses_pkce_s256_a_nonce_and_our_client(
    db: object, site: str, provider: RunningProvider, browser: httpx.AsyncClient
) -> None:
    authorize_url = await start(browser, site)
    query = parse_qs(urlsplit(authorize_url).query)
    assert query["client_id"] == ["gpupaas"] and query["response_type"] == ["code"]
    assert query["scope"] == ["openid profile email"]
    assert query["redirect_uri"] == [f"{site}/auth/oidc/callback"]
    assert query["code_challenge_method"] == ["S256"]
    assert len(query["state"][0]) >= 32 and len(query["nonce"][0]) >= 32
    # the flow cookie: encrypted (the verifier is not readable in it), HttpOnly, only for /auth/oidc
    flow = browser.cookies[FLOW_COOKIE]
    assert query["state"][0] not in flow
    response = await sign_in_from(browser, authorize_url, "sub-2")
    assert response.status_code == 303 and response.headers["location"] == "/"
    exchange = provider.check.token_requests[-1]
    # a confidential client: HTTP Basic with its secret (client_secret_basic)
    assert exchange["authorization"] is not None and exchange["authorization"].startswith("Basic ")
    sent = exchange["code_verifier"]
    assert sent is not None
    challenge = base64.urlsafe_b64encode(hashlib.sha256(sent.encode()).digest()).rstrip(b"=").decode()
    assert challenge == query["code_challenge"][0]


async def sign_in_from(http: httpx.AsyncClient, authorize_url: str, subject: str) -> httpx.Response:
    return await http.get(await at_provider(http, authorize_url, subject))


async def test_a_code_is_useless_without_the_verifier_of_its_own_sign_in(
    db: object, site: str, provider: RunningProvider
) -> None:
    """Another browser's code, brought to a sign-in of ours with our own valid state: the provider
    refuses it, because our verifier is not the one its challenge was made from (PKCE)."""
    async with httpx.AsyncClient(timeout=10) as victim, httpx.AsyncClient(timeout=10) as attacker:
        stolen = parse_qs(urlsplit(await at_provider(victim, await start(victim, site), "sub-3")).query)
        own = parse_qs(urlsplit(await start(attacker, site)).query)
        query = urlencode({"code": stolen["code"][0], "state": own["state"][0]})
        response = await attacker.get(f"{site}/auth/oidc/callback?{query}")
        assert error_of(response) == "refused"
        assert await me(attacker, site) is None
    assert await User.filter(oidc_subject="sub-3").count() == 0


async def test_groups_give_platform_admin_and_project_roles_and_take_them_back(
    db: object, site: str, provider: RunningProvider, browser: httpx.AsyncClient
) -> None:
    for name in ("ml", "cv", "nlp"):
        await make_project(name)
    groups = ["gpupaas-admins", "/gpupaas:ml:admin", "gpupaas:cv:member", "gpupaas:cv:Admin", "other"]
    provider.set_user("sub-4", {"preferred_username": "bob", "groups": groups})
    await sign_in(browser, site, "sub-4")
    first = await me(browser, site)
    assert first["isPlatformAdmin"] is True
    assert {m["project"]["name"]: m["role"] for m in first["memberships"]} == {"ml": "ADMIN", "cv": "ADMIN"}
    # a project admin adds bob to nlp by hand: no group gave it, no sign-in takes it away
    await accounts.set_member(None, "nlp", "bob", Role.MEMBER)

    provider.set_user("sub-4", {"preferred_username": "bob", "groups": ["gpupaas:cv:member"]})
    browser.cookies.clear()
    await sign_in(browser, site, "sub-4")
    second = await me(browser, site)
    assert second["isPlatformAdmin"] is False
    assert {m["project"]["name"]: m["role"] for m in second["memberships"]} == {
        "cv": "MEMBER",
        "nlp": "MEMBER",
    }
    actions = await AuditEntry.filter(action="oidcSignIn", object_type="Membership").values_list(
        "project_name", "changes"
    )
    assert ("ml", {"role": {"from": "ADMIN", "to": None}, "user": {"from": "bob", "to": None}}) in actions


async def test_a_group_naming_a_project_that_does_not_exist_gives_nothing(
    db: object, site: str, provider: RunningProvider, browser: httpx.AsyncClient
) -> None:
    provider.set_user("sub-5", {"preferred_username": "carol", "groups": ["gpupaas:nowhere:admin"]})
    assert (await sign_in(browser, site, "sub-5")).headers["location"] == "/"
    assert (await me(browser, site))["memberships"] == []
    assert await Membership.all().count() == 0


async def test_an_identity_never_takes_over_a_local_account_of_the_same_name(
    db: object, site: str, provider: RunningProvider, browser: httpx.AsyncClient
) -> None:
    local = await make_user("alice")
    provider.set_user("sub-6", {"preferred_username": "alice", "groups": ["gpupaas-admins"]})
    await sign_in(browser, site, "sub-6")
    assert (await me(browser, site))["username"] == "alice-2"
    await local.user.refresh_from_db()
    assert (local.user.oidc_subject, local.user.is_platform_admin) == (None, False)
    # the local account still signs in with its password, as itself
    async with httpx.AsyncClient(timeout=10) as other:
        answer = await other.post(
            f"{site}/graphql",
            json={"query": LOGIN, "variables": {"u": "alice", "p": "correct horse battery"}},
        )
        assert answer.json()["data"]["login"]["user"] == {"username": "alice"}


async def test_usernames_are_made_valid_from_the_email_when_no_preferred_username(
    db: object, site: str, provider: RunningProvider, browser: httpx.AsyncClient
) -> None:
    provider.set_user("sub-7", {"email": "dora o'neil@example.com"})
    await sign_in(browser, site, "sub-7")
    assert (await me(browser, site))["username"] == "dora-o-neil"


async def test_a_disabled_user_is_refused_at_the_callback(
    db: object, site: str, provider: RunningProvider, browser: httpx.AsyncClient
) -> None:
    provider.set_user("sub-8", {"preferred_username": "erin"})
    await sign_in(browser, site, "sub-8")
    await accounts.set_user_disabled(None, "erin", True)
    browser.cookies.clear()
    response = await sign_in(browser, site, "sub-8", "/p/ml/dashboard")
    assert error_of(response) == "disabled"
    assert parse_qs(urlsplit(response.headers["location"]).query)["next"] == ["/p/ml/dashboard"]
    assert await me(browser, site) is None
    entry = await AuditEntry.filter(action="oidcSignIn", outcome=AuditOutcome.REFUSED).get()
    assert (entry.actor_name, entry.error_code) == ("erin", "DISABLED")


async def test_a_wrong_state_is_refused(
    db: object, site: str, provider: RunningProvider, browser: httpx.AsyncClient
) -> None:
    callback = await at_provider(browser, await start(browser, site), "sub-9")
    query = parse_qs(urlsplit(callback).query)
    forged = urlencode({"code": query["code"][0], "state": "not-the-state-we-sent"})
    response = await browser.get(f"{site}/auth/oidc/callback?{forged}")
    assert error_of(response) == "state"
    assert await me(browser, site) is None
    assert await User.filter(oidc_subject="sub-9").count() == 0
    # the flow is over: the real state does not work after it either
    assert error_of(await browser.get(callback)) == "expired"


async def test_a_callback_without_this_browsers_sign_in_is_refused(
    db: object, site: str, provider: RunningProvider, browser: httpx.AsyncClient
) -> None:
    callback = await at_provider(browser, await start(browser, site), "sub-10")
    async with httpx.AsyncClient(timeout=10) as elsewhere:  # no flow cookie
        assert error_of(await elsewhere.get(callback)) == "expired"
        elsewhere.cookies.set(FLOW_COOKIE, "forged", domain="127.0.0.1", path="/auth/oidc")
        assert error_of(await elsewhere.get(callback)) == "expired"
    assert await User.all().count() == 0


async def test_declining_at_the_provider_says_so(
    db: object, site: str, provider: RunningProvider, browser: httpx.AsyncClient
) -> None:
    assert error_of(await sign_in(browser, site, None)) == "cancelled"
    entry = await AuditEntry.get(action="oidcSignIn")
    assert (entry.outcome, entry.error_code, entry.actor_name) == (
        AuditOutcome.REFUSED,
        "CANCELLED",
        "anonymous",
    )


@pytest.mark.parametrize(
    "given",
    [
        "https://evil.example/",
        "//evil.example/x",
        "/\\evil.example",
        "javascript:alert(1)",
        "evil",
        "/\t/evil.example",
    ],
)
async def test_next_never_leaves_the_site(
    db: object, site: str, provider: RunningProvider, browser: httpx.AsyncClient, given: str
) -> None:
    response = await sign_in(browser, site, "sub-11", given)
    assert response.status_code == 303 and response.headers["location"] == "/"


def test_safe_next_keeps_local_paths_with_their_query() -> None:
    assert safe_next("/p/ml/instances?status=RUNNING#top") == "/p/ml/instances?status=RUNNING#top"
    assert safe_next(None) == "/"
    assert safe_next("/" + "a" * 3000) == "/"


async def test_a_provider_that_does_not_answer_is_reported(db: object, settings: Settings) -> None:
    with running_provider() as gone:
        url = gone.url
    down = OidcSettings(issuer=url, client_id="gpupaas")
    async with (
        serving(create_app(replace(settings, oidc=down), migrate=False)) as site,
        httpx.AsyncClient(timeout=10) as http,
    ):
        response = await http.get(f"{site}/auth/oidc/login?next=/p/ml/dashboard")
        assert error_of(response) == "unavailable"
        assert "Traceback" not in response.text


async def test_without_an_issuer_there_is_no_oidc_sign_in(db: object, settings: Settings) -> None:
    async with serving(create_app(settings, migrate=False)) as site, httpx.AsyncClient(timeout=10) as http:
        options = await http.post(f"{site}/graphql", json={"query": OPTIONS})
        assert options.json()["data"]["signInOptions"] == {"oidc": None}
        for path in ("/auth/oidc/login", "/auth/oidc/callback?code=x&state=y"):
            response = await http.get(f"{site}{path}")
            # no route: the studio's page (or 404 without a built studio), never a redirect
            assert response.status_code in (200, 404) and "set-cookie" not in response.headers


async def test_sign_in_options_name_the_provider(db: object, site: str, browser: httpx.AsyncClient) -> None:
    options = await browser.post(f"{site}/graphql", json={"query": OPTIONS})
    assert options.json()["data"]["signInOptions"] == {
        "oidc": {"name": "Acme SSO", "loginUrl": "/auth/oidc/login"}
    }


# ---------------------------------------------------------------- the ID token's checks, on real tokens


async def real_id_token(provider: RunningProvider, base: str, client_id: str, nonce: str) -> str:
    """An ID token the provider signs, for `client_id`, fetched at `base` (its issuer follows the
    host the provider is asked at)."""
    async with httpx.AsyncClient(timeout=10) as http:
        query = urlencode(
            {
                "client_id": client_id,
                "response_type": "code",
                "redirect_uri": "http://127.0.0.1/cb",
                "scope": "openid",
                "state": "s",
                "nonce": nonce,
            }
        )
        answer = await http.post(f"{base}/oauth2/authorize?{query}", data={"sub": "sub-12"})
        code = parse_qs(urlsplit(answer.headers["location"]).query)["code"][0]
        tokens = await http.post(
            f"{base}/oauth2/token",
            data={"grant_type": "authorization_code", "code": code, "redirect_uri": "http://127.0.0.1/cb"},
            auth=(client_id, "secret"),
        )
        token: str = tokens.json()["id_token"]
        return token


async def test_id_tokens_are_checked_for_audience_issuer_nonce_and_signature(
    provider: RunningProvider,
) -> None:
    checker = Provider(oidc_of(provider))
    good = await real_id_token(provider, provider.url, "gpupaas", "n-1")
    assert (await checker.validate(good, "n-1"))["sub"] == "sub-12"

    another_client = await real_id_token(provider, provider.url, "someone-else", "n-1")
    with pytest.raises(SignInFailed, match="aud") as audience:
        await checker.validate(another_client, "n-1")
    # the same provider's key, but an issuer we were not told to trust
    port = urlsplit(provider.url).port
    other_issuer = await real_id_token(provider, f"http://localhost:{port}", "gpupaas", "n-1")
    with pytest.raises(SignInFailed, match="iss") as issuer:
        await checker.validate(other_issuer, "n-1")
    with pytest.raises(SignInFailed, match="nonce") as nonce:
        await checker.validate(good, "n-2")
    head, payload, signature = good.split(".")
    with pytest.raises(SignInFailed) as signed:
        await checker.validate(f"{head}.{payload}.{signature[:-4]}AAAA", "n-1")
    with pytest.raises(SignInFailed) as garbage:
        await checker.validate("not a token", "n-1")
    failures = (audience, issuer, nonce, signed, garbage)
    assert {f.value.code for f in failures} == {"invalid_token"}


async def test_a_sign_in_costs_the_same_statements_whatever_the_number_of_groups(
    db: object, site: str, provider: RunningProvider, count_queries: QueryCounter
) -> None:
    names = [f"p{i}" for i in range(6)]
    for name in names:
        await make_project(name)

    async def statements(subject: str, groups: list[str]) -> int:
        provider.set_user(subject, {"preferred_username": subject, "groups": groups})
        async with httpx.AsyncClient(timeout=10) as http:
            await sign_in(http, site, subject)  # the first: creates the user and the memberships
            http.cookies.clear()
            count_queries.statements.clear()
            response = await sign_in(http, site, subject)  # nothing changed since
            assert response.headers["location"] == "/"
            return len(
                [
                    s
                    for s in count_queries.statements
                    if s.lstrip().upper().startswith(("SELECT", "INSERT", "UPDATE", "DELETE"))
                ]
            )

    one = await statements("one", ["gpupaas:p0:member"])
    six = await statements("six", [f"gpupaas:{name}:admin" for name in names])
    # the identity's user, its projects and memberships; the session (ended ones, the new one, the
    # user's last sign-in, its entry)
    assert one == six == 7


async def test_the_client_secret_and_the_tokens_are_never_logged(
    db: object,
    site: str,
    provider: RunningProvider,
    browser: httpx.AsyncClient,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    provider.set_user("sub-13", {"preferred_username": "gina"})
    await sign_in(browser, site, "sub-13")
    secret = oidc_of(provider).client_secret
    basic = base64.b64encode(f"gpupaas:{secret}".encode()).decode()
    session = browser.cookies["gpupaas_session"]
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "OpenID Connect sign-in of gina" in logged
    assert secret not in logged and basic not in logged  # httpx/httpcore's debug lines too
    # the session's secret: in no line of the server (the SQL has only its hash); this test's own
    # client logs the Set-Cookie it receives
    server = "\n".join(r.getMessage() for r in caplog.records if not r.name.startswith(("httpx", "httpcore")))
    assert "INSERT" in server and session not in server


async def test_groups_that_only_the_userinfo_endpoint_gives_count_for_that_subject_only(
    db: object, site: str, provider: RunningProvider, browser: httpx.AsyncClient
) -> None:
    await make_project("ml")
    provider.set_user("sub-14", {"preferred_username": "hank"})  # no groups in the ID token
    provider.userinfo.extra["sub-14"] = {"groups": ["gpupaas:ml:admin"]}
    await sign_in(browser, site, "sub-14")
    assert (await me(browser, site))["memberships"] == [{"project": {"name": "ml"}, "role": "ADMIN"}]

    # a userinfo answer about somebody else is not believed (OpenID Connect Core 5.3.2)
    provider.set_user("sub-15", {"preferred_username": "iris"})
    provider.userinfo.extra["sub-15"] = {"sub": "sub-14", "groups": ["gpupaas:ml:admin"]}
    browser.cookies.clear()
    await sign_in(browser, site, "sub-15")
    assert await me(browser, site) == {"username": "iris", "isPlatformAdmin": False, "memberships": []}


async def test_a_public_client_and_a_configured_redirect_uri(
    db: object, settings: Settings, provider: RunningProvider
) -> None:
    """No client secret: the code is exchanged with the client id and the PKCE verifier alone (the
    mock provider has no public clients, so it refuses the exchange: only the request is checked).
    GPUPAAS_OIDC_REDIRECT_URI: sent to the provider as it is, whatever host the request came to."""
    public = oidc_of(provider, client_secret="")
    async with (
        serving(create_app(replace(settings, oidc=public), migrate=False)) as site,
        httpx.AsyncClient(timeout=10) as http,
    ):
        await sign_in(http, site, "sub-16")
        sent = provider.check.token_requests[-1]
        assert sent["client_id"] == "gpupaas" and sent["authorization"] is None and sent["code_verifier"]
    fixed = oidc_of(provider, redirect_uri="https://gpupaas.example.com/auth/oidc/callback")
    async with (
        serving(create_app(replace(settings, oidc=fixed), migrate=False)) as site,
        httpx.AsyncClient(timeout=10) as http,
    ):
        query = parse_qs(urlsplit(await start(http, site)).query)
        assert query["redirect_uri"] == ["https://gpupaas.example.com/auth/oidc/callback"]
