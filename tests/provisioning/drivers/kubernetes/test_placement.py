"""The kubernetes driver adds placement itself, against the fake API server whose scheduler filters
nodes as kube-scheduler does: a profile's pods land on its GPU model's nodes, a DEDICATED profile's
on the dedicated nodes, a SHARED profile's never there (even when its template tolerates their
taint), and a GPU service's pod where its compute instance's GPUs are. Read back through the
official client."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from typing import Any, cast

import pytest
from kubernetes import client

from gpupaas.instance_templates.builtins import builtin_instance_template
from gpupaas.instance_templates.spec import resolve
from gpupaas.provisioning.drivers.k8s_manifests.placement import (
    PlacementSettings,
    parse_node_label,
    parse_taint,
)
from gpupaas.provisioning.drivers.kubernetes.connection import ClusterConnection
from gpupaas.provisioning.drivers.kubernetes.driver import KubernetesDriver
from gpupaas.provisioning.plan import Plan
from gpupaas.provisioning.registry import ClusterDriver, ClusterTarget, placement_settings
from gpupaas.service_instances.plan import build_service_plan
from tests.fake_kube import FakeKube, node
from tests.provisioning.drivers.kubernetes.clusters import NOTEBOOK, NOTEBOOK_OUTPUTS, make_plan, ns

H100 = "NVIDIA-H100-80GB-HBM3"
DEDICATED = "gpupaas.io/dedicated=true"
TAINT = {"key": "gpupaas.io/dedicated", "value": "true", "effect": "NoSchedule"}
# The template tolerates the dedicated nodes' taint on its own: a SHARED profile's pods must still
# stay off them.
TOLERATING = NOTEBOOK.replace(
    "      containers:\n",
    "      tolerations:\n        - {key: gpupaas.io/dedicated, operator: Exists}\n      containers:\n",
    1,
)


@pytest.fixture
def nodes(fake: FakeKube) -> None:
    # The scheduler takes the first node (by name) that fits: the dedicated one comes first.
    fake.set_nodes(
        [
            node(
                "a-dedicated",
                gpus=8,
                labels={"nvidia.com/gpu.product": H100, "gpupaas.io/dedicated": "true"},
                taints=[TAINT],
            ),
            node("b-a100", gpus=8, labels={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}),
            node("c-h100", gpus=8, labels={"nvidia.com/gpu.product": H100}),
        ]
    )


@pytest.fixture
def kube(fake: FakeKube) -> Iterator[client.ApiClient]:
    """The official client, on the fake API server."""
    with contextlib.closing(fake.api_client()) as api_client:
        yield api_client


@pytest.fixture
async def placing(kubeconfig: str, nodes: None) -> AsyncIterator[KubernetesDriver]:
    """A driver with the placement settings the registry gives it for a cluster with dedicated nodes."""
    target = ClusterTarget(
        id=uuid.uuid4(),
        driver=ClusterDriver.KUBERNETES,
        updated_at=datetime.now(UTC),
        dedicated_node_label=DEDICATED,
        dedicated_node_taint=f"{DEDICATED}:NoSchedule",
    )
    settings = placement_settings(target)
    assert settings == PlacementSettings(
        gpu_model_labels={"NVIDIA": "nvidia.com/gpu.product", "AMD": "amd.com/gpu.product-name"},
        dedicated_label=parse_node_label(DEDICATED),
        dedicated_taint=parse_taint(f"{DEDICATED}:NoSchedule"),
    )
    driver = KubernetesDriver(
        ClusterConnection(kubeconfig=kubeconfig),
        readiness_timeout=5,
        request_timeout=5,
        poll_interval=0.05,
        placement=settings,
    )
    try:
        yield driver
    finally:
        await driver.close()


def pod_of(kube: client.ApiClient, namespace: str) -> dict[str, Any]:
    """The namespace's one pod, as the API server answers the official client (JSON: the fake
    serves quantities as numbers, which the client's models would refuse)."""
    answer: Any = client.CoreV1Api(kube).list_namespaced_pod(namespace, _preload_content=False)
    [pod] = json.loads(cast(bytes, answer.data))["items"]
    assert isinstance(pod, dict)
    return pod


