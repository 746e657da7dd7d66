"""Serving the built studio: cache rules and the history fallback, through the real app."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

import gpupaas.app
from gpupaas.app import create_app
from gpupaas.settings import Settings
from gpupaas.spa import is_app_route


@pytest.fixture
async def client(
    tmp_path: Path, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[httpx.AsyncClient]:
    static = tmp_path / "static"
    (static / "assets").mkdir(parents=True)
    (static / "index.html").write_text("<!doctype html><div id=root></div>")
    (static / "assets" / "index-Ab12Cd.js").write_text("console.log(1)")
    (static / "favicon.svg").write_text("<svg/>")
    monkeypatch.setattr(gpupaas.app, "STATIC_DIR", static)
    app = create_app(settings, migrate=False)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    ) as http:
        yield http


async def test_hashed_assets_are_cached_forever_and_the_page_revalidated(
    db: object, client: httpx.AsyncClient
) -> None:
    asset = await client.get("/assets/index-Ab12Cd.js")
    assert (
        asset.status_code == 200 and asset.headers["cache-control"] == "public, max-age=31536000, immutable"
    )
    page = await client.get("/")
    assert page.status_code == 200 and "root" in page.text
    assert page.headers["cache-control"] == "no-cache"
    icon = await client.get("/favicon.svg")
    assert icon.status_code == 200 and icon.headers["cache-control"] == "no-cache"


@pytest.mark.parametrize(
    "path", ["/login", "/p/ml/instances", "/p/ml/instances/0c6e/edit", "/p/ml/studio/profiles/new"]
)
async def test_app_routes_fall_back_to_the_page(db: object, client: httpx.AsyncClient, path: str) -> None:
    response = await client.get(path)
    assert response.status_code == 200 and "root" in response.text
    assert response.headers["cache-control"] == "no-cache"


@pytest.mark.parametrize(
    "path", ["/metrics", "/assets/index-Old123.js", "/missing.png", "/api/x", "/healthz/x"]
)
async def test_the_api_and_missing_files_never_get_the_page(
    db: object, client: httpx.AsyncClient, path: str
) -> None:
    response = await client.get(path)
    assert response.status_code == 404
    assert "root" not in response.text


async def test_the_api_still_answers(db: object, client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).status_code == 200
    answer = await client.post("/graphql", json={"query": "{ me { username } }"})
    assert answer.json() == {"data": {"me": None}}


def test_what_counts_as_an_app_route() -> None:
    assert is_app_route("") and is_app_route("p/ml/catalog")
    assert not is_app_route("graphql") and not is_app_route("metrics") and not is_app_route("x/y.js")
