"""Kubernetes objects as plain dicts, as the API serves them: reading their fields without trusting
their shape, their identity (group, kind, namespace, name), the order a plan's objects are applied
in, the namespace they default to, and the identity labels by which the driver finds an
instance's objects and pods.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Any

from gpupaas.provisioning.plan import INSTANCE_LABEL, MANAGED_BY

__all__ = [
    "MANAGER_VALUE",
    "apply_order",
    "condition_of",
    "describe",
    "group_of",
    "identity_labels",
    "int_or",
    "kind_rank",
    "label_problem",
    "mappings_in",
    "metadata_of",
    "object_key",
    "spec_of",
    "stamp_pod_templates",
    "status_of",
    "with_namespace",
]


# The value of MANAGED_BY (app.kubernetes.io/managed-by) on everything the driver applies.
MANAGER_VALUE = "gpupaas"


# Dependencies first: the namespace, what limits it, who may act in it, what pods mount, the pods'
# controllers, then Services (they only select pods). Roles come before their bindings: the API
# server checks a binding against the rules of the role it names (RBAC escalation check).
_RANKS: dict[str, int] = {
    "Namespace": 0,
    "ResourceQuota": 1,
    "LimitRange": 1,
    "ServiceAccount": 2,
    "Role": 3,
    "ClusterRole": 3,
    "RoleBinding": 4,
    "ClusterRoleBinding": 4,
    "ConfigMap": 5,
    "Secret": 5,
    "PersistentVolumeClaim": 6,
    "Deployment": 7,
    "StatefulSet": 7,
    "DaemonSet": 7,
    "ReplicaSet": 7,
    "Pod": 7,
    "Job": 7,
    "CronJob": 7,
    "Service": 8,
}
_OTHERS = 9


# Where each workload kind keeps the pod template its controller stamps pods from.
_POD_TEMPLATES: dict[str, tuple[tuple[str, ...], ...]] = {
    "Deployment": (("spec", "template"),),
    "StatefulSet": (("spec", "template"),),
    "DaemonSet": (("spec", "template"),),
    "ReplicaSet": (("spec", "template"),),
    "Job": (("spec", "template"),),
    "CronJob": (("spec", "jobTemplate"), ("spec", "jobTemplate", "spec", "template")),
}


# ------------------------------------------------------------------------------------ fields
# An object from the API server is trusted for nothing: a field of the wrong type reads as absent.


def metadata_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """`metadata`, or {} when it is missing or no mapping."""
    metadata = obj.get("metadata")
    return metadata if isinstance(metadata, Mapping) else {}


def status_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """`status`, or {}."""
    status = obj.get("status")
    return status if isinstance(status, Mapping) else {}


def spec_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    """`spec`, or {}."""
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def mappings_in(value: object) -> list[Mapping[str, Any]]:
    """The mappings of a list (conditions, container statuses, owners); [] when it is no list."""
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def condition_of(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    """The status condition of type `kind` ("Ready", "PodScheduled"), or None."""
    return next((c for c in mappings_in(status_of(obj).get("conditions")) if c.get("type") == kind), None)


def int_or(value: object, default: int = 0) -> int:
    """`value` when it is an integer (not a boolean), else `default`."""
    return value if isinstance(value, int) and not isinstance(value, bool) else default


# -------------------------------------------------------------------------- identity and order


def group_of(api_version: str) -> str:
    """ "apps/v1" -> "apps"; "v1" -> "" (the core group)."""
    return api_version.rpartition("/")[0]


def object_key(obj: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """Identifies an object as the API server does: group, kind, namespace, name."""
    metadata = metadata_of(obj)
    return (
        group_of(str(obj.get("apiVersion", ""))),
        str(obj.get("kind", "")),
        str(metadata.get("namespace") or ""),
        str(metadata.get("name") or ""),
    )


def describe(obj: Mapping[str, Any]) -> str:
    """An object as people name it in messages: "pod nb-0", "deployment web"."""
    return f"{str(obj.get('kind') or 'object').lower()} {metadata_of(obj).get('name') or '(unnamed)'}"


def kind_rank(kind: str) -> int:
    return _RANKS.get(kind, _OTHERS)


def apply_order(manifests: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The manifests in the order they are applied: by kind (see _RANKS), the template's order kept
    within a kind. An object named twice is applied once, where it first appears, as it last reads
    (as `kubectl apply` of the same stream would leave it)."""
    objects: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for manifest in manifests:
        objects[object_key(manifest)] = copy.deepcopy(dict(manifest))
    return sorted(objects.values(), key=lambda obj: kind_rank(str(obj.get("kind", ""))))


def with_namespace(manifest: Mapping[str, Any], namespace: str, namespaced: bool) -> dict[str, Any]:
    """A copy of the manifest with its namespace settled: a namespaced object without one goes into
    `namespace`; a cluster-scoped object loses one it was given (it has none)."""
    obj = copy.deepcopy(dict(manifest))
    metadata = obj.setdefault("metadata", {})
    if namespaced:
        if not metadata.get("namespace"):
            metadata["namespace"] = namespace
    else:
        metadata.pop("namespace", None)
    return obj


# ------------------------------------------------------------------------------------ labels


def identity_labels(instance_id: str, owner_label: str = INSTANCE_LABEL) -> dict[str, str]:
    """The labels by which the driver finds an instance's objects and pods."""
    return {MANAGED_BY: MANAGER_VALUE, owner_label: instance_id}


def label_problem(
    manifest: Mapping[str, Any], instance_id: str, owner_label: str = INSTANCE_LABEL
) -> str | None:
    """What is wrong with the object's identity labels (build_plan adds them; a template may have
    overridden them), or None."""
    labels = metadata_of(manifest).get("labels")
    labels = labels if isinstance(labels, Mapping) else {}
    for key, wanted in identity_labels(instance_id, owner_label).items():
        value = labels.get(key)
        if value != wanted:
            found = "is missing" if value is None else f'is "{value}"'
            return (
                f'{describe(manifest)}: label {key} {found}, it must be "{wanted}": the driver finds the '
                "objects of an instance by it (remove it from the template)"
            )
    return None


def stamp_pod_templates(
    manifest: Mapping[str, Any], instance_id: str, owner_label: str = INSTANCE_LABEL
) -> dict[str, Any]:
    """A copy of the manifest whose pod templates (and a StatefulSet's volume claim templates) carry
    the identity labels, so that the pods and volumes a controller makes can be found and watched.
    The selector is left alone: extra labels on a template never stop it matching."""
    obj = copy.deepcopy(dict(manifest))
    labels = identity_labels(instance_id, owner_label)
    templates: list[Any] = []
    for path in _POD_TEMPLATES.get(str(obj.get("kind")), ()):
        node: Any = obj
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        templates.append(node)
    if obj.get("kind") == "StatefulSet" and isinstance(obj.get("spec"), dict):
        claims = obj["spec"].get("volumeClaimTemplates")
        templates.extend(claims if isinstance(claims, list) else [])
    for template in templates:
        if not isinstance(template, dict):
            continue
        metadata = template.setdefault("metadata", {})
        if isinstance(metadata, dict):
            existing = metadata.get("labels")
            metadata["labels"] = {**(existing if isinstance(existing, dict) else {}), **labels}
    return obj
