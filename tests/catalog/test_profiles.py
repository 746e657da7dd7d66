"""Compute profiles (the SKUs) through the API: every field, validation, updates, sharing, catalog."""

from __future__ import annotations

from typing import Any

from gpupaas.accounts.sharing import SharingMode
from gpupaas.catalog.service.profiles import set_profile_sharing
from gpupaas.core.actor import Role
from tests.conftest import GraphQLClient, QueryCounter
from tests.factories import make_profile, make_project, make_template, make_user, make_version, platform_actor

PROFILE_FIELDS = """
  id name displayName description allocationType project { name }
  environmentTemplate { name } environmentTemplateVersion { version }
  resources { cpu memory storage gpuCount gpuVendor gpuModel }
  labels { key value } annotations { key value } iconUrl readme readmeHtml
  inputSettings { name value required override allowedValues }
  outputSettings { name displayName visible }
  sharing { mode projects { name } } createdAt updatedAt
"""
CREATE_PROFILE = f"""
mutation($input: CreateComputeProfileInput!) {{
  createComputeProfile(input: $input) {{ computeProfile {{ {PROFILE_FIELDS} }} userErrors {{ field message code }} }}
}}"""
UPDATE_PROFILE = f"""
mutation($input: UpdateComputeProfileInput!) {{
  updateComputeProfile(input: $input) {{ computeProfile {{ {PROFILE_FIELDS} }} userErrors {{ field message code }} }}
}}"""
SHARE = """
mutation($id: ID!, $sharing: SharingInput!) {
  setComputeProfileSharing(id: $id, sharing: $sharing) {
    computeProfile { sharing { mode projects { name } } } userErrors { field message code }
  }
}"""
DELETE_PROFILE = (
    "mutation($id: ID!) { deleteComputeProfile(id: $id) { deletedId userErrors { field message code } } }"
)
PROFILES = f"""
query($project: String!, $search: String, $first: Int, $after: String) {{
  computeProfiles(project: $project, search: $search, first: $first, after: $after) {{
    totalCount pageInfo {{ hasNextPage hasPreviousPage startCursor endCursor }}
    edges {{ cursor node {{ {PROFILE_FIELDS} environmentTemplateVersion {{ resources inputs {{ name }} }} }} }}
  }}
}}"""
CATALOG = f"""
query($project: String!, $search: String) {{
  catalog(project: $project, search: $search) {{ {PROFILE_FIELDS} environmentTemplateVersion {{ resources }} }}
}}"""
ONE = "query($id: ID!) { computeProfile(id: $id) { name readmeHtml } }"


def profile_input(project: str, version_id: str, **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "project": project,
        "name": "a100-small",
        "displayName": "Small",
        "description": "One A100 for experiments.",
        "allocationType": "SHARED",
        "environmentTemplateVersion": version_id,
        "resources": {
            "cpu": "8",
            "memory": "64Gi",
            "storage": "200Gi",
            "gpuCount": 1,
            "gpuVendor": "NVIDIA",
            "gpuModel": "A100",
        },
    }
    data.update(overrides)
    return data


async def _admin_and_version(name: str = "alice") -> tuple[Any, Any]:
    admin = await make_user(name)
    project = await make_project("ml", **{name: Role.ADMIN})
    return admin, await make_version(await make_template(project))


