"""Storage modes, CPU and memory, and editing a stopped service instance, through the API: what
templates and services say, what is refused (with the field), what their plans render, who may edit,
and that a stopped service shows no Connect link."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from gpupaas.bootstrap import seed
from gpupaas.catalog.service.profiles import ResourcesIn
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.core.gpus import Vendor
from gpupaas.instance_templates.models import InstanceTemplate
from gpupaas.instance_templates.spec import find_placeholders
from gpupaas.runs.models import DeploymentRun
from gpupaas.service_instances.models import ServiceInstance
from gpupaas.service_instances.run_kind import plan_of
from gpupaas.service_instances.states import ServiceStatus
from tests.conftest import GraphQLClient
from tests.factories import Person, make_instance, make_profile, make_project, make_user

FIELDS = """
id name displayName command gpuCount status editRefusal connect { port url }
storage { mode size reclaim claimName storageClass }
resources { cpuRequest cpuLimit memoryRequest memoryLimit }
"""
CREATE = (
    "mutation($input: CreateServiceInstanceInput!) { createServiceInstance(input: $input) {"
    f" serviceInstance {{ {FIELDS} }} userErrors {{ field message code }} }} }}"
)
UPDATE = (
    "mutation($input: UpdateServiceInstanceInput!) { updateServiceInstance(input: $input) {"
    f" serviceInstance {{ {FIELDS} }} userErrors {{ field message code }} }} }}"
)
ONE = f"query($id: ID!) {{ serviceInstance(id: $id) {{ {FIELDS} }} }}"
CREATE_TEMPLATE = """mutation($input: CreateInstanceTemplateInput!) { createInstanceTemplate(input: $input) {
  instanceTemplate { id storage { mode size reclaim claimName } resources { cpuRequest cpuLimit memoryRequest memoryLimit } }
  userErrors { field message code } } }"""
UPDATE_TEMPLATE = """mutation($input: UpdateInstanceTemplateInput!) { updateInstanceTemplate(input: $input) {
  instanceTemplate { id storage { mode size } resources { cpuLimit } } userErrors { field message code } } }"""


@dataclass
class World:
    alice: Person  # ml's admin
    bob: Person  # ml's member, owns the compute instance
    carol: Person  # another member of ml
    box: ComputeInstance  # deployed: 8 CPU, 64Gi, 200Gi, 2 NVIDIA GPUs
    jupyter: str


@pytest.fixture
async def world(db: object) -> World:
    await seed()
    alice, bob, carol = await make_user("alice"), await make_user("bob"), await make_user("carol")
    project = await make_project("ml", alice=Role.ADMIN, bob=Role.MEMBER, carol=Role.MEMBER)
    resources = ResourcesIn(cpu="8", memory="64Gi", storage="200Gi", gpu_count=2, gpu_vendor=Vendor.NVIDIA)
    box = await make_instance(project, await make_profile(project, resources=resources), name="box", by=bob)
    await ComputeInstance.filter(id=box.id).update(status=DeploymentStatus.SUCCESS)
    jupyter = await InstanceTemplate.get(name="jupyterlab-pytorch")
    return World(alice, bob, carol, await ComputeInstance.get(id=box.id), str(jupyter.id))


async def create(gql: GraphQLClient, w: World, token: str | None = None, **fields: Any) -> dict[str, Any]:
    data = {"project": "ml", "computeInstance": str(w.box.id), "template": w.jupyter, "name": "lab"}
    data.update(fields)
    body = await gql.data(CREATE, {"input": data}, token=token or w.bob.token)
    return body["createServiceInstance"]  # type: ignore[no-any-return]


async def update(gql: GraphQLClient, token: str, **fields: Any) -> dict[str, Any]:
    body = await gql.data(UPDATE, {"input": fields}, token=token)
    return body["updateServiceInstance"]  # type: ignore[no-any-return]


def errors(payload: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {".".join(e["field"] or []): (e["code"], e["message"]) for e in payload["userErrors"]}


async def manifests(service_id: str) -> dict[str, dict[str, Any]]:
    """The objects the service's next start applies, by kind."""
    service = await ServiceInstance.get(id=service_id).select_related("project")
    instance = await ComputeInstance.get(id=service.compute_instance_id)
    values = dict.fromkeys(find_placeholders(service.spec_model()), "t" * 32)
    plan = plan_of(service, instance, service.project.name, {}, values=values, running=True, restart=None)
    return {str(obj["kind"]): obj for obj in plan.manifests}


