"""Instance templates through the API: global and project templates, rights, built-ins, search, checks."""

from __future__ import annotations

from typing import Any

import pytest

from gpupaas.bootstrap import seed
from gpupaas.core.actor import Role
from gpupaas.instance_templates.builtins import BUILTIN_INSTANCE_TEMPLATES
from gpupaas.instance_templates.models import InstanceTemplate
from tests.conftest import GraphQLClient
from tests.factories import Person, make_project, make_user

FIELDS = """
id name displayName description vendor image imagePullPolicy command containerDisk mountPath
ports { name port protocol accessParams { key value } } env { key value } builtIn project { name }
createdAt updatedAt
"""
CREATE = (
    "mutation($input: CreateInstanceTemplateInput!) { createInstanceTemplate(input: $input) {"
    f" instanceTemplate {{ {FIELDS} }} userErrors {{ field message code }} }} }}"
)
UPDATE = (
    "mutation($input: UpdateInstanceTemplateInput!) { updateInstanceTemplate(input: $input) {"
    f" instanceTemplate {{ {FIELDS} }} userErrors {{ field message code }} }} }}"
)
DELETE = (
    "mutation($id: ID!) { deleteInstanceTemplate(id: $id) { deletedId userErrors { field message code } } }"
)
ONE = f"query($id: ID!) {{ instanceTemplate(id: $id) {{ {FIELDS} }} }}"
LIST = f"""
query($project: String!, $search: String, $vendor: Vendor) {{
  instanceTemplates(project: $project, search: $search, vendor: $vendor) {{ {FIELDS} }}
}}"""

BUILTIN_NAMES = sorted(t.name for t in BUILTIN_INSTANCE_TEMPLATES)

FULL_INPUT: dict[str, Any] = {
    "project": "ml",
    "name": "notebook",
    "displayName": "Team notebook",
    "description": "JupyterLab for the ML team",
    "vendor": "NVIDIA",
    "image": "nvcr.io/nvidia/pytorch:25.01-py3",
    "imagePullPolicy": "ALWAYS",
    "command": ["jupyter", "lab", "--ServerApp.token={{generated_token}}", "--port=8888"],
    "containerDisk": "50Gi",
    "mountPath": "/home/jovyan/work",
    "ports": [
        {"name": "jupyter", "port": 8888, "accessParams": [{"key": "token", "value": "{{generated_token}}"}]},
        {"name": "metrics", "port": 9100, "protocol": "UDP"},
    ],
    "env": [
        {"key": "HF_HOME", "value": "/home/jovyan/work/.hf"},
        {"key": "API_KEY", "value": "{{ generated_token }}"},
    ],
}


async def _people() -> tuple[Person, Person, Person, Person]:
    """A platform admin, ml's admin, ml's member and an outsider (admin of another project)."""
    root = await make_user("root", platform_admin=True)
    alice = await make_user("alice")
    bob = await make_user("bob")
    carol = await make_user("carol")
    await make_project("ml", alice=Role.ADMIN, bob=Role.MEMBER)
    await make_project("other", carol=Role.ADMIN)
    return root, alice, bob, carol


async def _create(gql: GraphQLClient, token: str, **fields: Any) -> dict[str, Any]:
    result: dict[str, Any] = (await gql.data(CREATE, {"input": fields}, token=token))[
        "createInstanceTemplate"
    ]
    return result


async def _created(gql: GraphQLClient, token: str, **fields: Any) -> dict[str, Any]:
    result = await _create(gql, token, **fields)
    assert result["userErrors"] == []
    template: dict[str, Any] = result["instanceTemplate"]
    return template


async def _update(gql: GraphQLClient, token: str, **fields: Any) -> dict[str, Any]:
    result: dict[str, Any] = (await gql.data(UPDATE, {"input": fields}, token=token))[
        "updateInstanceTemplate"
    ]
    return result


async def _names(gql: GraphQLClient, token: str, project: str = "ml", **args: Any) -> list[str]:
    rows = (await gql.data(LIST, {"project": project, **args}, token=token))["instanceTemplates"]
    return [row["name"] for row in rows]


