"""The planned executor (graphql/planner.py) answers exactly as graphql-core does.

Differential: hypothesis builds random read queries over the real schema (aliases, fields asked
twice and merged, inline and named fragments nested in each other, `@include`/`@skip` with
literals and variables, `__typename`, nested lists and connections, nullable paths, the
`reveal: true` that is FORBIDDEN to most callers, a project's members that only its readers
see), sent through the real app with the planner on and off, as a platform admin, a project
ADMIN, a MEMBER and an outsider, against seeded profiles, versions, templates, instances and
shares. The planned answer's `data` must be the same JSON byte for byte (key order included),
the errors of the fields that are null themselves the same in message, path, locations and
extensions, and the positions nulled by an error from below the same (which of two siblings
failing at once explains such a position is a race in graphql-core too: _explained). Each planned
request must have been planned (else the comparison would be graphql-core against itself).

Then a small schema of its own for what the real one does not have at hand: non-null errors
propagating from awaited resolvers, async list items and async iterables, errors below a
position already null; and the fallbacks (mutations, introspection, the switch) with their
answers; and the statement count of the lists, unchanged.

Derandomized with a bounded number of examples, so that CI sends the same operations every run;
PLANNER_EXAMPLES raises it locally.
"""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import strawberry
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import graphql
from gpupaas import db as gdb
from gpupaas.accounts.models import User
from gpupaas.accounts.sharing import SharingMode
from gpupaas.app import create_app
from gpupaas.bootstrap import seed
from gpupaas.catalog.service.profile_settings import InputSettingIn
from gpupaas.catalog.service.profiles import set_profile_sharing
from gpupaas.catalog.service.templates import InputDefinitionIn
from gpupaas.core.actor import Role
from gpupaas.graphql import planner
from gpupaas.graphql.executor import ExecutionContext
from gpupaas.settings import Settings
from tests.catalog.test_reads import NODE_FIELDS
from tests.conftest import SECRET_KEY, QueryCounter
from tests.factories import (
    NAMESPACE_INPUTS,
    Person,
    make_instance,
    make_profile,
    make_project,
    make_template,
    make_user,
    make_version,
    platform_actor,
)

SCHEMA = graphql.build_schema((Path(__file__).resolve().parents[2] / "schema.graphql").read_text())
EXAMPLES = int(os.environ.get("PLANNER_EXAMPLES", "50"))
# platform admin; ADMIN of ml; MEMBER of ml and ADMIN of research; MEMBER of research; in no project
CALLERS = ("root", "alice", "carol", "bob", "dave")
MAX_DEPTH = 5  # object levels below the root field


@dataclass
class World:
    loop: asyncio.AbstractEventLoop
    planned: httpx.AsyncClient  # GPUPAAS_PLANNED_EXECUTOR on
    stock: httpx.AsyncClient  # off: graphql-core
    tokens: dict[str, str]
    ids: dict[str, list[str]]


