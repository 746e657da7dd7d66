"""The security headers on every HTTP response of the real app (README, "Security")."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

import gpupaas.app
from gpupaas.api.headers import GRAPHIQL_CSP, STUDIO_CSP
from gpupaas.app import create_app
from gpupaas.settings import Settings


async def _client(settings: Settings) -> httpx.AsyncClient:
    app = create_app(settings, migrate=False)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")


@pytest.fixture
async def client(
    tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[httpx.AsyncClient]:
    static = tmp_path / "static"
    static.mkdir()
    (static / "index.html").write_text("<!doctype html><div id=root></div>")
    monkeypatch.setattr(gpupaas.app, "STATIC_DIR", static)
    async with await _client(settings) as http:
        yield http


def _assert_common(response: httpx.Response) -> None:
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["x-content-type-options"] == "nosniff"
    assert response.headers["referrer-policy"] == "no-referrer"
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/", None),
        ("GET", "/p/ml/instances", None),
        ("GET", "/healthz", None),
        ("POST", "/graphql", {"query": "{ me { username } }"}),
        ("GET", "/graphql?query=%7B__typename%7D", None),
    ],
)
async def test_every_response_has_the_strict_policy(
    db: object, client: httpx.AsyncClient, method: str, path: str, body: dict[str, str] | None
) -> None:
    response = await client.request(method, path, json=body)
    assert response.status_code == 200, response.text
    _assert_common(response)
    assert response.headers["content-security-policy"] == STUDIO_CSP
    assert "strict-transport-security" not in response.headers  # plain http: no HSTS


async def test_the_studio_policy_allows_no_inline_or_foreign_script() -> None:
    directives = dict(part.strip().split(" ", 1) for part in STUDIO_CSP.split(";"))
    assert directives["script-src"] == "'self'"
    assert directives["object-src"] == "'none'" and directives["frame-ancestors"] == "'none'"
    assert "unsafe-eval" not in STUDIO_CSP and directives["default-src"] == "'self'"


async def test_graphiql_gets_only_what_its_page_loads(db: object, client: httpx.AsyncClient) -> None:
    response = await client.get("/graphql", headers={"accept": "text/html"})
    assert response.status_code == 200 and "unpkg.com" in response.text
    _assert_common(response)
    assert response.headers["content-security-policy"] == GRAPHIQL_CSP


async def test_refusals_carry_the_headers_too(db: object, client: httpx.AsyncClient) -> None:
    response = await client.post(
        "/graphql", content=b"x" * 10, headers={"content-length": str(64 * 1024 * 1024)}
    )
    assert response.status_code == 413
    _assert_common(response)


async def test_hsts_when_cookies_are_secure(db: object, settings: Settings) -> None:
    async with await _client(replace(settings, secure_cookies=True)) as http:
        response = await http.get("/healthz")
    assert response.headers["strict-transport-security"] == "max-age=31536000; includeSubDomains"
    _assert_common(response)
