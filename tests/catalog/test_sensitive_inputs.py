"""Sensitive inputs are never shown: a profile's sensitive default and an instance's sensitive value
read as the mask, and the mask given back (a form round-tripping what it was shown) keeps them."""

from __future__ import annotations

from gpupaas.catalog.models import ComputeProfile
from gpupaas.catalog.service.profile_settings import InputSettingIn
from gpupaas.catalog.service.templates import InputDefinitionIn
from gpupaas.compute.models import ComputeInstance
from gpupaas.core.actor import Role
from tests.conftest import GraphQLClient
from tests.factories import (
    NAMESPACE_INPUTS,
    make_profile,
    make_project,
    make_template,
    make_user,
    make_version,
)

MASK = "********"
PROFILE = "query($id: ID!) { computeProfile(id: $id) { inputSettings { name value } } }"
CATALOG = '{ catalog(project: "ml") { inputSettings { name value } } }'
UPDATE_PROFILE = """mutation($input: UpdateComputeProfileInput!) {
  updateComputeProfile(input: $input) { computeProfile { id } userErrors { field message } }
}"""
CREATE = """mutation($input: CreateComputeInstanceInput!) {
  createComputeInstance(input: $input) { computeInstance { id inputs { key value } } userErrors { field message } }
}"""
UPDATE = """mutation($input: UpdateComputeInstanceInput!) {
  updateComputeInstance(input: $input) { computeInstance { inputs { key value } } userErrors { field message } }
}"""


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
        listed = (await gql.data(CATALOG, token=token))["catalog"][0]
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
    stored = await ComputeProfile.get(id=profile.id)
    assert {s["name"]: s["value"] for s in stored.input_settings}["apiKey"] == "s3cr3t-default"

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

    # The user's own value, then an edit that sends the mask back, keeps it.
    iid = str(instance.id)
    mine = {"id": iid, "inputs": [{"key": "apiKey", "value": "mine-123"}]}
    assert (await gql.data(UPDATE, {"input": mine}, token=alice.token))["updateComputeInstance"][
        "userErrors"
    ] == []
    again = {"id": iid, "inputs": [{"key": "apiKey", "value": MASK}, {"key": "size", "value": "large"}]}
    assert (await gql.data(UPDATE, {"input": again}, token=alice.token))["updateComputeInstance"][
        "userErrors"
    ] == []
    instance = await ComputeInstance.get(id=iid)
    assert {pair[0]: pair[1] for pair in instance.inputs} == {"apiKey": "mine-123", "size": "large"}
