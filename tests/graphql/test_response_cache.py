"""The response cache of repeated reads: a hit runs no resolver, an answer never crosses users or
projects, and every mutation makes every cached answer stale, but those that change nothing a
cached answer shows."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import timedelta
from typing import Any

import httpx
import pytest
from starlette.routing import Route

from gpupaas.app import GraphQLApp, create_app
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.run_kind import COMPUTE
from gpupaas.core.actor import Role
from gpupaas.graphql import response_cache
from gpupaas.graphql.response_cache import cacheable
from gpupaas.runs import lifecycle as runs
from gpupaas.runs.kinds import RunKind
from gpupaas.runs.models import DeploymentRun
from gpupaas.runs.states import RunStatus
from gpupaas.service_instances.run_kind import SERVICES
from gpupaas.settings import Settings
from graphql import GraphQLField, GraphQLObjectType, get_named_type, is_leaf_type, is_required_argument
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


def _deep(field: GraphQLField, depth: int) -> str:
    """Every field of the result, `depth` objects down, that takes no required argument."""
    named = get_named_type(field.type)
    if is_leaf_type(named):
        return ""
    assert isinstance(named, GraphQLObjectType), named
    parts = ["__typename"]
    for name, child in named.fields.items():
        if any(is_required_argument(arg) for arg in child.args.values()):
            continue
        if is_leaf_type(get_named_type(child.type)):
            parts.append(name)
        elif depth > 0:
            parts.append(f"{name} {_deep(child, depth - 1)}")
    return "{ " + " ".join(parts) + " }"


def everything_cached(project: str) -> str:
    """One query of every cacheable root field that needs nothing but a project, with every field
    four objects down (the profiles' project and its instanceCount, their cluster...)."""
    fields = root_fields(load_schema())
    parts = []
    for key, field in sorted(fields.items()):
        kind, name = key.split(".")
        if kind != "Query" or name not in response_cache.CACHEABLE_FIELDS or name == "__typename":
            continue
        required = [arg for arg, spec in field.args.items() if is_required_argument(spec)]
        if required == ["project"]:
            parts.append(f'{name}(project: "{project}") {_deep(field, 4)}')
    assert len(parts) >= 4, parts
    return "{ " + " ".join(parts) + " }"


async def test_every_mutation_makes_cached_answers_stale(
    db: object, cached: tuple[GraphQLClient, GraphQLApp]
) -> None:
    """Every mutation of the schema (the permission walk's list), successful or refused, bumps the
    data version after it ran: no cached answer outlives any write. But those that write nothing
    a cached field shows (UNCACHED_WRITES: an instance's status and runs), which leave it."""
    gql, _ = cached
    world, tokens = await _world()
    fields = root_fields(load_schema())
    mutations = [(key, case) for key, cases in CASES.items() if key.startswith("Mutation.") for case in cases]
    assert len(mutations) >= 30
    missed: list[str] = []
    bumped: list[str] = []
    for key, case in mutations:
        before = await response_cache.current_version()
        variables = case.variables(world)
        body: dict[str, Any] = await gql(
            document(key, fields[key], variables), variables, token=tokens["platform"]
        )
        assert "data" in body, body
        moved = await response_cache.current_version() > before
        if key.removeprefix("Mutation.") in response_cache.UNCACHED_WRITES:
            if moved:
                bumped.append(key)
        elif not moved:
            missed.append(key)
    assert missed == []
    assert bumped == []
    assert {f"Mutation.{name}" for name in response_cache.UNCACHED_WRITES} - {"Mutation.__typename"} <= {
        key for key, _ in mutations
    }


async def test_the_writes_that_keep_the_data_version_change_nothing_a_cached_read_shows(
    db: object, settings: Settings, cached: tuple[GraphQLClient, GraphQLApp]
) -> None:
    """Each of UNCACHED_WRITES, carried out (accepted, its run claimed and finished by a worker's
    steps), leaves every cacheable field's answer as a read without the cache computes it, four
    objects deep: keeping the data version loses nothing. A deployed instance deleted, which a
    worker then removes, changes its project's instanceCount: that bumps it."""
    gql, _ = cached
    plain = create_app(replace(settings, response_cache=False), migrate=False)
    world, tokens = await _world()
    fields = root_fields(load_schema())
    token = tokens["platform"]
    read = everything_cached("ml")
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=plain), base_url="http://t") as http:
        fresh = GraphQLClient(http)
        ran = []
        for name in sorted(response_cache.UNCACHED_WRITES - {"__typename"}):
            key = f"Mutation.{name}"
            await gql.data(read, token=token)  # cached under the version as it is
            variables = CASES[key][0].variables(world)
            body = await gql(document(key, fields[key], variables), variables, token=token)
            assert body["data"][name]["userErrors"] == [], (key, body)
            await _carry_out_queued_runs()
            assert await gql.data(read, token=token) == await fresh.data(read, token=token), key
            ran.append(name)
        assert len(ran) == 5
        # A deployed instance deleted: the worker's removal moves the project's instanceCount on.
        count = '{ catalog(project: "ml") { project { instanceCount } } }'
        before = (await gql.data(count, token=token))["catalog"][0]["project"]["instanceCount"]
        deleted = world.take("deployed_instances")
        answer = await gql.data(
            "mutation($id: ID!) { deleteComputeInstance(id: $id) { userErrors { message } } }",
            {"id": deleted},
            token=token,
        )
        assert answer["deleteComputeInstance"]["userErrors"] == []
        assert (await gql.data(count, token=token))["catalog"][0]["project"]["instanceCount"] == before
        await _carry_out_queued_runs()
        assert not await ComputeInstance.exists(id=deleted)
        after = (await gql.data(count, token=token))["catalog"][0]["project"]["instanceCount"]
        assert after == before - 1


async def _carry_out_queued_runs() -> None:
    """What a worker does with every queued run (simulated: each succeeds as it is claimed)."""
    for run in await DeploymentRun.filter(status=RunStatus.QUEUED).order_by("queued_at"):
        kind: RunKind[Any] = COMPUTE if run.service_id is None else SERVICES
        claimed = await runs.claim(kind, str(run.id), "w1", timedelta(minutes=1))
        if claimed is not None:
            await runs.finish(kind, run.id, "w1", succeeded=True, message=None, claimed=claimed.subject)
