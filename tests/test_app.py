"""Health endpoints: /healthz answers while the process runs, /readyz while the database does too."""

from __future__ import annotations

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


async def test_the_root_says_where_the_api_is(db: Database, gql: GraphQLClient) -> None:
    page = await gql.http.get("/")
    assert page.status_code == 200 and 'href="/graphql"' in page.text
