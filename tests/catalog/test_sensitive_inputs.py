"""Sensitive inputs are never shown: a version's sensitive default, a profile's sensitive value and an
instance's sensitive value read as the mask for everyone, to the owning project's admins too unless
they ask (`reveal: true`, refused to anyone else); the mask given back (a form round-tripping what
it was shown) keeps them; they are stored sealed; and another project sees only the versions of a
template that the profiles shared with it pin."""

from __future__ import annotations

from typing import Any

from gpupaas.accounts.sharing import SharingMode
from gpupaas.catalog.models import ComputeProfile, EnvironmentTemplateVersion
from gpupaas.catalog.service.profile_settings import InputSettingIn
from gpupaas.catalog.service.profiles import set_profile_sharing
from gpupaas.catalog.service.templates import InputDefinitionIn
from gpupaas.compute.models import ComputeInstance
from gpupaas.core.actor import Role
from gpupaas.core.crypto import Sealer, is_sealed
from tests.conftest import SECRET_KEY, GraphQLClient
from tests.factories import (
    NAMESPACE_INPUTS,
    Person,
    make_profile,
    make_project,
    make_template,
    make_user,
    make_version,
    platform_actor,
)

MASK = "********"
UNSEAL = Sealer(SECRET_KEY).unseal
PROFILE = "query($id: ID!) { computeProfile(id: $id) { inputSettings { name value } } }"
REVEAL_SETTINGS = "query($id: ID!) { computeProfile(id: $id) { inputSettings(reveal: true) { name value } } }"
PROFILE_DEFAULTS = """query($id: ID!) { computeProfile(id: $id) {
  environmentTemplateVersion { inputs { name default sensitive } }
  environmentTemplate { versions { version inputs { name default } } }
} }"""
REVEAL_DEFAULTS = """query($id: ID!) { computeProfile(id: $id) {
  environmentTemplateVersion { inputs(reveal: true) { name default } }
} }"""
CATALOG = """query($p: String!) { catalog(project: $p) {
  name inputSettings { name value } environmentTemplateVersion { inputs { name default } }
} }"""
TEMPLATE_VERSIONS = "query($id: ID!) { environmentTemplate(id: $id) { versions { version } } }"
PINNED_VERSIONS = """query($id: ID!) { computeProfile(id: $id) {
  environmentTemplate { versions { version } }
  environmentTemplateVersion { template { versions { version } } }
} }"""
ADD_VERSION = """mutation($input: AddEnvironmentTemplateVersionInput!) {
  addEnvironmentTemplateVersion(input: $input) { version { id } userErrors { field message code } }
}"""
UPDATE_PROFILE = """mutation($input: UpdateComputeProfileInput!) {
  updateComputeProfile(input: $input) { computeProfile { id } userErrors { field message } }
}"""
CREATE = """mutation($input: CreateComputeInstanceInput!) {
  createComputeInstance(input: $input) { computeInstance { id inputs { key value } } userErrors { field message } }
}"""
UPDATE = """mutation($input: UpdateComputeInstanceInput!) {
  updateComputeInstance(input: $input) { computeInstance { inputs { key value } } userErrors { field message } }
}"""


def _settings(profile: dict[str, Any]) -> dict[str, Any]:
    return {s["name"]: s["value"] for s in profile["inputSettings"]}


def _defaults(version: dict[str, Any]) -> dict[str, Any]:
    return {i["name"]: i["default"] for i in version["inputs"]}


async def _forbidden(gql: GraphQLClient, query: str, variables: dict[str, Any], person: Person) -> str:
    body = await gql(query, variables, token=person.token)
    assert body["errors"][0]["extensions"]["code"] == "FORBIDDEN", body
    message: str = body["errors"][0]["message"]
    return message


