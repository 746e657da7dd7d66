"""Image pull secrets through the API: the project's admins manage them, members list and choose
them, the password is encrypted at rest and never returned, every field is checked, a secret in use
is not deleted, changes are audited; templates and services name one, and the service's pod pulls
with a kubernetes.io/dockerconfigjson Secret of its own on the simulated cluster."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

import httpx
import pytest

from gpupaas.app import create_app
from gpupaas.audit.models import AuditEntry, AuditOutcome
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.provisioning.models import SimulatedAllocation
from gpupaas.provisioning.render.schema import validate_manifest
from gpupaas.pull_secrets.models import ImagePullSecret
from gpupaas.runtime import Runtime
from gpupaas.service_instances.models import ServiceInstance
from gpupaas.service_instances.states import ServiceStatus
from gpupaas.settings import Settings
from tests.conftest import GraphQLClient
from tests.factories import (
    Person,
    builtin_namespace_version,
    make_instance,
    make_profile,
    make_project,
    make_user,
)
from tests.workers.conftest import fast, wait_status

PASSWORD = "s3cret-Registry-Pa55"
FIELDS = "id name registry username project { name }"
LIST = f'query {{ imagePullSecrets(project: "ml") {{ {FIELDS} }} }}'
CREATE = f"""mutation($input: CreateImagePullSecretInput!) {{ createImagePullSecret(input: $input) {{
  imagePullSecret {{ {FIELDS} }} userErrors {{ field message code }} }} }}"""
UPDATE = f"""mutation($input: UpdateImagePullSecretInput!) {{ updateImagePullSecret(input: $input) {{
  imagePullSecret {{ {FIELDS} }} userErrors {{ field message code }} }} }}"""
DELETE = (
    "mutation($id: ID!) { deleteImagePullSecret(id: $id) { deletedId userErrors { field message code } } }"
)
TEMPLATE = """mutation($input: CreateInstanceTemplateInput!) { createInstanceTemplate(input: $input) {
  instanceTemplate { id imagePullSecret } userErrors { field message code } } }"""
SERVICE = """mutation($input: CreateServiceInstanceInput!) { createServiceInstance(input: $input) {
  serviceInstance { id name imagePullSecret } userErrors { field message code } } }"""


@dataclass
class World:
    gql: GraphQLClient
    admin: Person  # ADMIN of "ml"
    alice: Person  # MEMBER of "ml"
    outsider: Person
    box: ComputeInstance  # deployed, CPU only


@pytest.fixture
async def world(db: object, settings: Settings) -> AsyncIterator[World]:
    chosen = replace(fast(settings), secret_key="k" * 64)
    runtime = Runtime(chosen, run_worker=True)
    await runtime.start()
    app = create_app(chosen, migrate=False, runtime=runtime)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as http:
            from gpupaas.bootstrap import seed
            from gpupaas.catalog.service.profiles import ResourcesIn
            from gpupaas.core.gpus import Vendor

            await seed(runtime.drivers)
            admin, alice, outsider = [await make_user(name) for name in ("ada", "alice", "olga")]
            project = await make_project("ml", ada=Role.ADMIN, alice=Role.MEMBER)
            await make_project("other", olga=Role.ADMIN)
            # room for the two CPU services' 20Gi workspaces under its namespace's storage quota
            cpu = ResourcesIn(cpu="2", memory="4Gi", storage="60Gi", gpu_count=0, gpu_vendor=Vendor.CPU)
            profile = await make_profile(project, await builtin_namespace_version(), resources=cpu)
            box = await make_instance(project, profile, name="box", by=alice, deploy=True)
            box = await wait_status(box.id, DeploymentStatus.SUCCESS, DeploymentStatus.FAILED)
            assert box.status == DeploymentStatus.SUCCESS, box.status_message
            yield World(GraphQLClient(http), admin, alice, outsider, box)
    finally:
        await runtime.stop()


def errors(payload: dict[str, Any]) -> list[tuple[str, str]]:
    return [(".".join(e["field"] or []), e["code"]) for e in payload["userErrors"]]


async def create(w: World, token: str | None = None, **fields: Any) -> dict[str, Any]:
    data = {"project": "ml", "name": "ghcr", "registry": "ghcr.io", "username": "robot", "password": PASSWORD}
    data.update(fields)
    return (await w.gql.data(CREATE, {"input": data}, token=token or w.admin.token))["createImagePullSecret"]  # type: ignore[no-any-return]


async def test_admins_manage_them_members_list_them_and_the_password_never_leaves(world: World) -> None:
    made = await create(world)
    assert made["userErrors"] == []
    secret = made["imagePullSecret"]
    assert (secret["name"], secret["registry"], secret["username"]) == ("ghcr", "ghcr.io", "robot")
    # A member lists them (to choose one), without any way to ask for the password.
    listed = await world.gql.data(LIST, token=world.alice.token)
    assert [s["name"] for s in listed["imagePullSecrets"]] == ["ghcr"]
    asked = await world.gql(LIST.replace("username", "username password"), token=world.alice.token)
    assert "Cannot query field 'password'" in asked["errors"][0]["message"]
    # Members may not write them; other projects do not see them.
    refused = await world.gql(
        CREATE,
        {"input": {"project": "ml", "name": "x", "registry": "r.io", "username": "u", "password": "p"}},
        token=world.alice.token,
    )
    assert refused["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    hidden = await world.gql(LIST, token=world.outsider.token)
    assert hidden["errors"][0]["extensions"]["code"] == "NOT_FOUND"
    deleted = await world.gql.data(DELETE, {"id": secret["id"]}, token=world.outsider.token)
    assert errors(deleted["deleteImagePullSecret"]) == [("id", "NOT_FOUND")]

    # The password is stored encrypted only, and audited as changed, never as its value.
    row = await ImagePullSecret.get(id=secret["id"])
    assert PASSWORD not in row.password_encrypted
    updated = await world.gql.data(
        UPDATE, {"input": {"id": secret["id"], "password": "n3w-Pa55word"}}, token=world.admin.token
    )
    assert updated["updateImagePullSecret"]["userErrors"] == []
    everything = await AuditEntry.filter(object_type="ImagePullSecret").order_by("created_at")
    entries = [e for e in everything if e.outcome == AuditOutcome.SUCCESS]  # refusals are audited too
    assert [e.action for e in entries] == ["createImagePullSecret", "updateImagePullSecret"]
    dumped = json.dumps([e.changes for e in everything], default=str)
    assert PASSWORD not in dumped and "n3w-Pa55word" not in dumped and "password_encrypted" not in dumped
    assert entries[1].changes["password"] == {"from": None, "to": "[redacted]"}  # that it changed


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"name": "Not A Label"}, [("input.name", "INVALID")]),
        ({"registry": "https://"}, [("input.registry", "INVALID")]),
        ({"registry": "ghcr.io:99999"}, [("input.registry", "INVALID")]),
        ({"registry": "UPPER_CASE.io"}, [("input.registry", "INVALID")]),
        ({"username": "a:b"}, [("input.username", "INVALID")]),
        ({"username": ""}, [("input.username", "INVALID")]),
        ({"password": "line\nbreak"}, [("input.password", "INVALID")]),
        ({"password": "x" * 5000}, [("input.password", "INVALID")]),
    ],
)
async def test_every_field_is_checked(
    world: World, fields: dict[str, str], expected: list[tuple[str, str]]
) -> None:
    payload = await create(world, **fields)
    assert errors(payload) == expected
    assert all(e["message"] for e in payload["userErrors"])


async def test_registries_as_people_write_them_are_accepted_and_names_are_unique(world: World) -> None:
    for index, registry in enumerate(
        ("registry.example.com:5000", "https://index.docker.io/v1/", "10.0.0.5:5000")
    ):
        assert (await create(world, name=f"r{index}", registry=registry))["userErrors"] == []
    again = await create(world, name="r0")
    assert errors(again) == [("input.name", "TAKEN")]
    first = await ImagePullSecret.get(name="r0")
    renamed = await world.gql.data(
        UPDATE, {"input": {"id": str(first.id), "name": "other"}}, token=world.admin.token
    )
    assert errors(renamed["updateImagePullSecret"]) == [("input.name", "IMMUTABLE")]


async def _settled(service_id: str) -> ServiceInstance:
    moving = (ServiceStatus.PENDING, ServiceStatus.STARTING)
    async with asyncio.timeout(30):
        while True:
            found = await ServiceInstance.get(id=service_id)
            if found.status not in moving:
                return found
            await asyncio.sleep(0.01)


async def test_a_template_names_one_the_service_pulls_with_it_and_it_is_not_deleted_while_used(
    world: World,
) -> None:
    secret = (await create(world))["imagePullSecret"]
    # A project template may name only one of the project's secrets.
    base = {
        "project": "ml",
        "vendor": "CPU",
        "image": "ghcr.io/acme/private:1",
        "command": ["sleep", "infinity"],
    }
    missing = await world.gql.data(
        TEMPLATE, {"input": {**base, "name": "nope", "imagePullSecret": "nope"}}, token=world.admin.token
    )
    assert errors(missing["createInstanceTemplate"]) == [("input.imagePullSecret", "NOT_FOUND")]
    made = await world.gql.data(
        TEMPLATE, {"input": {**base, "name": "private", "imagePullSecret": "ghcr"}}, token=world.admin.token
    )
    template = made["createInstanceTemplate"]["instanceTemplate"]
    assert template["imagePullSecret"] == "ghcr"

    # A member's service takes the template's secret (or another of the project's; "" for none).
    data = {
        "project": "ml",
        "computeInstance": str(world.box.id),
        "template": template["id"],
        "name": "private",
    }
    wrong = await world.gql.data(
        SERVICE, {"input": {**data, "imagePullSecret": "quay"}}, token=world.alice.token
    )
    assert errors(wrong["createServiceInstance"]) == [("input.imagePullSecret", "NOT_FOUND")]
    assert (
        'has no image pull secret "quay"; it has ghcr'
        in wrong["createServiceInstance"]["userErrors"][0]["message"]
    )
    made = await world.gql.data(SERVICE, {"input": data}, token=world.alice.token)
    service = made["createServiceInstance"]["serviceInstance"]
    assert service["imagePullSecret"] == "ghcr"
    found = await _settled(service["id"])
    assert found.status == ServiceStatus.RUNNING, found.status_message

    # The pod pulls with a dockerconfigjson Secret of its own, in the instance's namespace.
    row = await SimulatedAllocation.get(instance_id=service["id"])
    objects = {(o["kind"], o["metadata"]["name"]): o for o in row.objects}
    registry = objects[("Secret", "private-registry")]
    assert registry["type"] == "kubernetes.io/dockerconfigjson"
    config = json.loads(base64.b64decode(registry["data"][".dockerconfigjson"]))
    auth = config["auths"]["ghcr.io"]
    assert (auth["username"], auth["password"]) == ("robot", PASSWORD)
    assert base64.b64decode(auth["auth"]).decode() == f"robot:{PASSWORD}"
    deployment = objects[("Deployment", "private")]
    assert deployment["spec"]["template"]["spec"]["imagePullSecrets"] == [{"name": "private-registry"}]
    for obj in (registry, deployment):
        validate_manifest({k: v for k, v in obj.items() if k != "status"})

    # In use: not deleted, and the message says by whom.
    refused = await world.gql.data(DELETE, {"id": secret["id"]}, token=world.admin.token)
    (problem,) = refused["deleteImagePullSecret"]["userErrors"]
    assert problem["code"] == "INVALID_STATE"
    assert problem["message"] == (
        'image pull secret "ghcr" is in use: templates private; choose another secret there first'
    )

    # A service without one gets neither the Secret nor imagePullSecrets.
    plain = await world.gql.data(
        SERVICE, {"input": {**data, "name": "public", "imagePullSecret": ""}}, token=world.alice.token
    )
    public = plain["createServiceInstance"]["serviceInstance"]
    assert public["imagePullSecret"] is None
    assert (await _settled(public["id"])).status == ServiceStatus.RUNNING
    row = await SimulatedAllocation.get(instance_id=public["id"])
    assert not any(o["metadata"]["name"] == "public-registry" for o in row.objects)
    deployment = next(o for o in row.objects if o["kind"] == "Deployment")
    assert "imagePullSecrets" not in deployment["spec"]["template"]["spec"]