async def test_create_with_every_field(db: object, gql: GraphQLClient) -> None:
    admin, version = await _admin_and_version()
    data = profile_input(
        "ml",
        str(version.id),
        labels=[{"key": "tier", "value": "small"}, {"key": "gpupaas.io/sku", "value": "a100"}],
        annotations=[{"key": "owner", "value": "ml platform team <ml@example.com>"}],
        iconUrl="https://example.com/a100.png",
        readme="# Small\n\nUse it for **experiments**.\n\n<script>alert(1)</script>",
        inputSettings=[
            {"name": "team", "value": "vision", "override": "NOT_ALLOWED"},
            {"name": "size", "value": "small", "override": "RESTRICTED", "allowedValues": ["small", "large"]},
        ],
        outputSettings=[
            {"name": "team", "visible": False},
            {"name": "namespace", "displayName": "Namespace"},
        ],
    )
    result = (await gql.data(CREATE_PROFILE, {"input": data}, token=admin.token))["createComputeProfile"]
    assert result["userErrors"] == []
    profile = result["computeProfile"]
    assert profile["resources"] == data["resources"]
    assert profile["labels"] == data["labels"] and profile["annotations"] == data["annotations"]
    assert profile["environmentTemplateVersion"] == {"version": version.version}
    assert profile["sharing"] == {"mode": "NONE", "projects": []}
    assert profile["inputSettings"] == [
        {"name": "team", "value": "vision", "required": True, "override": "NOT_ALLOWED", "allowedValues": []},
        {
            "name": "size",
            "value": "small",
            "required": False,
            "override": "RESTRICTED",
            "allowedValues": ["small", "large"],
        },
    ]
    # declared order, unmentioned ones visible
    assert profile["outputSettings"] == [
        {"name": "namespace", "displayName": "Namespace", "visible": True},
        {"name": "team", "displayName": None, "visible": False},
    ]
    assert (
        "<h1>Small</h1>" in profile["readmeHtml"] and "<strong>experiments</strong>" in profile["readmeHtml"]
    )
    assert "<script>" not in profile["readmeHtml"] and "&lt;script&gt;" in profile["readmeHtml"]


async def test_unmentioned_inputs_take_the_template_defaults(db: object, gql: GraphQLClient) -> None:
    admin, version = await _admin_and_version()
    profile = (
        await gql.data(CREATE_PROFILE, {"input": profile_input("ml", str(version.id))}, token=admin.token)
    )["createComputeProfile"]["computeProfile"]
    assert profile["inputSettings"] == [
        {"name": "team", "value": "ml", "required": True, "override": "ALLOWED", "allowedValues": []},
        {"name": "size", "value": "small", "required": False, "override": "ALLOWED", "allowedValues": []},
    ]


async def test_field_errors_come_back_together(db: object, gql: GraphQLClient) -> None:
    admin, version = await _admin_and_version()
    data = profile_input(
        "ml",
        str(version.id),
        name="Not A Label",
        displayName=" ",
        resources={"cpu": "lots", "memory": "64m", "storage": "1Ti", "gpuCount": 0, "gpuVendor": "NVIDIA"},
        labels=[{"key": "bad key!", "value": "x"}, {"key": "ok", "value": "v" * 64}],
        iconUrl="javascript:alert(1)",
    )
    errors = (await gql.data(CREATE_PROFILE, {"input": data}, token=admin.token))["createComputeProfile"][
        "userErrors"
    ]
    fields = {tuple(e["field"]): e for e in errors}
    assert set(fields) >= {
        ("input", "name"),
        ("input", "displayName"),
        ("input", "resources", "cpu"),
        ("input", "resources", "memory"),
        ("input", "resources", "gpuVendor"),
        ("input", "labels", "0", "key"),
        ("input", "labels", "1", "value"),
        ("input", "iconUrl"),
    }
    assert "64Mi" in fields[("input", "resources", "memory")]["message"]
    assert fields[("input", "displayName")]["code"] == "REQUIRED"