async def test_sensitive_values_are_masked_and_the_mask_keeps_them(db: object, gql: GraphQLClient) -> None:
    alice = await make_user("alice")
    admin = await make_user("root", platform_admin=True)
    project = await make_project("ml", alice=Role.MEMBER)
    secret = InputDefinitionIn(name="apiKey", type="STRING", sensitive=True)
    version = await make_version(await make_template(project), inputs=[*NAMESPACE_INPUTS, secret])
    profile = await make_profile(
        project, version, input_settings=[InputSettingIn(name="apiKey", value="s3cr3t-default")]
    )
    for token in (alice.token, admin.token):
        shown = (await gql.data(PROFILE, {"id": str(profile.id)}, token=token))["computeProfile"]
        assert {"name": "apiKey", "value": MASK} in shown["inputSettings"]
        listed = (await gql.data(CATALOG, {"p": "ml"}, token=token))["catalog"][0]
        assert "s3cr3t-default" not in str(listed)

    # An admin's form sends the mask back with another change: the stored default stays.
    payload = (
        await gql.data(
            UPDATE_PROFILE,
            {"input": {"id": str(profile.id), "inputSettings": [{"name": "apiKey", "value": MASK}]}},
            token=admin.token,
        )
    )["updateComputeProfile"]
    assert payload["userErrors"] == []
    stored = {s["name"]: s["value"] for s in (await ComputeProfile.get(id=profile.id)).input_settings}
    assert is_sealed(stored["apiKey"]) and UNSEAL(stored["apiKey"]) == "s3cr3t-default"
    revealed = (await gql.data(REVEAL_SETTINGS, {"id": str(profile.id)}, token=admin.token))["computeProfile"]
    assert _settings(revealed)["apiKey"] == "s3cr3t-default"

    # A launch form prefilled with the mask launches with the profile's value.
    created = (
        await gql.data(
            CREATE,
            {
                "input": {
                    "project": "ml",
                    "profile": str(profile.id),
                    "name": "nb",
                    "inputs": [{"key": "apiKey", "value": MASK}],
                }
            },
            token=alice.token,
        )
    )["createComputeInstance"]
    assert created["userErrors"] == []
    assert {"key": "apiKey", "value": MASK} in created["computeInstance"]["inputs"]
    instance = await ComputeInstance.get(id=created["computeInstance"]["id"])
    assert instance.inputs == []  # the profile's value stands
    assert "s3cr3t-default" not in str(instance.snapshot)  # the snapshot copies it sealed

    # The user's own value, then an edit that sends the mask back, keeps it (sealed).
    iid = str(instance.id)
    mine = {"id": iid, "inputs": [{"key": "apiKey", "value": "mine-123"}]}
    assert (await gql.data(UPDATE, {"input": mine}, token=alice.token))["updateComputeInstance"][
        "userErrors"
    ] == []
    again = {"id": iid, "inputs": [{"key": "apiKey", "value": MASK}, {"key": "size", "value": "large"}]}
    shown_inputs = (await gql.data(UPDATE, {"input": again}, token=alice.token))["updateComputeInstance"]
    assert shown_inputs["userErrors"] == []
    assert {"key": "apiKey", "value": MASK} in shown_inputs["computeInstance"]["inputs"]
    instance = await ComputeInstance.get(id=iid)
    own = {pair[0]: pair[1] for pair in instance.inputs}
    assert own["size"] == "large" and is_sealed(own["apiKey"]) and UNSEAL(own["apiKey"]) == "mine-123"


async def test_a_sensitive_default_is_shown_to_no_one_but_the_admins_who_ask(
    db: object, gql: GraphQLClient
) -> None:
    # given a template whose sensitive input has a default, and a profile of it shared with everyone
    owner_admin, member, stranger, stranger_admin = (
        await make_user("boss"),
        await make_user("alice"),
        await make_user("eve"),
        await make_user("mallory"),
    )
    project = await make_project("ml", boss=Role.ADMIN, alice=Role.MEMBER)
    await make_project("other", eve=Role.MEMBER, mallory=Role.ADMIN)
    password = InputDefinitionIn(name="password", type="STRING", sensitive=True, default="s3cr3t")
    version = await make_version(await make_template(project), inputs=[*NAMESPACE_INPUTS, password])
    profile = await make_profile(project, version)
    await set_profile_sharing(await platform_actor(), str(profile.id), SharingMode.ALL_PROJECTS, None)
    pid = {"id": str(profile.id)}

    # then everyone, the owning project's admin included, reads the mask
    for person in (member, stranger, stranger_admin, owner_admin):
        shown = (await gql.data(PROFILE_DEFAULTS, pid, token=person.token))["computeProfile"]
        assert _defaults(shown["environmentTemplateVersion"])["password"] == MASK
        assert "s3cr3t" not in str(shown)
        catalog_of = "ml" if person in (member, owner_admin) else "other"
        listed = (await gql.data(CATALOG, {"p": catalog_of}, token=person.token))["catalog"]
        assert listed and _defaults(listed[0]["environmentTemplateVersion"])["password"] == MASK
        assert "s3cr3t" not in str(listed)
    # and the version's row holds it sealed
    stored = {d["name"]: d["default"] for d in (await EnvironmentTemplateVersion.get(id=version.id)).inputs}
    assert is_sealed(stored["password"]) and UNSEAL(stored["password"]) == "s3cr3t"

    # when the owning project's admin asks for it, it is shown; anyone else asking is refused
    revealed = (await gql.data(REVEAL_DEFAULTS, pid, token=owner_admin.token))["computeProfile"]
    assert _defaults(revealed["environmentTemplateVersion"])["password"] == "s3cr3t"
    for person in (member, stranger, stranger_admin):
        message = await _forbidden(gql, REVEAL_DEFAULTS, pid, person)
        assert message.startswith('Only admins of project "ml" may reveal the sensitive values')
        await _forbidden(gql, REVEAL_SETTINGS, pid, person)
    settings = (await gql.data(REVEAL_SETTINGS, pid, token=owner_admin.token))["computeProfile"]
    assert _settings(settings)["password"] == "s3cr3t"  # the profile took the template's default


