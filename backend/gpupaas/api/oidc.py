"""OpenID Connect sign-in: `/auth/oidc/login` and `/auth/oidc/callback` (authorization code flow
with PKCE), beside the password login. README, "Sign-in".

`/auth/oidc/login?next=/p/ml/dashboard` sends the browser to the provider with a fresh state, nonce
and PKCE verifier (S256). Those three and `next` travel in a short-lived cookie of their own,
encrypted and authenticated with GPUPAAS_SECRET_KEY, HttpOnly and limited to /auth/oidc; nothing is
kept in the server, so any API process may take the callback.

`/auth/oidc/callback` checks the state, exchanges the code with the verifier, and checks the ID
token: its signature against the provider's published keys (JWKS), the issuer, the audience (our
client id; `azp` too when there are several), the nonce and the expiry. `accounts/oidc.py` then
finds or creates the user and applies the groups, and the session is opened with the same cookie
as the `login` mutation's. Whatever goes wrong ends on /login?oidc_error=<code> (the studio says
what it means; the details are logged, never shown), and the attempt is in the audit log.

authlib builds the protocol's messages (the state, nonce and verifier, the S256 challenge, the
authorization URL, the token request); joserfc (authlib's own successor for JOSE) checks the JWT.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import re
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlencode, urlsplit

import httpx
from authlib.common.security import generate_token
from authlib.oauth2.rfc6749.parameters import prepare_grant_uri
from authlib.oauth2.rfc7636 import create_s256_code_challenge
from cryptography.fernet import Fernet, InvalidToken
from joserfc import jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from gpupaas.accounts import oidc as accounts_oidc
from gpupaas.accounts.oidc_graphql import OIDC_LOGIN_PATH
from gpupaas.audit import addresses
from gpupaas.audit import recorder as audit
from gpupaas.audit.models import AuditActorKind
from gpupaas.core.errors import ErrorCode, UserErrors
from gpupaas.graphql.context import SESSION_COOKIE
from gpupaas.settings import OidcSettings, Settings

log = logging.getLogger("gpupaas.oidc")

LOGIN_PATH = OIDC_LOGIN_PATH
CALLBACK_PATH = "/auth/oidc/callback"
FLOW_COOKIE = "gpupaas_oidc"
FLOW_SECONDS = 600  # from the redirect to the provider until its answer comes back
METADATA_SECONDS = 3600  # the discovery document and keys are fetched again after this
HTTP_TIMEOUT = 10.0
# Asymmetric algorithms only: an HMAC-signed ID token would be checked with the client secret.
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
LEEWAY_SECONDS = 60
NEXT_MAX = 2000

# The codes /login?oidc_error= carries (the studio's Login page says what each means).
CANCELLED = "cancelled"  # the person declined at the provider
REFUSED = "refused"  # the provider answered with an error
EXPIRED = "expired"  # no (valid) flow cookie: too slow, another browser, or replayed
STATE = "state"  # the state does not match this browser's sign-in
UNAVAILABLE = "unavailable"  # the provider could not be reached or answered nonsense
INVALID_TOKEN = "invalid_token"  # the ID token failed a check
DISABLED = "disabled"  # the account is disabled here


class SignInFailed(Exception):
    """Ends the sign-in on /login?oidc_error=`code`; `detail` is for the log and the audit log."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(detail)
        self.code = code
        self.detail = detail


def safe_next(raw: str | None) -> str:
    """Where to go after signing in: a path of this site only (no scheme, no host, no "//" or "/\\"
    that a browser reads as another host); anything else is "/"."""
    if not raw or len(raw) > NEXT_MAX or not raw.startswith("/") or raw.startswith(("//", "/\\")):
        return "/"
    if any(ord(c) < 0x20 or c == "\\" for c in raw):
        return "/"
    parts = urlsplit(raw)
    if parts.scheme or parts.netloc:
        return "/"
    return raw


def _fernet(secret_key: str) -> Fernet:
    # Its own context string: this key is not the one that encrypts data at rest.
    digest = hashlib.sha256(b"gpupaas-oidc-flow:" + secret_key.encode()).digest()
    return Fernet(base64.urlsafe_b64encode(digest))