def _own(names: list[str]) -> list[str]:
    return [name for name in names if name not in BUILTIN_NAMES]


def _code(body: dict[str, Any]) -> str:
    return str(body["errors"][0]["extensions"]["code"])


# ---------------------------------------------------------------- create, read, update, delete


async def test_project_admin_creates_a_template_with_every_field(db: object, gql: GraphQLClient) -> None:
    _, alice, bob, _ = await _people()
    # when ml's admin creates a template giving every field
    template = await _created(gql, alice.token, **FULL_INPUT)
    # then every field is kept as given
    assert template["name"] == "notebook" and template["displayName"] == "Team notebook"
    assert template["description"] == "JupyterLab for the ML team"
    assert template["vendor"] == "NVIDIA" and template["image"] == "nvcr.io/nvidia/pytorch:25.01-py3"
    assert template["imagePullPolicy"] == "ALWAYS"
    assert template["command"] == FULL_INPUT["command"]
    assert template["containerDisk"] == "50Gi" and template["mountPath"] == "/home/jovyan/work"
    assert template["ports"] == [
        {
            "name": "jupyter",
            "port": 8888,
            "protocol": "TCP",
            "accessParams": [{"key": "token", "value": "{{generated_token}}"}],
        },
        {"name": "metrics", "port": 9100, "protocol": "UDP", "accessParams": []},
    ]
    assert template["env"] == FULL_INPUT["env"]
    assert template["builtIn"] is False and template["project"] == {"name": "ml"}
    assert template["createdAt"] and template["updatedAt"]
    # and a member of the project reads the same, by id and in the list
    assert (await gql.data(ONE, {"id": template["id"]}, token=bob.token))["instanceTemplate"] == template
    assert _own(await _names(gql, bob.token)) == ["notebook"]


async def test_left_out_fields_take_their_defaults(db: object, gql: GraphQLClient) -> None:
    _, alice, _, _ = await _people()
    # when only the required fields are given (and a port without protocol or access params)
    template = await _created(
        gql,
        alice.token,
        project="ml",
        name="shell",
        vendor="CPU",
        image="ubuntu:24.04",
        ports=[{"name": "ssh", "port": 22}],
    )
    # then the defaults apply
    assert template["displayName"] == "shell"  # the name
    assert template["description"] is None
    assert template["imagePullPolicy"] == "IF_NOT_PRESENT"
    assert template["command"] == [] and template["env"] == []
    assert template["containerDisk"] == "15Gi" and template["mountPath"] == "/workspace"
    assert template["ports"] == [{"name": "ssh", "port": 22, "protocol": "TCP", "accessParams": []}]


