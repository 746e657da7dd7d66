"""Environment templates through the API: create, update, versions (checked when added), state, delete."""

from __future__ import annotations

from typing import Any

from gpupaas.core.actor import Role
from tests.conftest import GraphQLClient
from tests.factories import NAMESPACE_YAML, make_profile, make_project, make_template, make_user, make_version

CREATE = """
mutation($input: CreateEnvironmentTemplateInput!) {
  createEnvironmentTemplate(input: $input) {
    environmentTemplate { id name displayName description builtIn project { name } versions { id } }
    userErrors { field message code }
  }
}"""
UPDATE = """
mutation($input: UpdateEnvironmentTemplateInput!) {
  updateEnvironmentTemplate(input: $input) {
    environmentTemplate { name displayName description }
    userErrors { field message code }
  }
}"""
ADD_VERSION = """
mutation($input: AddEnvironmentTemplateVersionInput!) {
  addEnvironmentTemplateVersion(input: $input) {
    version { id version state resources inputs { name type required default options } outputs { name value } }
    userErrors { field message code }
  }
}"""
SET_STATE = """
mutation($id: ID!, $state: VersionState!) {
  setEnvironmentTemplateVersionState(id: $id, state: $state) { version { state } userErrors { field message code } }
}"""
DELETE = "mutation($id: ID!) { deleteEnvironmentTemplate(id: $id) { deletedId userErrors { field message code } } }"
LIST = """
query($project: String!, $search: String) {
  environmentTemplates(project: $project, search: $search) {
    name builtIn versions { version state resources outputs { name } }
  }
}"""
ONE = "query($id: ID!) { environmentTemplate(id: $id) { name versions { version resources } } }"


async def test_admin_creates_a_template_and_adds_a_version(db: object, gql: GraphQLClient) -> None:
    admin = await make_user("alice")
    await make_project("ml", alice=Role.ADMIN)
    created = (
        await gql.data(
            CREATE,
            {"input": {"project": "ml", "name": "small-ns", "description": "A namespace"}},
            token=admin.token,
        )
    )["createEnvironmentTemplate"]
    assert created["userErrors"] == []
    template = created["environmentTemplate"]
    assert template["name"] == "small-ns" and template["displayName"] == "small-ns"  # defaults to the name
    assert template["builtIn"] is False and template["project"] == {"name": "ml"}

    added = (
        await gql.data(
            ADD_VERSION,
            {
                "input": {
                    "template": template["id"],
                    "version": "1.0.0",
                    "resources": NAMESPACE_YAML,
                    "inputs": [{"name": "team", "type": "STRING", "required": True, "default": "ml"}],
                    "outputs": [{"name": "namespace", "value": "{{ instance.namespace }}"}],
                    "state": "ACTIVE",
                }
            },
            token=admin.token,
        )
    )["addEnvironmentTemplateVersion"]
    assert added["userErrors"] == []
    assert added["version"]["state"] == "ACTIVE"
    assert added["version"]["resources"] == NAMESPACE_YAML
    assert added["version"]["inputs"] == [
        {"name": "team", "type": "STRING", "required": True, "default": "ml", "options": []}
    ]


async def test_version_errors_point_at_the_document_and_field(db: object, gql: GraphQLClient) -> None:
    admin = await make_user(platform_admin=True)
    project = await make_project("ml")
    template = await make_template(project)
    bad = NAMESPACE_YAML.replace("{{ resources.memory }}", "{{ inputs.memory }}").replace(
        "requests.cpu", "requests.cpu"
    )
    result = (
        await gql.data(
            ADD_VERSION,
            {
                "input": {
                    "template": str(template.id),
                    "version": "2.0",
                    "resources": bad,
                    "inputs": [{"name": "team", "type": "STRING", "default": "a"}],
                }
            },
            token=admin.token,
        )
    )["addEnvironmentTemplateVersion"]
    assert result["version"] is None
    [error] = result["userErrors"]
    assert error["field"] == ["input", "resources"]
    assert "document 2 (ResourceQuota quota)" in error["message"] and "inputs.memory" in error["message"]
    assert "spec.hard.requests.memory" in error["message"]