async def test_gpu_vendor_must_match_the_count(db: object, gql: GraphQLClient) -> None:
    admin, version = await _admin_and_version()
    cpu_with_gpus = profile_input(
        "ml",
        str(version.id),
        resources={"cpu": "8", "memory": "8Gi", "storage": "8Gi", "gpuCount": 2, "gpuVendor": "CPU"},
    )
    errors = (await gql.data(CREATE_PROFILE, {"input": cpu_with_gpus}, token=admin.token))[
        "createComputeProfile"
    ]["userErrors"]
    assert [e["field"] for e in errors] == [["input", "resources", "gpuVendor"]]
    negative = profile_input(
        "ml",
        str(version.id),
        resources={"cpu": "8", "memory": "8Gi", "storage": "8Gi", "gpuCount": -1, "gpuVendor": "CPU"},
    )
    errors = (await gql.data(CREATE_PROFILE, {"input": negative}, token=admin.token))["createComputeProfile"][
        "userErrors"
    ]
    assert [e["field"] for e in errors] == [["input", "resources", "gpuCount"]]
    cpu_only = profile_input(
        "ml",
        str(version.id),
        resources={"cpu": "500m", "memory": "8Gi", "storage": "8Gi", "gpuCount": 0, "gpuVendor": "CPU"},
    )
    assert (await gql.data(CREATE_PROFILE, {"input": cpu_only}, token=admin.token))["createComputeProfile"][
        "userErrors"
    ] == []


async def test_input_settings_are_checked_against_the_version(db: object, gql: GraphQLClient) -> None:
    admin, version = await _admin_and_version()
    data = profile_input(
        "ml",
        str(version.id),
        inputSettings=[
            {"name": "nope", "value": "x"},
            {"name": "team", "value": "NOT-lowercase"},
            {"name": "size", "value": "huge", "override": "RESTRICTED", "allowedValues": ["small", "medium"]},
        ],
        outputSettings=[{"name": "ghost"}],
    )
    errors = (await gql.data(CREATE_PROFILE, {"input": data}, token=admin.token))["createComputeProfile"][
        "userErrors"
    ]
    fields = [tuple(e["field"]) for e in errors]
    assert ("input", "inputSettings", "0", "name") in fields
    assert ("input", "inputSettings", "1", "value") in fields  # breaks the pattern
    assert ("input", "inputSettings", "2", "value") in fields  # not an option of the definition
    assert ("input", "inputSettings", "2", "allowedValues", "1") in fields  # "medium" is no option either
    assert ("input", "outputSettings", "0", "name") in fields


async def test_a_required_input_nobody_can_fill_is_refused(db: object, gql: GraphQLClient) -> None:
    admin = await make_user("alice")
    project = await make_project("ml", alice=Role.ADMIN)
    from gpupaas.catalog.service.templates import InputDefinitionIn

    version = await make_version(
        await make_template(project), inputs=[InputDefinitionIn(name="team", type="STRING", required=True)]
    )
    data = profile_input("ml", str(version.id), inputSettings=[{"name": "team", "override": "NOT_ALLOWED"}])
    errors = (await gql.data(CREATE_PROFILE, {"input": data}, token=admin.token))["createComputeProfile"][
        "userErrors"
    ]
    assert errors == [
        {
            "field": ["input", "inputSettings", "0", "value"],
            "message": 'input "team" is required and users may not override it: give it a value',
            "code": "REQUIRED",
        }
    ]
    optional = profile_input("ml", str(version.id), inputSettings=[{"name": "team", "required": False}])
    errors = (await gql.data(CREATE_PROFILE, {"input": optional}, token=admin.token))["createComputeProfile"][
        "userErrors"
    ]
    assert errors[0]["field"] == ["input", "inputSettings", "0", "required"]


async def test_names_are_unique_and_immutable(db: object, gql: GraphQLClient) -> None:
    admin, version = await _admin_and_version()
    first = (
        await gql.data(CREATE_PROFILE, {"input": profile_input("ml", str(version.id))}, token=admin.token)
    )["createComputeProfile"]["computeProfile"]
    again = (
        await gql.data(CREATE_PROFILE, {"input": profile_input("ml", str(version.id))}, token=admin.token)
    )["createComputeProfile"]
    assert again["userErrors"][0]["code"] == "TAKEN"
    renamed = (
        await gql.data(UPDATE_PROFILE, {"input": {"id": first["id"], "name": "other"}}, token=admin.token)
    )["updateComputeProfile"]
    assert renamed["userErrors"][0] == {
        "field": ["input", "name"],
        "message": "the unique name of a compute profile cannot change",
        "code": "IMMUTABLE",
    }