async def test_admin_updates_every_field_and_deletes(db: object, gql: GraphQLClient) -> None:
    _, alice, bob, _ = await _people()
    created = await _created(gql, alice.token, **FULL_INPUT)
    # when the admin changes every field (the name given with its current value)
    result = await _update(
        gql,
        alice.token,
        id=created["id"],
        name="notebook",
        displayName="Renamed",
        description="",
        vendor="AMD",
        image="rocm/pytorch:latest",
        imagePullPolicy="NEVER",
        command=["sleep", "infinity"],
        containerDisk="100Gi",
        mountPath="/data",
        ports=[
            {"name": "http", "port": 8080, "protocol": "SCTP", "accessParams": [{"key": "a", "value": "b"}]}
        ],
        env=[{"key": "MODE", "value": "x"}],
    )
    # then every field has its new value
    assert result["userErrors"] == []
    template = result["instanceTemplate"]
    assert template["name"] == "notebook" and template["displayName"] == "Renamed"
    assert template["description"] is None  # "" clears it
    assert (template["vendor"], template["image"], template["imagePullPolicy"]) == (
        "AMD",
        "rocm/pytorch:latest",
        "NEVER",
    )
    assert template["command"] == ["sleep", "infinity"]
    assert (template["containerDisk"], template["mountPath"]) == ("100Gi", "/data")
    assert template["ports"] == [
        {"name": "http", "port": 8080, "protocol": "SCTP", "accessParams": [{"key": "a", "value": "b"}]}
    ]
    assert template["env"] == [{"key": "MODE", "value": "x"}]
    assert template["updatedAt"] >= created["updatedAt"] and template["createdAt"] == created["createdAt"]
    # and a partial update leaves the other fields as they are; an empty display name is the name again
    partial = (await _update(gql, alice.token, id=created["id"], displayName=" ", ports=[]))[
        "instanceTemplate"
    ]
    assert partial["displayName"] == "notebook" and partial["ports"] == []
    assert partial["image"] == "rocm/pytorch:latest" and partial["env"] == [{"key": "MODE", "value": "x"}]

    # when the admin deletes it, then it is gone
    deleted = (await gql.data(DELETE, {"id": created["id"]}, token=alice.token))["deleteInstanceTemplate"]
    assert deleted == {"deletedId": created["id"], "userErrors": []}
    assert (await gql.data(ONE, {"id": created["id"]}, token=bob.token))["instanceTemplate"] is None
    assert _own(await _names(gql, bob.token)) == []
    # and deleting it again says it does not exist
    again = (await gql.data(DELETE, {"id": created["id"]}, token=alice.token))["deleteInstanceTemplate"]
    assert again["userErrors"][0]["code"] == "NOT_FOUND" and again["userErrors"][0]["field"] == ["id"]


async def test_the_name_is_immutable(db: object, gql: GraphQLClient) -> None:
    _, alice, _, _ = await _people()
    created = await _created(gql, alice.token, project="ml", name="shell", vendor="CPU", image="ubuntu:24.04")
    # when the update gives another name
    result = await _update(gql, alice.token, id=created["id"], name="renamed", displayName="D")
    # then nothing changes and the error says why
    assert result["instanceTemplate"] is None
    assert result["userErrors"] == [
        {
            "field": ["input", "name"],
            "message": "the name of an instance template cannot change",
            "code": "IMMUTABLE",
        }
    ]
    assert (await gql.data(ONE, {"id": created["id"]}, token=alice.token))["instanceTemplate"][
        "displayName"
    ] == "shell"


async def test_names_are_unique_per_scope(db: object, gql: GraphQLClient) -> None:
    root, alice, _, carol = await _people()
    base = {"name": "shell", "vendor": "CPU", "image": "ubuntu:24.04"}
    await _created(gql, alice.token, project="ml", **base)
    # the same name in the same project is taken
    taken = await _create(gql, alice.token, project="ml", **base)
    assert taken["userErrors"][0]["field"] == ["input", "name"] and taken["userErrors"][0]["code"] == "TAKEN"
    # but free in another project and globally, once
    await _created(gql, carol.token, project="other", **base)
    global_one = await _created(gql, root.token, **base)
    assert global_one["project"] is None
    twice = await _create(gql, root.token, **base)
    assert twice["userErrors"][0]["code"] == "TAKEN"
    assert "global" in twice["userErrors"][0]["message"]
    # ml sees its own and the global one
    assert _own(await _names(gql, alice.token)) == ["shell", "shell"]


# ---------------------------------------------------------------- rights