@dataclass(frozen=True)
class Flow:
    """One sign-in in progress, kept in the browser's flow cookie."""

    state: str
    nonce: str
    verifier: str
    next: str
    redirect_uri: str

    def seal(self, secret_key: str) -> str:
        payload = json.dumps(
            {"s": self.state, "n": self.nonce, "v": self.verifier, "x": self.next, "r": self.redirect_uri}
        )
        return _fernet(secret_key).encrypt(payload.encode()).decode()

    @classmethod
    def unseal(cls, secret_key: str, sealed: str | None) -> Flow:
        if not sealed:
            raise SignInFailed(EXPIRED, "no sign-in flow cookie")
        try:
            data = json.loads(_fernet(secret_key).decrypt(sealed.encode(), ttl=FLOW_SECONDS))
            return cls(
                state=str(data["s"]),
                nonce=str(data["n"]),
                verifier=str(data["v"]),
                next=safe_next(str(data["x"])),
                redirect_uri=str(data["r"]),
            )
        except (InvalidToken, ValueError, KeyError, TypeError):
            raise SignInFailed(EXPIRED, "the sign-in flow cookie is expired or not ours") from None


class Provider:
    """The provider's discovery document and keys, fetched when first needed and kept for an hour
    (the keys again at once when a token names a key they lack: the provider rotated them)."""

    def __init__(self, settings: OidcSettings) -> None:
        self.settings = settings
        self._metadata: dict[str, Any] | None = None
        self._keys: KeySet | None = None
        self._fetched_at = 0.0

    def _client(self) -> httpx.AsyncClient:
        return httpx.AsyncClient(timeout=HTTP_TIMEOUT, follow_redirects=False)

    async def _get_json(self, url: str, what: str) -> dict[str, Any]:
        try:
            async with self._client() as client:
                response = await client.get(url, headers={"accept": "application/json"})
        except httpx.HTTPError as error:
            raise SignInFailed(UNAVAILABLE, f"{what} at {url}: {type(error).__name__}") from None
        if response.status_code != 200:
            raise SignInFailed(UNAVAILABLE, f"{what} at {url}: HTTP {response.status_code}")
        try:
            data = response.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise SignInFailed(UNAVAILABLE, f"{what} at {url}: not a JSON object")
        return data

    async def metadata(self) -> dict[str, Any]:
        if self._metadata is not None and time.monotonic() - self._fetched_at < METADATA_SECONDS:
            return self._metadata
        url = f"{self.settings.issuer}/.well-known/openid-configuration"
        data = await self._get_json(url, "the discovery document")
        # OpenID Connect Discovery 1.0, 4.3: the document must name the issuer it was fetched for.
        if data.get("issuer") != self.settings.issuer:
            raise SignInFailed(
                UNAVAILABLE,
                f"the discovery document names issuer {str(data.get('issuer'))[:200]!r}, "
                f"not GPUPAAS_OIDC_ISSUER {self.settings.issuer!r}",
            )
        for key in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
            if not isinstance(data.get(key), str):
                raise SignInFailed(UNAVAILABLE, f"the discovery document has no {key}")
        self._metadata, self._keys, self._fetched_at = data, None, time.monotonic()
        return data

    async def keys(self, *, refresh: bool = False) -> KeySet:
        if self._keys is None or refresh:
            metadata = await self.metadata()
            data = await self._get_json(str(metadata["jwks_uri"]), "the provider's keys (JWKS)")
            try:
                self._keys = KeySet.import_key_set(data)  # type: ignore[arg-type]
            except (JoseError, ValueError, KeyError, TypeError) as error:
                raise SignInFailed(
                    UNAVAILABLE, f"the provider's keys (JWKS) are unreadable: {error}"
                ) from None
        return self._keys

    async def authorization_url(self, flow: Flow) -> str:
        metadata = await self.metadata()
        url: str = prepare_grant_uri(
            metadata["authorization_endpoint"],
            client_id=self.settings.client_id,
            response_type="code",
            redirect_uri=flow.redirect_uri,
            scope=" ".join(self.settings.scopes),
            state=flow.state,
            nonce=flow.nonce,
            code_challenge=create_s256_code_challenge(flow.verifier),
            code_challenge_method="S256",
        )
        return url

    async def exchange(self, code: str, flow: Flow) -> dict[str, Any]:
        """The token response for an authorization code, sent with the PKCE verifier."""
        metadata = await self.metadata()
        body = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": flow.redirect_uri,
            "code_verifier": flow.verifier,
        }
        url = str(metadata["token_endpoint"])
        headers = {"accept": "application/json"}
        try:
            async with self._client() as client:
                if self.settings.client_secret:  # client_secret_basic
                    auth = httpx.BasicAuth(self.settings.client_id, self.settings.client_secret)
                    response = await client.post(url, data=body, auth=auth, headers=headers)
                else:  # a public client: names itself, and the PKCE verifier is its only proof
                    body["client_id"] = self.settings.client_id
                    response = await client.post(url, data=body, headers=headers)
        except httpx.HTTPError as error:
            raise SignInFailed(UNAVAILABLE, f"the token endpoint at {url}: {type(error).__name__}") from None
        try:
            data = response.json()
        except ValueError:
            data = None
        if response.status_code >= 500 or not isinstance(data, dict):
            raise SignInFailed(UNAVAILABLE, f"the token endpoint at {url}: HTTP {response.status_code}")
        if response.status_code != 200 or "error" in data:
            answer = _code_text(data.get("error"))
            raise SignInFailed(REFUSED, f"the token endpoint refused the code: {answer}")
        return data

    async def validate(self, id_token: str, nonce: str) -> dict[str, Any]:
        """The claims of an ID token that passes every check (OpenID Connect Core 3.1.3.7)."""
        keys = await self.keys()
        try:
            try:
                token = jwt.decode(id_token, keys, algorithms=list(ALGORITHMS))
            except JoseError:
                # Maybe signed with a key we do not have yet: the provider rotated its keys.
                token = jwt.decode(id_token, await self.keys(refresh=True), algorithms=list(ALGORITHMS))
            claims = token.claims
            registry = jwt.JWTClaimsRegistry(
                leeway=LEEWAY_SECONDS,
                iss={"essential": True, "value": self.settings.issuer},
                aud={"essential": True, "value": self.settings.client_id},
                sub={"essential": True},
                exp={"essential": True},
                iat={"essential": True},
                nonce={"essential": True, "value": nonce},
            )
            registry.validate(claims)
        except JoseError as error:
            raise SignInFailed(INVALID_TOKEN, f"the ID token is not valid: {error}") from None
        except (ValueError, TypeError) as error:
            raise SignInFailed(INVALID_TOKEN, f"the ID token is unreadable: {error}") from None
        audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        if len(audiences) > 1 and claims.get("azp") != self.settings.client_id:
            raise SignInFailed(INVALID_TOKEN, "the ID token has several audiences and another azp")
        return claims

    async def userinfo_groups(self, access_token: str, subject: str) -> dict[str, Any]:
        """The userinfo endpoint's claims, for providers that put the groups there only; {} when
        there is none or it does not answer for this subject."""
        metadata = await self.metadata()
        url = metadata.get("userinfo_endpoint")
        if not isinstance(url, str) or not access_token:
            return {}
        try:
            async with self._client() as client:
                response = await client.get(url, headers={"authorization": f"Bearer {access_token}"})
            data = response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return {}
        # OpenID Connect Core 5.3.2: userinfo of another subject must not be used.
        if not isinstance(data, dict) or data.get("sub") != subject:
            return {}
        return data