async def test_bad_yaml_and_bad_objects_are_refused(db: object, gql: GraphQLClient) -> None:
    admin = await make_user(platform_admin=True)
    template = await make_template(await make_project("ml"))
    cases = {
        "kind: [unclosed": "line",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n": "metadata.name",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: [1, 2]\n": "data",
        "- just\n- a list\n": "not a Kubernetes object",
    }
    for index, (resources, needle) in enumerate(cases.items()):
        result = (
            await gql.data(
                ADD_VERSION,
                {"input": {"template": str(template.id), "version": f"0.{index}", "resources": resources}},
                token=admin.token,
            )
        )["addEnvironmentTemplateVersion"]
        assert result["version"] is None, resources
        messages = " ".join(e["message"] for e in result["userErrors"])
        assert needle in messages, (resources, messages)


async def test_input_definition_errors_name_the_input(db: object, gql: GraphQLClient) -> None:
    admin = await make_user(platform_admin=True)
    template = await make_template(await make_project("ml"))
    result = (
        await gql.data(
            ADD_VERSION,
            {
                "input": {
                    "template": str(template.id),
                    "version": "1",
                    "resources": NAMESPACE_YAML,
                    "inputs": [
                        {"name": "team", "type": "STRING", "default": "x"},
                        {"name": "size", "type": "STRING", "options": ["s", "m"], "default": "xl"},
                        {"name": "gpus", "type": "NUMBER", "min": 4, "max": 1},
                    ],
                }
            },
            token=admin.token,
        )
    )["addEnvironmentTemplateVersion"]
    fields = [e["field"] for e in result["userErrors"]]
    assert ["input", "inputs", "1", "default"] in fields
    assert any(f[:3] == ["input", "inputs", "2"] for f in fields)


async def test_versions_are_unique_and_names_immutable(db: object, gql: GraphQLClient) -> None:
    admin = await make_user(platform_admin=True)
    template = await make_template(await make_project("ml"), name="ns")
    await make_version(template, version="1.0.0")
    again = (
        await gql.data(
            ADD_VERSION,
            {
                "input": {
                    "template": str(template.id),
                    "version": "1.0.0",
                    "resources": NAMESPACE_YAML,
                    "inputs": [{"name": "team", "type": "STRING", "default": "x"}],
                }
            },
            token=admin.token,
        )
    )["addEnvironmentTemplateVersion"]
    assert again["userErrors"][0]["code"] == "TAKEN"
    renamed = (
        await gql.data(UPDATE, {"input": {"id": str(template.id), "name": "other"}}, token=admin.token)
    )["updateEnvironmentTemplate"]
    assert renamed["userErrors"] == [
        {"field": ["input", "name"], "message": "the name of a template cannot change", "code": "IMMUTABLE"}
    ]
    same = (
        await gql.data(
            UPDATE,
            {"input": {"id": str(template.id), "name": "ns", "displayName": "Namespace"}},
            token=admin.token,
        )
    )["updateEnvironmentTemplate"]
    assert same == {
        "environmentTemplate": {"name": "ns", "displayName": "Namespace", "description": None},
        "userErrors": [],
    }


async def test_only_active_versions_can_be_pinned(db: object, gql: GraphQLClient) -> None:
    admin = await make_user(platform_admin=True)
    project = await make_project("ml")
    version = await make_version(await make_template(project))
    disabled = (await gql.data(SET_STATE, {"id": str(version.id), "state": "DISABLED"}, token=admin.token))[
        "setEnvironmentTemplateVersionState"
    ]
    assert disabled == {"version": {"state": "DISABLED"}, "userErrors": []}
    from tests.catalog.test_profiles import CREATE_PROFILE, profile_input

    result = (
        await gql.data(CREATE_PROFILE, {"input": profile_input("ml", str(version.id))}, token=admin.token)
    )["createComputeProfile"]
    assert result["userErrors"][0]["code"] == "INVALID_STATE"
    assert result["userErrors"][0]["field"] == ["input", "environmentTemplateVersion"]