async def test_update_changes_what_is_given_and_keeps_the_rest(db: object, gql: GraphQLClient) -> None:
    admin, version = await _admin_and_version()
    created = (
        await gql.data(
            CREATE_PROFILE,
            {
                "input": profile_input(
                    "ml", str(version.id), labels=[{"key": "a", "value": "1"}], readme="*one*"
                )
            },
            token=admin.token,
        )
    )["createComputeProfile"]["computeProfile"]
    updated = (
        await gql.data(
            UPDATE_PROFILE,
            {
                "input": {
                    "id": created["id"],
                    "name": created["name"],
                    "displayName": "Medium",
                    "readme": "**two**",
                    "inputSettings": [{"name": "size", "value": "large", "override": "NOT_ALLOWED"}],
                }
            },
            token=admin.token,
        )
    )["updateComputeProfile"]
    assert updated["userErrors"] == []
    profile = updated["computeProfile"]
    assert profile["displayName"] == "Medium"
    assert profile["labels"] == [{"key": "a", "value": "1"}]
    assert "<strong>two</strong>" in profile["readmeHtml"]
    assert profile["inputSettings"][1] == {
        "name": "size",
        "value": "large",
        "required": False,
        "override": "NOT_ALLOWED",
        "allowedValues": [],
    }
    assert profile["inputSettings"][0]["name"] == "team"  # untouched


async def test_moving_to_another_version_rechecks_settings(db: object, gql: GraphQLClient) -> None:
    admin = await make_user("alice")
    project = await make_project("ml", alice=Role.ADMIN)
    template = await make_template(project)
    v1 = await make_version(template)
    from gpupaas.catalog.service.templates import InputDefinitionIn

    v2 = await make_version(
        template, inputs=[InputDefinitionIn(name="team", type="STRING", default="ml")], outputs=[]
    )
    created = (
        await gql.data(
            CREATE_PROFILE,
            {"input": profile_input("ml", str(v1.id), inputSettings=[{"name": "size", "value": "large"}])},
            token=admin.token,
        )
    )["createComputeProfile"]["computeProfile"]
    moved = (
        await gql.data(
            UPDATE_PROFILE,
            {"input": {"id": created["id"], "environmentTemplateVersion": str(v2.id)}},
            token=admin.token,
        )
    )["updateComputeProfile"]
    assert moved["userErrors"] == []
    assert [s["name"] for s in moved["computeProfile"]["inputSettings"]] == ["team"]
    assert moved["computeProfile"]["outputSettings"] == []


async def test_sharing_with_selected_projects_shows_in_their_catalog(db: object, gql: GraphQLClient) -> None:
    root = await make_user(platform_admin=True)
    member = await make_user("bob")
    owner = await make_project("ml")
    await make_project("research", bob=Role.MEMBER)
    await make_project("finance")
    profile = await make_profile(owner, name="a100-small", display_name="Small A100")
    catalog_before = (await gql.data(CATALOG, {"project": "research"}, token=member.token))["catalog"]
    assert catalog_before == []

    shared = (
        await gql.data(
            SHARE,
            {
                "id": str(profile.id),
                "sharing": {"mode": "SELECTED_PROJECTS", "projects": ["research", "finance"]},
            },
            token=root.token,
        )
    )["setComputeProfileSharing"]
    assert shared == {
        "computeProfile": {
            "sharing": {"mode": "SELECTED_PROJECTS", "projects": [{"name": "finance"}, {"name": "research"}]}
        },
        "userErrors": [],
    }
    catalog = (await gql.data(CATALOG, {"project": "research"}, token=member.token))["catalog"]
    assert [p["name"] for p in catalog] == ["a100-small"]
    seen = catalog[0]
    assert seen["project"] == {"name": "ml"}
    assert seen["environmentTemplateVersion"]["resources"] is None  # no template internals for members
    assert seen["sharing"]["projects"] == [{"name": "research"}]  # not the other projects it is shared with
    # and the member can open it by id
    assert (await gql.data(ONE, {"id": str(profile.id)}, token=member.token))["computeProfile"][
        "name"
    ] == "a100-small"

    back = (await gql.data(SHARE, {"id": str(profile.id), "sharing": {"mode": "NONE"}}, token=root.token))[
        "setComputeProfileSharing"
    ]
    assert back["computeProfile"]["sharing"] == {"mode": "NONE", "projects": []}
    assert (await gql.data(CATALOG, {"project": "research"}, token=member.token))["catalog"] == []
    assert (await gql.data(ONE, {"id": str(profile.id)}, token=member.token))["computeProfile"] is None


