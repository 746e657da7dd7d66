"""A bounded fuzz of the whole API: hypothesis-graphql builds valid queries and mutations from
`schema.graphql` (any root field, any selection, any argument value, with the ids and names of a
seeded project mixed into random ones so that the services are reached, not only the validation),
sent in-process as a platform admin, a project ADMIN and a MEMBER. Whatever is asked, the answer is
a result or a clear error: never INTERNAL, never a 5xx, never a traceback.

Derandomized, so that every run (and CI) sends the same operations; raise FUZZ_EXAMPLES locally
to search further (`FUZZ_EXAMPLES=200 pytest tests/graphql/test_fuzz.py`)."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import hypothesis_graphql
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_graphql import nodes

import graphql
from gpupaas import db as gdb
from gpupaas.accounts.models import User
from gpupaas.app import create_app
from gpupaas.bootstrap import seed
from gpupaas.core.actor import Role
from gpupaas.settings import Settings
from tests.conftest import SECRET_KEY
from tests.factories import (
    Person,
    make_instance,
    make_profile,
    make_project,
    make_template,
    make_user,
    make_version,
)

SCHEMA = (Path(__file__).resolve().parents[2] / "schema.graphql").read_text()
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "12"))  # per root field
CALLERS = ("root", "alice", "bob")  # platform admin, ADMIN of "ml", MEMBER of "ml"


@dataclass
class World:
    loop: asyncio.AbstractEventLoop
    http: httpx.AsyncClient
    tokens: dict[str, str]
    ids: list[str]
    names: list[str]


async def _seed(ids: list[str], names: list[str], tokens: dict[str, str]) -> None:
    await seed()
    for username, admin in (("root", True), ("alice", False), ("bob", False)):
        tokens[username] = (await make_user(username, platform_admin=admin)).token
    project = await make_project("ml", alice=Role.ADMIN, bob=Role.MEMBER)
    template = await make_template(project, "nb-template")
    version = await make_version(template)
    profile = await make_profile(project, version, name="small")
    bob = await User.get(username="bob")
    instance = await make_instance(project, profile, name="nb", by=Person(bob, tokens["bob"]))
    ids += [str(x.id) for x in (project, template, version, profile, instance)]
    names += ["ml", "nb", "small", "nb-template", "alice", "bob", "gpupaas-system"]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[World]:
    """One seeded SQLite database and app for every example (an event loop of its own, because
    hypothesis drives a plain function)."""
    path = tmp_path_factory.mktemp("fuzz") / "gpupaas.db"
    shutil.copyfile(sqlite_template, path)
    url = f"sqlite://{path}"
    loop = asyncio.new_event_loop()
    ids: list[str] = []
    names: list[str] = []
    tokens: dict[str, str] = {}
    loop.run_until_complete(gdb.connect(url))
    try:
        loop.run_until_complete(_seed(ids, names, tokens))
        app = create_app(
            Settings(database_url=url, secret_key=SECRET_KEY, response_cache=False), migrate=False
        )
        http = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://testserver")
        yield World(loop, http, tokens, ids, names)
        loop.run_until_complete(http.aclose())
    finally:
        loop.run_until_complete(gdb.close())
        loop.close()


def _scalars(world: World) -> dict[str, st.SearchStrategy[Any]]:
    """The seeded ids and names, mixed with what hypothesis-graphql would send anyway."""
    text = st.text(max_size=300)
    return {
        "ID": st.one_of(st.sampled_from(world.ids), st.uuids().map(str), text).map(nodes.String),
        # names that exist more often than not, so that most operations get past "not found"
        "String": st.one_of(
            st.sampled_from(world.names), st.sampled_from(world.names), st.just("x" * 5000), text
        ).map(nodes.String),
        "Date": st.one_of(st.dates().map(lambda day: day.isoformat()), text).map(nodes.String),
        "Decimal": st.one_of(
            st.decimals(allow_nan=True, allow_infinity=True).map(str), st.integers().map(str), text
        ).map(nodes.String),
        "DateTime": st.one_of(
            st.datetimes(
                min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)
            ).map(lambda moment: moment.isoformat()),
            text,
        ).map(nodes.String),
    }


def _check(world: World, caller: str, document: str) -> None:
    async def send() -> httpx.Response:
        world.http.cookies.clear()  # a fuzzed login must not sign the next example in
        answer = await world.http.post(
            "/graphql", json={"query": document}, headers={"authorization": f"Bearer {world.tokens[caller]}"}
        )
        # a fuzzed setUserDisabled must not sign the callers out for the examples after it
        await User.filter(username__in=list(CALLERS)).update(disabled_at=None)
        return answer

    answer = world.loop.run_until_complete(send())
    assert answer.status_code < 500, (document, answer.text)
    assert "Traceback" not in answer.text, document
    if answer.status_code == 200:
        for error in answer.json().get("errors") or []:
            assert (error.get("extensions") or {}).get("code") != "INTERNAL", (caller, document, error)


FUZZ = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


def _root_fields() -> list[str]:
    schema = graphql.build_schema(SCHEMA)
    return [
        f"{root.name}.{name}"
        for root in (schema.query_type, schema.mutation_type)
        if root is not None
        for name in root.fields
    ]


@pytest.mark.parametrize("operation", _root_fields())
def test_no_operation_answers_internal(world: World, operation: str) -> None:
    """Each root field of the schema gets its own examples, each sent as every caller."""
    kind, name = operation.split(".")
    build = hypothesis_graphql.queries if kind == "Query" else hypothesis_graphql.mutations

    @FUZZ
    @given(st.sampled_from(CALLERS), build(SCHEMA, fields=[name], custom_scalars=_scalars(world)))
    def fuzz(caller: str, document: str) -> None:
        _check(world, caller, document)

    fuzz()