async def test_global_templates_are_written_by_platform_admins_and_read_by_everyone(
    db: object, gql: GraphQLClient
) -> None:
    root, alice, bob, carol = await _people()
    # when a platform admin creates a template without a project
    template = await _created(gql, root.token, name="global-shell", vendor="CPU", image="ubuntu:24.04")
    # then it is global: every signed-in user sees it, in every project's list
    assert template["project"] is None and template["builtIn"] is False
    for person in (alice, bob, carol):
        assert (await gql.data(ONE, {"id": template["id"]}, token=person.token))["instanceTemplate"][
            "name"
        ] == ("global-shell")
    assert "global-shell" in await _names(gql, bob.token, "ml")
    assert "global-shell" in await _names(gql, carol.token, "other")
    # a project admin may neither create, change nor delete global templates
    body = await gql(
        CREATE, {"input": {"name": "mine", "vendor": "CPU", "image": "ubuntu"}}, token=alice.token
    )
    assert _code(body) == "FORBIDDEN"
    body = await gql(UPDATE, {"input": {"id": template["id"], "image": "debian"}}, token=alice.token)
    assert _code(body) == "FORBIDDEN"
    assert _code(await gql(DELETE, {"id": template["id"]}, token=carol.token)) == "FORBIDDEN"
    # the platform admin may
    assert (await _update(gql, root.token, id=template["id"], image="debian:12"))["userErrors"] == []
    deleted = (await gql.data(DELETE, {"id": template["id"]}, token=root.token))["deleteInstanceTemplate"]
    assert deleted["deletedId"] == template["id"]
    # anonymous callers see nothing
    assert _code(await gql(ONE, {"id": template["id"]})) == "UNAUTHENTICATED"


async def test_project_templates_are_for_the_project(db: object, gql: GraphQLClient) -> None:
    root, alice, bob, carol = await _people()
    template = await _created(
        gql, alice.token, project="ml", name="shell", vendor="CPU", image="ubuntu:24.04"
    )
    # a member reads but does not write
    body = await gql(
        CREATE, {"input": {"project": "ml", "name": "x", "vendor": "CPU", "image": "u"}}, token=bob.token
    )
    assert _code(body) == "FORBIDDEN"
    assert _code(
        await gql(UPDATE, {"input": {"id": template["id"], "image": "debian"}}, token=bob.token)
    ) == ("FORBIDDEN")
    assert _code(await gql(DELETE, {"id": template["id"]}, token=bob.token)) == "FORBIDDEN"
    # another project's admin sees nothing: not by id, not in lists, and cannot write there
    assert (await gql.data(ONE, {"id": template["id"]}, token=carol.token))["instanceTemplate"] is None
    assert "shell" not in await _names(gql, carol.token, "other")
    assert _code(await gql(LIST, {"project": "ml"}, token=carol.token)) == "NOT_FOUND"
    created = await _create(gql, carol.token, project="ml", name="x", vendor="CPU", image="ubuntu")
    assert created["userErrors"] == [
        {"field": ["input", "project"], "message": 'project "ml" not found', "code": "NOT_FOUND"}
    ]
    updated = await _update(gql, carol.token, id=template["id"], image="debian")
    assert updated["userErrors"][0]["code"] == "NOT_FOUND"
    deleted = (await gql.data(DELETE, {"id": template["id"]}, token=carol.token))["deleteInstanceTemplate"]
    assert deleted["userErrors"][0]["code"] == "NOT_FOUND"
    # a platform admin may do everything
    assert (await _update(gql, root.token, id=template["id"], image="debian:12"))["userErrors"] == []


async def test_the_system_project_is_not_a_scope_of_its_own(db: object, gql: GraphQLClient) -> None:
    root, *_ = await _people()
    result = await _create(gql, root.token, project="gpupaas-system", name="x", vendor="CPU", image="ubuntu")
    assert result["userErrors"][0]["field"] == ["input", "project"]
    assert "global" in result["userErrors"][0]["message"]


# ---------------------------------------------------------------- built-in templates


async def test_builtin_templates_are_there_after_start(db: object, gql: GraphQLClient) -> None:
    _, _, bob, _ = await _people()
    # given a started server (the db fixture seeds), when a member lists the templates
    rows = (await gql.data(LIST, {"project": "ml"}, token=bob.token))["instanceTemplates"]
    # then the built-in ones are there, global, by name
    assert [row["name"] for row in rows] == BUILTIN_NAMES
    assert all(row["builtIn"] and row["project"] is None for row in rows)
    jupyter = next(row for row in rows if row["name"] == "jupyterlab-pytorch")
    assert jupyter["vendor"] == "NVIDIA"
    assert jupyter["command"][:2] == ["jupyter", "lab"]
    assert "--ServerApp.token={{generated_token}}" in jupyter["command"]
    assert jupyter["ports"] == [
        {
            "name": "jupyter",
            "port": 8888,
            "protocol": "TCP",
            "accessParams": [{"key": "token", "value": "{{generated_token}}"}],
        }
    ]
    assert jupyter["mountPath"] == "/workspace" and jupyter["containerDisk"] == "15Gi"


