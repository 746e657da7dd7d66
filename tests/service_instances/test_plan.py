"""Service instances' plans, built by a pure function."""

from __future__ import annotations

import uuid

import pytest

from gpupaas.instance_templates.builtins import BUILTIN_INSTANCE_TEMPLATES
from gpupaas.instance_templates.spec import resolve
from gpupaas.provisioning.plan import COMPUTE_INSTANCE_LABEL, INSTANCE_LABEL, SERVICE_LABEL, namespace_for
from gpupaas.provisioning.render.schema import validate_manifest
from gpupaas.service_instances.plan import (
    build_service_plan,
    node_ports_of,
    service_resources,
    simulated_annotations,
)
from gpupaas.service_instances.podspec import RESTART_ANNOTATION
from tests.service_instances.ssh_setup import ssh_setup

SERVICE, COMPUTE = str(uuid.uuid4()), str(uuid.uuid4())
RESOURCES = {"cpu": "8", "memory": "64Gi", "storage": "200Gi", "gpuCount": 2, "gpuVendor": "NVIDIA"}
TEMPLATES = {t.name: t for t in BUILTIN_INSTANCE_TEMPLATES}


def plan_of(template: str = "jupyterlab-pytorch", gpus: int = 1, **changes: object):  # type: ignore[no-untyped-def]
    arguments: dict[str, object] = {
        "service_id": SERVICE,
        "name": "nb",
        "spec": resolve(TEMPLATES[template].spec, {"generated_token": "ab" * 16}),
        "gpu_count": gpus,
        "compute_id": COMPUTE,
        "compute_name": "box",
        "project": "ml",
        "compute_resources": RESOURCES,
        "profile_name": "h100",
    }
    arguments["ssh"] = ssh_setup(TEMPLATES[template].spec)
    arguments.update(changes)
    return build_service_plan(**arguments)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("resources", "gpus", "expected"),
    [
        (RESOURCES, 1, ("4", "32Gi", "100Gi")),
        (RESOURCES, 2, ("8", "64Gi", "200Gi")),
        ({**RESOURCES, "cpu": "3", "memory": "10Gi", "gpuCount": 4}, 1, ("750m", "2560Mi", "50Gi")),
        (RESOURCES, 0, (None, None, "20Gi")),
        ({**RESOURCES, "storage": "5Gi", "gpuCount": 0}, 0, (None, None, "5Gi")),
    ],
)
def test_cpu_memory_and_workspace_follow_the_gpus(
    resources: dict[str, object], gpus: int, expected: tuple[str | None, str | None, str]
) -> None:
    assert service_resources(resources, gpus) == expected


def test_a_running_plan_lives_in_the_compute_instances_namespace_under_its_own_label() -> None:
    plan = plan_of()
    assert plan.namespace == namespace_for("ml", "box", COMPUTE)
    assert (plan.instance_id, plan.owner_label, plan.within) == (SERVICE, SERVICE_LABEL, COMPUTE)
    assert [m["kind"] for m in plan.manifests] == ["PersistentVolumeClaim", "Deployment", "Service"]
    for manifest in plan.manifests:
        labels = manifest["metadata"]["labels"]
        assert labels[SERVICE_LABEL] == SERVICE and labels[COMPUTE_INSTANCE_LABEL] == COMPUTE
        assert INSTANCE_LABEL not in labels  # not the compute instance's own objects
        assert manifest["metadata"]["namespace"] == plan.namespace
        assert validate_manifest(manifest, "1.37.0") == []
    deployment = plan.manifests[1]
    assert deployment["spec"]["replicas"] == 1
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert container["resources"]["limits"]["cpu"] == "4"
    assert "--ServerApp.token=" + "ab" * 16 in container["command"]
    assert [o.name for o in plan.outputs] == ["nodePort.jupyter"]
    assert (plan.gpu_count, plan.gpu_resource_name) == (1, "nvidia.com/gpu")


def test_stopped_and_restarted_plans() -> None:
    stopped = plan_of(running=False, restart="ignored")
    deployment = stopped.manifests[1]
    assert deployment["spec"]["replicas"] == 0
    assert "annotations" not in deployment["spec"]["template"]["metadata"]
    restarted = plan_of(restart="run-1")
    annotations = restarted.manifests[1]["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {RESTART_ANNOTATION: "run-1"}
    # The same run builds the same plan (a redelivered command changes nothing).
    assert plan_of(restart="run-1") == restarted


def test_vendors_and_cluster_resource_names() -> None:
    amd = plan_of("pytorch-rocm", compute_resources={**RESOURCES, "gpuVendor": "AMD"})
    assert amd.gpu_resource_name == "amd.com/gpu"
    cpu = plan_of("ubuntu", gpus=0)
    deployment = next(m for m in cpu.manifests if m["kind"] == "Deployment")
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert "nvidia.com/gpu" not in container["resources"]["limits"]
    renamed = plan_of(gpu_resource_names={"NVIDIA": "nvidia.com/mig-1g.10gb"})
    limits = renamed.manifests[1]["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert limits["nvidia.com/mig-1g.10gb"] == "1"


def test_only_service_failure_annotations_reach_the_simulated_cluster() -> None:
    assert simulated_annotations(
        {
            "simulated.gpupaas.io/service-fail": "apply",
            "simulated.gpupaas.io/service-fail-times": "2",
            "simulated.gpupaas.io/fail": "destroy",  # the compute instance's own
            "team": "ml",
        }
    ) == {"simulated.gpupaas.io/fail": "apply", "simulated.gpupaas.io/fail-times": "2"}


def test_node_ports_from_outputs() -> None:
    assert node_ports_of({"nodePort.jupyter": "31000", "nodePort.ssh": "", "other": "1"}) == {
        "jupyter": 31000
    }
