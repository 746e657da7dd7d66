"""A template's SSH access through the API: declared on one of its TCP ports with a user, checked
with the field's path, removed with port "", and audited like every other field."""

from __future__ import annotations

from typing import Any

from gpupaas.audit.models import AuditEntry
from tests.conftest import GraphQLClient
from tests.instance_templates.test_instance_templates import _people

CREATE = """mutation($input: CreateInstanceTemplateInput!) {
  createInstanceTemplate(input: $input) {
    instanceTemplate { id ssh { port user } }
    userErrors { field message code }
  }
}"""
UPDATE = """mutation($input: UpdateInstanceTemplateInput!) {
  updateInstanceTemplate(input: $input) { instanceTemplate { ssh { port user } } userErrors { field message code } }
}"""
BASE = {
    "project": "ml",
    "name": "box",
    "vendor": "CPU",
    "image": "ubuntu:24.04",
    "command": ["sleep", "infinity"],
    "ports": [{"name": "SSH", "port": 22}, {"name": "dns", "port": 53, "protocol": "UDP"}],
}


async def test_a_template_declares_ssh_access_and_bad_values_name_the_field(
    db: object, gql: GraphQLClient
) -> None:
    _, alice, bob, _ = await _people()

    # a project admin declares SSH on the SSH port; the user defaults to root
    made = (await gql.data(CREATE, {"input": {**BASE, "ssh": {"port": "SSH"}}}, token=alice.token))[
        "createInstanceTemplate"
    ]
    assert made["userErrors"] == []
    assert made["instanceTemplate"]["ssh"] == {"port": "SSH", "user": "root"}
    template_id = made["instanceTemplate"]["id"]
    (entry,) = await AuditEntry.filter(object_type="InstanceTemplate", object_id=template_id)
    assert entry.changes["ssh"]["to"] == {"port": "SSH", "user": "root"}

    # a port it does not have, a UDP port, a user that is no user name, no command: refused, each
    # under its field with what to write
    cases: list[tuple[dict[str, Any], list[str], str]] = [
        ({"ssh": {"port": "shell"}}, ["input", "ssh", "port"], 'its TCP ports are "SSH"'),
        ({"ssh": {"port": "dns"}}, ["input", "ssh", "port"], "SSH needs a TCP port"),
        ({"ssh": {"port": "SSH", "user": "root\nx"}}, ["input", "ssh", "user"], "user name of the image"),
        ({"ssh": {"port": "SSH"}, "command": []}, ["input", "ssh", "port"], "needs a command"),
    ]
    for change, field, words in cases:
        refused = (await gql.data(UPDATE, {"input": {"id": template_id, **change}}, token=alice.token))[
            "updateInstanceTemplate"
        ]
        assert [(e["field"], e["code"]) for e in refused["userErrors"]] == [(field, "INVALID")], change
        assert words in refused["userErrors"][0]["message"], refused["userErrors"][0]["message"]

    # another user, then port "" removes SSH access
    jovyan = (
        await gql.data(
            UPDATE,
            {"input": {"id": template_id, "ssh": {"port": "ssh", "user": "jovyan"}}},
            token=alice.token,
        )
    )["updateInstanceTemplate"]
    assert jovyan["instanceTemplate"]["ssh"] == {"port": "ssh", "user": "jovyan"}
    cleared = (
        await gql.data(UPDATE, {"input": {"id": template_id, "ssh": {"port": ""}}}, token=alice.token)
    )["updateInstanceTemplate"]
    assert cleared["userErrors"] == [] and cleared["instanceTemplate"]["ssh"] is None

    # a MEMBER may not change it
    body = await gql(UPDATE, {"input": {"id": template_id, "ssh": {"port": "SSH"}}}, token=bob.token)
    assert body["errors"][0]["extensions"]["code"] == "FORBIDDEN"