async def test_a_template_in_use_cannot_be_deleted(db: object, gql: GraphQLClient) -> None:
    admin = await make_user(platform_admin=True)
    project = await make_project("ml")
    template = await make_template(project)
    profile = await make_profile(project, await make_version(template), name="sku")
    refused = (await gql.data(DELETE, {"id": str(template.id)}, token=admin.token))[
        "deleteEnvironmentTemplate"
    ]
    assert refused["deletedId"] is None
    assert (
        refused["userErrors"][0]["code"] == "INVALID_STATE" and "sku" in refused["userErrors"][0]["message"]
    )
    await profile.delete()
    deleted = (await gql.data(DELETE, {"id": str(template.id)}, token=admin.token))[
        "deleteEnvironmentTemplate"
    ]
    assert deleted == {"deletedId": str(template.id), "userErrors": []}
    assert (await gql.data(ONE, {"id": str(template.id)}, token=admin.token))["environmentTemplate"] is None


async def test_list_searches_and_includes_the_built_ins(db: object, gql: GraphQLClient) -> None:
    admin = await make_user("alice")
    project = await make_project("ml", alice=Role.ADMIN)
    await make_template(project, name="jupyter-ns")
    await make_template(project, name="training")
    listed = (await gql.data(LIST, {"project": "ml"}, token=admin.token))["environmentTemplates"]
    names = [t["name"] for t in listed]
    assert names[:2] == ["gpu-dedicated", "gpu-namespace"]  # built-ins first
    assert set(names) == {"gpu-dedicated", "gpu-namespace", "jupyter-ns", "training"}
    # a project admin may read the built-ins' YAML (it is public), pinned ACTIVE
    builtin = next(t for t in listed if t["name"] == "gpu-namespace")
    assert builtin["builtIn"] and builtin["versions"][0]["state"] == "ACTIVE"
    assert "ResourceQuota" in builtin["versions"][0]["resources"]
    assert {"namespace", "quota"} <= {o["name"] for o in builtin["versions"][0]["outputs"]}
    found = (await gql.data(LIST, {"project": "ml", "search": "JUPYTER"}, token=admin.token))[
        "environmentTemplates"
    ]
    assert [t["name"] for t in found] == ["jupyter-ns"]


async def test_members_read_templates_without_their_yaml(db: object, gql: GraphQLClient) -> None:
    member = await make_user("bob")
    project = await make_project("ml", bob=Role.MEMBER)
    await make_version(await make_template(project, name="ns"))
    listed = (await gql.data(LIST, {"project": "ml", "search": "ns"}, token=member.token))[
        "environmentTemplates"
    ]
    own = next(t for t in listed if t["name"] == "ns")
    assert own["versions"][0]["resources"] is None
    builtin = next(t for t in listed if t["name"] == "gpu-namespace")
    assert builtin["versions"][0]["resources"] is None


async def test_built_in_templates_are_synced_once(db: object) -> None:
    from gpupaas.catalog.models import EnvironmentTemplate, EnvironmentTemplateVersion
    from gpupaas.catalog.service.templates import sync_builtin_templates

    before = await EnvironmentTemplateVersion.all().count()
    await sync_builtin_templates()
    await sync_builtin_templates()
    assert await EnvironmentTemplateVersion.all().count() == before
    assert await EnvironmentTemplate.filter(built_in=True).count() == 2


async def test_a_profile_pinned_during_the_delete_still_blocks_it(db: object, monkeypatch: object) -> None:
    # given a profile that the "in use" check does not see (it was created after the check ran)
    import pytest

    from gpupaas.catalog.models import ComputeProfile, EnvironmentTemplate
    from gpupaas.catalog.service import templates
    from gpupaas.core.errors import UserErrors
    from tests.factories import platform_actor

    project = await make_project("ml")
    template = await make_template(project)
    await make_profile(project, await make_version(template), name="late")
    real_filter = ComputeProfile.filter
    calls = []

    def filter_missing_the_first_look(*args: Any, **kwargs: Any) -> Any:
        if "template_version__template_id" in kwargs:
            calls.append(1)
            if len(calls) == 1:
                return real_filter(name="no such profile")
        return real_filter(*args, **kwargs)

    assert isinstance(monkeypatch, pytest.MonkeyPatch)
    monkeypatch.setattr(ComputeProfile, "filter", filter_missing_the_first_look)
    # when the admin deletes the template, then the foreign key refuses and the answer says why
    with pytest.raises(UserErrors) as refused:
        await templates.delete_template(await platform_actor(), str(template.id))
    assert refused.value.problems[0].code.value == "INVALID_STATE"
    assert "late" in refused.value.problems[0].message
    assert await EnvironmentTemplate.exists(id=template.id)
    assert len(calls) == 2
