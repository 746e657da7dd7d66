"""Whose an object on the cluster is. gpupaas changes and deletes only objects that carry the owner
label of the instance it acts for (`Plan.owner_label` = the instance's id): an object someone else
made, or another instance's, is neither adopted by a forced server-side apply nor deleted by a
destroy. Pruning goes further and deletes only what the driver itself applied (its field manager's
Apply entry in managedFields): controllers copy the instance's labels to the pods, ReplicaSets and
volume claims they make, and those go with the objects that made them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from gpupaas.provisioning.drivers.k8s_manifests.objects import (
    MANAGER_VALUE,
    describe,
    mappings_in,
    metadata_of,
)
from gpupaas.provisioning.plan import MANAGED_BY

__all__ = ["applied_by", "located", "owned_by", "ownership_problem", "refusal"]


def _labels(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    labels = metadata_of(obj).get("labels")
    return labels if isinstance(labels, Mapping) else {}


def located(obj: Mapping[str, Any]) -> str:
    """The object as people name it, with its namespace: "configmap settings in namespace team-a"."""
    namespace = metadata_of(obj).get("namespace")
    return describe(obj) + (f" in namespace {namespace}" if namespace else "")


def owned_by(obj: Mapping[str, Any], instance_id: str, owner_label: str) -> bool:
    """Whether the object carries the instance's owner label."""
    return _labels(obj).get(owner_label) == instance_id


def ownership_problem(obj: Mapping[str, Any], instance_id: str, owner_label: str) -> str | None:
    """Why an object that exists is not the instance's to change (None: it is): "namespace team-a
    exists and is not managed by gpupaas", or it belongs to another instance."""
    labels = _labels(obj)
    value = labels.get(owner_label)
    if value == instance_id:
        return None
    if value:
        return f"{located(obj)} exists and belongs to another gpupaas instance ({owner_label}={value})"
    if labels.get(MANAGED_BY) == MANAGER_VALUE:
        return (
            f"{located(obj)} exists and is managed by gpupaas for something else (it has no label "
            f"{owner_label})"
        )
    return f"{located(obj)} exists and is not managed by gpupaas"


def refusal(problems: Sequence[str]) -> str:
    """The message of a run that would have taken over objects: what they are, and what to do."""
    return (
        "; ".join(problems)
        + ". gpupaas does not take over objects it did not create: give the template's object another "
        "metadata.name (or metadata.namespace), or delete the existing one"
    )


def applied_by(obj: Mapping[str, Any], field_manager: str) -> bool:
    """Whether `field_manager` applied the object (server-side apply records it in managedFields as
    an entry with operation Apply), as opposed to a controller making it."""
    return any(
        entry.get("manager") == field_manager and entry.get("operation") == "Apply"
        for entry in mappings_in(metadata_of(obj).get("managedFields"))
    )