async def test_builtin_sync_runs_once_and_keeps_edits(db: object, gql: GraphQLClient) -> None:
    root, _, bob, _ = await _people()
    rows = (await gql.data(LIST, {"project": "ml", "search": "jupyterlab"}, token=bob.token))[
        "instanceTemplates"
    ]
    [jupyter] = rows
    # given a platform admin's edit of a built-in template
    edited = await _update(
        gql, root.token, id=jupyter["id"], displayName="Our JupyterLab", image="registry.local/jupyter:1"
    )
    assert edited["userErrors"] == []
    assert edited["instanceTemplate"]["builtIn"] is True
    # when the server starts again (twice)
    await seed()
    await seed()
    # then no template is added twice and the edit is kept
    assert await InstanceTemplate.filter(built_in=True).count() == len(BUILTIN_INSTANCE_TEMPLATES)
    after = (await gql.data(ONE, {"id": jupyter["id"]}, token=bob.token))["instanceTemplate"]
    assert after["displayName"] == "Our JupyterLab" and after["image"] == "registry.local/jupyter:1"
    assert after["updatedAt"] == edited["instanceTemplate"]["updatedAt"]


async def test_a_missing_builtin_is_inserted_again(db: object, gql: GraphQLClient) -> None:
    # given a built-in row gone from the database (an older installation without it)
    await InstanceTemplate.filter(name="ubuntu", built_in=True).delete()
    # when the server starts, then it is there again
    await seed()
    assert await InstanceTemplate.filter(name="ubuntu", built_in=True).count() == 1


async def test_builtin_templates_cannot_be_deleted(db: object, gql: GraphQLClient) -> None:
    root, *_ = await _people()
    ubuntu = await InstanceTemplate.get(name="ubuntu", built_in=True)
    # when a platform admin deletes a built-in template
    result = (await gql.data(DELETE, {"id": str(ubuntu.id)}, token=root.token))["deleteInstanceTemplate"]
    # then it is refused (the next start would bring it back) and it stays
    assert result["deletedId"] is None
    [error] = result["userErrors"]
    assert error["code"] == "INVALID_STATE" and error["field"] == ["id"]
    assert "built-in" in error["message"] and "edit it instead" in error["message"]
    assert await InstanceTemplate.exists(id=ubuntu.id)


# ---------------------------------------------------------------- search and filters


async def test_search_matches_name_and_display_name_and_vendor_filters(
    db: object, gql: GraphQLClient
) -> None:
    root, alice, bob, _ = await _people()
    await _created(
        gql, alice.token, project="ml", name="llama-server", displayName="Serving", vendor="NVIDIA", image="x"
    )
    await _created(
        gql,
        alice.token,
        project="ml",
        name="trainer",
        displayName="Llama fine-tuning",
        vendor="AMD",
        image="x",
    )
    await _created(
        gql, alice.token, project="ml", name="cpu-box", displayName="Plain box", vendor="CPU", image="x"
    )
    await _created(gql, root.token, name="a-global-llama", vendor="INTEL", image="x")
    # search matches the name or the display name, case-insensitively; built-in ones first, then by name
    assert await _names(gql, bob.token, search="LLAMA") == ["a-global-llama", "llama-server", "trainer"]
    assert await _names(gql, bob.token, search=" plain ") == ["cpu-box"]
    assert await _names(gql, bob.token, search="PyTorch") == ["jupyterlab-pytorch", "pytorch", "pytorch-rocm"]
    assert await _names(gql, bob.token, search="nothing-like-it") == []
    assert await _names(gql, bob.token, search="%") == []
    # the vendor filter, alone and with a search
    assert await _names(gql, bob.token, vendor="AMD") == ["pytorch-rocm", "trainer"]
    assert await _names(gql, bob.token, vendor="NVIDIA", search="llama") == ["llama-server"]
    assert await _names(gql, bob.token, vendor="ASCEND") == []
    # everything: built-in ones first, then by name
    assert await _names(gql, bob.token) == [
        *BUILTIN_NAMES,
        "a-global-llama",
        "cpu-box",
        "llama-server",
        "trainer",
    ]


