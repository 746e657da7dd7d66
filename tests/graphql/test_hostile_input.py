"""No request can crash the server or leak internals: every string argument of every operation is
replaced, one at a time, by hostile text, and the answer must be a clear error or a normal result,
never INTERNAL. Runs on SQLite and on PostgreSQL (which refuses NUL and unpaired surrogates)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from gpupaas.core.actor import Role
from tests.conftest import GraphQLClient
from tests.factories import (
    make_instance,
    make_profile,
    make_project,
    make_template,
    make_user,
    make_version,
    make_webhook,
)

HOSTILE = [
    "\x00",
    "a\x00b",
    "\ud800",
    "'; DROP TABLE projects; --",
    "%",
    "_",
    "\\",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 🚀",
    "x" * 20_000,
    "{{ inputs.nope }}",
    "",
    " ",
]

RESOURCES = {"cpu": "1", "memory": "1Gi", "storage": "1Gi", "gpuCount": 0, "gpuVendor": "CPU"}
YAML = 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "{{ instance.namespace }}"\n'


def operations(ids: dict[str, str]) -> list[tuple[str, dict[str, Any]]]:
    return [
        ("query($n: String!) { project(name: $n) { name } }", {"n": "ml"}),
        (
            "query($p: String!, $s: String) { environmentTemplates(project: $p, search: $s) { name } }",
            {"p": "ml", "s": "x"},
        ),
        ("query($id: ID!) { environmentTemplate(id: $id) { name } }", {"id": ids["template"]}),
        ("query($m: String!) { renderReadme(markdown: $m) }", {"m": "# Readme"}),
        (
            "query($p: String!, $s: String, $a: String) { computeProfiles(project: $p, search: $s, after: $a) { totalCount } }",
            {"p": "ml", "s": "x", "a": None},
        ),
        ("query($id: ID!) { computeProfile(id: $id) { name } }", {"id": ids["profile"]}),
        (
            "query($p: String!, $s: String) { catalog(project: $p, search: $s) { name } }",
            {"p": "ml", "s": "x"},
        ),
        (
            "mutation($u: String!, $p: String!) { login(username: $u, password: $p) { userErrors { code } } }",
            {"u": "alice", "p": "pw"},
        ),
        ("mutation($n: String!) { createApiToken(input: {name: $n}) { userErrors { code } } }", {"n": "t"}),
        ("mutation($id: ID!) { revokeApiToken(id: $id) { userErrors { code } } }", {"id": "x"}),
        (
            "mutation($u: String!, $p: String!) { createUser(input: {username: $u, password: $p}) { userErrors { code } } }",
            {"u": "u1", "p": "long enough pw"},
        ),
        (
            "mutation($n: String!, $d: String) { createProject(input: {name: $n, displayName: $d}) { userErrors { code } } }",
            {"n": "p1", "d": "P"},
        ),
        (
            "mutation($p: String!, $u: String!) { setProjectMember(input: {project: $p, username: $u, role: MEMBER}) { userErrors { code } } }",
            {"p": "ml", "u": "bob"},
        ),
        (
            "mutation($p: String!, $n: String!, $d: String, $x: String) { createEnvironmentTemplate(input: {project: $p, name: $n, displayName: $d, description: $x}) { userErrors { code } } }",
            {"p": "ml", "n": "t9", "d": "T", "x": "d"},
        ),
        (
            "mutation($id: ID!, $n: String, $d: String, $x: String) { updateEnvironmentTemplate(input: {id: $id, name: $n, displayName: $d, description: $x}) { userErrors { code } } }",
            {"id": ids["template"], "n": None, "d": "T", "x": "d"},
        ),
        (
            "mutation($input: AddEnvironmentTemplateVersionInput!) { addEnvironmentTemplateVersion(input: $input) { userErrors { code } } }",
            {
                "input": {
                    "template": ids["template"],
                    "version": "9.9",
                    "resources": YAML,
                    "inputs": [
                        {
                            "name": "i",
                            "type": "STRING",
                            "description": "d",
                            "default": "v",
                            "options": ["v", "w"],
                            "pattern": "^[a-z]$",
                        }
                    ],
                    "outputs": [{"name": "o", "value": "{{ instance.name }}", "description": "d"}],
                }
            },
        ),
        (
            "mutation($id: ID!) { setEnvironmentTemplateVersionState(id: $id, state: ACTIVE) { userErrors { code } } }",
            {"id": ids["version"]},
        ),
        ("mutation($id: ID!) { deleteEnvironmentTemplate(id: $id) { userErrors { code } } }", {"id": "x"}),
        (
            "mutation($input: CreateComputeProfileInput!) { createComputeProfile(input: $input) { userErrors { code } } }",
            {
                "input": {
                    "project": "ml",
                    "name": "sku9",
                    "displayName": "S",
                    "description": "d",
                    "allocationType": "SHARED",
                    "environmentTemplateVersion": ids["version"],
                    "resources": {**RESOURCES, "gpuModel": "m"},
                    "labels": [{"key": "k", "value": "v"}],
                    "annotations": [{"key": "k", "value": "v"}],
                    "iconUrl": "https://example.com/i.png",
                    "readme": "# r",
                    "inputSettings": [
                        {"name": "team", "value": "ml", "allowedValues": ["ml"], "override": "RESTRICTED"}
                    ],
                    "outputSettings": [{"name": "team", "displayName": "Team"}],
                }
            },
        ),
        (
            "mutation($id: ID!, $d: String) { updateComputeProfile(input: {id: $id, displayName: $d}) { userErrors { code } } }",
            {"id": ids["profile"], "d": "D"},
        ),
        (
            "mutation($id: ID!, $p: [String!]) { setComputeProfileSharing(id: $id, sharing: {mode: SELECTED_PROJECTS, projects: $p}) { userErrors { code } } }",
            {"id": ids["profile"], "p": ["other"]},
        ),
        ("mutation($id: ID!) { deleteComputeProfile(id: $id) { userErrors { code } } }", {"id": "x"}),
        (
            "query($p: String!, $s: String, $a: String) { computeInstances(project: $p, search: $s, after: $a) { totalCount } }",
            {"p": "ml", "s": "x", "a": None},
        ),
        ("query($id: ID!) { computeInstance(id: $id) { name } }", {"id": ids["instance"]}),
        (
            "mutation($input: CreateComputeInstanceInput!) { createComputeInstance(input: $input) { userErrors { code } } }",
            {
                "input": {
                    "project": "ml",
                    "profile": ids["profile"],
                    "name": "nb9",
                    "displayName": "N",
                    "description": "d",
                    "labels": [{"key": "k", "value": "v"}],
                    "annotations": [{"key": "k", "value": "v"}],
                    "inputs": [{"key": "size", "value": "large"}],
                }
            },
        ),
        (
            "mutation($input: UpdateComputeInstanceInput!) { updateComputeInstance(input: $input) { userErrors { code } } }",
            {
                "input": {
                    "id": ids["instance"],
                    "displayName": "N",
                    "description": "d",
                    "labels": [{"key": "k", "value": "v"}],
                    "inputs": [{"key": "size", "value": "large"}],
                }
            },
        ),
        ("mutation($id: ID!) { deployComputeInstance(id: $id) { userErrors { code } } }", {"id": "x"}),
        (
            "mutation($id: ID!, $p: [String!]) { setComputeInstanceSharing(id: $id, sharing: {mode: SELECTED_PROJECTS, projects: $p}) { userErrors { code } } }",
            {"id": ids["instance"], "p": ["other"]},
        ),
        (
            "query($p: String!, $s: String, $v: Vendor) { instanceTemplates(project: $p, search: $s, vendor: $v) { name } }",
            {"p": "ml", "s": "x", "v": "CPU"},
        ),
        ("query($id: ID!) { instanceTemplate(id: $id) { name } }", {"id": ids["instance_template"]}),
        (
            "mutation($input: CreateInstanceTemplateInput!) { createInstanceTemplate(input: $input) { userErrors { code } } }",
            {"input": {"project": "ml", "name": "it9", **INSTANCE_TEMPLATE}},
        ),
        (
            "mutation($input: CreateInstanceTemplateInput!) { createInstanceTemplate(input: $input) { userErrors { code } } }",
            {"input": {"name": "global9", "vendor": "CPU", "image": "ubuntu"}},
        ),
        (
            "mutation($input: UpdateInstanceTemplateInput!) { updateInstanceTemplate(input: $input) { userErrors { code } } }",
            {"input": {"id": ids["instance_template"], "name": "it1", **INSTANCE_TEMPLATE}},
        ),
        ("mutation($id: ID!) { deleteInstanceTemplate(id: $id) { userErrors { code } } }", {"id": "x"}),
        (
            "query($p: String!, $c: ID, $a: String) { serviceInstances(project: $p, computeInstance: $c, after: $a) { totalCount } }",
            {"p": "ml", "c": ids["instance"], "a": "x"},
        ),
        ("query($id: ID!) { serviceInstance(id: $id) { name connect { url } } }", {"id": ids["service"]}),
        (
            "mutation($input: CreateServiceInstanceInput!) { createServiceInstance(input: $input) { userErrors { code } } }",
            {
                "input": {
                    "project": "ml",
                    "computeInstance": ids["instance"],
                    "template": ids["instance_template"],
                    "name": "svc9",
                    "displayName": "S",
                    "command": ["run", "--token={{generated_token}}"],
                    "env": [{"key": "K", "value": "v"}],
                    "ports": [{"name": "http", "port": 80, "accessParams": [{"key": "t", "value": "v"}]}],
                }
            },
        ),
        *(
            (f"mutation($id: ID!) {{ {field}(id: $id) {{ userErrors {{ code }} }} }}", {"id": ids["service"]})
            for field in (
                "startServiceInstance",
                "stopServiceInstance",
                "restartServiceInstance",
                "deleteServiceInstance",
            )
        ),
        *(
            (
                f"mutation($id: ID!, $o: String!) {{ {field}(id: $id, owner: $o) {{ userErrors {{ code }} }} }}",
                {"id": ids[kind], "o": "bob"},
            )
            for field, kind in (
                ("transferComputeInstance", "instance"),
                ("transferServiceInstance", "service"),
            )
        ),
        ("query($p: String!) { webhooks(project: $p) { url } }", {"p": "ml"}),
        (
            "query($id: ID!, $a: String) { webhook(id: $id) { deliveries(after: $a) { totalCount } } }",
            {"id": ids["webhook"], "a": "x"},
        ),
        (
            "mutation($input: CreateWebhookInput!) { createWebhook(input: $input) { userErrors { code } } }",
            {"input": {"project": "ml", "url": "https://93.184.216.34/h", "events": ["QUOTA_REACHED"]}},
        ),
        (
            "mutation($input: UpdateWebhookInput!) { updateWebhook(input: $input) { userErrors { code } } }",
            {"input": {"id": ids["webhook"], "url": "https://93.184.216.34/h"}},
        ),
        (
            "mutation($id: ID!) { sendWebhookTestEvent(id: $id) { userErrors { code } } }",
            {"id": ids["webhook"]},
        ),
        ("mutation($id: ID!) { deleteWebhook(id: $id) { userErrors { code } } }", {"id": "x"}),
        ("mutation($id: ID!) { rotateWebhookSecret(id: $id) { userErrors { code } } }", {"id": "x"}),
    ]


INSTANCE_TEMPLATE = {
    "displayName": "T",
    "description": "d",
    "vendor": "NVIDIA",
    "image": "ubuntu:24.04",
    "imagePullPolicy": "ALWAYS",
    "command": ["run", "--token={{generated_token}}"],
    "containerDisk": "15Gi",
    "mountPath": "/workspace",
    "ports": [
        {
            "name": "http",
            "port": 80,
            "protocol": "TCP",
            "accessParams": [{"key": "t", "value": "{{generated_token}}"}],
        }
    ],
    "env": [{"key": "K", "value": "v"}],
}


async def _webhook() -> str:
    from gpupaas.webhooks.models import WebhookEvent

    return str((await make_webhook("ml", WebhookEvent.QUOTA_REACHED)).id)


def string_paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, str):
        yield path
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from string_paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from string_paths(item, (*path, index))


def replaced(value: Any, path: tuple[Any, ...], new: str) -> Any:
    copy = json.loads(json.dumps(value))
    target = copy
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = new
    return copy


async def test_hostile_text_in_every_string_argument(db: object, gql: GraphQLClient) -> None:
    root = await make_user("root", platform_admin=True)
    await make_user("bob")
    project = await make_project("ml")
    await make_project("other")
    template = await make_template(project)
    version = await make_version(template)
    profile = await make_profile(project, version)
    instance = await make_instance(project, profile)
    ids = {
        "template": str(template.id),
        "version": str(version.id),
        "profile": str(profile.id),
        "instance": str(instance.id),
        "instance_template": await _instance_template(),
    }
    ids["service"] = await _service_instance(ids)
    ids["webhook"] = await _webhook()
    failures = []
    for query, variables in operations(ids):
        for path in string_paths(variables):
            for text in HOSTILE:
                response = await gql.post(query, replaced(variables, path, text), token=root.token)
                body = response.text
                if response.status_code != 200 or '"INTERNAL"' in body or "Traceback" in body:
                    failures.append((query[:60], path, text[:10], response.status_code, body[:300]))
    assert failures == []


async def _instance_template() -> str:
    from gpupaas.core.gpus import Vendor
    from gpupaas.instance_templates import service as instance_templates
    from tests.factories import platform_actor

    data = instance_templates.TemplateIn(name="it1", vendor=Vendor.CPU, image="ubuntu")
    return str((await instance_templates.create_template(await platform_actor(), "ml", data)).id)


async def _service_instance(ids: dict[str, str]) -> str:
    """A service instance of "ml", in its compute instance marked deployed."""
    from gpupaas.compute.models import ComputeInstance
    from gpupaas.compute.states import DeploymentStatus
    from gpupaas.service_instances import service as services
    from tests.factories import platform_actor

    await ComputeInstance.filter(id=ids["instance"]).update(status=DeploymentStatus.SUCCESS)
    data = services.ServiceIn(
        project="ml", compute_instance=ids["instance"], template=ids["instance_template"], name="svc1"
    )
    return str((await services.create_service(await platform_actor(), data, secret_key="k" * 64)).id)


async def test_nul_in_a_string_literal_is_refused(db: object, gql: GraphQLClient) -> None:
    root = await make_user("root", platform_admin=True)
    body = await gql('{ project(name: "a\\u0000b") { name } }', token=root.token)
    assert body["errors"][0]["extensions"]["code"] == "INVALID"
    assert "NUL" in body["errors"][0]["message"]


async def test_oversized_bodies_are_refused_before_they_are_read(db: object, gql: GraphQLClient) -> None:
    response = await gql.http.post(
        "/graphql",
        content=b'{"query": "' + b"x" * (5 * 1024 * 1024) + b'"}',
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 413


SEARCHED_LISTS = [
    'query($s: String) { environmentTemplates(project: "ml", search: $s) { name } }',
    'query($s: String) { computeProfiles(project: "ml", search: $s) { totalCount } }',
    'query($s: String) { catalog(project: "ml", search: $s) { name } }',
    'query($s: String) { computeInstances(project: "ml", search: $s) { totalCount } }',
    'query($s: String) { instanceTemplates(project: "ml", search: $s) { name } }',
]


async def test_a_search_over_its_limit_is_refused_with_a_clear_error(db: object, gql: GraphQLClient) -> None:
    # given the five searched lists and a member of the project
    alice = await make_user("alice")
    await make_project("ml", alice=Role.ADMIN)
    for query in SEARCHED_LISTS:
        # when the search is 200 characters: an answer (no match)
        body = await gql(query, {"s": "é" * 200}, token=alice.token)
        assert "errors" not in body, (query, body)
        # when it is longer (50,001 characters once made SQLite fail): INVALID, saying the limit
        body = await gql(query, {"s": "a" * 50_001}, token=alice.token)
        assert [e["extensions"]["code"] for e in body["errors"]] == ["INVALID"], (query, body)
        assert body["errors"][0]["message"] == "search: must be at most 200 characters (not 50001)"


ADD_VERSION = """
mutation($input: AddEnvironmentTemplateVersionInput!) {
  addEnvironmentTemplateVersion(input: $input) { userErrors { field message code } }
}"""
CREATE_CLUSTER = """
mutation($input: CreateClusterInput!) {
  createCluster(input: $input) { userErrors { field message code } }
}"""


async def test_yaml_nested_too_deep_is_invalid_not_a_crash(db: object, gql: GraphQLClient) -> None:
    # given a template and a platform admin
    root = await make_user("root", platform_admin=True)
    template = await make_template(await make_project("ml"))
    deep = "[" * 5000
    # when a version's YAML nests 5,000 levels: an error naming the limit, not INTERNAL
    answer = await gql.data(
        ADD_VERSION,
        {"input": {"template": str(template.id), "version": "9.9.9", "resources": deep}},
        token=root.token,
    )
    [error] = answer["addEnvironmentTemplateVersion"]["userErrors"]
    assert error["code"] == "INVALID" and error["field"] == ["input", "resources"]
    assert "nests deeper than 64 levels" in error["message"]
    # and a kubeconfig that does the same
    answer = await gql.data(
        CREATE_CLUSTER,
        {"input": {"name": "deep", "driver": "KUBERNETES", "kubeconfig": "a: " + "{" * 5000}},
        token=root.token,
    )
    [error] = answer["createCluster"]["userErrors"]
    assert error["field"] == ["input", "kubeconfig"] and "nests deeper than 64 levels" in error["message"]