def container(objects: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return dict(objects["Deployment"]["spec"]["template"]["spec"]["containers"][0])


# ---------------------------------------------------------------- create


async def test_a_service_chooses_its_storage_and_resources(gql: GraphQLClient, world: World) -> None:
    payload = await create(
        gql,
        world,
        storage={"mode": "NEW_VOLUME", "size": "120Gi", "reclaim": "KEEP"},
        resources={"cpuRequest": "2", "cpuLimit": "4", "memoryLimit": "32Gi"},
    )
    assert payload["userErrors"] == []
    service = payload["serviceInstance"]
    assert service["storage"] == {
        "mode": "NEW_VOLUME",
        "size": "120Gi",
        "reclaim": "KEEP",
        "claimName": None,
        "storageClass": None,
    }
    assert service["resources"] == {
        "cpuRequest": "2",
        "cpuLimit": "4",
        "memoryRequest": None,
        "memoryLimit": "32Gi",
    }
    objects = await manifests(service["id"])
    claim = objects["PersistentVolumeClaim"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "120Gi"
    assert claim["metadata"]["annotations"] == {"gpupaas.io/reclaim": "Keep"}
    resources = container(objects)["resources"]
    assert (resources["requests"]["cpu"], resources["limits"]["cpu"]) == ("2", "4")
    assert (resources["requests"]["memory"], resources["limits"]["memory"]) == ("32Gi", "32Gi")


async def test_by_default_the_share_of_the_compute_instance(gql: GraphQLClient, world: World) -> None:
    service = (await create(gql, world, gpuCount=1))["serviceInstance"]
    assert service["storage"] == {
        "mode": "NEW_VOLUME",
        "size": None,
        "reclaim": "RELEASE",
        "claimName": None,
        "storageClass": None,
    }
    objects = await manifests(service["id"])
    # one of two GPUs: half of the instance's CPU, memory and storage
    assert objects["PersistentVolumeClaim"]["spec"]["resources"]["requests"]["storage"] == "100Gi"
    resources = container(objects)["resources"]
    assert resources["requests"]["cpu"] == resources["limits"]["cpu"] == "4"
    assert resources["requests"]["memory"] == resources["limits"]["memory"] == "32Gi"


async def test_ephemeral_and_existing_claim_render_no_claim(gql: GraphQLClient, world: World) -> None:
    ephemeral = (await create(gql, world, name="e", storage={"mode": "EPHEMERAL", "size": "10Gi"}))[
        "serviceInstance"
    ]
    objects = await manifests(ephemeral["id"])
    assert "PersistentVolumeClaim" not in objects
    volumes = objects["Deployment"]["spec"]["template"]["spec"]["volumes"]
    assert {"name": "workspace", "emptyDir": {"sizeLimit": "10Gi"}} in volumes
    existing = (
        await create(gql, world, name="x", storage={"mode": "EXISTING_CLAIM", "claimName": "datasets"})
    )["serviceInstance"]
    objects = await manifests(existing["id"])
    assert "PersistentVolumeClaim" not in objects
    volumes = objects["Deployment"]["spec"]["template"]["spec"]["volumes"]
    assert {"name": "workspace", "persistentVolumeClaim": {"claimName": "datasets"}} in volumes


@pytest.mark.parametrize(
    ("fields", "field", "code", "words"),
    [
        (
            {"resources": {"cpuLimit": "16"}},
            "input.resources.cpuLimit",
            "QUOTA_EXCEEDED",
            'compute instance "box" has: 8 CPU (16 asked)',
        ),
        (
            {"resources": {"memoryRequest": "100Gi"}},
            "input.resources.memoryRequest",
            "QUOTA_EXCEEDED",
            "64Gi of memory (100Gi asked)",
        ),
        (
            {"resources": {"cpuRequest": "4", "cpuLimit": "2"}},
            "input.resources.cpuRequest",
            "INVALID",
            "at most the cpu limit",
        ),
        ({"resources": {"memoryLimit": "lots"}}, "input.resources.memoryLimit", "INVALID", "must be"),
        ({"storage": {"size": "1Ti"}}, "input.storage.size", "QUOTA_EXCEEDED", "storage: 200Gi (1Ti asked)"),
        ({"storage": {"mode": "EXISTING_CLAIM"}}, "input.storage.claimName", "INVALID", "needs the name"),
        (
            {"storage": {"mode": "EPHEMERAL", "reclaim": "KEEP"}},
            "input.storage.reclaim",
            "INVALID",
            "KEEP is for a NEW_VOLUME",
        ),
    ],
)
async def test_bad_storage_and_resources_are_refused_with_the_field(
    gql: GraphQLClient, world: World, fields: dict[str, Any], field: str, code: str, words: str
) -> None:
    payload = await create(gql, world, **fields)
    assert payload["serviceInstance"] is None
    found = errors(payload)
    assert field in found, found
    assert found[field][0] == code and words in found[field][1], found[field]
    assert await ServiceInstance.all().count() == 0


async def test_a_template_s_storage_and_resources_go_to_its_services(
    gql: GraphQLClient, world: World
) -> None:
    made = (
        await gql.data(
            CREATE_TEMPLATE,
            {
                "input": {
                    "project": "ml",
                    "name": "big-cpu",
                    "vendor": "CPU",
                    "image": "ubuntu:24.04",
                    "storage": {"mode": "EPHEMERAL", "size": "5Gi"},
                    "resources": {
                        "cpuRequest": "1",
                        "cpuLimit": "2",
                        "memoryRequest": "2Gi",
                        "memoryLimit": "4Gi",
                    },
                }
            },
            token=world.alice.token,
        )
    )["createInstanceTemplate"]
    assert made["userErrors"] == []
    template = made["instanceTemplate"]
    assert template["storage"] == {
        "mode": "EPHEMERAL",
        "size": "5Gi",
        "reclaim": "RELEASE",
        "claimName": None,
    }
    assert template["resources"]["cpuLimit"] == "2"
    service = (await create(gql, world, template=template["id"], name="cpu"))["serviceInstance"]
    assert service["storage"]["mode"] == "EPHEMERAL" and service["resources"]["memoryLimit"] == "4Gi"
    resources = container(await manifests(service["id"]))["resources"]
    assert resources["requests"]["cpu"] == "1" and resources["limits"]["memory"] == "4Gi"
    # the template's checks name the field too
    refused = (
        await gql.data(
            UPDATE_TEMPLATE,
            {"input": {"id": template["id"], "resources": {"memoryRequest": "8Gi", "memoryLimit": "4Gi"}}},
            token=world.alice.token,
        )
    )["updateInstanceTemplate"]
    assert [e["field"] for e in refused["userErrors"]] == [["input", "resources", "memoryRequest"]]
    # and {} gives the defaults back
    cleared = (
        await gql.data(
            UPDATE_TEMPLATE, {"input": {"id": template["id"], "resources": {}}}, token=world.alice.token
        )
    )["updateInstanceTemplate"]
    assert cleared["instanceTemplate"]["resources"] == {"cpuLimit": None}
    assert (await InstanceTemplate.get(id=template["id"])).resources is None


# ---------------------------------------------------------------- edit a stopped service


async def test_a_stopped_service_is_edited_and_the_next_start_applies_it(
    gql: GraphQLClient, world: World
) -> None:
    service = (await create(gql, world, start=False, storage={"mode": "EPHEMERAL"}))["serviceInstance"]
    assert service["status"] == "STOPPED" and service["editRefusal"] is None
    edited = await update(
        gql,
        world.bob.token,
        id=service["id"],
        displayName="Lab 2",
        command=["sleep", "infinity"],
        env=[{"key": "MODE", "value": "fast"}],
        ports=[{"name": "Web UI", "port": 8080}],
        gpuCount=2,
        resources={"cpuLimit": "6"},
        storage={"mode": "NEW_VOLUME", "size": "50Gi"},  # it never ran: the mode may change
    )
    assert edited["userErrors"] == []
    shown = edited["serviceInstance"]
    assert shown["displayName"] == "Lab 2" and shown["command"] == ["sleep", "infinity"]
    assert shown["gpuCount"] == 2 and shown["resources"]["cpuLimit"] == "6"
    objects = await manifests(service["id"])
    assert container(objects)["command"] == ["sleep", "infinity"]
    assert {"name": "MODE", "value": "fast"} in container(objects)["env"]
    assert container(objects)["resources"]["limits"]["cpu"] == "6"
    assert container(objects)["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert objects["PersistentVolumeClaim"]["spec"]["resources"]["requests"]["storage"] == "50Gi"
    assert objects["Service"]["spec"]["ports"][0]["name"] == "web-ui"
    # saving queues nothing: the next start applies it
    assert await DeploymentRun.filter(service_id=service["id"]).count() == 0


async def test_only_a_stopped_or_failed_service_is_edited(gql: GraphQLClient, world: World) -> None:
    service = (await create(gql, world))["serviceInstance"]
    for status in (
        ServiceStatus.PENDING,
        ServiceStatus.RUNNING,
        ServiceStatus.STOPPING,
        ServiceStatus.DELETING,
    ):
        await ServiceInstance.filter(id=service["id"]).update(status=status)
        refused = await update(gql, world.bob.token, id=service["id"], command=["true"])
        assert errors(refused) == {
            "input.id": (
                "INVALID_STATE",
                f"cannot edit a service instance that is {status.value}: stop it first (a STOPPED or "
                "FAILED one is edited, and its changes apply at its next start)",
            )
        }
        shown = (await gql.data(ONE, {"id": service["id"]}, token=world.bob.token))["serviceInstance"]
        assert shown["editRefusal"] == refused["userErrors"][0]["message"]
    await ServiceInstance.filter(id=service["id"]).update(status=ServiceStatus.FAILED)
    assert (await update(gql, world.bob.token, id=service["id"], command=["true"]))["userErrors"] == []


async def test_a_volume_that_exists_keeps_its_mode_and_size(gql: GraphQLClient, world: World) -> None:
    service = (await create(gql, world, storage={"size": "40Gi"}))["serviceInstance"]  # queued a start
    await ServiceInstance.filter(id=service["id"]).update(status=ServiceStatus.STOPPED)
    refused = await update(gql, world.bob.token, id=service["id"], storage={"mode": "EPHEMERAL"})
    assert errors(refused)["input.storage.mode"][0] == "IMMUTABLE"
    assert "its data would be lost" in errors(refused)["input.storage.mode"][1]
    refused = await update(gql, world.bob.token, id=service["id"], storage={"size": "80Gi"})
    assert errors(refused)["input.storage.size"][0] == "IMMUTABLE"
    refused = await update(
        gql, world.bob.token, id=service["id"], storage={"size": "40Gi", "claimName": "elsewhere"}
    )
    assert errors(refused)["input.storage.claimName"] == (
        "IMMUTABLE",
        "its volume exists already (claim named after the service): another name would be a new, "
        "empty volume; leave claimName as it is",
    )
    refused = await update(
        gql, world.bob.token, id=service["id"], storage={"size": "40Gi", "storageClass": "fast"}
    )
    assert errors(refused)["input.storage.storageClass"][0] == "IMMUTABLE"
    # reclaim may change
    kept = await update(gql, world.bob.token, id=service["id"], storage={"size": "40Gi", "reclaim": "KEEP"})
    assert kept["userErrors"] == [] and kept["serviceInstance"]["storage"]["reclaim"] == "KEEP"


async def test_a_new_volume_may_name_its_claim_and_class_but_not_take_another_s(
    gql: GraphQLClient, world: World
) -> None:
    # given a service whose new volume is claim "data" of class fast-ssd
    storage = {"mode": "NEW_VOLUME", "size": "10Gi", "claimName": "data", "storageClass": "fast-ssd"}
    first = await create(gql, world, name="a", storage=storage, start=False)
    assert first["userErrors"] == []
    claim = (await manifests(first["serviceInstance"]["id"]))["PersistentVolumeClaim"]
    assert claim["metadata"]["name"] == "data" and claim["spec"]["storageClassName"] == "fast-ssd"
    # and a service with the default claim (d-workspace), and one mounting the existing claim "shared"
    assert (await create(gql, world, name="d", start=False))["userErrors"] == []
    existing = {"mode": "EXISTING_CLAIM", "claimName": "shared"}
    assert (await create(gql, world, name="x", storage=existing, start=False))["userErrors"] == []
    # when another service's new volume would be one of those claims / then it is refused at claimName
    for claim_name, holder in (("data", "a"), ("d-workspace", "d"), ("shared", "x")):
        taken = await create(gql, world, name="b", storage={**storage, "claimName": claim_name})
        assert errors(taken) == {
            "input.storage.claimName": (
                "TAKEN",
                f'claim "{claim_name}" is already the workspace of service instance "{holder}" in '
                'compute instance "box": give the new volume another name (claimName)',
            )
        }
    # and its own edit keeps its name (the check leaves itself out)
    again = await update(gql, world.bob.token, id=first["serviceInstance"]["id"], storage=storage)
    assert again["userErrors"] == []


async def test_edits_are_checked_as_at_creation(gql: GraphQLClient, world: World) -> None:
    service = (await create(gql, world, start=False))["serviceInstance"]
    refused = await update(
        gql,
        world.bob.token,
        id=service["id"],
        gpuCount=3,
        resources={"memoryLimit": "1Ti"},
        env=[{"key": "1X", "value": ""}],
    )
    found = errors(refused)
    assert set(found) == {"input.gpuCount", "input.resources.memoryLimit", "input.env.0.key"}
    assert found["input.gpuCount"][0] == "QUOTA_EXCEEDED"
    # nothing of a refused edit is saved
    assert (await ServiceInstance.get(id=service["id"])).gpu_count == 1


async def test_only_its_owner_and_admins_edit_it(gql: GraphQLClient, world: World) -> None:
    service = (await create(gql, world, start=False))["serviceInstance"]
    body = await gql(UPDATE, {"input": {"id": service["id"], "command": ["x"]}}, token=world.carol.token)
    assert body["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert (
        body["errors"][0]["message"] == 'Only the owner or a project admin may edit service instance "lab".'
    )
    shown = (await gql.data(ONE, {"id": service["id"]}, token=world.carol.token))["serviceInstance"]
    assert shown["editRefusal"] == 'Only the owner or a project admin may edit service instance "lab".'
    assert (await update(gql, world.alice.token, id=service["id"], command=["x"]))["userErrors"] == []
    outsider = await make_user("dave")
    body = await gql(UPDATE, {"input": {"id": service["id"], "command": ["y"]}}, token=outsider.token)
    assert body["data"]["updateServiceInstance"]["userErrors"][0]["code"] == "NOT_FOUND"


async def test_an_edit_that_adds_a_token_generates_it(gql: GraphQLClient, world: World) -> None:
    ubuntu = await InstanceTemplate.get(name="ubuntu")
    service = (await create(gql, world, template=str(ubuntu.id), gpuCount=0, start=False))["serviceInstance"]
    assert not (await ServiceInstance.get(id=service["id"])).generated
    edited = await update(
        gql, world.bob.token, id=service["id"], env=[{"key": "TOKEN", "value": "{{generated_token}}"}]
    )
    assert edited["userErrors"] == []
    assert (await ServiceInstance.get(id=service["id"])).generated


# ---------------------------------------------------------------- no Connect link while stopped


async def test_a_stopped_service_shows_no_connect_link(gql: GraphQLClient, world: World) -> None:
    service = (await create(gql, world))["serviceInstance"]
    await ServiceInstance.filter(id=service["id"]).update(
        node_ports={"jupyter": 31234}, status=ServiceStatus.RUNNING
    )
    shown = (await gql.data(ONE, {"id": service["id"]}, token=world.bob.token))["serviceInstance"]
    assert [link["port"] for link in shown["connect"]] == ["jupyter"]
    for status in (ServiceStatus.STOPPING, ServiceStatus.STOPPED, ServiceStatus.DELETING):
        await ServiceInstance.filter(id=service["id"]).update(status=status)
        shown = (await gql.data(ONE, {"id": service["id"]}, token=world.bob.token))["serviceInstance"]
        assert shown["connect"] == [], status
    # started again: the same link is back
    await ServiceInstance.filter(id=service["id"]).update(status=ServiceStatus.STARTING)
    shown = (await gql.data(ONE, {"id": service["id"]}, token=world.bob.token))["serviceInstance"]
    assert shown["connect"][0]["url"].startswith("http://127.0.0.1:31234/?token=")
