"""The GraphQL endpoint's guards: depth, alias and token limits, masked errors, GraphiQL switch."""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any, cast

import httpx
import pytest

from gpupaas.app import create_app
from gpupaas.catalog.service import profiles
from gpupaas.settings import Settings
from tests.conftest import GraphQLClient
from tests.factories import make_user


async def test_deep_queries_are_refused(db: object, gql: GraphQLClient) -> None:
    alice = await make_user("alice")
    nested = (
        '{ catalog(project: "x") { '
        + "environmentTemplate { versions { template { " * 5
        + "name"
        + " } } }" * 5
        + " } }"
    )
    body = await gql(nested, token=alice.token)
    assert body["errors"][0]["message"].startswith("'anonymous' exceeds maximum operation depth")
    assert "data" not in body or body["data"] is None


async def test_too_many_aliases_are_refused(db: object, gql: GraphQLClient) -> None:
    query = "{ " + " ".join(f"a{i}: me {{ username }}" for i in range(40)) + " }"
    body = await gql(query)
    assert "aliases" in body["errors"][0]["message"].lower()


async def test_too_many_tokens_are_refused(db: object, gql: GraphQLClient) -> None:
    query = "{ me { " + " ".join(["username"] * 6000) + " } }"
    response = await gql.post(query)
    assert "token" in response.text.lower()
    assert "errors" in response.json()


async def test_unexpected_errors_are_masked(
    db: object, gql: GraphQLClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    alice = await make_user("alice")

    async def broken(*args: object) -> None:
        raise RuntimeError("SELECT secret FROM users -- internal detail")

    monkeypatch.setattr(profiles, "catalog", broken)
    body = await gql('{ catalog(project: "ml") { name } }', token=alice.token)
    assert body["errors"] == [
        {
            "message": "Unexpected error.",
            "locations": [{"line": 1, "column": 3}],
            "path": ["catalog"],
            "extensions": {"code": "INTERNAL"},
        }
    ]
    assert "SELECT" not in str(body)


async def test_validation_errors_say_what_is_wrong(db: object, gql: GraphQLClient) -> None:
    body = await gql("{ nope }")
    assert body["errors"][0]["extensions"]["code"] == "GRAPHQL_VALIDATION_FAILED"
    assert "nope" in body["errors"][0]["message"]


@pytest.fixture
async def locked_down(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(replace(settings, graphiql=False, introspection=False), migrate=False)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    ) as http:
        yield http


async def test_graphiql_is_served_and_can_be_switched_off(
    db: object, gql: GraphQLClient, locked_down: httpx.AsyncClient
) -> None:
    page = await gql.http.get("/graphql", headers={"accept": "text/html"})
    assert page.status_code == 200 and "graphiql" in page.text.lower()
    off = await locked_down.get("/graphql", headers={"accept": "text/html"})
    assert "graphiql" not in off.text.lower()


async def test_introspection_can_be_switched_off(db: object, locked_down: httpx.AsyncClient) -> None:
    response = await locked_down.post("/graphql", json={"query": "{ __schema { types { name } } }"})
    assert "introspection" in response.text.lower()


async def test_only_the_graphql_transport_ws_protocol_is_spoken(db: object, live_server: str) -> None:
    import websockets

    url = live_server.replace("http://", "ws://") + "/graphql"
    async with websockets.connect(url, subprotocols=[websockets.Subprotocol("graphql-transport-ws")]) as ws:
        assert ws.subprotocol == "graphql-transport-ws"
        await ws.send('{"type": "connection_init"}')
        assert json.loads(await ws.recv()) == {"type": "connection_ack"}
    with pytest.raises(websockets.exceptions.WebSocketException):
        async with websockets.connect(url, subprotocols=[websockets.Subprotocol("graphql-ws")]) as ws:
            await ws.recv()


async def test_repeated_operations_are_validated_once(db: object, gql: GraphQLClient) -> None:
    from strawberry.extensions.validation_cache import _get_validate_cache

    alice = await make_user("alice")
    cache = cast("functools._lru_cache_wrapper[Any]", _get_validate_cache(512))
    query = "{ me { username memberships { role } } }"
    await gql.data(query, token=alice.token)
    before = cache.cache_info()
    for _ in range(3):
        await gql.data(query, token=alice.token)
    after = cache.cache_info()
    assert after.hits - before.hits == 3 and after.misses == before.misses