async def _seed(tokens: dict[str, str], ids: dict[str, list[str]]) -> None:
    await seed()
    people: dict[str, Person] = {}
    for username in CALLERS:
        people[username] = await make_user(username, platform_admin=username == "root")
        tokens[username] = people[username].token
    ml = await make_project("ml", alice=Role.ADMIN, carol=Role.MEMBER)
    research = await make_project("research", bob=Role.MEMBER, carol=Role.ADMIN)
    await make_project("finance")
    secret = InputDefinitionIn(name="apiKey", type="STRING", sensitive=True)
    template = await make_template(ml, "nb-template")
    version = await make_version(template, inputs=[*NAMESPACE_INPUTS, secret])
    other = await make_version(await make_template(ml))
    actor = await platform_actor()
    selected = await make_profile(
        ml,
        version,
        name="selected",
        display_name="B",
        input_settings=[InputSettingIn(name="apiKey", value="s3cr3t")],
        readme="# Hi\n\n*there*",
        labels=[("tier", "small"), ("team", "ml")],
    )
    await set_profile_sharing(actor, str(selected.id), SharingMode.SELECTED_PROJECTS, ["research", "finance"])
    everyone = await make_profile(ml, version, name="everyone", display_name="A")
    await set_profile_sharing(actor, str(everyone.id), SharingMode.ALL_PROJECTS, None)
    nobody = await make_profile(ml, other, name="nobody", display_name="C")
    theirs = await make_profile(research, name="theirs", display_name="D", input_settings=[])
    await set_profile_sharing(actor, str(theirs.id), SharingMode.SELECTED_PROJECTS, ["ml"])
    bob = await User.get(username="bob")
    mine = await make_instance(research, theirs, name="nb", by=Person(bob, tokens["bob"]))
    alices = await make_instance(ml, everyone, name="lab", by=people["alice"])
    ids["profile"] = [str(p.id) for p in (selected, everyone, nobody, theirs)]
    ids["template"] = [str(template.id)]
    ids["instance"] = [str(mine.id), str(alices.id)]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[World]:
    """One seeded SQLite database and two apps on it, the planner on and off (an event loop of its
    own, because hypothesis drives a plain function)."""
    path = tmp_path_factory.mktemp("planner") / "gpupaas.db"
    shutil.copyfile(sqlite_template, path)
    url = f"sqlite://{path}"
    loop = asyncio.new_event_loop()
    tokens: dict[str, str] = {}
    ids: dict[str, list[str]] = {}
    loop.run_until_complete(gdb.connect(url))
    try:
        loop.run_until_complete(_seed(tokens, ids))
        on = Settings(database_url=url, secret_key=SECRET_KEY, response_cache=False)
        clients = [
            httpx.AsyncClient(
                transport=httpx.ASGITransport(app=create_app(s, migrate=False)), base_url="http://t"
            )
            for s in (on, replace(on, planned_executor=False))
        ]
        yield World(loop, clients[0], clients[1], tokens, ids)
        for client in clients:
            loop.run_until_complete(client.aclose())
    finally:
        loop.run_until_complete(gdb.close())
        loop.close()


# Root fields and the values their arguments take (variables, or literals in the text).
ROOTS: list[tuple[str, dict[str, tuple[str, list[Any]]]]] = [
    ("me", {}),
    ("projects", {}),
    ("project", {"name": ("String!", ["ml", "research", "finance", "nope"])}),
    ("catalog", {"project": ("String!", ["ml", "research", "finance"])}),
    ("computeProfiles", {"project": ("String!", ["ml", "research"]), "first": ("Int", [None, 1, 2, 100])}),
    ("computeProfile", {"id": ("ID!", ["profile", "00000000-0000-0000-0000-000000000000"])}),
    ("environmentTemplates", {"project": ("String!", ["ml", "research"])}),
    ("environmentTemplate", {"id": ("ID!", ["template"])}),
    ("computeInstances", {"project": ("String!", ["ml", "research"]), "first": ("Int", [None, 1])}),
    ("computeInstance", {"id": ("ID!", ["instance"])}),
    ("clusters", {}),
]


def _named(graphql_type: Any) -> Any:
    while isinstance(graphql_type, graphql.GraphQLNonNull | graphql.GraphQLList):
        graphql_type = graphql_type.of_type
    return graphql_type


def _askable(field: graphql.GraphQLField) -> bool:
    """No required argument (those are the root fields' business)."""
    return all(
        not isinstance(a.type, graphql.GraphQLNonNull) or a.default is not None for a in field.args.values()
    )