# ---------------------------------------------------------------- checks


def _errors(result: dict[str, Any]) -> dict[tuple[str, ...], str]:
    assert result["instanceTemplate"] is None
    return {tuple(e["field"]): e["code"] for e in result["userErrors"]}


async def test_every_problem_is_reported_with_its_path(db: object, gql: GraphQLClient) -> None:
    _, alice, _, _ = await _people()
    # when the input has a problem in every field at once
    result = await _create(
        gql,
        alice.token,
        project="ml",
        name="Not_A_Label",
        displayName="x" * 200,
        vendor="NVIDIA",
        image="https://docker.io/library/ubuntu",
        command=["run", "--password={{generated_password}}"],
        containerDisk="lots",
        mountPath="workspace",
        ports=[
            {"name": "http", "port": 0},
            {"name": "http", "port": 70000},
            {"name": "web", "port": 8080, "accessParams": [{"key": "pw", "value": "{{generated_password}}"}]},
        ],
        env=[{"key": "1BAD", "value": "x"}, {"key": "GOOD", "value": "1"}, {"key": "GOOD", "value": "2"}],
    )
    # then each is reported, at its path, and nothing is created
    assert _errors(result) == {
        ("input", "name"): "INVALID",
        ("input", "displayName"): "INVALID",
        ("input", "image"): "INVALID",
        ("input", "command", "1"): "INVALID",
        ("input", "containerDisk"): "INVALID",
        ("input", "mountPath"): "INVALID",
        ("input", "ports", "0", "port"): "INVALID",
        ("input", "ports", "1", "name"): "INVALID",
        ("input", "ports", "1", "port"): "INVALID",
        ("input", "ports", "2", "accessParams", "0", "value"): "INVALID",
        ("input", "env", "0", "key"): "INVALID",
        ("input", "env", "2", "key"): "INVALID",
    }
    messages = {tuple(e["field"]): e["message"] for e in result["userErrors"]}
    assert "generated_password" in messages[("input", "command", "1")]
    assert "{{generated_token}}" in messages[("input", "command", "1")]  # the known one, suggested
    assert "duplicate port name" in messages[("input", "ports", "1", "name")]
    assert "1 to 65535" in messages[("input", "ports", "0", "port")]
    assert "70000" in messages[("input", "ports", "1", "port")]
    assert "duplicate variable" in messages[("input", "env", "2", "key")]
    assert "absolute" in messages[("input", "mountPath")]
    assert await InstanceTemplate.filter(project__name="ml").count() == 0


