"""The data migration that seals what an older gpupaas stored in plain text (migrations/0013): the
sensitive defaults of template versions, the profiles' and instances' sensitive values and the
snapshots' copies of them; the simulated cluster's Secrets kept as `data`. Run on rows written as
the older release wrote them, on SQLite and PostgreSQL."""

from __future__ import annotations

import contextlib
import importlib
import json
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from tortoise import Tortoise

from gpupaas import db as gdb
from gpupaas.accounts import service as accounts
from gpupaas.accounts.models import User
from gpupaas.catalog.models import ComputeProfile, EnvironmentTemplateVersion
from gpupaas.catalog.service.profile_settings import InputSettingIn
from gpupaas.catalog.service.templates import InputDefinitionIn, OutputDefinitionIn
from gpupaas.compute.models import ComputeInstance
from gpupaas.core.actor import Role
from gpupaas.core.crypto import Sealer, is_sealed
from gpupaas.provisioning.models import SimulatedAllocation
from tests.conftest import SECRET_KEY, Database, GraphQLClient
from tests.factories import (
    NAMESPACE_INPUTS,
    make_instance,
    make_profile,
    make_project,
    make_template,
    make_user,
    make_version,
)

migration = importlib.import_module("gpupaas.migrations.0013_encrypt_sensitive")
UNSEAL = Sealer(SECRET_KEY).unseal
REVEAL = "query($id: ID!) { computeProfile(id: $id) { inputSettings(reveal: true) { name value } } }"


@contextlib.contextmanager
def migrating_with(secret_key: str | None) -> Iterator[None]:
    """What db.migrate_database gives the migrations it runs."""
    token = gdb._secret_key.set(secret_key)
    try:
        yield
    finally:
        gdb._secret_key.reset(token)


async def run_migration() -> None:
    await migration.seal_sensitive_values(None, SimpleNamespace(client=Tortoise.get_connection("default")))


def plain(definitions: list[dict[str, Any]], **defaults: str) -> list[dict[str, Any]]:
    return [{**d, "default": defaults[d["name"]]} if d["name"] in defaults else d for d in definitions]


async def legacy_rows() -> tuple[
    EnvironmentTemplateVersion, ComputeProfile, ComputeInstance, SimulatedAllocation
]:
    """A version, a profile, an instance and a simulated Secret as the previous release stored
    them: written by today's services, then put back to plain text."""
    await make_user("boss")
    project = await make_project("ml", boss=Role.ADMIN)
    inputs = [
        *NAMESPACE_INPUTS,
        InputDefinitionIn(name="password", type="STRING", sensitive=True, default="d3fault-pw"),
        InputDefinitionIn(name="apiKey", type="STRING", sensitive=True),
    ]
    version = await make_version(await make_template(project), inputs=inputs)
    profile = await make_profile(
        project, version, input_settings=[InputSettingIn(name="apiKey", value="pr0file-key")]
    )
    instance = await make_instance(project, profile, inputs=[("apiKey", "0wn-key"), ("size", "large")])

    definitions = plain(version.inputs, password="d3fault-pw")
    settings = [
        {**s, "value": {"password": "d3fault-pw", "apiKey": "pr0file-key"}.get(s["name"], s["value"])}
        for s in profile.input_settings
    ]
    snapshot = {**instance.snapshot, "inputDefinitions": definitions, "inputSettings": settings}
    await EnvironmentTemplateVersion.filter(id=version.id).update(inputs=definitions)
    await ComputeProfile.filter(id=profile.id).update(input_settings=settings)
    await ComputeInstance.filter(id=instance.id).update(
        inputs=[["apiKey", "0wn-key"], ["size", "large"]], snapshot=snapshot
    )
    allocation = await SimulatedAllocation.create(
        instance_id=str(instance.id),
        namespace="ml-nb",
        allocation_type="SHARED",
        gpu_vendor="NVIDIA",
        objects=[
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml-nb"}},
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "db", "namespace": "ml-nb"},
                "stringData": {"password": "d3fault-pw"},
            },
        ],
    )
    return version, profile, instance, allocation


async def token_of(username: str) -> str:
    user = await User.get(username=username)
    _, token = await accounts.create_api_token(await accounts.actor_for(user), "migration", None)
    return token


async def dump(*rows: Any) -> str:
    found = []
    for row in rows:
        found += await type(row).filter(id=row.id).values()
    return json.dumps(found, default=str)


