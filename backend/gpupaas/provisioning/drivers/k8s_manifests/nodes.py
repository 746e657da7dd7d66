"""A Node object as a platform admin checks it (`NodeInfo`): allocatable CPU and memory, its GPUs per
extended resource (the known ones and any that looks like a GPU), and the GPU model from the labels
that GPU feature discovery and the clouds set.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from decimal import ROUND_FLOOR
from typing import Any

from gpupaas.core.quantities import parse_quantity
from gpupaas.provisioning.drivers.base import KNOWN_GPU_RESOURCES, NodeInfo
from gpupaas.provisioning.drivers.k8s_manifests.objects import condition_of, metadata_of, status_of

__all__ = ["GPU_MODEL_LABELS", "gpu_resources", "is_gpu_resource", "node_info"]


# The device plugins' extended resources (gpu-operator, AMD, Intel, Huawei Ascend).
_GPU_LIKE = re.compile(r"gpu|ascend|^mig-", re.IGNORECASE)


# Where GPU feature discovery and the clouds put the GPU model, most specific first.
GPU_MODEL_LABELS: tuple[str, ...] = (
    "nvidia.com/gpu.product",
    "amd.com/gpu.product-name",
    "beta.amd.com/gpu.product-name",
    "gpu.intel.com/product",
    "cloud.google.com/gke-accelerator",
    "k8s.amazonaws.com/accelerator",
    "accelerator",
)


def is_gpu_resource(name: str) -> bool:
    """A GPU-like extended resource: the known ones, and any "<domain>/<name>" whose name says gpu,
    ascend or a MIG slice (nvidia.com/mig-1g.10gb, nvidia.com/gpu.shared)."""
    if name in KNOWN_GPU_RESOURCES:
        return True
    domain, slash, rest = name.partition("/")
    return bool(slash and domain and _GPU_LIKE.search(rest))


def _whole(quantity: object) -> int:
    try:
        return int(parse_quantity(str(quantity)).to_integral_value(rounding=ROUND_FLOOR))
    except (ValueError, ArithmeticError):
        return 0


def gpu_resources(capacity: Mapping[str, Any]) -> dict[str, int]:
    """The GPU-like extended resources of a node's capacity that it has any of."""
    found = {name: _whole(value) for name, value in capacity.items() if is_gpu_resource(str(name))}
    return {name: count for name, count in sorted(found.items()) if count > 0}


def node_info(node: Mapping[str, Any], model_labels: Sequence[str] = GPU_MODEL_LABELS) -> NodeInfo:
    """A Node object (GET /api/v1/nodes) as a NodeInfo; its GPU model is the value of the first of
    `model_labels` it has (a cluster's own GPU model labels come before the known ones)."""
    status = status_of(node)
    allocatable = status.get("allocatable")
    allocatable = allocatable if isinstance(allocatable, Mapping) else {}
    capacity = status.get("capacity")
    capacity = capacity if isinstance(capacity, Mapping) else {}
    labels = metadata_of(node).get("labels")
    labels = labels if isinstance(labels, Mapping) else {}
    model = next((str(labels[key]) for key in model_labels if labels.get(key)), None)
    ready = condition_of(node, "Ready")
    return NodeInfo(
        name=str(metadata_of(node).get("name") or ""),
        cpu=str(allocatable.get("cpu") or capacity.get("cpu") or "0"),
        memory=str(allocatable.get("memory") or capacity.get("memory") or "0"),
        gpus=gpu_resources({**capacity, **{k: v for k, v in allocatable.items() if k not in capacity}}),
        gpu_model=model,
        ready=ready is not None and ready.get("status") == "True",
    )
