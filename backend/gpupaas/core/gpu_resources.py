"""GPU resource names per vendor *and model*, and the partitions of a GPU a service may ask for.

A pod asks for GPUs by the extended resource its vendor's device plugin advertises. For most vendors
that is one name per vendor; Huawei's Ascend plugin names it per chip (`huawei.com/Ascend910` for the
910 and 910B, `huawei.com/Ascend310P`, `huawei.com/Ascend310`), so a cluster with 310P and 910B nodes
needs the model to pick the name. `resource_name(vendor, model, names)` does: a cluster's own name for
the vendor (`names`, when it differs from the vendor's default) wins, otherwise the model decides.

Partitions: NVIDIA's Multi-Instance GPU (MIG, the gpu-operator's "mixed" strategy) advertises each
profile as its own resource, `nvidia.com/mig-<slices>g.<memory>gb`. A MIG device is a share of one
GPU: `<slices>` of its 7 compute slices (4 on an A30), which is what `partition_share` counts when a
compute instance's GPUs are shared among its services. Which partitions exist is up to each cluster:
`advertised` reads them from the nodes a cluster check saw (NodeInfo.to_json's `gpus`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

__all__ = [
    "DEFAULT_RESOURCE_NAMES",
    "AdvertisedResource",
    "Partition",
    "advertised",
    "is_partition",
    "model_matches",
    "parse_partition",
    "partition_problem",
    "partition_share",
    "resource_name",
    "vendor_of",
]

# The vendor's resource when its model says nothing more (CPU names one only to quota it at 0).
DEFAULT_RESOURCE_NAMES: dict[str, str] = {
    "NVIDIA": "nvidia.com/gpu",
    "AMD": "amd.com/gpu",
    "INTEL": "gpu.intel.com/i915",
    "ASCEND": "huawei.com/Ascend910",
    "CPU": "nvidia.com/gpu",
}

# Ascend chips by model, most specific first: "310P" must win over "310".
_ASCEND_BY_MODEL: tuple[tuple[str, str], ...] = (
    ("310p", "huawei.com/Ascend310P"),
    ("310", "huawei.com/Ascend310"),
    ("910", "huawei.com/Ascend910"),
)

_MIG = re.compile(r"nvidia\.com/mig-([1-7])g\.([1-9][0-9]{0,3})gb")
# The GPUs whose MIG has 4 compute slices rather than 7.
_FOUR_SLICE_MODELS = ("a30",)


def resource_name(vendor: str, model: str | None, names: Mapping[str, str] | None = None) -> str:
    """The extended resource a pod asks for `vendor`'s GPUs of `model` (None: any model).

    `names` are a cluster's resource names per vendor (possibly with the defaults merged in): one
    that differs from the vendor's default is the cluster's own choice and wins for every model."""
    given = (names or {}).get(vendor)
    default = DEFAULT_RESOURCE_NAMES.get(vendor, DEFAULT_RESOURCE_NAMES["NVIDIA"])
    if given and given != default:
        return given
    if vendor == "ASCEND" and model:
        compact = re.sub(r"[\s_-]", "", model).lower()
        for part, name in _ASCEND_BY_MODEL:
            if part in compact:
                return name
    return default


def vendor_of(resource: str) -> str | None:
    """The vendor whose device plugin advertises `resource`, or None for one gpupaas does not know."""
    domain = resource.partition("/")[0]
    return {"nvidia.com": "NVIDIA", "amd.com": "AMD", "gpu.intel.com": "INTEL", "huawei.com": "ASCEND"}.get(
        domain
    )


@dataclass(frozen=True)
class Partition:
    """A MIG profile: `slices` compute slices and `memory_gb` of one GPU's memory."""

    resource: str  # nvidia.com/mig-1g.10gb
    slices: int
    memory_gb: int

    @property
    def profile(self) -> str:
        """The profile as nvidia-smi names it: "1g.10gb"."""
        return f"{self.slices}g.{self.memory_gb}gb"


def parse_partition(resource: str) -> Partition | None:
    """The partition `resource` names, or None when it is not one (nvidia.com/gpu is a whole GPU)."""
    match = _MIG.fullmatch(resource)
    if match is None:
        return None
    return Partition(resource=resource, slices=int(match.group(1)), memory_gb=int(match.group(2)))


def is_partition(resource: str) -> bool:
    return parse_partition(resource) is not None


def partition_problem(vendor: str, resource: str) -> str | None:
    """What is wrong with `resource` as the partition of a template or service of `vendor`."""
    if vendor != "NVIDIA":
        return (
            f"only NVIDIA GPUs have partitions (MIG profiles such as nvidia.com/mig-1g.10gb); a {vendor} "
            "template asks for whole GPUs: leave gpuPartition empty"
        )
    if parse_partition(resource) is not None:
        return None
    short = re.fullmatch(r"(?:mig-)?([1-7]g\.[0-9]+gb)", resource.strip().lower())
    hint = f': did you mean "nvidia.com/mig-{short.group(1)}"?' if short else ""
    return (
        'must be a MIG profile resource such as "nvidia.com/mig-1g.10gb" '
        f"(nvidia.com/mig-<slices>g.<memory>gb, slices 1 to 7){hint}"
    )


def partition_share(resource: str, model: str | None) -> Fraction:
    """How much of one GPU a device of `resource` is: 1 for a whole GPU, slices/7 for a MIG profile
    (slices/4 on an A30)."""
    partition = parse_partition(resource)
    if partition is None:
        return Fraction(1)
    total = 4 if model and any(m in model.lower() for m in _FOUR_SLICE_MODELS) else 7
    return Fraction(min(partition.slices, total), total)


@dataclass(frozen=True)
class AdvertisedResource:
    """A GPU resource that nodes of one model advertise, over the cluster."""

    resource: str
    vendor: str | None
    model: str | None
    partition: bool
    count: int  # devices over those nodes (allocatable)
    nodes: int  # how many nodes advertise it


def advertised(nodes: Iterable[Mapping[str, Any]]) -> list[AdvertisedResource]:
    """The GPU resources the nodes advertise, per (resource, model), whole GPUs first then
    partitions, each by resource and model. `nodes` are NodeInfo.to_json()s (a cluster's last
    check); a node that is not ready is left out, as the scheduler leaves it out."""
    found: dict[tuple[str, str | None], list[int]] = {}
    for node in nodes:
        if node.get("ready") is False:
            continue
        gpus = node.get("gpus")
        if not isinstance(gpus, Mapping):
            resource = node.get("gpuResource")
            gpus = {resource: node.get("gpuCount") or 0} if resource else {}
        model = str(node.get("gpuModel") or "").strip() or None
        for resource, count in gpus.items():
            if not isinstance(count, int) or count <= 0:
                continue
            totals = found.setdefault((str(resource), model), [0, 0])
            totals[0] += count
            totals[1] += 1
    return [
        AdvertisedResource(
            resource=resource,
            vendor=vendor_of(resource),
            model=model,
            partition=is_partition(resource),
            count=totals[0],
            nodes=totals[1],
        )
        for (resource, model), totals in sorted(
            found.items(), key=lambda item: (is_partition(item[0][0]), item[0][0], item[0][1] or "")
        )
    ]


def model_matches(wanted: str | None, node_model: str | None, *, exact: bool) -> bool:
    """Whether an instance asking for GPU model `wanted` (None: any) runs on nodes of `node_model`:
    exactly on Kubernetes (the node affinity), as part of the name (case aside) when simulated."""
    if wanted is None:
        return True
    if node_model is None:
        return False
    return wanted == node_model if exact else wanted.lower() in node_model.lower()
