"""A service instance's CPU, memory and workspace size within its compute instance, by pure functions.

What the spec leaves out follows the GPUs (plan.service_resources): a service with n of its
compute instance's N GPUs gets n/N of the instance's CPU, memory and storage. What the spec gives
(spec.Resources, spec.Storage.size) is taken as it is, once `problems` found it within what the
compute instance has: a request or limit of more CPU or memory than the instance has, or a
workspace larger than its storage, could never be admitted by its namespace's quota.

A request left out is the limit given, and a limit left out the request given (the API server
defaults a request to its limit; a limit from the namespace's LimitRange default could be below
the request, which it refuses).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from gpupaas.core import gpu_resources
from gpupaas.core.quantities import parse_quantity
from gpupaas.instance_templates.spec import ServiceSpec
from gpupaas.service_instances.podspec import DEFAULT_WORKSPACE_SIZE

__all__ = ["Sizing", "problems", "service_resources", "size_service"]


Path = tuple[str, ...]


def _cpu(cores: Fraction) -> str:
    millicores = math.floor(cores * 1000)
    return str(millicores // 1000) if millicores % 1000 == 0 else f"{millicores}m"


def _bytes(size: Fraction) -> str:
    mebibytes = math.floor(size / 2**20)
    if mebibytes % 1024 == 0:
        return f"{mebibytes // 1024}Gi"
    return f"{mebibytes}Mi"


def _quantity(text: str) -> Fraction:
    return Fraction(parse_quantity(text)).limit_denominator(10**6)


def service_resources(
    compute_resources: Mapping[str, Any], gpu_count: int, partition: str | None = None
) -> tuple[str | None, str | None, str]:
    """(cpu, memory, workspace size) of a service with `gpu_count` GPUs (or devices of `partition`,
    each its share of a GPU) in a compute instance with `compute_resources` (its snapshot's
    resources); cpu and memory None: the namespace's defaults."""
    total = int(compute_resources.get("gpuCount") or 0)
    storage = _quantity(str(compute_resources["storage"]))
    default_workspace = _quantity(DEFAULT_WORKSPACE_SIZE)
    if gpu_count <= 0 or total <= 0:
        workspace = min(storage, default_workspace)
        return None, None, _bytes(workspace) if workspace >= 2**20 else DEFAULT_WORKSPACE_SIZE
    gpus = gpu_count * (
        gpu_resources.partition_share(partition, compute_resources.get("gpuModel")) if partition else 1
    )
    share = min(Fraction(gpus), Fraction(total)) / total
    cpu = _quantity(str(compute_resources["cpu"])) * share
    memory = _quantity(str(compute_resources["memory"])) * share
    workspace = storage * share
    return (
        _cpu(cpu) if cpu >= Fraction(1, 1000) else None,
        _bytes(memory) if memory >= 2**20 else None,
        _bytes(workspace) if workspace >= 2**20 else DEFAULT_WORKSPACE_SIZE,
    )


@dataclass(frozen=True)
class Sizing:
    """The container's CPU and memory (None: the namespace's LimitRange defaults) and the
    workspace's size (a NEW_VOLUME's claim)."""

    cpu_request: str | None
    cpu_limit: str | None
    memory_request: str | None
    memory_limit: str | None
    workspace: str


def size_service(compute_resources: Mapping[str, Any], gpu_count: int, spec: ServiceSpec) -> Sizing:
    """The sizing of a service with `gpu_count` GPUs (or devices of its partition) and `spec`, in a
    compute instance with `compute_resources` (its snapshot's resources)."""
    cpu, memory, workspace = service_resources(compute_resources, gpu_count, spec.gpu_partition)
    given = spec.resources
    cpu_request = given.cpu_request or given.cpu_limit
    cpu_limit = given.cpu_limit or given.cpu_request
    memory_request = given.memory_request or given.memory_limit
    memory_limit = given.memory_limit or given.memory_request
    return Sizing(
        cpu_request=cpu_request or cpu,
        cpu_limit=cpu_limit or cpu,
        memory_request=memory_request or memory,
        memory_limit=memory_limit or memory,
        workspace=spec.storage.size if spec.storage.mode == "NEW_VOLUME" and spec.storage.size else workspace,
    )


def _amount(text: object) -> Any:
    try:
        return parse_quantity(str(text))
    except ValueError:
        return None


def problems(
    compute_resources: Mapping[str, Any], spec: ServiceSpec, instance_name: str
) -> list[tuple[Path, str]]:
    """What of the spec's resources and storage size the compute instance cannot hold, as (path,
    message) pairs with the API's field names (`("resources", "cpuLimit")`). The values themselves
    were checked by spec.check_spec."""
    found: list[tuple[Path, str]] = []
    given = spec.resources
    for key, value, of in (
        ("cpuRequest", given.cpu_request, "cpu"),
        ("cpuLimit", given.cpu_limit, "cpu"),
        ("memoryRequest", given.memory_request, "memory"),
        ("memoryLimit", given.memory_limit, "memory"),
    ):
        has = compute_resources.get(of)
        asked, held = _amount(value), _amount(has)
        if value is None or asked is None or held is None:
            continue
        if asked > held:
            unit = " CPU" if of == "cpu" else " of memory"
            found.append(
                (
                    ("resources", key),
                    f'must be within what compute instance "{instance_name}" has: {has}{unit} '
                    f"({value} asked)",
                )
            )
    size = spec.storage.size
    storage = compute_resources.get("storage")
    if size is not None and spec.storage.mode != "EXISTING_CLAIM":
        asked, held = _amount(size), _amount(storage)
        if asked is not None and held is not None and asked > held:
            found.append(
                (
                    ("storage", "size"),
                    f'must be within compute instance "{instance_name}"\'s storage: {storage} ({size} asked)',
                )
            )
    return found
