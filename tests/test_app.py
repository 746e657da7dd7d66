"""Health endpoints: /healthz answers while the process runs, /readyz while the database does too."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from gpupaas.settings import Settings
from tests.conftest import Database, GraphQLClient


async def test_healthz(db: Database, gql: GraphQLClient) -> None:
    response = await gql.http.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


async def test_readyz_follows_the_database(db: Database, gql: GraphQLClient) -> None:
    from gpupaas import db as gdb

    ready = await gql.http.get("/readyz")
    assert ready.status_code == 200 and ready.json()["database"] == "ok"
    if db.kind == "sqlite":
        return  # a SQLite file is there as long as the process is; the server-down case is PostgreSQL's
    await gdb.close()
    try:
        await gdb.connect(db.url.rsplit("/", 1)[0] + "/gpupaas_no_such_database")
        down = await gql.http.get("/readyz")
        assert down.status_code == 503 and down.json() == {"status": "unavailable", "database": "unreachable"}
    finally:
        await gdb.close()


async def test_the_root_says_where_the_api_is_until_the_studio_is_built(
    db: Database, settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gpupaas.app

    monkeypatch.setattr(gpupaas.app, "STATIC_DIR", tmp_path / "not-built")
    app = gpupaas.app.create_app(settings, migrate=False)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    ) as http:
        page = await http.get("/")
    assert page.status_code == 200 and 'href="/graphql"' in page.text


def test_gc_tuning_freezes_start_up_objects_and_raises_the_thresholds() -> None:
    import gc

    from gpupaas.app import GC_THRESHOLDS, tune_gc
    from gpupaas.settings import Settings as S

    env = {"GPUPAAS_DATABASE_URL": "sqlite://:memory:", "GPUPAAS_SECRET_KEY": "k" * 64}
    assert S.from_env(env).gc_tuning is True
    assert S.from_env(env).ws_compression is False
    assert S.from_env({**env, "GPUPAAS_WS_COMPRESSION": "true"}).ws_compression is True
    assert S(database_url="sqlite://:memory:", secret_key="k" * 64).gc_tuning is False
    before = gc.get_threshold()
    try:
        tune_gc()
        assert gc.get_threshold() == GC_THRESHOLDS
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def test_responses_are_utf8_json_and_what_utf8_cannot_carry_is_escaped() -> None:
    from gpupaas.app import encode_json

    data = {"data": {"name": "Überprüfung ✓", "n": [1, 2.5, None, True]}}
    encoded = encode_json(data)
    assert encoded == '{"data":{"name":"Überprüfung ✓","n":[1,2.5,null,true]}}'
    assert encode_json({"message": "half\ud800"}) == '{"message":"half\\ud800"}'
