"""Where a plan's pods may run, added by the kubernetes driver itself to every pod template it
applies, so that neither a template nor a missing admission plugin decides it.

- The profile's GPU model: a required node affinity `<label> In [<model>]`, where the label is the
  cluster's GPU model label for the profile's vendor (by default those of NVIDIA's GPU feature
  discovery, `nvidia.com/gpu.product`, and of AMD's node labeller, `amd.com/gpu.product-name`).
  The profile's model is the label's value as the nodes carry it ("NVIDIA-H100-80GB-HBM3"); the
  cluster check reports models no node has.
- The cluster's dedicated nodes (its settings: a node label and a taint): a DEDICATED profile's
  pods require the label and tolerate the taint; a SHARED profile's pods require its absence, so
  that no toleration a template adds takes them onto the dedicated nodes.

Node selector terms are ORed: the requirements are added to every term a template already has
(or make the one term), so a term of the template's own cannot get around them.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from gpupaas.provisioning.plan import Plan
from gpupaas.provisioning.render.policy import pod_specs

__all__ = [
    "DEFAULT_GPU_MODEL_LABELS",
    "NodeLabel",
    "Placement",
    "PlacementSettings",
    "Taint",
    "parse_node_label",
    "parse_taint",
    "place",
    "placed",
    "placement_for",
]

# The node label that says a node's GPU model, per vendor: NVIDIA GPU feature discovery
# (NVIDIA/k8s-device-plugin, docs/gpu-feature-discovery) and AMD's node labeller
# (ROCm/k8s-device-plugin, cmd/k8s-node-labeller with -product-name).
DEFAULT_GPU_MODEL_LABELS: Mapping[str, str] = {
    "NVIDIA": "nvidia.com/gpu.product",
    "AMD": "amd.com/gpu.product-name",
}

TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

# A label key: an optional DNS subdomain prefix and "/", then a name of at most 63 characters;
# a value: at most 63 characters, alphanumeric at both ends (Kubernetes' validation).
_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
_PREFIX = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_KEY = re.compile(rf"^({_PREFIX}/)?{_NAME}$")
_VALUE = re.compile(rf"^({_NAME})?$")


@dataclass(frozen=True)
class NodeLabel:
    key: str
    value: str

    def __str__(self) -> str:
        return f"{self.key}={self.value}"


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str

    def __str__(self) -> str:
        return f"{self.key}{'=' + self.value if self.value else ''}:{self.effect}"

    def toleration(self) -> dict[str, Any]:
        return {"key": self.key, "operator": "Equal", "value": self.value, "effect": self.effect}


def label_key_problem(key: str) -> str | None:
    """Why `key` is not a label key, or None."""
    if len(key) > 317 or not _KEY.match(key) or len(key.partition("/")[0]) > 253:
        return f'"{key}" is not a label key (an optional DNS prefix and "/", then a name such as gpu.product)'
    return None


def _value_problem(value: str) -> str | None:
    if not _VALUE.match(value):
        return f'"{value}" is not a label value (at most 63 letters, digits, "-", "_" or ".")'
    return None


def parse_node_label(text: str) -> NodeLabel:
    """`key=value` (as `kubectl label nodes` takes it); raises ValueError saying what is wrong."""
    key, equals, value = text.strip().partition("=")
    if not equals:
        raise ValueError(f'"{text}" must be key=value, such as gpupaas.io/dedicated=true')
    problem = label_key_problem(key) or _value_problem(value)
    if problem:
        raise ValueError(problem)
    return NodeLabel(key, value)


def parse_taint(text: str) -> Taint:
    """`key[=value]:Effect` (as `kubectl taint nodes` takes it); raises ValueError saying what is wrong."""
    rest, colon, effect = text.strip().rpartition(":")
    if not colon or effect not in TAINT_EFFECTS:
        raise ValueError(
            f'"{text}" must be key[=value]:effect with effect {", ".join(TAINT_EFFECTS)}, '
            "such as gpupaas.io/dedicated=true:NoSchedule"
        )
    key, _, value = rest.partition("=")
    problem = label_key_problem(key) or _value_problem(value)
    if problem:
        raise ValueError(problem)
    return Taint(key, value, effect)


@dataclass(frozen=True)
class PlacementSettings:
    """A cluster's placement settings: its GPU model label per vendor and its dedicated nodes."""

    gpu_model_labels: Mapping[str, str] = field(default_factory=dict)
    dedicated_label: NodeLabel | None = None
    dedicated_taint: Taint | None = None