async def test_another_project_sees_only_the_versions_its_shared_profiles_pin(
    db: object, gql: GraphQLClient
) -> None:
    # given a template with three versions: one pinned by a shared profile, one by an unshared
    # profile, one by none
    member, stranger = await make_user("alice"), await make_user("eve")
    project = await make_project("ml", alice=Role.MEMBER)
    await make_project("other", eve=Role.MEMBER)
    template = await make_template(project)
    shared_version = await make_version(template, version="1.0.0")
    private_version = await make_version(template, version="2.0.0")
    await make_version(template, version="3.0.0")
    shared = await make_profile(project, shared_version)
    await make_profile(project, private_version)
    await set_profile_sharing(
        await platform_actor(), str(shared.id), SharingMode.SELECTED_PROJECTS, ["other"]
    )

    # then the other project's user sees the template through the shared profile, with its one version
    seen = (await gql.data(PINNED_VERSIONS, {"id": str(shared.id)}, token=stranger.token))["computeProfile"]
    assert seen["environmentTemplate"]["versions"] == [{"version": "1.0.0"}]
    assert seen["environmentTemplateVersion"]["template"]["versions"] == [{"version": "1.0.0"}]
    # as environmentTemplate(id:) already hides the template itself from it
    hidden = await gql.data(TEMPLATE_VERSIONS, {"id": str(template.id)}, token=stranger.token)
    assert hidden["environmentTemplate"] is None
    # while the owning project's members see every version
    own = (await gql.data(PINNED_VERSIONS, {"id": str(shared.id)}, token=member.token))["computeProfile"]
    assert [v["version"] for v in own["environmentTemplate"]["versions"]] == ["3.0.0", "2.0.0", "1.0.0"]

    # when the profile is no longer shared, the other project sees neither it nor its versions
    await set_profile_sharing(await platform_actor(), str(shared.id), SharingMode.NONE, None)
    gone = await gql.data(PINNED_VERSIONS, {"id": str(shared.id)}, token=stranger.token)
    assert gone["computeProfile"] is None


async def test_a_new_version_refuses_the_mask_as_a_sensitive_default(db: object, gql: GraphQLClient) -> None:
    # given an admin whose form copied a version and so holds the mask for a sensitive default
    boss = await make_user("boss")
    project = await make_project("ml", boss=Role.ADMIN)
    template = await make_template(project)
    inputs = [
        {"name": "team", "type": "STRING", "default": "ml"},
        {"name": "password", "type": "STRING", "sensitive": True, "default": MASK},
    ]
    variables = {
        "input": {"template": str(template.id), "version": "2.0.0", "resources": "", "inputs": inputs}
    }
    variables["input"]["resources"] = (
        'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "{{ instance.namespace }}"\n'
        '  labels: {team: "{{ inputs.team }}"}\n'
    )
    # when it is added, the mask is refused as a value, naming the input's default
    payload = (await gql.data(ADD_VERSION, variables, token=boss.token))["addEnvironmentTemplateVersion"]
    assert payload["version"] is None
    [error] = payload["userErrors"]
    assert error["field"] == ["input", "inputs", "1", "default"]
    assert error["message"].startswith('"********" is the mask shown for a sensitive default, not a value')


async def test_a_sensitive_input_cannot_list_its_allowed_values(db: object, gql: GraphQLClient) -> None:
    # the options are shown to every user of the catalog: on a sensitive input they would tell it
    boss = await make_user("boss")
    project = await make_project("ml", boss=Role.ADMIN)
    template = await make_template(project)
    inputs = [{"name": "password", "type": "STRING", "sensitive": True, "options": ["hunter2", "s3cr3t"]}]
    resources = 'apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "{{ instance.namespace }}"\n'
    variables = {
        "input": {"template": str(template.id), "version": "2.0.0", "resources": resources, "inputs": inputs}
    }
    payload = (await gql.data(ADD_VERSION, variables, token=boss.token))["addEnvironmentTemplateVersion"]
    assert payload["version"] is None
    [error] = payload["userErrors"]
    assert error["field"] == ["input", "inputs", "0", "options"]
    assert error["message"].startswith("a sensitive input cannot list its allowed values")
