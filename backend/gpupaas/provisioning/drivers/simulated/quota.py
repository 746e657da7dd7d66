"""ResourceQuota admission on the simulated cluster, as a real API server's quota admission plugin
does it for the namespace of a compute instance: pure functions of the objects.

What one object counts against a quota (`usage`): every object its `count/<resource>` and, for
the kinds a quota names by a short name, `pods`, `persistentvolumeclaims`, `services`, `secrets`,
`configmaps`; a controller's pod template (Deployment, StatefulSet, ReplicaSet; a bare Pod) once
per replica (a Deployment scaled to zero holds nothing): its containers' `requests.<resource>`
(cpu and memory and ephemeral-storage also under their bare names) and `limits.<resource>` for
cpu, memory and ephemeral-storage, after the namespace's LimitRange filled in the defaults of a
container that sets none (the LimitRanger admission plugin runs before the quota's); a
PersistentVolumeClaim its `requests.storage`; a NodePort Service its ports as
`services.nodeports`.

`admit` goes through a plan's objects in apply order as the API server would take them: each is
refused when it would take the namespace over one of its quotas' hard limits, with the API
server's own words ('persistentvolumeclaims "lab-workspace" is forbidden: exceeded quota: compute,
requested: requests.storage=250Gi, used: requests.storage=0, limited: requests.storage=200Gi'), or
when the quota limits cpu or memory and a container sets none without a LimitRange default
('failed quota: compute: must specify limits.cpu for: main'). `status` is the quota's
`status.hard` and `status.used` from what the namespace holds.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from gpupaas.core.quantities import parse_quantity
from gpupaas.provisioning.drivers.simulated.admission import cpu_text, memory_text
from gpupaas.provisioning.plan import PermanentError

__all__ = ["admit", "status", "usage", "usage_of"]

_COMPUTE = ("cpu", "memory", "ephemeral-storage")
_PLURALS = {
    "Pod": "pods",
    "PersistentVolumeClaim": "persistentvolumeclaims",
    "Service": "services",
    "Secret": "secrets",
    "ConfigMap": "configmaps",
    "ResourceQuota": "resourcequotas",
    "ReplicationController": "replicationcontrollers",
}
_CONTROLLERS = ("Deployment", "StatefulSet", "ReplicaSet")

Usage = dict[str, Decimal]


def _quantity(value: object) -> Decimal:
    try:
        return parse_quantity(str(value))
    except ValueError:
        return Decimal(0)


def _add(total: Usage, more: Mapping[str, Decimal], times: int = 1) -> None:
    for key, value in more.items():
        total[key] = total.get(key, Decimal(0)) + value * times


def _defaults(limit_ranges: Iterable[Mapping[str, Any]]) -> tuple[dict[str, str], dict[str, str]]:
    """The Container defaults of the namespace's LimitRanges: (defaultRequest, default)."""
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    for limit_range in limit_ranges:
        for item in (limit_range.get("spec") or {}).get("limits") or []:
            if not isinstance(item, Mapping) or item.get("type") != "Container":
                continue
            for key, value in (item.get("defaultRequest") or {}).items():
                requests.setdefault(str(key), str(value))
            for key, value in (item.get("default") or {}).items():
                limits.setdefault(str(key), str(value))
    return requests, limits


def _container_resources(
    container: Mapping[str, Any], defaults: tuple[dict[str, str], dict[str, str]]
) -> tuple[dict[str, str], dict[str, str]]:
    """A container's requests and limits as the API server stores them: a request left out is its
    limit (API defaulting), then the LimitRange's defaults where it still sets none (LimitRanger)."""
    resources = container.get("resources") or {}
    requests = {str(k): str(v) for k, v in (resources.get("requests") or {}).items()}
    limits = {str(k): str(v) for k, v in (resources.get("limits") or {}).items()}
    for key, value in limits.items():
        requests.setdefault(key, value)
    default_requests, default_limits = defaults
    for key, value in default_limits.items():
        limits.setdefault(key, value)
    for key, value in default_requests.items():
        requests.setdefault(key, value)
    return requests, limits


def _pod_template(obj: Mapping[str, Any]) -> tuple[Mapping[str, Any], int] | None:
    """(pod spec, replicas) of a Pod or a controller of pods."""
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    if kind == "Pod":
        return spec, 1
    if kind in _CONTROLLERS:
        replicas = spec.get("replicas", 1)
        template = (spec.get("template") or {}).get("spec") or {}
        return template, replicas if isinstance(replicas, int) and replicas >= 0 else 1
    return None


def _pod_usage(pod: Mapping[str, Any], defaults: tuple[dict[str, str], dict[str, str]]) -> Usage:
    requests: Usage = {}
    limits: Usage = {}
    for container in pod.get("containers") or []:
        if not isinstance(container, Mapping):
            continue
        wanted, limited = _container_resources(container, defaults)
        _add(requests, {key: _quantity(value) for key, value in wanted.items()})
        _add(limits, {key: _quantity(value) for key, value in limited.items()})
    result: Usage = {"pods": Decimal(1), "count/pods": Decimal(1)}
    for key, value in requests.items():
        result[f"requests.{key}"] = value
        if key in _COMPUTE:
            result[key] = value
    for key, value in limits.items():
        if key in _COMPUTE:
            result[f"limits.{key}"] = value
    return result