class _Draft:
    """One operation being drawn: its variables, fragments and response names."""

    def __init__(self, draw: st.DrawFn, ids: dict[str, list[str]]) -> None:
        self.draw = draw
        self.ids = ids
        self.variables: dict[str, tuple[str, Any]] = {}
        self.fragments: list[str] = []
        self.names = 0
        self.budget = 80  # fields in all: well under the token and alias limits
        self.plain = 0  # > 0: no arguments (in a field asked twice, whose selections must merge)

    def variable(self, kind: str, value: Any) -> str:
        name = f"v{len(self.variables)}"
        self.variables[name] = (kind, value)
        return f"${name}"

    def directive(self) -> str:
        choice = self.draw(st.sampled_from(["", "", "", "", "include", "skip", "literal"]))
        if choice in ("include", "skip"):
            return f" @{choice}(if: {self.variable('Boolean!', self.draw(st.booleans()))})"
        if choice == "literal":
            return f" @{self.draw(st.sampled_from(['include', 'skip']))}(if: {self.draw(st.sampled_from(['true', 'false']))})"
        return ""

    def root(self, alias: str) -> str:
        # the profile reads (the lists of the studio) twice as often as the rest
        name, arguments = self.draw(st.sampled_from(ROOTS + ROOTS[3:6]))
        given: list[str] = []
        for argument, (kind, values) in arguments.items():
            value = self.draw(st.sampled_from(values))
            if value in self.ids:
                value = self.draw(st.sampled_from(self.ids[value]))
            if value is None and self.draw(st.booleans()):
                continue  # left out
            if self.draw(st.booleans()):
                given.append(f"{argument}: {self.variable(kind, value)}")
            else:
                given.append(f"{argument}: {orjson.dumps(value).decode()}")  # a string, int or null
        field = SCHEMA.query_type.fields[name]  # type: ignore[union-attr]
        args = f"({', '.join(given)})" if given else ""
        return f"{alias or self.alias()}{name}{args}{self.sub(field.type, 1)}"

    def alias(self) -> str:
        if self.names < 20 and self.draw(st.integers(0, 4)) == 0:
            self.names += 1
            return f"a{self.names}: "
        return ""

    def sub(self, graphql_type: Any, depth: int) -> str:
        named = _named(graphql_type)
        if graphql.is_leaf_type(named):
            return ""
        return " { " + self.selection(named, depth) + " }"

    def selection(self, parent: graphql.GraphQLObjectType, depth: int) -> str:
        fields = sorted(name for name, f in parent.fields.items() if _askable(f))
        if depth >= MAX_DEPTH or self.budget <= 0:
            fields = [n for n in fields if graphql.is_leaf_type(_named(parent.fields[n].type))]
        most = 6 if self.budget > 0 else 1
        least = min(most, 2, len(fields))  # hypothesis starts small: a few fields a level at least
        # a prefix of a permutation: lists of sampled_from would favour the first fields
        picked = self.draw(st.permutations(fields))[: self.draw(st.integers(least, most))] if fields else []
        self.budget -= len(picked)
        parts = [self.field(parent, name, depth) for name in picked]
        if not parts or self.draw(st.integers(0, 5)) == 0:
            parts.append(f"{self.alias()}__typename")
        split = self.draw(st.integers(0, len(parts)))
        plain, wrapped = parts[:split], parts[split:]
        if wrapped:
            how = self.draw(st.sampled_from(["plain", "plain", "inline", "untyped", "named"]))
            inner = " ".join(wrapped)
            if how == "inline":
                plain.append(f"... on {parent.name}{self.directive()} {{ {inner} }}")
            elif how == "untyped":
                plain.append(f"...{self.directive()} {{ {inner} }}")
            elif how == "named":
                name = f"F{len(self.fragments)}"
                self.fragments.append(f"fragment {name} on {parent.name} {{ {inner} }}")
                plain.append(f"...{name}{self.directive()}")
            else:
                plain += wrapped
        return " ".join(plain)

    def field(self, parent: graphql.GraphQLObjectType, name: str, depth: int) -> str:
        definition = parent.fields[name]
        given = []
        for argument, spec in definition.args.items():
            if self.plain:
                break
            if _named(spec.type) is graphql.GraphQLBoolean and self.draw(st.booleans()):
                value = self.draw(st.booleans())
                as_text = self.variable("Boolean!", value) if self.draw(st.booleans()) else str(value).lower()
                given.append(f"{argument}: {as_text}")
        args = f"({', '.join(given)})" if given else ""
        twice = (
            not given
            and not graphql.is_leaf_type(_named(definition.type))
            and self.draw(st.integers(0, 5)) == 0
        )
        if not twice:
            return f"{self.alias()}{name}{args}{self.directive()}{self.sub(definition.type, depth + 1)}"
        # asked twice under the same name: graphql-core merges the two selections
        self.plain += 1
        text = f"{name}{self.directive()}{self.sub(definition.type, depth + 1)} {name}{self.sub(definition.type, depth + 1)}"
        self.plain -= 1
        return text

    def document(self) -> tuple[str, dict[str, Any]]:
        # a second root field has a name of its own: the same field with other arguments would
        # not merge
        roots = [self.root(f"r{n}: " if n else "") for n in range(self.draw(st.integers(1, 2)))]
        declared = ", ".join(f"${name}: {kind}" for name, (kind, _) in self.variables.items())
        head = f"query Drawn({declared})" if declared else "query Drawn"
        text = " ".join([f"{head} {{ {' '.join(roots)} }}", *self.fragments])
        return text, {name: value for name, (_, value) in self.variables.items()}


