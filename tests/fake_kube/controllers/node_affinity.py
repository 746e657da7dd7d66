"""Which nodes a pod may be scheduled to, as kube-scheduler's NodeAffinity and TaintToleration
filters decide (k8s.io/component-helpers/scheduling/corev1: nodeaffinity, and
Toleration.ToleratesTaint):

- `spec.nodeSelector`: every label equal;
- `spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms`:
  the terms are ORed; a term's matchExpressions (node labels: In, NotIn, Exists, DoesNotExist,
  Gt, Lt) and matchFields (only `metadata.name`, In or NotIn with one value) are ANDed; a term
  with neither matches no node, and so does one that does not parse; both fields must hold;
- taints with effect NoSchedule or NoExecute must each be tolerated (PreferNoSchedule only
  scores); a toleration with an empty key and operator Exists tolerates every taint, an empty
  effect every effect.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tests.fake_kube.util import Obj, get_path

__all__ = ["matches_node", "tolerates", "untolerated_taint"]


def _requirement(requirement: Mapping[str, Any], value: str | None) -> bool:
    """Whether a label's value (None: the node has no such label) meets a NodeSelectorRequirement.
    Raises ValueError for one the API would not accept."""
    operator = requirement.get("operator")
    values = [str(v) for v in requirement.get("values") or []]
    if operator == "In":
        if not values:
            raise ValueError("In needs values")
        return value is not None and value in values
    if operator == "NotIn":
        if not values:
            raise ValueError("NotIn needs values")
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt"):
        if len(values) != 1:
            raise ValueError(f"{operator} needs one value")
        limit = int(values[0])
        if value is None:
            return False
        try:
            number = int(value)
        except ValueError:
            return False
        return number > limit if operator == "Gt" else number < limit
    raise ValueError(f"unknown operator {operator!r}")


def _term(term: Mapping[str, Any], node: Obj) -> bool:
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False  # "A null or empty node selector term matches no objects."
    labels = get_path(node, "metadata", "labels") or {}
    try:
        for requirement in expressions:
            if not _requirement(requirement, labels.get(requirement.get("key"))):
                return False
        for requirement in fields:
            values = requirement.get("values") or []
            if requirement.get("key") != "metadata.name" or requirement.get("operator") not in (
                "In",
                "NotIn",
            ):
                raise ValueError("only metadata.name In/NotIn")
            if len(values) != 1:
                raise ValueError("one value")
            if not _requirement(requirement, get_path(node, "metadata", "name")):
                return False
    except ValueError:
        return False
    return True


def matches_node(spec: Mapping[str, Any], node: Obj) -> bool:
    """Whether the pod spec's node selector and required node affinity allow the node."""
    labels = get_path(node, "metadata", "labels") or {}
    for key, value in (spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    terms = get_path(
        dict(spec),
        "affinity",
        "nodeAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
        "nodeSelectorTerms",
    )
    if terms is None:
        return True
    return any(_term(term, node) for term in terms if isinstance(term, Mapping))


def tolerates(toleration: Mapping[str, Any], taint: Mapping[str, Any]) -> bool:
    """Toleration.ToleratesTaint."""
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    if toleration.get("key") and toleration.get("key") != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Exists":
        return True
    if operator == "Equal":
        return str(toleration.get("value") or "") == str(taint.get("value") or "")
    return False


def untolerated_taint(spec: Mapping[str, Any], taints: list[Obj]) -> Obj | None:
    """The first NoSchedule or NoExecute taint none of the pod's tolerations tolerates, or None."""
    tolerations = spec.get("tolerations") or []
    for taint in taints:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None
