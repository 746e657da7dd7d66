"""The profile list and the catalog read everything they show in one statement (catalog.reads):
three in all with the caller's authentication, whatever the page's length, and answers identical,
field by field, to those of the per-field path (computeProfile(id), whose fields load through the
DataLoaders), masking and share visibility included; the search and the pages are the ORM's."""

from __future__ import annotations

from typing import Any

from tortoise.expressions import Q

from gpupaas.accounts.models import Project
from gpupaas.accounts.sharing import SharingMode
from gpupaas.catalog import reads
from gpupaas.catalog.models import (
    ComputeProfile,
    ComputeProfileShare,
    EnvironmentTemplate,
    EnvironmentTemplateVersion,
)
from gpupaas.catalog.service.profile_settings import InputSettingIn
from gpupaas.catalog.service.profiles import set_profile_sharing
from gpupaas.catalog.service.templates import InputDefinitionIn
from gpupaas.clusters.models import Cluster
from gpupaas.core.actor import Role
from gpupaas.core.pagination import encode_cursor, paginate
from gpupaas.core.search import matching
from tests.conftest import GraphQLClient, QueryCounter
from tests.factories import (
    NAMESPACE_INPUTS,
    make_profile,
    make_project,
    make_template,
    make_user,
    make_version,
    platform_actor,
)

# bench/read_path.py's NODE_FIELDS: what the studio's catalog and profile list show.
NODE_FIELDS = """
  id name displayName description allocationType
  resources { cpu memory storage gpuCount gpuVendor gpuModel }
  labels { key value } annotations { key value } iconUrl readme readmeHtml
  inputSettings { name value required override allowedValues }
  outputSettings { name displayName visible }
  sharing { mode projects { name } }
  environmentTemplate { name }
  environmentTemplateVersion { version state inputs { name type } outputs { name } }
  createdAt updatedAt
"""
# Every field of a profile, and of what it links to.
ALL_FIELDS = """
  id name displayName description allocationType
  resources { cpu memory storage gpuCount gpuVendor gpuModel }
  labels { key value } annotations { key value } iconUrl readme readmeHtml
  inputSettings { name value required override allowedValues }
  outputSettings { name displayName visible }
  sharing { mode projects { id name displayName createdAt } }
  project { id name displayName createdAt }
  cluster { id name }
  environmentTemplate { id name displayName description builtIn createdAt updatedAt project { name } }
  environmentTemplateVersion {
    id version state resources createdAt template { name }
    inputs { name type description required default options pattern min max sensitive }
    outputs { name description value }
  }
  createdAt updatedAt
"""


def _profiles(fields: str) -> str:
    return (
        "query($project: String!, $search: String, $first: Int, $after: String) {\n"
        "  computeProfiles(project: $project, search: $search, first: $first, after: $after) {\n"
        "    totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor }\n"
        f"    edges {{ cursor node {{ {fields} }} }}\n"
        "  }\n"
        "}"
    )


def _catalog(fields: str) -> str:
    return f"query($project: String!, $search: String) {{ catalog(project: $project, search: $search) {{ {fields} }} }}"


PROFILES = _profiles(NODE_FIELDS)
CATALOG = _catalog(NODE_FIELDS)
PROFILES_ALL = _profiles(ALL_FIELDS)
CATALOG_ALL = _catalog(ALL_FIELDS)
ONE = f"query($id: ID!) {{ computeProfile(id: $id) {{ {ALL_FIELDS} }} }}"