def required_terms(pod: dict[str, Any]) -> list[list[tuple[str, str, list[str]]]]:
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    return [
        [(e["key"], e["operator"], list(e.get("values") or [])) for e in term.get("matchExpressions") or []]
        for term in terms["nodeSelectorTerms"]
    ]


def notebook(name: str, allocation: str, model: str | None = H100, resources_text: str = NOTEBOOK) -> Plan:
    return make_plan(
        name=name,
        gpus=1,
        model=model,
        allocation=allocation,
        resources_text=resources_text,
        outputs=NOTEBOOK_OUTPUTS,
    )


async def test_a_shared_profile_s_pods_go_to_its_gpu_model_and_never_to_the_dedicated_nodes(
    placing: KubernetesDriver, kube: client.ApiClient
) -> None:
    await placing.apply(notebook("shared", "SHARED", resources_text=TOLERATING))

    pod = pod_of(kube, ns("shared"))
    assert pod["spec"].get("nodeName") == "c-h100"
    assert required_terms(pod) == [
        [
            ("nvidia.com/gpu.product", "In", [H100]),
            ("gpupaas.io/dedicated", "NotIn", ["true"]),
        ]
    ]


async def test_a_dedicated_profile_s_pods_go_to_the_dedicated_nodes(
    placing: KubernetesDriver, kube: client.ApiClient
) -> None:
    await placing.apply(notebook("reserved", "DEDICATED"))

    pod = pod_of(kube, ns("reserved"))
    assert pod["spec"].get("nodeName") == "a-dedicated"
    assert required_terms(pod) == [
        [("nvidia.com/gpu.product", "In", [H100]), ("gpupaas.io/dedicated", "In", ["true"])]
    ]
    tolerations = [(t["key"], t["operator"], t["value"], t["effect"]) for t in pod["spec"]["tolerations"]]
    assert ("gpupaas.io/dedicated", "Equal", "true", "NoSchedule") in tolerations


async def test_without_placement_settings_the_pods_go_wherever_they_fit(
    driver: KubernetesDriver, nodes: None, kube: client.ApiClient
) -> None:
    # The driver as tests build it, without a cluster's settings: no affinity added, and the
    # first node that fits takes the pod, the dedicated one here (the template tolerates its taint).
    await driver.apply(notebook("anywhere", "SHARED", resources_text=TOLERATING))

    pod = pod_of(kube, ns("anywhere"))
    assert pod["spec"].get("nodeName") == "a-dedicated"
    assert "affinity" not in pod["spec"]


async def test_a_gpu_service_s_pod_goes_where_its_dedicated_compute_instance_s_gpus_are(
    placing: KubernetesDriver, kube: client.ApiClient
) -> None:
    compute = make_plan(name="train", gpus=2, model=H100, allocation="DEDICATED")
    await placing.apply(compute)
    builtin = builtin_instance_template("jupyterlab-pytorch")
    assert builtin is not None
    resources: dict[str, Any] = {
        "cpu": "8",
        "memory": "64Gi",
        "storage": "100Gi",
        "gpuCount": 2,
        "gpuVendor": "NVIDIA",
        "gpuModel": H100,
    }
    service = build_service_plan(
        service_id=str(uuid.uuid4()),
        name="notebook",
        spec=resolve(builtin.spec, {"generated_token": "t" * 32}),
        gpu_count=1,
        compute_id=compute.instance_id,
        compute_name="train",
        project="team-a",
        compute_resources=resources,
        profile_name="h100",
        allocation="DEDICATED",
    )
    assert service.namespace == compute.namespace

    await placing.apply(service)

    pod = pod_of(kube, compute.namespace)
    assert pod["spec"].get("nodeName") == "a-dedicated"
    assert required_terms(pod) == [
        [("nvidia.com/gpu.product", "In", [H100]), ("gpupaas.io/dedicated", "In", ["true"])]
    ]
