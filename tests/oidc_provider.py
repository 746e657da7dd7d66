"""A real OpenID Connect provider for the sign-in tests: `oidc-provider-mock` (a Flask app built on
authlib's server) under werkzeug on a free loopback port, in a thread.

The mock ignores PKCE, which the providers gpupaas is used with (Keycloak, Okta, Entra ID) enforce;
`PkceCheck` wraps it to do what RFC 7636 asks of them: the code an authorization request with a
`code_challenge` produced is exchanged only with the verifier of that challenge (S256). It also
keeps what was asked of the provider, for the tests to look at. `UserinfoClaims` makes it a
provider that gives some claims (the groups) at its userinfo endpoint only.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def _first(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    return values[0] if values else None


@dataclass
class PkceCheck:
    """WSGI middleware: refuses a code exchanged without its challenge's verifier (invalid_grant)."""

    app: WsgiApp
    # code -> (code_challenge, code_challenge_method) of the authorization request that made it
    challenges: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    authorization_requests: list[dict[str, str | None]] = field(default_factory=list)
    token_requests: list[dict[str, str | None]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        method = environ.get("REQUEST_METHOD", "GET")
        if path == "/oauth2/authorize" and method == "POST":
            return self._authorize(environ, start_response)
        if path == "/oauth2/token" and method == "POST":
            return self._token(environ, start_response)
        return self.app(environ, start_response)

    def _authorize(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        query = parse_qs(environ.get("QUERY_STRING", ""))
        asked = {
            name: _first(query, name)
            for name in (
                "client_id",
                "redirect_uri",
                "state",
                "nonce",
                "code_challenge",
                "code_challenge_method",
            )
        }
        with self.lock:
            self.authorization_requests.append(asked)

        def noting(status: str, headers: list[tuple[str, str]], *args: Any) -> Any:
            for name, value in headers:
                if name.lower() == "location":
                    code = _first(parse_qs(urlsplit(value).query), "code")
                    if code is not None:
                        with self.lock:
                            self.challenges[code] = (asked["code_challenge"], asked["code_challenge_method"])
            return start_response(status, headers, *args)

        return self.app(environ, noting)

    def _token(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        body = environ["wsgi.input"].read(length)
        environ["wsgi.input"] = io.BytesIO(body)
        form = parse_qs(body.decode())
        code, verifier = _first(form, "code"), _first(form, "code_verifier")
        with self.lock:
            self.token_requests.append(
                {
                    "code": code,
                    "code_verifier": verifier,
                    "client_id": _first(form, "client_id"),
                    "authorization": environ.get("HTTP_AUTHORIZATION"),
                }
            )
            challenge, method = self.challenges.get(code or "", (None, None))
        if challenge is not None:
            expected = (
                base64.urlsafe_b64encode(hashlib.sha256((verifier or "").encode()).digest())
                .rstrip(b"=")
                .decode()
                if method == "S256"
                else verifier
            )
            if verifier is None or expected != challenge:
                start_response("400 Bad Request", [("Content-Type", "application/json")])
                return [
                    json.dumps(
                        {"error": "invalid_grant", "error_description": "PKCE verification failed"}
                    ).encode()
                ]
        return self.app(environ, start_response)


@dataclass
class UserinfoClaims:
    """WSGI middleware: claims the userinfo endpoint adds for a subject while its ID tokens lack
    them, as providers that keep groups out of the ID token do (`extra[subject]`; a "sub" in it
    answers for another subject)."""

    app: WsgiApp
    extra: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != "/userinfo":
            return self.app(environ, start_response)
        answered: dict[str, Any] = {}

        def keep(status: str, headers: list[tuple[str, str]], *args: Any) -> Callable[[bytes], None]:
            answered.update(status=status, headers=headers)
            return lambda data: None

        chunks = self.app(environ, keep)
        try:
            body = b"".join(chunks)
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()
        if answered["status"].startswith("200"):
            claims = json.loads(body)
            claims.update(self.extra.get(claims.get("sub"), {}))
            body = json.dumps(claims).encode()
        headers = [(k, v) for k, v in answered["headers"] if k.lower() != "content-length"]
        start_response(answered["status"], [*headers, ("Content-Length", str(len(body)))])
        return [body]


@dataclass
class RunningProvider:
    url: str
    check: PkceCheck
    userinfo: UserinfoClaims

    def set_user(self, subject: str, claims: dict[str, Any]) -> None:
        """The claims the provider gives for `subject` (its ID tokens carry them)."""
        response = httpx.put(f"{self.url}/users/{subject}", json=claims)
        assert response.status_code == 204, response.text


@contextlib.contextmanager
def running_provider() -> Iterator[RunningProvider]:
    import werkzeug.serving

    with warnings.catch_warnings():
        # The mock itself still imports authlib.jose, which authlib deprecates.
        warnings.simplefilter("ignore", DeprecationWarning)
        import oidc_provider_mock

        app = oidc_provider_mock.app()
    userinfo = UserinfoClaims(app)
    check = PkceCheck(userinfo)
    server = werkzeug.serving.make_server("127.0.0.1", 0, check, threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield RunningProvider(f"http://127.0.0.1:{server.server_port}", check, userinfo)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