async def test_sharing_with_all_projects(db: object, gql: GraphQLClient) -> None:
    admin = await make_user("alice")
    member = await make_user("bob")
    owner = await make_project("ml", alice=Role.ADMIN)
    await make_project("research", bob=Role.MEMBER)
    profile = await make_profile(owner)
    result = (
        await gql.data(SHARE, {"id": str(profile.id), "sharing": {"mode": "ALL_PROJECTS"}}, token=admin.token)
    )["setComputeProfileSharing"]
    assert result["userErrors"] == []
    assert [
        p["id"] for p in (await gql.data(CATALOG, {"project": "research"}, token=member.token))["catalog"]
    ] == [str(profile.id)]


async def test_sharing_errors(db: object, gql: GraphQLClient) -> None:
    admin = await make_user("alice")
    owner = await make_project("ml", alice=Role.ADMIN)
    await make_project("hidden")  # exists, but alice is not in it: reported as missing
    profile = await make_profile(owner)
    cases = [
        ({"mode": "SELECTED_PROJECTS", "projects": []}, ["sharing", "projects"], "REQUIRED"),
        ({"mode": "SELECTED_PROJECTS", "projects": ["nope"]}, ["sharing", "projects", "0"], "NOT_FOUND"),
        ({"mode": "SELECTED_PROJECTS", "projects": ["hidden"]}, ["sharing", "projects", "0"], "NOT_FOUND"),
        ({"mode": "SELECTED_PROJECTS", "projects": ["ml"]}, ["sharing", "projects", "0"], "INVALID"),
        ({"mode": "ALL_PROJECTS", "projects": ["ml"]}, ["sharing", "projects"], "INVALID"),
    ]
    for sharing, field, code in cases:
        errors = (await gql.data(SHARE, {"id": str(profile.id), "sharing": sharing}, token=admin.token))[
            "setComputeProfileSharing"
        ]["userErrors"]
        assert [(e["field"], e["code"]) for e in errors] == [(field, code)], sharing


async def test_list_is_newest_first_searchable_and_paginated(db: object, gql: GraphQLClient) -> None:
    admin = await make_user("alice")
    project = await make_project("ml", alice=Role.ADMIN)
    version = await make_version(await make_template(project))
    names = [f"sku-{i}" for i in range(5)]
    for name in names:
        await make_profile(project, version, name=name, description=f"profile {name}")
    await make_profile(project, version, name="h100-large", display_name="Large H100")

    page1 = (await gql.data(PROFILES, {"project": "ml", "first": 4}, token=admin.token))["computeProfiles"]
    assert page1["totalCount"] == 6
    assert [e["node"]["name"] for e in page1["edges"]] == ["h100-large", "sku-4", "sku-3", "sku-2"]
    assert page1["pageInfo"]["hasNextPage"] is True and page1["pageInfo"]["hasPreviousPage"] is False
    page2 = (
        await gql.data(
            PROFILES,
            {"project": "ml", "first": 4, "after": page1["pageInfo"]["endCursor"]},
            token=admin.token,
        )
    )["computeProfiles"]
    assert [e["node"]["name"] for e in page2["edges"]] == ["sku-1", "sku-0"]
    assert page2["pageInfo"]["hasNextPage"] is False and page2["pageInfo"]["hasPreviousPage"] is True

    found = (await gql.data(PROFILES, {"project": "ml", "search": "large"}, token=admin.token))[
        "computeProfiles"
    ]
    assert [e["node"]["name"] for e in found["edges"]] == ["h100-large"]
    found = (await gql.data(PROFILES, {"project": "ml", "search": "profile sku-3"}, token=admin.token))[
        "computeProfiles"
    ]
    assert [e["node"]["name"] for e in found["edges"]] == ["sku-3"]

    bad = await gql(PROFILES, {"project": "ml", "after": "garbage!"}, token=admin.token)
    assert bad["errors"][0]["extensions"]["code"] == "INVALID"
    too_many = await gql(PROFILES, {"project": "ml", "first": 1000}, token=admin.token)
    assert too_many["errors"][0]["extensions"]["code"] == "INVALID"


