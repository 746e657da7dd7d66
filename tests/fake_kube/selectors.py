"""Label and field selectors, as the Kubernetes API parses and matches them.

Label selectors (query parameter `labelSelector`): equality (`a=b`, `a==b`), inequality (`a!=b`,
true when the label is missing), set-based (`a in (x,y)`, `a notin (x)`, `a`, `!a`) and the
numeric `a>1`, `a<1`. LabelSelector objects (`matchLabels` / `matchExpressions`) of Deployments
and NetworkPolicies become the same requirements. Field selectors (`fieldSelector`) support `=`,
`==` and `!=` on metadata.name, metadata.namespace and the fields each kind adds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class SelectorError(ValueError):
    """A selector the API would answer with 400 BadRequest."""


@dataclass(frozen=True)
class Requirement:
    key: str
    operator: str  # "=", "!=", "in", "notin", "exists", "!", "gt", "lt"
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        value = labels.get(self.key)
        if self.operator in ("=", "in"):
            return present and value in self.values
        if self.operator in ("!=", "notin"):
            return not present or value not in self.values
        if self.operator == "exists":
            return present
        if self.operator == "!":
            return not present
        if not present or value is None:
            return False
        try:
            number = int(value)
        except ValueError:
            return False
        limit = int(self.values[0])
        return number > limit if self.operator == "gt" else number < limit


_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_EQUALITY = re.compile(rf"^\s*(?P<key>{_KEY})\s*(?P<op>==|=|!=)\s*(?P<value>{_VALUE})\s*$")
_SET = re.compile(rf"^\s*(?P<key>{_KEY})\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)\s*$")
_NUMERIC = re.compile(rf"^\s*(?P<key>{_KEY})\s*(?P<op>[<>])\s*(?P<value>-?\d+)\s*$")
_EXISTS = re.compile(rf"^\s*(?P<not>!)?\s*(?P<key>{_KEY})\s*$")
_VALUE_ONLY = re.compile(rf"^{_VALUE}$")


def _split(selector: str) -> list[str]:
    """Splits on the commas that are not inside parentheses."""
    parts: list[str] = []
    depth = 0
    current = ""
    for char in selector:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise SelectorError(f"unable to parse requirement: unexpected ')' in {selector!r}")
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    if depth:
        raise SelectorError(f"unable to parse requirement: unclosed '(' in {selector!r}")
    parts.append(current)
    return parts


def parse_label_selector(selector: str | None) -> list[Requirement]:
    """The requirements of a label selector string; an empty selector selects everything."""
    if selector is None or not selector.strip():
        return []
    requirements: list[Requirement] = []
    for part in _split(selector):
        if not part.strip():
            raise SelectorError(
                f"unable to parse requirement: found '', expected: identifier in {selector!r}"
            )
        if match := _EQUALITY.match(part):
            op = "!=" if match["op"] == "!=" else "="
            requirements.append(Requirement(match["key"], op, (match["value"],)))
        elif match := _SET.match(part):
            values = tuple(v.strip() for v in match["values"].split(",")) if match["values"].strip() else ()
            if match["op"] == "in" and not values:
                raise SelectorError(
                    f"for 'in', 'notin' operators, values set can't be empty: {part.strip()!r}"
                )
            for value in values:
                if not _VALUE_ONLY.match(value):
                    raise SelectorError(f"invalid label value: {value!r}: {part.strip()!r}")
            requirements.append(Requirement(match["key"], match["op"], values))
        elif match := _NUMERIC.match(part):
            requirements.append(
                Requirement(match["key"], "gt" if match["op"] == ">" else "lt", (match["value"],))
            )
        elif match := _EXISTS.match(part):
            requirements.append(Requirement(match["key"], "!" if match["not"] else "exists"))
        else:
            raise SelectorError(f"unable to parse requirement: {part.strip()!r} in {selector!r}")
    return requirements


def matches(requirements: list[Requirement], labels: Mapping[str, str] | None) -> bool:
    labels = labels or {}
    return all(requirement.matches(labels) for requirement in requirements)


def from_label_selector(selector: Mapping[str, Any] | None) -> list[Requirement] | None:
    """The requirements of a LabelSelector object; None selects nothing, {} selects everything."""
    if selector is None:
        return None
    requirements = [Requirement(k, "=", (str(v),)) for k, v in (selector.get("matchLabels") or {}).items()]
    operators = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
    for expression in selector.get("matchExpressions") or []:
        operator = operators.get(expression.get("operator", ""))
        if operator is None:
            raise SelectorError(f"{expression.get('operator')!r} is not a valid label selector operator")
        requirements.append(Requirement(expression["key"], operator, tuple(expression.get("values") or ())))
    return requirements


# Field selectors ---------------------------------------------------------------------------

_FIELDS_BY_KIND: dict[str, tuple[str, ...]] = {
    "Pod": (
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    ),
    "Event": (
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ),
    "Secret": ("type",),
    "Namespace": ("status.phase",),
    "Node": ("spec.unschedulable",),
    "ReplicaSet": ("status.replicas",),
    "PersistentVolumeClaim": ("spec.volumeName",),
}


@dataclass(frozen=True)
class FieldRequirement:
    field: str
    negate: bool
    value: str

    def matches(self, obj: Mapping[str, Any]) -> bool:
        actual = field_value(obj, self.field)
        return (actual != self.value) if self.negate else (actual == self.value)


def field_value(obj: Mapping[str, Any], field: str) -> str:
    if field == "source":
        field = "source.component"
    value: Any = obj
    for part in field.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_field_selector(selector: str | None, kind: str) -> list[FieldRequirement]:
    if selector is None or not selector.strip():
        return []
    allowed = ("metadata.name", "metadata.namespace", *_FIELDS_BY_KIND.get(kind, ()))
    requirements = []
    for part in selector.split(","):
        match = re.match(r"^\s*([A-Za-z0-9.]+)\s*(==|=|!=)\s*(.*?)\s*$", part)
        if match is None:
            raise SelectorError(f"invalid selector: '{selector}'; can't understand '{part}'")
        field, op, value = match.groups()
        if field not in allowed:
            raise SelectorError(f"field label not supported: {field}")
        requirements.append(FieldRequirement(field, op == "!=", value))
    return requirements


def fields_match(requirements: list[FieldRequirement], obj: Mapping[str, Any]) -> bool:
    return all(requirement.matches(obj) for requirement in requirements)