@st.composite
def operations(draw: st.DrawFn, ids: dict[str, list[str]]) -> tuple[str, dict[str, Any]]:
    return _Draft(draw, ids).document()


def _errors(body: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """Message, path, locations and extensions of each error; in order of path, since graphql-core
    orders the errors of awaited fields as they happen to finish."""
    return sorted(
        (
            e["message"],
            orjson.dumps(e.get("path")).decode(),
            orjson.dumps(e.get("locations")).decode(),
            orjson.dumps(e.get("extensions"), option=orjson.OPT_SORT_KEYS).decode(),
        )
        for e in body.get("errors") or []
    )


async def _both(world: World, caller: str, query: str, variables: dict[str, Any]) -> tuple[Any, Any]:
    """Both answers; graphql-core's None when it crashed (see STOCK_CRASHES)."""
    headers = {"authorization": f"Bearer {world.tokens[caller]}"}
    body = {"query": query, "variables": variables}
    planned = await world.planned.post("/graphql", json=body, headers=headers)
    assert planned.status_code == 200, planned.text
    try:
        stock = await world.stock.post("/graphql", json=body, headers=headers)
    except asyncio.CancelledError:
        return planned.json(), None
    assert stock.status_code == 200, stock.text
    return planned.json(), stock.json()


# graphql-core 3.3.2 crashes on some of these operations: when a non-null error nulls a parent,
# gather_with_cancel cancels the parent's other tasks, a task waiting on a DataLoader future
# cancels that future, and the other fields waiting on it (the same version, say) get a
# CancelledError, which no field error handling catches: the request fails as a whole (seen with
# a profile's `project { members }` FORBIDDEN beside `environmentTemplateVersion { resources }`).
# The planner cancels nothing (it lets what is in flight finish and drops what lies under a null
# position), so it answers; those examples are counted and not compared.
STOCK_CRASHES: list[str] = []


def _compare(planned: dict[str, Any], stock: dict[str, Any]) -> None:
    assert orjson.dumps(planned.get("data")) == orjson.dumps(stock.get("data"))
    assert _explained(planned) == _explained(stock)


DIFFERENTIAL = settings(
    max_examples=EXAMPLES,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


def test_planned_answers_equal_graphql_cores_for_every_caller(world: World) -> None:
    seen = {"errors": 0, "null data": 0}

    @DIFFERENTIAL
    @given(operations(world.ids))
    def differential(operation: tuple[str, dict[str, Any]]) -> None:
        query, variables = operation
        for caller in CALLERS:
            before = planner.STATS.planned
            planned, stock = world.loop.run_until_complete(_both(world, caller, query, variables))
            assert planner.STATS.planned == before + 1, (query, planner.STATS.reasons)
            if stock is None:
                STOCK_CRASHES.append(query)
                assert planned.get("errors"), planned  # the error that started it, at least
                continue
            codes = {(e.get("extensions") or {}).get("code") for e in stock.get("errors") or []}
            assert "GRAPHQL_VALIDATION_FAILED" not in codes, (query, stock)  # the drawing is valid
            _compare(planned, stock)
            seen["errors"] += bool(stock.get("errors"))
            seen["null data"] += stock.get("data") is None

    differential()
    # What the comparison covered: answers with errors (forbidden reveals, masked members,
    # not found), and whole answers nulled by a non-null root field's error.
    assert seen["errors"] > 0 and seen["null data"] > 0, seen
    assert len(STOCK_CRASHES) < EXAMPLES // 5, STOCK_CRASHES  # most are compared


# Operations the planner leaves to graphql-core, and why (Stats.reasons).
FALLBACKS = [
    (
        'mutation { createProject(input: {name: "made-here"}) { project { name } userErrors { message } } }',
        "not a query",
    ),
    ("{ __schema { queryType { name } } }", "introspection"),
    ('query { catalog(project: "ml") { name } t: __type(name: "ComputeProfile") { name } }', "introspection"),
]


@pytest.mark.parametrize(("query", "reason"), FALLBACKS)
def test_what_is_not_planned_runs_in_graphql_core(world: World, query: str, reason: str) -> None:
    before = planner.STATS.reasons[reason]
    planned_before = planner.STATS.planned
    planned, stock = world.loop.run_until_complete(_both(world, "root", query, {}))
    assert planner.STATS.reasons[reason] == before + 1  # the planned app's (the other's: switched off)
    assert planner.STATS.planned == planned_before
    if reason != "not a query":  # a mutation's second run is refused (the project exists)
        _compare(planned, stock)
    assert planned.get("data")


def test_the_switch_off_runs_everything_in_graphql_core(world: World) -> None:
    before = planner.STATS.reasons["switched off"], planner.STATS.planned
    headers = {"authorization": f"Bearer {world.tokens['alice']}"}
    answer = world.loop.run_until_complete(
        world.stock.post("/graphql", json={"query": "{ me { username } }"}, headers=headers)
    )
    assert answer.json() == {"data": {"me": {"username": "alice"}}}
    assert (planner.STATS.reasons["switched off"], planner.STATS.planned) == (before[0] + 1, before[1])


# bench/read_path.py's selection (NODE_FIELDS, from tests/catalog/test_reads.py).
PROFILES = f"query($project: String!) {{ computeProfiles(project: $project, first: 100) {{ totalCount edges {{ node {{ {NODE_FIELDS} }} }} }} }}"
CATALOG = f"query($project: String!) {{ catalog(project: $project) {{ {NODE_FIELDS} }} }}"


def test_the_lists_run_the_same_statements_planned(world: World, count_queries: QueryCounter) -> None:
    """The plan calls the same root resolvers and loaders: the lists' statements (three with the
    caller's authentication, tests/catalog/test_reads.py) are the same, and so are the answers."""
    headers = {"authorization": f"Bearer {world.tokens['alice']}"}

    async def run(client: httpx.AsyncClient, query: str) -> tuple[bytes, int, int]:
        await client.post(
            "/graphql", json={"query": "{ me { username } }"}, headers=headers
        )  # the token's use
        count_queries.statements.clear()
        before = planner.STATS.planned
        answer = await client.post(
            "/graphql", json={"query": query, "variables": {"project": "ml"}}, headers=headers
        )
        assert "errors" not in answer.json(), answer.text
        return answer.content, len(count_queries.statements), planner.STATS.planned - before

    for query in (PROFILES, CATALOG):
        planned = world.loop.run_until_complete(run(world.planned, query))
        stock = world.loop.run_until_complete(run(world.stock, query))
        assert planned[0] == stock[0]  # the same bytes
        assert planned[1] == stock[1] <= 3, count_queries.statements
        assert (planned[2], stock[2]) == (1, 0)


# A schema of its own, for what the real one does not give at will: resolvers that fail or give
# null where the type says non-null, awaited or not, in lists (items awaited, an async iterable),
# below a position that is already null.


@dataclass
class _Settings:
    planned_executor: bool


@dataclass
class _Context:
    settings: _Settings


def _fails(how: str) -> Any:
    if how == "raise":
        raise ValueError("broken")
    if how == "error":
        return ValueError("returned")
    return None


async def _later(value: Any) -> Any:
    await asyncio.sleep(0)
    if isinstance(value, str) and value.startswith("!"):
        return _fails(value[1:])
    return value


@strawberry.type
class Leaf:
    name: str
    how: strawberry.Private[str] = "ok"

    @strawberry.field
    def value(self) -> str:
        return self.name if self.how == "ok" else _fails(self.how)

    @strawberry.field
    async def later(self) -> str:
        value: str = await _later(self.name if self.how == "ok" else "!" + self.how)
        return value

    @strawberry.field
    def maybe(self) -> str | None:
        return self.name if self.how == "ok" else _fails(self.how)

    @strawberry.field
    async def maybe_later(self) -> str | None:
        value: str | None = await _later(self.name if self.how == "ok" else "!" + self.how)
        return value

    @strawberry.field
    def child(self) -> Leaf:
        return Leaf(name=self.name + ".c", how=self.how)

    @strawberry.field
    def maybe_child(self) -> Leaf | None:
        return Leaf(name=self.name + ".m", how=self.how)

    @strawberry.field
    async def later_child(self) -> Leaf | None:
        await asyncio.sleep(0)
        return Leaf(name=self.name + ".l", how=self.how)

    @strawberry.field
    def items(self) -> list[Leaf]:
        return [Leaf(name=f"{self.name}.{i}", how=how) for i, how in enumerate(("ok", self.how, "ok"))]

    @strawberry.field
    def maybe_items(self) -> list[Leaf | None]:
        return [Leaf(name=f"{self.name}.{i}", how=how) for i, how in enumerate((self.how, "ok"))]

    @strawberry.field
    def awaited_items(self) -> list[Leaf | None]:
        return [_later(Leaf(name=f"{self.name}.{i}", how=self.how)) for i in range(2)]  # type: ignore[misc]

    @strawberry.field
    async def streamed(self) -> list[str | None]:
        return self._stream()  # type: ignore[return-value]

    @strawberry.field
    def streamed_now(self) -> list[str | None]:
        return self._stream()  # type: ignore[return-value]

    async def _stream(self) -> AsyncIterator[str | None]:
        yield self.name
        if self.how == "raise":
            raise ValueError("stream broken")
        yield None


@strawberry.type
class SmallQuery:
    @strawberry.field
    def ok(self) -> Leaf:
        return Leaf(name="ok")

    @strawberry.field
    def raising(self) -> Leaf | None:
        return Leaf(name="r", how="raise")

    @strawberry.field
    def erring(self) -> Leaf | None:
        return Leaf(name="e", how="error")

    @strawberry.field
    def nulling(self) -> Leaf | None:
        return Leaf(name="n", how="null")

    @strawberry.field
    async def strict(self) -> Leaf:
        return Leaf(name="s", how="null")


SMALL = strawberry.Schema(query=SmallQuery, execution_context_class=ExecutionContext)
SMALL_GRAPHQL = SMALL._schema
LEAF_FIELDS = ["name", "value", "later", "maybe", "maybeLater", "streamed", "streamedNow"]
OBJECT_FIELDS = ["child", "maybeChild", "laterChild", "items", "maybeItems", "awaitedItems"]


@st.composite
def small_operations(draw: st.DrawFn) -> str:
    def selection(depth: int) -> str:
        fields = LEAF_FIELDS + (OBJECT_FIELDS if depth < 3 else [])
        picked = draw(st.lists(st.sampled_from(fields), min_size=1, max_size=4, unique=True))
        return " ".join(
            f"{name} {{ {selection(depth + 1)} }}" if name in OBJECT_FIELDS else name for name in picked
        )

    roots = draw(
        st.lists(
            st.sampled_from(["ok", "raising", "erring", "nulling", "strict"]),
            min_size=1,
            max_size=3,
            unique=True,
        )
    )
    return "{ " + " ".join(f"{root} {{ {selection(1)} }}" for root in roots) + " }"


def _small(query: str, planned: bool) -> dict[str, Any]:
    result = asyncio.run(SMALL.execute(query, context_value=_Context(_Settings(planned))))
    return {
        "data": result.data,
        "errors": [
            {
                "message": e.message,
                "path": e.path,
                "locations": [[at.line, at.column] for at in e.locations or []],
            }
            for e in result.errors or []
        ],
    }


def _nulled_below(data: Any, path: list[Any]) -> tuple[Any, ...] | None:
    """The position above `path` that is null in `data` (None: the error is the field's own; ()
    the whole answer)."""
    value = data
    for depth, key in enumerate(path):
        if value is None:
            return tuple(path[:depth])
        value = value[key]
    return None


def _explained(body: dict[str, Any]) -> tuple[list[Any], set[tuple[Any, ...]]]:
    """The errors of the fields that are null themselves, and the positions nulled by an error
    from below.

    That is what both executors must agree on. Which error from below explains a nulled position
    is a race when two siblings in flight fail at once (the first to fail nulls it, and what
    fails after under it is dropped), and so are the errors graphql-core keeps from siblings that
    finished before its cancellation reached them (the planner lets them all finish and keeps
    what finished before the position was null)."""
    own, nulled = [], set()
    for error in body.get("errors") or []:
        above = _nulled_below(body.get("data"), error.get("path") or [])
        if above is None:
            own.append(error)
        else:
            nulled.add(above)
    return _errors({"errors": own}), nulled


# graphql-core leaves the awaitables below a nulled position to settle in the background, and
# asyncio.run closes the loop before some of them have started: "never awaited" (the planner
# awaits them all; tests that check that would not be about equality).
_STOCK_ABANDONS = pytest.mark.filterwarnings(
    "ignore::pytest.PytestUnraisableExceptionWarning", "ignore:coroutine .* was never awaited:RuntimeWarning"
)


@_STOCK_ABANDONS
def test_errors_and_awaited_values_complete_as_in_graphql_core() -> None:
    """The same data, the same errors of the fields that are null themselves, the same positions
    nulled from below (_explained)."""

    @settings(max_examples=max(EXAMPLES, 60), derandomize=True, database=None, deadline=None)
    @given(small_operations())
    def differential(query: str) -> None:
        before = planner.STATS.planned
        planned, stock = _small(query, True), _small(query, False)
        assert planner.STATS.planned == before + 1
        assert orjson.dumps(planned["data"]) == orjson.dumps(stock["data"]), query
        assert _explained(planned) == _explained(stock), query

    differential()
    gc.collect()  # what graphql-core abandoned goes now, under _STOCK_ABANDONS, not in a later test


@_STOCK_ABANDONS
def test_a_non_null_error_nulls_the_nearest_nullable_position() -> None:
    """What the property above stands on, spelled out once: `later` (String!, awaited) gives
    null under `nulling`, so its nearest nullable parent is null; `items` ([Leaf!]!) passes it on
    to `maybeChild`; a non-null root field's error nulls the whole answer."""
    query = (
        "{ ok { name items { value } } nulling { name maybeChild { name child { later } } items { maybe } } }"
    )
    planned = _small(query, True)
    assert planned == _small(query, False)
    assert planned["data"] == (
        {
            "ok": {"name": "ok", "items": [{"value": "ok.0"}, {"value": "ok.1"}, {"value": "ok.2"}]},
            "nulling": {
                "name": "n",
                "maybeChild": None,
                "items": [{"maybe": "n.0"}, {"maybe": None}, {"maybe": "n.2"}],
            },
        }
    )
    assert [(e["message"], e["path"]) for e in planned["errors"]] == [
        (
            "Cannot return null for non-nullable field Leaf.later.",
            ["nulling", "maybeChild", "child", "later"],
        )
    ]
    strict = _small("{ strict { name later } ok { name } }", True)
    assert strict == _small("{ strict { name later } ok { name } }", False)
    assert strict["data"] is None
    assert [e["path"] for e in strict["errors"]] == [["strict", "later"]]
    gc.collect()