async def test_delete_removes_it_from_every_catalog(db: object, gql: GraphQLClient) -> None:
    admin = await make_user("alice")
    member = await make_user("bob")
    owner = await make_project("ml", alice=Role.ADMIN)
    await make_project("research", bob=Role.MEMBER)
    profile = await make_profile(owner)
    await set_profile_sharing(await platform_actor(), str(profile.id), SharingMode.ALL_PROJECTS, None)
    deleted = (await gql.data(DELETE_PROFILE, {"id": str(profile.id)}, token=admin.token))[
        "deleteComputeProfile"
    ]
    assert deleted == {"deletedId": str(profile.id), "userErrors": []}
    assert (await gql.data(CATALOG, {"project": "research"}, token=member.token))["catalog"] == []
    again = (await gql.data(DELETE_PROFILE, {"id": str(profile.id)}, token=admin.token))[
        "deleteComputeProfile"
    ]
    assert again["userErrors"][0]["code"] == "NOT_FOUND"


async def test_profiles_can_pin_built_in_templates(db: object, gql: GraphQLClient) -> None:
    admin = await make_user("alice")
    await make_project("ml", alice=Role.ADMIN)
    templates = (
        await gql.data('{ environmentTemplates(project: "ml") { name versions { id } } }', token=admin.token)
    )["environmentTemplates"]
    dedicated = next(t for t in templates if t["name"] == "gpu-dedicated")
    result = (
        await gql.data(
            CREATE_PROFILE,
            {"input": profile_input("ml", dedicated["versions"][0]["id"], allocationType="DEDICATED")},
            token=admin.token,
        )
    )["createComputeProfile"]
    assert result["userErrors"] == []
    assert result["computeProfile"]["environmentTemplate"] == {"name": "gpu-dedicated"}


async def test_lists_run_a_fixed_number_of_queries(
    db: object, gql: GraphQLClient, count_queries: QueryCounter
) -> None:
    admin = await make_user("alice")
    owner = await make_project("ml", alice=Role.ADMIN)
    other = await make_project("research", alice=Role.ADMIN)
    actor = await platform_actor()

    async def add(n: int) -> None:
        for _ in range(n):
            template = await make_template(owner)
            profile = await make_profile(owner, await make_version(template))
            await set_profile_sharing(actor, str(profile.id), SharingMode.SELECTED_PROJECTS, [other.name])

    async def count(query: str, variables: dict[str, Any]) -> int:
        count_queries.statements.clear()
        body = await gql.data(query, variables, token=admin.token)
        assert body
        return len(count_queries.statements)

    await gql.data("{ me { username } }", token=admin.token)  # records the token's first use
    await add(2)
    small = (
        await count(PROFILES, {"project": "ml", "first": 100}),
        await count(CATALOG, {"project": "research"}),
    )
    await add(8)
    large = (
        await count(PROFILES, {"project": "ml", "first": 100}),
        await count(CATALOG, {"project": "research"}),
    )
    assert small == large, (small, large)
    # The caller, the project and the rows (catalog.reads: tests/catalog/test_reads.py), then the
    # DataLoaders of what the rows do not hold: the profiles' project and the versions' resources.
    assert large[0] <= 6 and large[1] <= 6, large