@pytest.mark.parametrize(
    ("change", "path", "needle"),
    [
        ({"image": "UPPER/Case"}, ["input", "image"], "lowercase"),
        ({"ports": [{"name": "p", "port": 0}]}, ["input", "ports", "0", "port"], "65535"),
        (
            {"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 70000}]},
            ["input", "ports", "1", "port"],
            "65535",
        ),
        (
            {"ports": [{"name": "a", "port": 1}, {"name": "a", "port": 2}]},
            ["input", "ports", "1", "name"],
            "duplicate",
        ),
        ({"env": [{"key": "A B", "value": "x"}]}, ["input", "env", "0", "key"], "a space"),
        (
            {"env": [{"key": "A", "value": "x"}, {"key": "A", "value": "y"}]},
            ["input", "env", "1", "key"],
            "duplicate",
        ),
        ({"mountPath": "data/work"}, ["input", "mountPath"], "absolute"),
        ({"containerDisk": "-5Gi"}, ["input", "containerDisk"], ""),
        ({"containerDisk": "0"}, ["input", "containerDisk"], ""),
        ({"command": ["{{generated_password}}"]}, ["input", "command", "0"], "generated_password"),
        ({"image": "ubuntu:{{generated_token}}"}, ["input", "image"], "placeholder"),
        ({"name": "UPPER"}, ["input", "name"], ""),
    ],
)
async def test_one_problem_at_create_and_at_update(
    db: object, gql: GraphQLClient, change: dict[str, Any], path: list[str], needle: str
) -> None:
    _, alice, _, _ = await _people()
    base = {"project": "ml", "name": "ok", "vendor": "CPU", "image": "ubuntu:24.04"}
    # at creation
    created = await _create(gql, alice.token, **{**base, **change})
    [error] = created["userErrors"]
    assert error["field"] == path and error["code"] == "INVALID" and needle in error["message"]
    if path == ["input", "name"]:
        return  # the name cannot change: IMMUTABLE at update
    # and at update, where nothing is changed
    template = await _created(gql, alice.token, **base)
    updated = await _update(gql, alice.token, id=template["id"], **change)
    assert [(e["field"], e["code"]) for e in updated["userErrors"]] == [(path, "INVALID")]
    after = (await gql.data(ONE, {"id": template["id"]}, token=alice.token))["instanceTemplate"]
    assert after == template


async def test_generated_token_is_allowed_where_it_is_filled_in(db: object, gql: GraphQLClient) -> None:
    _, alice, _, _ = await _people()
    template = await _created(
        gql,
        alice.token,
        project="ml",
        name="vllm",
        vendor="NVIDIA",
        image="vllm/vllm-openai:v0.11.0",
        command=["vllm", "serve", "--api-key", "{{generated_token}}"],
        ports=[
            {"name": "http", "port": 8000, "accessParams": [{"key": "key", "value": "{{ generated_token }}"}]}
        ],
        env=[{"key": "VLLM_API_KEY", "value": "{{generated_token}}"}],
    )
    assert template["command"][-1] == "{{generated_token}}"
    # but not where it is not (a port name, an env name)
    result = await _create(
        gql,
        alice.token,
        project="ml",
        name="bad",
        vendor="CPU",
        image="ubuntu",
        env=[{"key": "{{generated_token}}", "value": "x"}],
    )
    assert [e["field"] for e in result["userErrors"]] == [["input", "env", "0", "key"]]


async def test_unknown_ids_are_not_found(db: object, gql: GraphQLClient) -> None:
    root, *_ = await _people()
    for bad in ("nope", "00000000-0000-0000-0000-000000000000"):
        assert (await gql.data(ONE, {"id": bad}, token=root.token))["instanceTemplate"] is None
        updated = await _update(gql, root.token, id=bad, image="ubuntu")
        assert updated["userErrors"] == [
            {"field": ["input", "id"], "message": "No such instance template.", "code": "NOT_FOUND"}
        ]
    assert _code(await gql(LIST, {"project": "nope"}, token=root.token)) == "NOT_FOUND"


async def test_the_list_is_in_the_natural_order_of_names(db: object, gql: GraphQLClient) -> None:
    # given numbered templates created out of order, a global one among them
    await seed()
    root, alice, _, _ = await _people()
    for name in ("pytorch-2-10", "pytorch-2-6", "pytorch-2-9", "pytorch-10-0"):
        await _created(gql, alice.token, project="ml", name=name, vendor="NVIDIA", image="ubuntu:24.04")
    await _created(gql, root.token, name="pytorch-2-7", vendor="NVIDIA", image="ubuntu:24.04")
    # when the project's list is read
    listed = (await gql.data(LIST, {"project": "ml", "search": "pytorch-"}, token=alice.token))[
        "instanceTemplates"
    ]
    # then the versions count up: built-in ones first, then 2-6, 2-7, 2-9, 2-10, 10-0
    names = [t["name"] for t in listed if not t["builtIn"]]
    assert names == ["pytorch-2-6", "pytorch-2-7", "pytorch-2-9", "pytorch-2-10", "pytorch-10-0"]
