"""SSH public keys in a user's profile, through the API: added, listed, deleted, only one's own;
what is refused and how it is said; audited."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

import pytest

from gpupaas.audit.models import AuditEntry, AuditOutcome
from gpupaas.ssh_keys import keys
from tests.conftest import GraphQLClient
from tests.factories import make_user
from tests.ssh_keys.keygen import key_pair

ERRORS = "userErrors { field message code }"
FIELDS = "id name keyType bits fingerprint publicKey createdAt"
ADD = f"""mutation($key: String!, $name: String) {{
  addSshPublicKey(input: {{publicKey: $key, name: $name}}) {{ sshPublicKey {{ {FIELDS} }} {ERRORS} }}
}}"""
DELETE = f"mutation($id: ID!) {{ deleteSshPublicKey(id: $id) {{ deletedId {ERRORS} }} }}"
LIST = f"{{ sshPublicKeys {{ {FIELDS} }} }}"


async def add(gql: GraphQLClient, token: str, key: str, name: str | None = None) -> dict[str, Any]:
    body = await gql(ADD, {"key": key, "name": name}, token=token)
    result: dict[str, Any] = body["data"]["addSshPublicKey"]
    return result


def fingerprint_of(line: str) -> str:
    blob = base64.b64decode(line.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


@pytest.mark.parametrize(
    ("kind", "bits", "key_type"),
    [
        ("ed25519", 256, "ssh-ed25519"),
        ("ecdsa", 256, "ecdsa-sha2-nistp256"),
        ("rsa", 3072, "ssh-rsa"),
    ],
)
async def test_a_user_adds_lists_and_deletes_their_keys(
    db: object, gql: GraphQLClient, kind: str, bits: int, key_type: str
) -> None:
    bob = await make_user("bob")
    pair = key_pair(kind, comment="bob@laptop", bits=bits)

    added = await add(gql, bob.token, f"  {pair.public_line}\n")

    assert added["userErrors"] == []
    key = added["sshPublicKey"]
    assert (key["name"], key["keyType"], key["bits"]) == ("bob@laptop", key_type, bits)
    assert key["fingerprint"] == fingerprint_of(pair.public_line)
    assert key["publicKey"] == pair.public_line
    listed = (await gql(LIST, token=bob.token))["data"]["sshPublicKeys"]
    assert [k["id"] for k in listed] == [key["id"]]

    deleted = (await gql(DELETE, {"id": key["id"]}, token=bob.token))["data"]["deleteSshPublicKey"]

    assert deleted == {"deletedId": key["id"], "userErrors": []}
    assert (await gql(LIST, token=bob.token))["data"]["sshPublicKeys"] == []
    actions = [
        (e.action, e.outcome, e.object_name)
        for e in await AuditEntry.filter(object_type="SshPublicKey").order_by("created_at")
    ]
    assert actions == [
        ("addSshPublicKey", AuditOutcome.SUCCESS, "bob@laptop"),
        ("deleteSshPublicKey", AuditOutcome.SUCCESS, "bob@laptop"),
    ]


async def test_a_name_given_wins_over_the_comment_and_keys_are_listed_by_name(
    db: object, gql: GraphQLClient
) -> None:
    bob = await make_user("bob")
    await add(gql, bob.token, key_pair(comment="zed").public_line)
    named = await add(gql, bob.token, key_pair(comment="x@y").public_line, name="  Work laptop ")

    assert named["sshPublicKey"]["name"] == "Work laptop"
    listed = (await gql(LIST, token=bob.token))["data"]["sshPublicKeys"]
    assert [k["name"] for k in listed] == ["Work laptop", "zed"]


async def test_nobody_sees_or_deletes_another_users_keys(db: object, gql: GraphQLClient) -> None:
    bob, carol = await make_user("bob"), await make_user("carol")
    root = await make_user("root", platform_admin=True)
    key = (await add(gql, bob.token, key_pair().public_line))["sshPublicKey"]

    for other in (carol, root):
        assert (await gql(LIST, token=other.token))["data"]["sshPublicKeys"] == []
        refused = (await gql(DELETE, {"id": key["id"]}, token=other.token))["data"]["deleteSshPublicKey"]
        assert refused["deletedId"] is None
        assert refused["userErrors"][0]["code"] == "NOT_FOUND"

    assert len((await gql(LIST, token=bob.token))["data"]["sshPublicKeys"]) == 1
    anonymous = await gql(LIST)
    assert anonymous["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"


async def test_the_same_key_is_the_same_key_for_one_user_but_not_across_users(
    db: object, gql: GraphQLClient
) -> None:
    bob, carol = await make_user("bob"), await make_user("carol")
    pair = key_pair(comment="shared")
    await add(gql, bob.token, pair.public_line)

    again = await add(gql, bob.token, pair.public_line.replace("shared", "renamed"))
    same_name = await add(gql, bob.token, key_pair(comment="shared").public_line)
    carols = await add(gql, carol.token, pair.public_line)

    assert again["userErrors"] == [
        {
            "field": ["input", "publicKey"],
            "message": f'you already added this key, as "shared" ({fingerprint_of(pair.public_line)})',
            "code": "TAKEN",
        }
    ]
    assert same_name["userErrors"] == [
        {"field": ["input", "name"], "message": 'you already have a key named "shared"', "code": "TAKEN"}
    ]
    assert carols["userErrors"] == []


def _private_pem() -> str:
    return key_pair().private_openssh


REFUSED = [
    ("", "REQUIRED", "paste a public key"),
    ("hello world", "INVALID", "is not an OpenSSH public key"),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE=\n-----END OPENSSH PRIVATE KEY-----",
        "INVALID",
        "this is a private key: never paste or share it",
    ),
    ("ssh-dss AAAAB3NzaC1kc3M= old", "INVALID", "DSA keys (ssh-dss) are refused"),
    ("ssh-ed25519", "INVALID", "has no key data after ssh-ed25519"),
    ("ssh-ed25519 not*base64", "INVALID", "has no key data after ssh-ed25519"),
    (
        "ssh-ed25519 AAAAB3NzaC1yc2E= x",
        "INVALID",
        "says ssh-ed25519 but its key data is not an ssh-ed25519 key",
    ),
    ("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAAA x", "INVALID", "its key data is damaged"),
    ('command="rm -rf /" ssh-ed25519 AAAA x', "INVALID", "starts with options or other text"),
]


@pytest.mark.parametrize(("text", "code", "says"), REFUSED)
async def test_what_is_not_an_acceptable_public_key_is_refused_with_what_to_do(
    db: object, gql: GraphQLClient, text: str, code: str, says: str
) -> None:
    bob = await make_user("bob")

    refused = await add(gql, bob.token, text, name="k")

    assert refused["sshPublicKey"] is None
    [error] = refused["userErrors"]
    assert (error["field"], error["code"]) == (["input", "publicKey"], code)
    assert error["message"].startswith("Public key " + says), error["message"]
    assert await AuditEntry.filter(action="addSshPublicKey", outcome=AuditOutcome.REFUSED).count() == 1


async def test_a_pasted_private_key_is_refused_and_never_kept_or_echoed(
    db: object, gql: GraphQLClient
) -> None:
    bob = await make_user("bob")
    private = _private_pem()

    refused = await add(gql, bob.token, private)

    assert "private key" in refused["userErrors"][0]["message"]
    body = private.splitlines()[1]
    assert body not in str(refused)
    for entry in await AuditEntry.all():
        assert body not in f"{entry.error_message} {entry.changes}"


async def test_short_rsa_keys_several_lines_and_nameless_keys_are_refused(
    db: object, gql: GraphQLClient
) -> None:
    bob = await make_user("bob")
    short = key_pair("rsa", bits=1024).public_line
    two = key_pair().public_line + "\n" + key_pair().public_line
    nameless = " ".join(key_pair().public_line.split()[:2])

    assert (await add(gql, bob.token, short))["userErrors"][0]["message"] == (
        "Public key is an RSA key of 1024 bits: at least 2048 are required; " + keys.MAKE_ONE
    )
    assert "several lines" in (await add(gql, bob.token, two))["userErrors"][0]["message"]
    assert (await add(gql, bob.token, nameless))["userErrors"] == [
        {
            "field": ["input", "name"],
            "message": "give the key a name (its line has no comment to take it from)",
            "code": "REQUIRED",
        }
    ]
    assert (await add(gql, bob.token, nameless, name="desk"))["userErrors"] == []


def test_the_kept_line_is_rebuilt_so_no_option_or_newline_gets_into_authorized_keys() -> None:
    pair = key_pair(comment="a\x1bb\tc")
    parsed = keys.parse(pair.public_line)

    assert "\x1b" not in parsed.line and "\n" not in parsed.line
    assert keys.authorized_keys([parsed.line, parsed.line]) == parsed.line + "\n"