@dataclass(frozen=True)
class Placement:
    """What every pod of a plan gets: node selector requirements (ANDed) and tolerations."""

    requirements: tuple[dict[str, Any], ...] = ()
    tolerations: tuple[dict[str, Any], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.requirements or self.tolerations)


def placement_for(
    *, vendor: str, model: str | None, allocation: str, settings: PlacementSettings
) -> Placement:
    """Where the pods of a profile (its GPU vendor and model, DEDICATED or SHARED) may run."""
    requirements: list[dict[str, Any]] = []
    tolerations: list[dict[str, Any]] = []
    key = settings.gpu_model_labels.get(vendor)
    if key and model and model.strip():
        requirements.append({"key": key, "operator": "In", "values": [model.strip()]})
    label = settings.dedicated_label
    if allocation == "DEDICATED":
        if label is not None:
            requirements.append({"key": label.key, "operator": "In", "values": [label.value]})
        if settings.dedicated_taint is not None:
            tolerations.append(settings.dedicated_taint.toleration())
    elif label is not None:
        requirements.append({"key": label.key, "operator": "NotIn", "values": [label.value]})
    return Placement(tuple(requirements), tuple(tolerations))


def _child(parent: dict[str, Any], key: str) -> dict[str, Any]:
    """parent[key] as a mapping to fill in (a missing or null one becomes {})."""
    child = parent.get(key)
    if not isinstance(child, dict):
        child = parent[key] = {}
    return child


def _place_spec(spec: dict[str, Any], placement: Placement) -> None:
    if placement.requirements:
        required = _child(
            _child(_child(spec, "affinity"), "nodeAffinity"), "requiredDuringSchedulingIgnoredDuringExecution"
        )
        terms = required.get("nodeSelectorTerms")
        if not isinstance(terms, list) or not terms:
            terms = [{}]
        for term in terms:
            if not isinstance(term, dict):
                continue
            expressions = term.get("matchExpressions")
            expressions = list(expressions) if isinstance(expressions, list) else []
            expressions.extend(
                copy.deepcopy(requirement)
                for requirement in placement.requirements
                if requirement not in expressions
            )
            term["matchExpressions"] = expressions
        required["nodeSelectorTerms"] = terms
    if placement.tolerations:
        tolerations = spec.get("tolerations")
        tolerations = list(tolerations) if isinstance(tolerations, list) else []
        tolerations.extend(copy.deepcopy(t) for t in placement.tolerations if t not in tolerations)
        spec["tolerations"] = tolerations


def place(manifest: Mapping[str, Any], placement: Placement) -> dict[str, Any]:
    """A copy of the manifest whose pod spec (if it has one) carries the placement."""
    obj = copy.deepcopy(dict(manifest))
    if placement:
        for path, _ in list(pod_specs(obj)):
            spec: Any = obj
            for part in path:
                spec = spec[part]
            _place_spec(spec, placement)
    return obj


def placed(plan: Plan, settings: PlacementSettings) -> Plan:
    """The plan with its placement added to every pod template (the plan itself when there is none)."""
    placement = placement_for(
        vendor=plan.gpu_vendor, model=plan.gpu_model, allocation=plan.allocation, settings=settings
    )
    if not placement:
        return plan
    return replace(plan, manifests=tuple(place(manifest, placement) for manifest in plan.manifests))