async def _world() -> dict[str, Any]:
    """ml (alice its admin, carol a member), research (bob a member, carol its admin), finance and
    a project nobody here is in; profiles of ml shared with research and finance, with all projects,
    with nobody; one of research shared with ml; a version with a sensitive input that has a value."""
    people = {
        "root": await make_user("root", platform_admin=True),
        "alice": await make_user("alice"),
        "bob": await make_user("bob"),
        "carol": await make_user("carol"),
    }
    ml = await make_project("ml", alice=Role.ADMIN, carol=Role.MEMBER)
    research = await make_project("research", bob=Role.MEMBER, carol=Role.ADMIN)
    await make_project("finance")
    await make_project("hidden")
    secret = InputDefinitionIn(name="apiKey", type="STRING", sensitive=True)
    version = await make_version(await make_template(ml), inputs=[*NAMESPACE_INPUTS, secret])
    other_version = await make_version(await make_template(ml))
    cluster = await Cluster.get(is_default=True)
    actor = await platform_actor()
    masked = [InputSettingIn(name="apiKey", value="s3cr3t")]
    selected = await make_profile(
        ml, version, name="selected", display_name="B", input_settings=masked, readme="# Hi\n\n*there*"
    )
    await set_profile_sharing(
        actor, str(selected.id), SharingMode.SELECTED_PROJECTS, ["research", "finance", "hidden"]
    )
    everyone = await make_profile(ml, version, name="everyone", display_name="A", cluster_id=str(cluster.id))
    await set_profile_sharing(actor, str(everyone.id), SharingMode.ALL_PROJECTS, None)
    await make_profile(ml, other_version, name="nobody", display_name="C", labels=[("tier", "small")])
    theirs = await make_profile(research, name="theirs", display_name="D", input_settings=[])
    await set_profile_sharing(actor, str(theirs.id), SharingMode.SELECTED_PROJECTS, ["ml"])
    return people


async def _add_profiles(n: int) -> None:
    ml = await Project.get(name="ml")
    version = await make_version(await make_template(ml))
    for _ in range(n):
        profile = await make_profile(ml, version)
        await set_profile_sharing(
            await platform_actor(), str(profile.id), SharingMode.SELECTED_PROJECTS, ["research", "finance"]
        )


async def test_the_lists_run_three_statements_with_the_callers_authentication(
    db: object, gql: GraphQLClient, count_queries: QueryCounter
) -> None:
    people = await _world()

    async def statements(query: str, variables: dict[str, Any], token: str) -> int:
        await gql.data("{ me { username } }", token=token)  # records the token's use (once a minute)
        count_queries.statements.clear()
        assert await gql.data(query, variables, token=token)
        return len(count_queries.statements)

    cases: list[tuple[str, dict[str, Any], str]] = [
        (PROFILES, {"project": "ml", "first": 100}, people["alice"].token),
        (PROFILES, {"project": "ml", "first": 100}, people["root"].token),
        (PROFILES, {"project": "ml", "search": "e", "first": 2}, people["alice"].token),
        (CATALOG, {"project": "research"}, people["bob"].token),
        (CATALOG, {"project": "ml"}, people["carol"].token),
        (CATALOG, {"project": "finance"}, people["root"].token),
    ]
    few = [await statements(*case) for case in cases]
    await _add_profiles(12)
    many = [await statements(*case) for case in cases]
    assert few == many
    assert max(many) <= 3, many


