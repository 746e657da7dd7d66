"""The response cache of repeated reads: a hit runs no resolver, an answer never crosses users or
projects, and every mutation (whatever it changes) makes every cached answer stale."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any

import httpx
import pytest
from starlette.routing import Route

from gpupaas.app import GraphQLApp, create_app
from gpupaas.core.actor import Role
from gpupaas.graphql import response_cache
from gpupaas.graphql.response_cache import cacheable
from gpupaas.settings import Settings
from tests.conftest import GraphQLClient, QueryCounter
from tests.factories import make_profile, make_project, make_user
from tests.graphql.test_permissions import CASES, _world, document, load_schema, root_fields

CATALOG = '{ catalog(project: "ml") { name displayName } }'
RENAME = """mutation($id: ID!, $d: String!) {
  updateComputeProfile(input: {id: $id, displayName: $d}) { computeProfile { id } userErrors { message } }
}"""


@pytest.fixture
async def cached(settings: Settings) -> AsyncIterator[tuple[GraphQLClient, GraphQLApp]]:
    app = create_app(replace(settings, response_cache=True), migrate=False)
    graphql = next(route.app for route in app.routes if isinstance(route, Route) and route.path == "/graphql")
    assert isinstance(graphql, GraphQLApp)
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    ) as http:
        yield GraphQLClient(http), graphql


def test_only_reads_of_data_that_mutations_change_are_cached() -> None:
    assert cacheable(CATALOG, None)
    assert cacheable('query A { computeProfiles(project: "ml") { totalCount } } query B { me { id } }', "A")
    assert not cacheable(
        'query A { computeProfiles(project: "ml") { totalCount } } query B { me { id } }', "B"
    )
    assert not cacheable(
        '{ catalog(project: "ml") { name } computeInstances(project: "ml") { totalCount } }', None
    )
    assert not cacheable("mutation { logout }", None)
    assert not cacheable('{ ...F } fragment F on Query { catalog(project: "ml") { name } }', None)
    assert not cacheable("{ nope(", None)


async def test_a_repeated_read_is_answered_from_memory_until_a_mutation(
    db: object, cached: tuple[GraphQLClient, GraphQLApp], count_queries: QueryCounter
) -> None:
    gql, app = cached
    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.ADMIN)
    profile = await make_profile(project, display_name="Small")
    await response_cache.bump()  # the factories wrote outside the API
    first = await gql.data(CATALOG, token=alice.token)
    count_queries.statements.clear()
    again = await gql.data(CATALOG, token=alice.token)
    assert again == first
    assert app.cache is not None and app.cache.hits == 1
    # The hit read the caller (one statement) and the data version, and nothing of the catalog.
    assert not any("compute_profiles" in s for s in count_queries.statements), count_queries.statements
    assert len(count_queries.statements) == 2, count_queries.statements
    renamed = await gql.data(RENAME, {"id": str(profile.id), "d": "Renamed"}, token=alice.token)
    assert renamed["updateComputeProfile"]["userErrors"] == []
    assert (await gql.data(CATALOG, token=alice.token))["catalog"][0]["displayName"] == "Renamed"


async def test_answers_never_cross_users_or_projects(
    db: object, cached: tuple[GraphQLClient, GraphQLApp]
) -> None:
    gql, _ = cached
    alice, bob = await make_user("alice"), await make_user("bob")
    project = await make_project("ml", alice=Role.ADMIN)
    await make_profile(project)
    await response_cache.bump()
    assert len((await gql.data(CATALOG, token=alice.token))["catalog"]) == 1
    outsider = await gql(CATALOG, token=bob.token)
    assert outsider["errors"][0]["extensions"]["code"] == "NOT_FOUND"
    anonymous = await gql(CATALOG)
    assert anonymous["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


async def test_every_mutation_makes_cached_answers_stale(
    db: object, cached: tuple[GraphQLClient, GraphQLApp]
) -> None:
    """Every mutation of the schema (the permission walk's list), successful or refused, bumps the
    data version after it ran: no cached answer outlives any write."""
    gql, _ = cached
    world, tokens = await _world()
    fields = root_fields(load_schema())
    mutations = [(key, case) for key, cases in CASES.items() if key.startswith("Mutation.") for case in cases]
    assert len(mutations) >= 30
    missed: list[str] = []
    for key, case in mutations:
        before = await response_cache.current_version()
        variables = case.variables(world)
        body: dict[str, Any] = await gql(
            document(key, fields[key], variables), variables, token=tokens["platform"]
        )
        assert "data" in body, body
        if await response_cache.current_version() <= before:
            missed.append(key)
    assert missed == []
