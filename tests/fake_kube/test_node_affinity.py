"""The fake scheduler places pods as kube-scheduler's node affinity and taint filters do: seen
through the official client (pods created, where they were bound, why not), and on the rules."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from tests.fake_kube import FakeKube, node
from tests.fake_kube.controllers.node_affinity import matches_node, tolerates, untolerated_taint
from tests.fake_kube.test_fake_kube import json_as, namespace, present, wait_until

H100 = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
A100 = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-80GB"}
DEDICATED_TAINT = {"key": "gpupaas.io/dedicated", "value": "true", "effect": "NoSchedule"}


def required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}
    }


def expression(key: str, operator: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": operator, **({"values": list(values)} if values else {})}


# ---------------------------------------------------------------------------------- the rules


@pytest.mark.parametrize(
    ("requirement", "labels", "matches"),
    [
        (expression("gpu", "In", "h100", "a100"), {"gpu": "a100"}, True),
        (expression("gpu", "In", "h100"), {}, False),
        (expression("gpu", "NotIn", "h100"), {}, True),  # no such label: not in the set
        (expression("gpu", "NotIn", "h100"), {"gpu": "h100"}, False),
        (expression("gpu", "Exists"), {"gpu": ""}, True),
        (expression("gpu", "DoesNotExist"), {"gpu": "h100"}, False),
        (expression("memory", "Gt", "40"), {"memory": "80"}, True),
        (expression("memory", "Gt", "80"), {"memory": "80"}, False),
        (expression("memory", "Lt", "81"), {"memory": "80"}, True),
        (expression("memory", "Lt", "81"), {"memory": "eighty"}, False),
        (expression("gpu", "In"), {"gpu": "h100"}, False),  # invalid: the term matches nothing
    ],
)
def test_node_selector_requirements(
    requirement: dict[str, Any], labels: dict[str, str], matches: bool
) -> None:
    spec = {"affinity": required({"matchExpressions": [requirement]})}
    assert matches_node(spec, node("n", labels=labels)) is matches


def test_terms_are_ored_their_requirements_anded_and_an_empty_term_matches_nothing() -> None:
    h100, a100 = node("h100", labels=H100), node("a100", labels=A100)
    either = required(
        {"matchExpressions": [expression("nvidia.com/gpu.product", "In", "NVIDIA-H100-80GB-HBM3")]},
        {"matchFields": [expression("metadata.name", "In", "a100")]},
    )
    assert matches_node({"affinity": either}, h100) and matches_node({"affinity": either}, a100)
    both = required(
        {
            "matchExpressions": [expression("nvidia.com/gpu.product", "Exists")],
            "matchFields": [expression("metadata.name", "NotIn", "a100")],
        }
    )
    assert matches_node({"affinity": both}, h100) and not matches_node({"affinity": both}, a100)
    assert not matches_node({"affinity": required({})}, h100)
    # nodeSelector and the affinity must both hold
    spec = {"nodeSelector": {"kubernetes.io/hostname": "a100"}, "affinity": either}
    assert matches_node(spec, a100) and not matches_node(spec, h100)


def test_tolerations_as_kubernetes_matches_them() -> None:
    assert tolerates({"key": "gpupaas.io/dedicated", "operator": "Equal", "value": "true"}, DEDICATED_TAINT)
    assert tolerates(
        {"key": "gpupaas.io/dedicated", "value": "true", "effect": "NoSchedule"}, DEDICATED_TAINT
    )
    assert not tolerates({"key": "gpupaas.io/dedicated", "value": "false"}, DEDICATED_TAINT)
    assert not tolerates(
        {"key": "gpupaas.io/dedicated", "operator": "Exists", "effect": "NoExecute"}, DEDICATED_TAINT
    )
    assert tolerates({"key": "gpupaas.io/dedicated", "operator": "Exists"}, DEDICATED_TAINT)
    assert tolerates({"operator": "Exists"}, DEDICATED_TAINT)  # every taint
    soft = {"key": "spot", "effect": "PreferNoSchedule"}
    assert untolerated_taint({}, [soft]) is None  # only scores nodes
    assert untolerated_taint({}, [soft, DEDICATED_TAINT]) == DEDICATED_TAINT


# ---------------------------------------------------------------------------------- through the client


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "busybox"}], **spec},
    }


def test_pods_are_bound_where_their_affinity_and_tolerations_allow(
    fake_kube: FakeKube, kube_client: client.ApiClient
) -> None:
    core = client.CoreV1Api(kube_client)
    core.create_namespace(json_as(client.V1Namespace, namespace("team-a")))
    # by name, the scheduler tries "a-dedicated" first, then "b-a100", then "c-h100"
    fake_kube.set_nodes(
        [
            node(
                "a-dedicated",
                gpus=8,
                labels={**H100, "gpupaas.io/dedicated": "true"},
                taints=[DEDICATED_TAINT],
            ),
            node("b-a100", gpus=8, labels=A100),
            node("c-h100", gpus=8, labels=H100),
        ]
    )
    h100 = {"matchExpressions": [expression("nvidia.com/gpu.product", "In", "NVIDIA-H100-80GB-HBM3")]}
    dedicated = {
        "matchExpressions": [
            expression("nvidia.com/gpu.product", "In", "NVIDIA-H100-80GB-HBM3"),
            expression("gpupaas.io/dedicated", "In", "true"),
        ]
    }
    toleration = {"key": "gpupaas.io/dedicated", "operator": "Equal", "value": "true", "effect": "NoSchedule"}
    for manifest in (
        pod("shared", affinity=required(h100)),
        pod("reserved", affinity=required(dedicated), tolerations=[toleration]),
        pod("untolerated", affinity=required(dedicated)),
        pod("nowhere", affinity=required({})),
    ):
        core.create_namespaced_pod("team-a", json_as(client.V1Pod, manifest))

    def node_of(name: str) -> str | None:
        return present(core.read_namespaced_pod(name, "team-a").spec).node_name

    assert wait_until(lambda: node_of("shared")) == "c-h100"
    assert wait_until(lambda: node_of("reserved")) == "a-dedicated"

    def why(name: str) -> str | None:
        found = core.read_namespaced_pod(name, "team-a")
        condition = next(
            (c for c in present(found.status).conditions or [] if c.type == "PodScheduled"), None
        )
        return condition.message if condition is not None and condition.status == "False" else None

    assert wait_until(lambda: why("untolerated")).startswith(
        "0/3 nodes are available: 1 node(s) had untolerated taint {gpupaas.io/dedicated: true}, "
        "2 node(s) didn't match Pod's node affinity/selector."
    )
    assert wait_until(lambda: why("nowhere")).startswith(
        "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector."
    )
    assert node_of("untolerated") is None and node_of("nowhere") is None