async def test_the_lists_answer_as_each_profile_does_field_by_field(db: object, gql: GraphQLClient) -> None:
    """Each listed profile equals computeProfile(id) for the same caller: masked values, the share
    targets the caller may see, template internals for the owner's admins only."""
    people = await _world()
    seen = 0
    for person, project in [
        ("alice", "ml"),
        ("carol", "ml"),
        ("carol", "research"),
        ("bob", "research"),
        ("root", "finance"),
        ("root", "hidden"),
    ]:
        token = people[person].token
        listed = (await gql.data(CATALOG_ALL, {"project": project}, token=token))["catalog"]
        connection = await gql(PROFILES_ALL, {"project": project, "first": 100}, token=token)
        if "errors" not in connection:  # the profile list is for the project's admins
            listed += [e["node"] for e in connection["data"]["computeProfiles"]["edges"]]
        for node in listed:
            alone = (await gql.data(ONE, {"id": node["id"]}, token=token))["computeProfile"]
            assert node == alone, (person, project, node["name"])
            seen += 1
    assert seen >= 12

    # What the comparison stands on: masking and visibility, as the lists show them.
    bob = await gql.data(CATALOG_ALL, {"project": "research"}, token=people["bob"].token)
    by_name = {p["name"]: p for p in bob["catalog"]}
    assert sorted(by_name) == ["everyone", "selected", "theirs"]
    assert {"name": "apiKey", "value": "********"} in [
        {"name": s["name"], "value": s["value"]} for s in by_name["selected"]["inputSettings"]
    ]
    assert [p["name"] for p in by_name["selected"]["sharing"]["projects"]] == ["research"]
    assert by_name["selected"]["environmentTemplateVersion"]["resources"] is None
    assert by_name["everyone"]["cluster"] is not None
    alice = await gql.data(PROFILES_ALL, {"project": "ml"}, token=people["alice"].token)
    nodes = {e["node"]["name"]: e["node"] for e in alice["computeProfiles"]["edges"]}
    # alice administers ml, so sees every target of its profiles, "hidden" included
    assert [p["name"] for p in nodes["selected"]["sharing"]["projects"]] == ["finance", "hidden", "research"]
    assert nodes["selected"]["environmentTemplateVersion"]["resources"]
    assert "s3cr3t" not in str(alice)


async def test_search_and_pages_are_the_orm_queries(db: object) -> None:
    """reads' SQL against the ORM queries it stands for: core.search.matching and
    core.pagination.paginate, the catalog's own-or-shared filter; tricky search terms included."""
    await _world()
    await _add_profiles(7)
    ml = await Project.get(name="ml")
    research = await Project.get(name="research")
    fields = ("name", "display_name", "description")
    for search in [None, "", "  ", "e", "E", "SeLeCt", "%", "_", "\\", "a%", "profile-", "zzz"]:
        orm = matching(ComputeProfile.filter(project_id=ml.id), search, *fields)
        after = None
        while True:
            expected = await paginate(orm, 3, after)
            page = await reads.profile_page(ml.id, search, 3, after)
            assert [r.profile.id for r in page.rows] == [p.id for p in expected.rows], search
            assert (page.total, page.has_next, page.has_previous) == (
                expected.total,
                expected.has_next,
                expected.has_previous,
            )
            if not expected.rows:
                break
            last = expected.rows[-1]
            after = encode_cursor(last.created_at, last.id)

        shared = ComputeProfile.filter(
            Q(project_id=research.id)
            | Q(sharing_mode=SharingMode.ALL_PROJECTS)
            | Q(sharing_mode=SharingMode.SELECTED_PROJECTS, shares__project_id=research.id)
        )
        expected_catalog = (
            await matching(shared, search, *fields).distinct().order_by("display_name", "name", "id")
        )
        assert [r.profile.id for r in await reads.catalog(research.id, search)] == [
            p.id for p in expected_catalog
        ], search


async def test_listed_models_are_the_orms(db: object) -> None:
    """What the lists build from their rows equals what the ORM fetches, field by field."""
    await _world()
    research = await Project.get(name="research")
    rows = await reads.catalog(research.id, None)
    assert rows
    for row in rows:
        fetched = await ComputeProfile.get(id=row.profile.id)
        assert _fields(row.profile) == _fields(fetched)
        version = await EnvironmentTemplateVersion.get(id=row.version.id)
        assert {k: v for k, v in _fields(version).items() if k != "resources"} == _fields(row.version)
        assert _fields(row.template) == _fields(await EnvironmentTemplate.get(id=row.template.id))
        shares = await ComputeProfileShare.filter(profile_id=row.profile.id).select_related("project")
        assert sorted((_fields(p) for p in row.shared_with), key=str) == sorted(
            (_fields(s.project) for s in shares), key=str
        )


def _fields(model: Any) -> dict[str, Any]:
    names = model._meta.fields_db_projection
    return {name: getattr(model, name) for name in names if hasattr(model, name)}