async def test_a_setting_without_a_value_keeps_the_template_default(db: object, gql: GraphQLClient) -> None:
    admin, version = await _admin_and_version()
    data = profile_input("ml", str(version.id), inputSettings=[{"name": "team", "override": "ALLOWED"}])
    profile = (await gql.data(CREATE_PROFILE, {"input": data}, token=admin.token))["createComputeProfile"][
        "computeProfile"
    ]
    assert profile["inputSettings"][0] == {
        "name": "team",
        "value": "ml",
        "required": True,
        "override": "ALLOWED",
        "allowedValues": [],
    }


SAVE_WITH_WARNINGS = """
mutation($create: CreateComputeProfileInput!) {
  createComputeProfile(input: $create) {
    computeProfile { id resources { gpuModel } } userErrors { field message code } warnings { field message code }
  }
}"""
UPDATE_WITH_WARNINGS = """
mutation($input: UpdateComputeProfileInput!) {
  updateComputeProfile(input: $input) {
    computeProfile { resources { gpuModel } } userErrors { field message code } warnings { field message code }
  }
}"""


async def test_a_gpu_model_no_cluster_has_is_saved_with_a_warning(db: object, gql: GraphQLClient) -> None:
    # given the simulated cluster's inventory (H100 80GB and MI300X nodes), as a check saw it
    root = await make_user("root", platform_admin=True)
    (cluster,) = (await gql.data("{ clusters { id } }", token=root.token))["clusters"]
    check = "mutation($id: ID!) { checkCluster(id: $id) { userErrors { message } } }"
    assert (await gql.data(check, {"id": cluster["id"]}, token=root.token))["checkCluster"][
        "userErrors"
    ] == []
    admin, version = await _admin_and_version()
    # when a profile asks for a GPU model no cluster has
    data = profile_input("ml", str(version.id))
    data["resources"]["gpuModel"] = "A100-80GB"
    created = (await gql.data(SAVE_WITH_WARNINGS, {"create": data}, token=admin.token))[
        "createComputeProfile"
    ]
    # then it is saved, with a warning that names the models the clusters have
    assert created["userErrors"] == [] and created["computeProfile"]["resources"]["gpuModel"] == "A100-80GB"
    (warning,) = created["warnings"]
    assert warning["field"] == ["input", "resources", "gpuModel"] and warning["code"] == "NOT_FOUND"
    assert '"A100-80GB"' in warning["message"] and "H100 80GB, MI300X" in warning["message"]
    # and a model a cluster has gives none
    update = {
        "id": created["computeProfile"]["id"],
        "resources": {**data["resources"], "gpuModel": "H100 80GB"},
    }
    updated = (await gql.data(UPDATE_WITH_WARNINGS, {"input": update}, token=admin.token))[
        "updateComputeProfile"
    ]
    assert updated["userErrors"] == [] and updated["warnings"] == []
    # nor a part of one on the simulated cluster, whose admission takes "H100" for "H100 80GB"
    part = {**update, "resources": {**data["resources"], "gpuModel": "h100"}}
    updated = (await gql.data(UPDATE_WITH_WARNINGS, {"input": part}, token=admin.token))[
        "updateComputeProfile"
    ]
    assert updated["userErrors"] == [] and updated["warnings"] == []
    # nor does a CPU-only profile
    cpu = {**data["resources"], "gpuCount": 0, "gpuVendor": "CPU", "gpuModel": "A100-80GB"}
    updated = (
        await gql.data(UPDATE_WITH_WARNINGS, {"input": {**update, "resources": cpu}}, token=admin.token)
    )["updateComputeProfile"]
    assert updated["userErrors"] == [] and updated["warnings"] == []
