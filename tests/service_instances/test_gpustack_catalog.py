"""A catalog written in GPUStack's format (gpustack_catalog.yaml beside this file) imported as it is
written, through the API and through the CLI, and every template of it launched on the simulated
cluster of infra/simulated/inventory.yaml (CPU, NVIDIA H100 and A100 with MIG, AMD MI300X, Ascend
910B and 310P nodes): each one is accepted, becomes RUNNING, and every manifest the cluster is given
validates against Kubernetes 1.37's schema, strictly. The built-in templates (GPUStack's kinds:
Ubuntu, PyTorch on CUDA and ROCm, JupyterLab, CANN per Ascend chip) run there the same way."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import kubernetes_validate
import pytest
import yaml

from gpupaas.app import create_app
from gpupaas.catalog.service.profiles import ResourcesIn
from gpupaas.clusters.models import Cluster
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.core.gpus import Vendor
from gpupaas.core.quantities import parse_quantity
from gpupaas.provisioning.plan import Plan
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
    record_plans,
)
from tests.workers.conftest import eventually, fast, wait_status

CATALOG = Path(__file__).with_name("gpustack_catalog.yaml")

# Where each accepted template runs: the compute instance of its vendor and GPU model, and what
# its pod then asks for (the vendor's GPU resource, per Ascend chip; a MIG device; none on CPU).
RUNS_ON: dict[str, tuple[str, str | None]] = {
    "ubuntu-24-04": ("cpu", None),
    "debian-12-tools": ("cpu", None),
    "pytorch-2-8-cuda-12-9": ("h100", "nvidia.com/gpu"),
    "jupyter-lab-cuda-12": ("h100", "nvidia.com/gpu"),
    "vllm-openai": ("h100", "nvidia.com/gpu"),
    "ngc-private-pytorch": ("h100", "nvidia.com/gpu"),
    "mig-1g-notebook": ("a100", "nvidia.com/mig-1g.10gb"),
    "pytorch-2-7-rocm-7-0": ("mi300x", "amd.com/gpu"),
    "jupyter-rocm": ("mi300x", "amd.com/gpu"),
    "ubuntu-22-04-cann-8-5-0-910b": ("910b", "huawei.com/Ascend910"),
    "ubuntu-22-04-cann-8-5-0-310p": ("310p", "huawei.com/Ascend310P"),
    # GPUStack's cpu and ram, and its three kinds of volume
    "pytorch-sized": ("h100", "nvidia.com/gpu"),
    "scratch-ephemeral": ("cpu", None),
    "cann-persistent-data": ("910b", "huawei.com/Ascend910"),
}

# Each box's namespace may hold this much node-local scratch space: its services' localStorage
# (and an EPHEMERAL volume's capacity) are counted by its ResourceQuota, as a real API server does.
SCRATCH = [("ephemeralStorage", "200Gi")]

BOXES: dict[str, ResourcesIn] = {
    "cpu": ResourcesIn(cpu="4", memory="16Gi", storage="100Gi", gpu_count=0, gpu_vendor=Vendor.CPU),
    # five GPUs: four services take a fifth of its CPU, memory and storage each, pytorch-sized its own
    "h100": ResourcesIn(
        cpu="40", memory="320Gi", storage="500Gi", gpu_count=5, gpu_vendor=Vendor.NVIDIA, gpu_model="H100"
    ),
    "a100": ResourcesIn(
        cpu="7", memory="70Gi", storage="70Gi", gpu_count=1, gpu_vendor=Vendor.NVIDIA, gpu_model="A100"
    ),
    "mi300x": ResourcesIn(
        cpu="16", memory="128Gi", storage="200Gi", gpu_count=2, gpu_vendor=Vendor.AMD, gpu_model="MI300X"
    ),
    "910b": ResourcesIn(
        cpu="16",
        memory="128Gi",
        storage="200Gi",
        gpu_count=2,
        gpu_vendor=Vendor.ASCEND,
        gpu_model="Ascend910B",
    ),
    "310p": ResourcesIn(
        cpu="8", memory="32Gi", storage="100Gi", gpu_count=1, gpu_vendor=Vendor.ASCEND, gpu_model="Ascend310P"
    ),
}

IMPORT = """mutation($project: String, $yaml: String!) { importInstanceTemplates(project: $project, yaml: $yaml) {
  results { index name outcome problems { field message } instanceTemplate { id name } }
  userErrors { field message code } } }"""
TEMPLATES = 'query { instanceTemplates(project: "ml") { id name builtIn project { name } } }'
PULL_SECRET = """mutation($input: CreateImagePullSecretInput!) { createImagePullSecret(input: $input) {
  imagePullSecret { name } userErrors { field message code } } }"""
CHECK = "mutation($id: ID!) { checkCluster(id: $id) { userErrors { message } } }"
SERVICE = """mutation($input: CreateServiceInstanceInput!) { createServiceInstance(input: $input) {
  serviceInstance { id name } userErrors { field message code } } }"""
SHOWN = """query($id: ID!) { serviceInstance(id: $id) { name status statusMessage gpuCount gpuPartition
  imagePullSecret mountPath containerDisk ports { name kubernetesName port } connect { port url }
  ssh { command host port user } } }"""


@dataclass
class World:
    gql: GraphQLClient
    settings: Settings
    admin: Person  # ADMIN of "ml": imports its templates
    alice: Person  # MEMBER of "ml": launches them
    boxes: dict[str, ComputeInstance]
    plans: list[Plan]  # every plan the simulated cluster was given


@pytest.fixture
async def world(db: object, settings: Settings, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[World]:
    chosen = replace(fast(settings), simulated_inventory="infra/simulated/inventory.yaml")
    runtime = Runtime(chosen, run_worker=True)
    await runtime.start()
    app = create_app(chosen, migrate=False, runtime=runtime)
    driver = runtime.drivers.simulated
    plans = record_plans(driver, monkeypatch)
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as http:
            from gpupaas.bootstrap import seed

            gql = GraphQLClient(http)
            await seed(runtime.drivers)
            root = await make_user("root", platform_admin=True)
            admin, alice = await make_user("ada"), await make_user("alice")
            project = await make_project("ml", ada=Role.ADMIN, alice=Role.MEMBER)
            cluster = await Cluster.get(is_default=True)  # its partitions, as a check sees them
            assert (await gql.data(CHECK, {"id": str(cluster.id)}, token=root.token))["checkCluster"][
                "userErrors"
            ] == []
            secret = {"project": "ml", "name": "ngc", "registry": "nvcr.io", "username": "$oauthtoken"}
            made = await gql.data(
                PULL_SECRET, {"input": {**secret, "password": "nvapi-x"}}, token=admin.token
            )
            assert made["createImagePullSecret"]["userErrors"] == []
            # the built-in namespace template: its ResourceQuota and LimitRange, as a real cluster's
            builtin = await builtin_namespace_version()
            boxes: dict[str, ComputeInstance] = {}
            for name, resources in BOXES.items():
                profile = await make_profile(project, builtin, resources=resources, name=f"p-{name}")
                box = await make_instance(
                    project, profile, name=f"box-{name}", by=alice, deploy=True, inputs=SCRATCH
                )
                boxes[name] = await wait_status(box.id, DeploymentStatus.SUCCESS, DeploymentStatus.FAILED)
                assert boxes[name].status == DeploymentStatus.SUCCESS, boxes[name].status_message
            yield World(gql, chosen, admin, alice, boxes, plans)
    finally:
        await runtime.stop()


def _catalog_names() -> list[str]:
    return [item["name"] for item in yaml.safe_load(CATALOG.read_text())["items"]]


def test_the_catalog_covers_what_gpustack_s_templates_use() -> None:
    """The file itself: every template is accounted for, and it has the cases it is meant to."""
    items = yaml.safe_load(CATALOG.read_text())["items"]
    names = [item["name"] for item in items]
    assert len(names) == len(set(names)) and set(names) == set(RUNS_ON)
    manufacturers = {item["manufacturer"].lower() for item in items}
    assert manufacturers == {"cpu", "nvidia", "amd", "ascend"}
    ports = [port for item in items for port in item["spec"].get("ports", [])]
    assert {"SSH", "JUPYTER", "OpenAI API", "Jupyter Lab"} <= {port["name"] for port in ports}
    assert any(port.get("accessParams") for port in ports if port["name"] == "JUPYTER")
    specs = [item["spec"] for item in items]
    assert {spec["volumeMount"] for spec in specs} >= {"/workspace", "/home/jovyan/work", "/models", "/data"}
    assert {spec.get("resources", {}).get("localStorage") for spec in specs} >= {"8Gi", "15Gi", "40Gi"}


async def _import_by_api(w: World) -> list[tuple[str, str, dict[str, str]]]:
    payload = (await w.gql.data(IMPORT, {"project": "ml", "yaml": CATALOG.read_text()}, token=w.admin.token))[
        "importInstanceTemplates"
    ]
    assert payload["userErrors"] == []
    return [
        (r["name"], r["outcome"], {p["field"]: p["message"] for p in r["problems"]})
        for r in payload["results"]
    ]


async def _import_by_cli(w: World) -> list[tuple[str, str, dict[str, str]]]:
    """`gpupaas import-templates FILE --project ml`, a real process on the test's database."""
    env = {
        **os.environ,
        "GPUPAAS_DATABASE_URL": w.settings.database_url,
        "GPUPAAS_SECRET_KEY": w.settings.secret_key,
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gpupaas.cli",
        "import-templates",
        str(CATALOG),
        "--project",
        "ml",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    lines = out.decode().splitlines()
    assert lines, err.decode()
    # none refused (a refused one makes the exit 2), and the summary says how many went in
    assert process.returncode == 0, err.decode()
    assert lines[-1] == f"{len(RUNS_ON)} of {len(RUNS_ON)} templates imported (project ml)"
    results: list[tuple[str, str, dict[str, str]]] = []
    for line in lines[:-1]:
        if line.startswith(" "):  # a problem of the template above: "          field: message"
            field, message = line.strip().split(": ", 1)
            results[-1][2][field] = message
        else:
            outcome, name = line.split()
            results.append((name, outcome, {}))
    return results


@pytest.mark.parametrize("how", ["api", "cli"])
async def test_every_template_is_accepted_as_written_and_runs(world: World, how: str) -> None:
    w = world
    # when ml's admin imports the catalog
    results = await (_import_by_api(w) if how == "api" else _import_by_cli(w))

    # then every template is created as it is written
    assert [name for name, _, _ in results] == _catalog_names()
    for name, outcome, problems in results:
        assert (outcome, problems) == ("CREATED", {}), name
    templates = {
        t["name"]: t["id"]
        for t in (await w.gql.data(TEMPLATES, token=w.alice.token))["instanceTemplates"]
        if t["project"] and t["project"]["name"] == "ml"
    }
    assert set(templates) == set(RUNS_ON)

    # when a member launches each in the compute instance of its vendor and model
    launched: dict[str, str] = {}
    for name, (box, _) in RUNS_ON.items():
        data = {
            "project": "ml",
            "computeInstance": str(w.boxes[box].id),
            "template": templates[name],
            "name": name,
        }
        made = (await w.gql.data(SERVICE, {"input": data}, token=w.alice.token))["createServiceInstance"]
        assert made["userErrors"] == [], (name, made["userErrors"])
        launched[name] = made["serviceInstance"]["id"]

    # then every one becomes RUNNING
    async def settled() -> bool:
        moving = (ServiceStatus.PENDING, ServiceStatus.STARTING)
        statuses = [s.status for s in await ServiceInstance.filter(id__in=list(launched.values()))]
        return len(statuses) == len(launched) and not any(status in moving for status in statuses)

    await eventually(settled, timeout=60, what="every service to settle")
    shown = {
        name: (await w.gql.data(SHOWN, {"id": service_id}, token=w.alice.token))["serviceInstance"]
        for name, service_id in launched.items()
    }
    assert {name: s["status"] for name, s in shown.items()} == dict.fromkeys(RUNS_ON, "RUNNING"), {
        name: s["statusMessage"] for name, s in shown.items() if s["status"] != "RUNNING"
    }

    # and every manifest the cluster was given validates, strictly, against Kubernetes 1.37
    access_address = (await Cluster.get(is_default=True)).access_address
    assert access_address, "the simulated cluster has an access address: SSH commands name it"
    by_service = {plan.instance_id: plan for plan in w.plans}
    for name, service_id in launched.items():
        plan = by_service[service_id]
        for manifest in plan.manifests:
            kubernetes_validate.validate(manifest, "1.37.0", strict=True)
        _check_runs_as_written(name, shown[name], plan, access_address)


# Each built-in, the compute instance it runs in and the GPU resource its pod asks for there.
BUILTINS_RUN_ON: dict[str, tuple[str, str | None]] = {
    "jupyterlab-pytorch": ("h100", "nvidia.com/gpu"),
    "pytorch": ("h100", "nvidia.com/gpu"),
    "vllm-openai": ("h100", "nvidia.com/gpu"),
    "pytorch-rocm": ("mi300x", "amd.com/gpu"),
    "ubuntu": ("cpu", None),
    "cann-910b": ("910b", "huawei.com/Ascend910"),
    "cann-310p": ("310p", "huawei.com/Ascend310P"),
}


async def test_every_builtin_runs_on_its_vendor_s_gpus(world: World) -> None:
    from gpupaas.instance_templates.builtins import BUILTIN_INSTANCE_TEMPLATES

    w = world
    assert set(BUILTINS_RUN_ON) == {t.name for t in BUILTIN_INSTANCE_TEMPLATES}
    found = (await w.gql.data(TEMPLATES, token=w.alice.token))["instanceTemplates"]
    builtins = {t["name"]: t["id"] for t in found if t["builtIn"]}
    assert set(builtins) == set(BUILTINS_RUN_ON)
    # when a member launches each built-in in a compute instance of its vendor (and Ascend chip)
    launched: dict[str, str] = {}
    for name, (box, _) in BUILTINS_RUN_ON.items():
        data = {
            "project": "ml",
            "computeInstance": str(w.boxes[box].id),
            "template": builtins[name],
            "name": name,
        }
        made = (await w.gql.data(SERVICE, {"input": data}, token=w.alice.token))["createServiceInstance"]
        assert made["userErrors"] == [], (name, made["userErrors"])
        launched[name] = made["serviceInstance"]["id"]

    async def settled() -> bool:
        moving = (ServiceStatus.PENDING, ServiceStatus.STARTING)
        statuses = [s.status for s in await ServiceInstance.filter(id__in=list(launched.values()))]
        return len(statuses) == len(launched) and not any(status in moving for status in statuses)

    await eventually(settled, timeout=60, what="every built-in to settle")
    # then each runs, its manifests validate, and its pod asks for its chip's resource
    by_service = {plan.instance_id: plan for plan in w.plans}
    for name, service_id in launched.items():
        shown = (await w.gql.data(SHOWN, {"id": service_id}, token=w.alice.token))["serviceInstance"]
        assert shown["status"] == "RUNNING", (name, shown["statusMessage"])
        plan = by_service[service_id]
        for manifest in plan.manifests:
            kubernetes_validate.validate(manifest, "1.37.0", strict=True)
        deployment = next(m for m in plan.manifests if m["kind"] == "Deployment")
        (container,) = deployment["spec"]["template"]["spec"]["containers"]
        limits = container["resources"]["limits"]
        expected = BUILTINS_RUN_ON[name][1]
        assert {key for key in limits if "/" in key} == ({expected} if expected else set()), name
        if expected:
            assert limits[expected] == "1", name


def _item(name: str) -> dict[str, Any]:
    items = yaml.safe_load(CATALOG.read_text())["items"]
    found: dict[str, Any] = next(item for item in items if item["name"] == name)
    return found


def _check_runs_as_written(name: str, shown: dict[str, Any], plan: Plan, access_address: str) -> None:
    """The pod is what the file says: image, pull policy, command, ports by their labels, env, local
    storage, the volume mount, the pull secret, and the GPU resource of the template's vendor."""
    spec = _item(name)["spec"]
    _, resource = RUNS_ON[name]
    deployment = next(m for m in plan.manifests if m["kind"] == "Deployment")
    pod = deployment["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["image"] == spec["image"], name
    assert container["imagePullPolicy"] == spec.get("imagePullPolicy", "IfNotPresent"), name
    # the command as written; a generated token is read from the service's Secret, never inlined
    written = [
        part.replace("{{generated_token}}", "$(GPUPAAS_GENERATED_TOKEN)") for part in spec.get("command", [])
    ]
    # GPUStack's SSH port beside a command means SSH access: gpupaas's SSH server (dropbear from an
    # init container, keys from the <name>-ssh Secret) starts first, then execs the command as written
    ssh_port = next((p for p in spec.get("ports", []) if p["name"] == "SSH"), None)
    if ssh_port is not None and written:
        launcher, shell, dash_c, _script, argv0, *command = container["command"]
        assert (launcher, shell, dash_c, argv0) == ("/gpupaas-ssh/bin/busybox", "sh", "-c", "gpupaas-ssh"), (
            name
        )
        assert command == written, name
        assert [c["name"] for c in pod["initContainers"]] == ["gpupaas-ssh"], name
        assert f"{name}-ssh" in {m["metadata"]["name"] for m in plan.manifests if m["kind"] == "Secret"}, name
        assert shown["ssh"]["user"] == "root", name
        assert shown["ssh"]["host"] == access_address, name
        assert shown["ssh"]["command"] == f"ssh -p {shown['ssh']['port']} root@{access_address}", name
    else:
        assert container.get("command", []) == written, name
        assert "initContainers" not in pod and shown["ssh"] is None, name
    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    assert {e["name"]: e["value"] for e in spec.get("env", [])}.items() <= env.items(), name
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert spec["volumeMount"] in mounts and shown["mountPath"] == spec["volumeMount"], name
    disk = spec.get("resources", {}).get("localStorage", "15Gi")
    assert disk == shown["containerDisk"], name
    volume = spec.get("volume", {})
    workspace = next(v for v in pod["volumes"] if v["name"] == "workspace")
    claims = [m for m in plan.manifests if m["kind"] == "PersistentVolumeClaim"]
    if "ephemeral" in volume:  # an emptyDir of that size, counted as the container's scratch space
        capacity = volume["ephemeral"]["capacity"]
        assert workspace == {"name": "workspace", "emptyDir": {"sizeLimit": capacity}} and claims == [], name
        scratch = parse_quantity(disk) + parse_quantity(capacity)
        for side in ("requests", "limits"):
            assert parse_quantity(container["resources"][side]["ephemeral-storage"]) == scratch, name
    else:
        assert container["resources"]["limits"]["ephemeral-storage"] == disk, name
        made = volume.get("persistentTemplate")
        (claim,) = claims
        claim_name = made["name"] if made else f"{name}-workspace"
        assert claim["metadata"]["name"] == workspace["persistentVolumeClaim"]["claimName"] == claim_name
        if made:  # the volume made with the service: its class, its capacity, released with it
            assert claim["spec"]["storageClassName"] == made["spec"]["type"], name
            assert claim["spec"]["resources"]["requests"]["storage"] == made["spec"]["capacity"], name
            kept = made.get("releaseWithInstance", True) is False
            assert ("gpupaas.io/reclaim" in claim["metadata"].get("annotations", {})) == kept, name
    for key, kind in (("cpu", "cpu"), ("ram", "memory")):
        if key in spec.get("resources", {}):  # GPUStack's one amount: the request and the limit
            asked = spec["resources"][key]
            assert container["resources"]["requests"][kind] == asked, name
            assert container["resources"]["limits"][kind] == asked, name
    gpus = {key for key in container["resources"]["limits"] if "/" in key}
    assert gpus == ({resource} if resource else set()), name
    labels = [port["name"] for port in spec.get("ports", [])]
    assert [p["name"] for p in shown["ports"]] == labels, name
    assert [p["name"] for p in container.get("ports", [])] == [p["kubernetesName"] for p in shown["ports"]], (
        name
    )
    assert {link["port"] for link in shown["connect"]} == set(labels), name
    for port in spec.get("ports", []):
        link = next(link["url"] for link in shown["connect"] if link["port"] == port["name"])
        for key in port.get("accessParams", {}):
            assert f"{key}=" in link and "{{" not in link, (name, link)
    if "imagePullSecret" in spec:
        assert pod["imagePullSecrets"] == [{"name": f"{name}-registry"}], name
        assert shown["imagePullSecret"] == spec["imagePullSecret"]["name"]
    else:
        assert "imagePullSecrets" not in pod, name
