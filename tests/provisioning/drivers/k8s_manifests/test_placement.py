"""Placement (k8s_manifests/placement.py), built and asserted on manifests: the GPU model's node
affinity and the dedicated nodes' label and toleration, in every pod template, ANDed into every
node selector term a template has."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gpupaas.provisioning.drivers.k8s_manifests.placement import (
    DEFAULT_GPU_MODEL_LABELS,
    NodeLabel,
    Placement,
    PlacementSettings,
    Taint,
    parse_node_label,
    parse_taint,
    place,
    placement_for,
)
from gpupaas.provisioning.render.policy import POD_SPEC_PATHS

SETTINGS = PlacementSettings(
    gpu_model_labels=DEFAULT_GPU_MODEL_LABELS,
    dedicated_label=NodeLabel("gpupaas.io/dedicated", "true"),
    dedicated_taint=Taint("gpupaas.io/dedicated", "true", "NoSchedule"),
)
H100 = {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H100-80GB-HBM3"]}
ON_DEDICATED = {"key": "gpupaas.io/dedicated", "operator": "In", "values": ["true"]}
OFF_DEDICATED = {"key": "gpupaas.io/dedicated", "operator": "NotIn", "values": ["true"]}
TOLERATION = {"key": "gpupaas.io/dedicated", "operator": "Equal", "value": "true", "effect": "NoSchedule"}


def test_the_gpu_model_of_each_vendor_is_required_by_its_node_label() -> None:
    nvidia = placement_for(
        vendor="NVIDIA", model="NVIDIA-H100-80GB-HBM3", allocation="SHARED", settings=SETTINGS
    )
    assert nvidia == Placement(requirements=(H100, OFF_DEDICATED))
    amd = placement_for(
        vendor="AMD",
        model="AMD_Instinct_MI300X_OAM",
        allocation="SHARED",
        settings=PlacementSettings(DEFAULT_GPU_MODEL_LABELS),
    )
    assert amd.requirements == (
        {"key": "amd.com/gpu.product-name", "operator": "In", "values": ["AMD_Instinct_MI300X_OAM"]},
    )


@pytest.mark.parametrize(
    ("vendor", "model", "labels"),
    [
        ("NVIDIA", None, DEFAULT_GPU_MODEL_LABELS),  # no model: any of the vendor's nodes
        ("NVIDIA", "  ", DEFAULT_GPU_MODEL_LABELS),
        ("INTEL", "Max 1550", DEFAULT_GPU_MODEL_LABELS),  # no label known for the vendor
        ("CPU", "x", DEFAULT_GPU_MODEL_LABELS),
        ("NVIDIA", "NVIDIA-H100-80GB-HBM3", {"NVIDIA": ""}),  # turned off on the cluster
    ],
)
def test_no_model_affinity_without_a_model_or_a_label(
    vendor: str, model: str | None, labels: dict[str, str]
) -> None:
    placement = placement_for(
        vendor=vendor, model=model, allocation="SHARED", settings=PlacementSettings(labels)
    )
    assert not placement


def test_dedicated_profiles_require_the_dedicated_label_and_tolerate_the_taint() -> None:
    placement = placement_for(
        vendor="NVIDIA", model="NVIDIA-H100-80GB-HBM3", allocation="DEDICATED", settings=SETTINGS
    )
    assert placement == Placement(requirements=(H100, ON_DEDICATED), tolerations=(TOLERATION,))
    # a cluster without dedicated nodes: the model only
    plain = PlacementSettings(DEFAULT_GPU_MODEL_LABELS)
    assert placement_for(
        vendor="NVIDIA", model="NVIDIA-H100-80GB-HBM3", allocation="DEDICATED", settings=plain
    ) == (Placement(requirements=(H100,)))


def workload(kind: str, spec: dict[str, Any]) -> dict[str, Any]:
    manifest: dict[str, Any] = {"apiVersion": "v1", "kind": kind, "metadata": {"name": "w"}}
    node: dict[str, Any] = manifest
    path = POD_SPEC_PATHS[kind]
    for part in path[:-1]:
        node = node.setdefault(str(part), {})
    node[str(path[-1])] = copy.deepcopy(spec)
    return manifest


def spec_of(manifest: dict[str, Any]) -> dict[str, Any]:
    node: Any = manifest
    for part in POD_SPEC_PATHS[manifest["kind"]]:
        node = node[part]
    assert isinstance(node, dict)
    return node


@pytest.mark.parametrize(
    "kind", ["Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob"]
)
def test_every_pod_template_gets_the_placement(kind: str) -> None:
    placement = Placement(requirements=(H100, ON_DEDICATED), tolerations=(TOLERATION,))
    placed = place(workload(kind, {"containers": [{"name": "main", "image": "x"}]}), placement)
    spec = spec_of(placed)
    assert spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [{"matchExpressions": [H100, ON_DEDICATED]}]
    }
    assert spec["tolerations"] == [TOLERATION]


def test_the_requirements_go_into_every_term_of_the_template_s_own() -> None:
    own_terms = [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-7"]}]},
    ]
    spec = {
        "containers": [{"name": "main", "image": "x"}],
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": own_terms},
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {}}],
            },
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": []},
        },
    }
    original = workload("Deployment", spec)
    placed = place(original, Placement(requirements=(H100,), tolerations=(TOLERATION,)))

    assert spec_of(original) == spec  # a copy: the plan's manifest is left alone
    placed_spec = spec_of(placed)
    node_affinity = placed_spec["affinity"]["nodeAffinity"]
    assert node_affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}, H100]},
        {
            "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-7"]}],
            "matchExpressions": [H100],
        },
    ]
    assert node_affinity["preferredDuringSchedulingIgnoredDuringExecution"] == [
        {"weight": 1, "preference": {}}
    ]
    assert "podAntiAffinity" in placed_spec["affinity"]
    assert placed_spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists"}, TOLERATION]
    # placing twice adds nothing twice (a re-applied plan is the same)
    placement = Placement(requirements=(H100,), tolerations=(TOLERATION,))
    assert place(placed, placement) == placed


def test_null_affinity_fields_are_filled_in() -> None:
    placed = place(
        workload("Pod", {"containers": [], "affinity": None, "tolerations": None}),
        Placement((H100,), (TOLERATION,)),
    )
    spec = spec_of(placed)
    assert spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [{"matchExpressions": [H100]}]
    }
    assert spec["tolerations"] == [TOLERATION]


def test_objects_without_pods_are_left_as_they_are() -> None:
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}}
    assert place(config_map, Placement(requirements=(H100,))) == config_map


def test_settings_parse_as_kubectl_writes_them() -> None:
    assert parse_node_label(" gpupaas.io/dedicated=true ") == NodeLabel("gpupaas.io/dedicated", "true")
    assert parse_taint("gpupaas.io/dedicated=true:NoSchedule") == Taint(
        "gpupaas.io/dedicated", "true", "NoSchedule"
    )
    assert parse_taint("dedicated:NoExecute") == Taint("dedicated", "", "NoExecute")
    assert str(parse_taint("dedicated:NoExecute")) == "dedicated:NoExecute"
    for text, message in [
        ("gpupaas.io/dedicated", "must be key=value"),
        ("bad key=true", '"bad key" is not a label key'),
        ("dedicated=" + "x" * 64, "is not a label value"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_node_label(text)
    for text, message in [
        ("gpupaas.io/dedicated=true", "must be key\\[=value\\]:effect"),
        ("gpupaas.io/dedicated=true:Never", "must be key\\[=value\\]:effect"),
        ("-x=true:NoSchedule", '"-x" is not a label key'),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_taint(text)