def usage(obj: Mapping[str, Any], limit_ranges: Sequence[Mapping[str, Any]] = ()) -> Usage:
    """What one object (a manifest, or an object as the server keeps it) counts against a quota."""
    kind = str(obj.get("kind") or "")
    api_version = str(obj.get("apiVersion") or "")
    group = api_version.rpartition("/")[0]
    plural = _PLURALS.get(kind, kind.lower() + "s")
    result: Usage = {f"count/{plural}.{group}" if group else f"count/{plural}": Decimal(1)}
    if kind in _PLURALS and kind != "Pod":
        result[plural] = Decimal(1)
    template = _pod_template(obj)
    if template is not None:
        pod, replicas = template
        if kind == "Pod":
            result.pop(f"count/{plural}", None)
        if replicas:
            _add(result, _pod_usage(pod, _defaults(limit_ranges)), replicas)
    elif kind == "PersistentVolumeClaim":
        storage = ((obj.get("spec") or {}).get("resources") or {}).get("requests", {}).get("storage")
        if storage is not None:
            result["requests.storage"] = _quantity(storage)
    elif kind == "Service":
        spec = obj.get("spec") or {}
        if spec.get("type") in ("NodePort", "LoadBalancer"):
            result["services.nodeports"] = Decimal(len(spec.get("ports") or []))
        if spec.get("type") == "LoadBalancer":
            result["services.loadbalancers"] = Decimal(1)
    return result


def usage_of(objects: Iterable[Mapping[str, Any]], limit_ranges: Sequence[Mapping[str, Any]] = ()) -> Usage:
    total: Usage = {}
    for obj in objects:
        _add(total, usage(obj, limit_ranges))
    return total


def _text(key: str, value: Decimal) -> str:
    """A quantity as the API server prints it in quota messages and status: "500m", "15Gi", "3"."""
    resource = key.rpartition(".")[2] if key.startswith(("requests.", "limits.")) else key
    if resource == "cpu":
        return cpu_text(math.ceil(value * 1000))
    if resource in ("memory", "storage", "ephemeral-storage"):
        return memory_text(math.ceil(value)) if value else "0"
    return str(value.normalize()) if value == value.to_integral_value() else str(value)


def _pretty(values: Mapping[str, Decimal]) -> str:
    return ",".join(f"{key}={_text(key, values[key])}" for key in sorted(values))


def _hard(quota: Mapping[str, Any]) -> dict[str, Decimal]:
    return {
        str(key): _quantity(value) for key, value in ((quota.get("spec") or {}).get("hard") or {}).items()
    }


def _unspecified(
    quota: Mapping[str, Any], pod: Mapping[str, Any], defaults: tuple[dict[str, str], dict[str, str]]
) -> list[str]:
    """What the quota needs a container to say (cpu and memory it limits) and one does not say."""
    missing: list[str] = []
    for key in sorted(_hard(quota)):
        part, _, resource = (
            key.partition(".") if key.startswith(("requests.", "limits.")) else ("requests", "", key)
        )
        if resource not in ("cpu", "memory"):
            continue
        unset = []
        for container in pod.get("containers") or []:
            if not isinstance(container, Mapping):
                continue
            wanted, limited = _container_resources(container, defaults)
            if resource not in (wanted if part == "requests" else limited):
                unset.append(str(container.get("name") or ""))
        if unset:
            missing.append(f"{part}.{resource} for: {','.join(unset)}")
    return missing


def _object_name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def admit(
    manifests: Sequence[Mapping[str, Any]],
    quotas: Sequence[Mapping[str, Any]],
    limit_ranges: Sequence[Mapping[str, Any]],
    used: Mapping[str, Decimal],
) -> None:
    """Raises PermanentError (the API server's refusal) when an object of `manifests`, taken in
    order, would take the namespace over a quota. `used`: what the namespace holds without these
    objects (an apply again replaces what they held)."""
    if not quotas:
        return
    defaults = _defaults(limit_ranges)
    running: Usage = dict(used)
    for obj in manifests:
        delta = usage(obj, limit_ranges)
        template = _pod_template(obj)
        plural = _PLURALS.get(str(obj.get("kind")), str(obj.get("kind") or "").lower() + "s")
        what = f'{plural} "{_object_name(obj)}"'
        if template is not None and template[1] > 0:
            pod, _ = template
            what = f'pods "{_object_name(obj)}"'
            for quota in quotas:
                missing = _unspecified(quota, pod, defaults)
                if missing:
                    raise PermanentError(
                        f"{what} is forbidden: failed quota: {_object_name(quota)}: must specify "
                        + "; ".join(missing)
                    )
        for quota in quotas:
            hard = _hard(quota)
            over = [
                key
                for key, amount in delta.items()
                if key in hard and amount > 0 and running.get(key, Decimal(0)) + amount > hard[key]
            ]
            if over:
                raise PermanentError(
                    f"{what} is forbidden: exceeded quota: {_object_name(quota)}, requested: "
                    f"{_pretty({key: delta[key] for key in over})}, used: "
                    f"{_pretty({key: running.get(key, Decimal(0)) for key in over})}, limited: "
                    f"{_pretty({key: hard[key] for key in over})}"
                )
        _add(running, delta)


def status(quota: Mapping[str, Any], used: Mapping[str, Decimal]) -> dict[str, Any]:
    """The quota's status: its hard limits and what the namespace uses of each."""
    hard = (quota.get("spec") or {}).get("hard") or {}
    return {
        "hard": dict(hard),
        "used": {str(key): _text(str(key), used.get(str(key), Decimal(0))) for key in hard},
    }