def _code_text(value: object) -> str:
    """A provider's error code, as text safe to log (letters, digits and _ only, bounded)."""
    return re.sub(r"[^A-Za-z0-9_]", "", str(value))[:64] or "unknown"


class OidcRoutes:
    """The two routes, with the provider they talk to."""

    def __init__(self, settings: Settings, oidc: OidcSettings) -> None:
        self.settings = settings
        self.oidc = oidc
        self.provider = Provider(oidc)

    def routes(self) -> list[Route]:
        return [
            Route(LOGIN_PATH, self.login, methods=["GET"]),
            Route(CALLBACK_PATH, self.callback, methods=["GET"]),
        ]

    def _redirect_uri(self, request: Request) -> str:
        return self.oidc.redirect_uri or str(request.url.replace(path=CALLBACK_PATH, query="", fragment=""))

    def _failed(self, code: str, next_path: str = "/") -> Response:
        query = {"oidc_error": code}
        if next_path != "/":
            query["next"] = next_path
        response = RedirectResponse(f"/login?{urlencode(query)}", status_code=303)
        self._drop_flow_cookie(response)
        return response

    def _drop_flow_cookie(self, response: Response) -> None:
        response.delete_cookie(
            FLOW_COOKIE, path="/auth/oidc", httponly=True, samesite="lax", secure=self.settings.secure_cookies
        )

    def _scope(self, request: Request) -> audit.AuditScope:
        peer = request.client.host if request.client is not None else None
        trusted = addresses.networks(self.settings.trusted_proxies)
        address = addresses.client_address(peer, request.headers.get("x-forwarded-for"), trusted)
        return audit.AuditScope(
            kind=AuditActorKind.ANONYMOUS, name="anonymous", action="oidcSignIn", address=address
        )

    async def login(self, request: Request) -> Response:
        next_path = safe_next(request.query_params.get("next"))
        flow = Flow(
            state=generate_token(32),
            nonce=generate_token(32),
            verifier=generate_token(64),
            next=next_path,
            redirect_uri=self._redirect_uri(request),
        )
        try:
            url = await self.provider.authorization_url(flow)
        except SignInFailed as failure:
            log.warning("OpenID Connect sign-in cannot start: %s", failure.detail)
            return self._failed(failure.code, next_path)
        response = RedirectResponse(url, status_code=302)
        response.set_cookie(
            FLOW_COOKIE,
            flow.seal(self.settings.secret_key),
            max_age=FLOW_SECONDS,
            path="/auth/oidc",
            httponly=True,
            samesite="lax",
            secure=self.settings.secure_cookies,
        )
        return response

    async def callback(self, request: Request) -> Response:
        scope = self._scope(request)
        next_path = "/"
        try:
            flow = Flow.unseal(self.settings.secret_key, request.cookies.get(FLOW_COOKIE))
            next_path = flow.next
            params = request.query_params
            if "error" in params:
                error = _code_text(params["error"])
                raise SignInFailed(
                    CANCELLED if error == "access_denied" else REFUSED, f"the provider answered {error}"
                )
            if not hmac.compare_digest(params.get("state", ""), flow.state):
                raise SignInFailed(STATE, "the state does not match this browser's sign-in")
            code = params.get("code", "")
            if not code:
                raise SignInFailed(REFUSED, "the provider's answer has no code")
            tokens = await self.provider.exchange(code, flow)
            id_token = tokens.get("id_token")
            if not isinstance(id_token, str):
                raise SignInFailed(
                    INVALID_TOKEN, "the token response has no ID token (is the openid scope allowed?)"
                )
            claims = await self.provider.validate(id_token, flow.nonce)
            if self.oidc.groups_claim not in claims:
                extra = await self.provider.userinfo_groups(
                    str(tokens.get("access_token") or ""), claims["sub"]
                )
                if self.oidc.groups_claim in extra:
                    claims = {**claims, self.oidc.groups_claim: extra[self.oidc.groups_claim]}
            identity = accounts_oidc.identity_of(claims, self.oidc)
            scope.name = identity.preferred_username or identity.email or identity.subject
            scope.name = scope.name[:128]
            ttl = timedelta(hours=self.settings.session_ttl_hours)
            with audit.scoped(scope):
                try:
                    user, secret = await accounts_oidc.sign_in(identity, self.oidc, ttl)
                except UserErrors as errors:
                    problem = errors.problems[0]
                    code = DISABLED if problem.code == ErrorCode.FORBIDDEN else REFUSED
                    raise SignInFailed(code, problem.message) from None
        except SignInFailed as failure:
            log.info("OpenID Connect sign-in refused (%s): %s", failure.code, failure.detail)
            await audit.refused(scope, failure.code.upper(), failure.detail, object_type="Session")
            return self._failed(failure.code, next_path)
        log.info("OpenID Connect sign-in of %s", user.username)
        response = RedirectResponse(next_path, status_code=303)
        self._drop_flow_cookie(response)
        response.set_cookie(
            SESSION_COOKIE,
            secret,
            max_age=self.settings.session_ttl_hours * 3600,
            httponly=True,
            samesite="lax",
            secure=self.settings.secure_cookies,
            path="/",
        )
        return response


def routes(settings: Settings) -> list[Route]:
    """The sign-in routes when OpenID Connect is configured; none otherwise."""
    if settings.oidc is None:
        return []
    return OidcRoutes(settings, settings.oidc).routes()