async def test_plain_text_rows_are_sealed_once_and_read_as_before(db: Database, gql: GraphQLClient) -> None:
    # given rows an older gpupaas wrote, with the sensitive values in plain text
    version, profile, instance, allocation = await legacy_rows()
    before = await dump(version, profile, instance, allocation)
    assert all(value in before for value in ("d3fault-pw", "pr0file-key", "0wn-key"))

    # when the migration runs with the app's key
    with migrating_with(SECRET_KEY):
        await run_migration()

    # then no row holds them in plain text any more
    after = await dump(version, profile, instance, allocation)
    assert not any(value in after for value in ("d3fault-pw", "pr0file-key", "0wn-key"))
    # each is sealed where it was, and opens to what it was
    stored = await EnvironmentTemplateVersion.get(id=version.id)
    assert UNSEAL(next(d["default"] for d in stored.inputs if d["name"] == "password")) == "d3fault-pw"
    assert next(d["default"] for d in stored.inputs if d["name"] == "team") == "ml"  # not sensitive
    kept = await ComputeInstance.get(id=instance.id)
    own = dict(kept.inputs)
    assert own["size"] == "large" and is_sealed(own["apiKey"]) and UNSEAL(own["apiKey"]) == "0wn-key"
    snapshot_settings = {s["name"]: s["value"] for s in kept.snapshot["inputSettings"]}
    assert UNSEAL(snapshot_settings["apiKey"]) == "pr0file-key" and snapshot_settings["team"] == "ml"
    secret = (await SimulatedAllocation.get(id=allocation.id)).objects[1]
    assert "stringData" not in secret and secret["data"] == {"password": "ZDNmYXVsdC1wdw=="}
    # and the app reads them as before
    settings = (await gql.data(REVEAL, {"id": str(profile.id)}, token=await token_of("boss")))[
        "computeProfile"
    ]
    assert {s["name"]: s["value"] for s in settings["inputSettings"]}["apiKey"] == "pr0file-key"

    # when it runs again, nothing changes (a sealed value is left as it is)
    with migrating_with(SECRET_KEY):
        await run_migration()
    assert await dump(version, profile, instance, allocation) == after


async def test_without_the_key_it_refuses_to_run_on_plain_text(db: Database) -> None:
    await legacy_rows()
    with migrating_with(None), pytest.raises(RuntimeError, match="needs the app's GPUPAAS_SECRET_KEY"):
        await run_migration()


async def test_a_database_without_sensitive_values_needs_no_key(db: Database) -> None:
    project = await make_project("ml")
    await make_instance(project, await make_profile(project))
    with migrating_with(None):
        await run_migration()


outputs_migration = importlib.import_module("gpupaas.migrations.0020_seal_sensitive_outputs")


async def test_sensitive_outputs_kept_in_plain_text_are_sealed(db: Database, gql: GraphQLClient) -> None:
    # given an instance whose outputs an older release kept as rendered, one echoing a password
    await make_user("boss")
    project = await make_project("ml", boss=Role.ADMIN)
    inputs = [*NAMESPACE_INPUTS, InputDefinitionIn(name="password", type="STRING", sensitive=True)]
    outputs = [
        OutputDefinitionIn(name="login", value="admin:{{ inputs.password }}"),
        OutputDefinitionIn(name="where", value="{{ instance.namespace }}"),
    ]
    version = await make_version(await make_template(project), inputs=inputs, outputs=outputs)
    instance = await make_instance(
        project, await make_profile(project, version), inputs=[("password", "0ut-pw")]
    )
    await ComputeInstance.filter(id=instance.id).update(outputs={"login": "admin:0ut-pw", "where": "ml-nb"})

    # without the key it refuses, saying why
    with migrating_with(None), pytest.raises(RuntimeError, match="0020 seals sensitive outputs"):
        await outputs_migration.seal_sensitive_outputs(
            None, SimpleNamespace(client=Tortoise.get_connection("default"))
        )
    # with it, the sensitive output is sealed, the other left alone
    with migrating_with(SECRET_KEY):
        await outputs_migration.seal_sensitive_outputs(
            None, SimpleNamespace(client=Tortoise.get_connection("default"))
        )
    kept = (await ComputeInstance.get(id=instance.id)).outputs
    assert kept["where"] == "ml-nb" and is_sealed(kept["login"]) and UNSEAL(kept["login"]) == "admin:0ut-pw"
    # and a project admin reads it as before
    query = "query($id: ID!) { computeInstance(id: $id) { outputs { key value } } }"
    shown = (await gql.data(query, {"id": str(instance.id)}, token=await token_of("boss")))["computeInstance"]
    assert {o["key"]: o["value"] for o in shown["outputs"]}["login"] == "admin:0ut-pw"
