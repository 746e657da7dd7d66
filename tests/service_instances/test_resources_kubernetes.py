"""GPU partitions through the kubernetes driver, against the fake Kubernetes API server: a cluster
check reads the MIG devices that nodes advertise (as the clusters domain then shows them:
gpuPartitions), and a service asking for a partition gets a pod that requests that resource, which
the scheduler places by the nodes' allocatable devices. And a service's image pull secret as its
own kubernetes.io/dockerconfigjson Secret, which its pod names."""

from __future__ import annotations

import asyncio
import base64
import json
from dataclasses import replace

from gpupaas.core import gpu_resources
from gpupaas.instance_templates.builtins import builtin_instance_template
from gpupaas.provisioning.drivers.kubernetes.driver import KubernetesDriver
from gpupaas.provisioning.plan import Plan
from gpupaas.provisioning.render.schema import validate_manifest
from gpupaas.service_instances.plan import build_service_plan
from tests.fake_kube import FakeKube, node
from tests.fake_kube.fixtures import fake_kube  # noqa: F401 - the fixture
from tests.service_instances.ssh_setup import ssh_setup
from tests.service_instances.test_service_kubernetes import (  # noqa: F401 - and these
    COMPUTE_ID,
    COMPUTE_NAME,
    COMPUTE_RESOURCES,
    NAMESPACE,
    PROJECT,
    SERVICE_ID,
    compute,
    driver,
    fake,
    kubeconfig,
)

MIG = "nvidia.com/mig-1g.10gb"


def mig_nodes(devices: int) -> list[dict[str, object]]:
    """One H100 node with whole GPUs and `devices` MIG 1g.10gb devices, and one Ascend 310P node."""
    return [
        node("gpu-1", gpus=4, labels={"nvidia.com/gpu.product": "H100"}, extra={MIG: str(devices)}),
        node("npu-1", gpus=4, gpu_resource="huawei.com/Ascend310P", labels={"accelerator": "Ascend310P"}),
    ]


def partition_plan(count: int, name: str = "lab", service_id: str = SERVICE_ID) -> Plan:
    builtin = builtin_instance_template("pytorch")
    assert builtin is not None
    return build_service_plan(
        service_id=service_id,
        name=name,
        spec=replace(builtin.spec, gpu_partition=MIG),
        ssh=ssh_setup(builtin.spec),
        gpu_count=count,
        compute_id=COMPUTE_ID,
        compute_name=COMPUTE_NAME,
        project=PROJECT,
        compute_resources=COMPUTE_RESOURCES,
        profile_name="h100",
    )


async def test_a_check_reads_the_partitions_and_chips_that_nodes_advertise(
    fake: FakeKube,  # noqa: F811 - the fixtures imported above
    driver: KubernetesDriver,  # noqa: F811
) -> None:
    fake.set_nodes(mig_nodes(7))
    info = await driver.check()
    found = {
        (r.resource, r.model): (r.count, r.partition)
        for r in gpu_resources.advertised(n.to_json() for n in info.nodes)
    }
    assert found == {
        ("nvidia.com/gpu", "H100"): (4, False),
        (MIG, "H100"): (7, True),
        ("huawei.com/Ascend310P", "Ascend310P"): (4, False),
    }
    # The node's GPUs are its whole ones, though it has more MIG devices.
    gpu = next(n for n in info.nodes if n.name == "gpu-1")
    assert (gpu.to_json()["gpuResource"], gpu.to_json()["gpuCount"]) == ("nvidia.com/gpu", 4)


async def test_a_partition_service_s_pod_requests_its_devices_and_waits_for_free_ones(
    fake: FakeKube,  # noqa: F811 - the fixtures imported above
    driver: KubernetesDriver,  # noqa: F811
    compute: Plan,  # noqa: F811
) -> None:
    fake.set_nodes(mig_nodes(2))
    plan = partition_plan(2)
    for manifest in plan.manifests:
        validate_manifest(manifest)
    await driver.apply(plan)
    pods = await asyncio.to_thread(
        fake.wait_for, lambda: fake.pods(NAMESPACE, f"gpupaas.io/service={SERVICE_ID}")
    )
    (main,) = pods[0]["spec"]["containers"]
    assert main["resources"]["requests"][MIG] == main["resources"]["limits"][MIG] == "2"
    assert "nvidia.com/gpu" not in main["resources"]["limits"]
    assert pods[0]["spec"]["nodeName"] == "gpu-1"


async def test_a_service_with_a_pull_secret_gets_its_dockerconfigjson_secret_and_names_it(
    fake: FakeKube,  # noqa: F811 - the fixtures imported above
    driver: KubernetesDriver,  # noqa: F811
    compute: Plan,  # noqa: F811
) -> None:
    builtin = builtin_instance_template("pytorch")
    assert builtin is not None
    plan = build_service_plan(
        service_id=SERVICE_ID,
        name="private",
        spec=replace(builtin.spec, image_pull_secret="ngc"),
        ssh=ssh_setup(builtin.spec),
        gpu_count=1,
        compute_id=COMPUTE_ID,
        compute_name=COMPUTE_NAME,
        project=PROJECT,
        compute_resources=COMPUTE_RESOURCES,
        profile_name="h100",
        registry=("nvcr.io", "$oauthtoken", "ngc-Key-123"),
    )
    for manifest in plan.manifests:
        validate_manifest(manifest)
    applied = await driver.apply(plan)
    assert ("v1", "Secret", "private-registry") in [(r.api_version, r.kind, r.name) for r in applied.objects]
    secret = fake.get("v1", "Secret", "private-registry", NAMESPACE)
    assert secret is not None and secret["type"] == "kubernetes.io/dockerconfigjson"
    config = json.loads(base64.b64decode(secret["data"][".dockerconfigjson"]))
    assert config["auths"]["nvcr.io"]["password"] == "ngc-Key-123"
    assert base64.b64decode(config["auths"]["nvcr.io"]["auth"]).decode() == "$oauthtoken:ngc-Key-123"
    pods = await asyncio.to_thread(
        fake.wait_for, lambda: fake.pods(NAMESPACE, f"gpupaas.io/service={SERVICE_ID}")
    )
    assert pods[0]["spec"]["imagePullSecrets"] == [{"name": "private-registry"}]
