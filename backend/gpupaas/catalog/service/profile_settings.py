"""A compute profile's settings of its template version's inputs and outputs, checked: for each
input the value, whether users must give one, whether and how they may override it; for each
output whether users see it and under which name. The settings not given are kept from before or
defaulted from the definitions, so that a profile always holds one per declared input and output.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gpupaas.catalog.service.definitions import SENSITIVE_MASK, OverridePolicy
from gpupaas.core import validation
from gpupaas.core.errors import Collector, ErrorCode
from gpupaas.provisioning.inputs import InputDefinition, check_value
from gpupaas.provisioning.render.rendering import OutputDefinition


@dataclass
class InputSettingIn:
    name: str
    value: str | None = None
    required: bool | None = None
    override: str | None = None
    allowed_values: list[str] | None = None


@dataclass
class OutputSettingIn:
    name: str
    display_name: str | None = None
    visible: bool | None = None


def resolve_input_settings(
    problems: Collector,
    definitions: Sequence[InputDefinition],
    given: Sequence[InputSettingIn] | None,
    previous: Sequence[dict[str, Any]],
) -> list[dict[str, Any]]:
    """The complete settings, one per declared input: given ones checked, the rest kept or defaulted."""
    by_name = {d.name: d for d in definitions}
    settings: dict[str, dict[str, Any]] = {}
    for kept in previous:
        if kept["name"] in by_name:
            settings[kept["name"]] = dict(kept)
    seen: set[str] = set()
    for index, item in enumerate(given or ()):
        path = ("input", "inputSettings", index)
        defn = by_name.get(item.name)
        if defn is None:
            declared = ", ".join(by_name) or "none"
            problems.add(
                (*path, "name"), f'the template version has no input "{item.name}" (declared: {declared})'
            )
            continue
        if item.name in seen:
            problems.add((*path, "name"), f'input "{item.name}" is set twice')
            continue
        seen.add(item.name)
        override = item.override or OverridePolicy.ALLOWED
        allowed = list(item.allowed_values or ())
        required = defn.required if item.required is None else item.required
        if defn.required and not required:
            problems.add((*path, "required"), f'the template requires input "{item.name}"')
        value = item.value
        if defn.sensitive and value == SENSITIVE_MASK:
            value = (settings.get(item.name) or {}).get("value", defn.default)
        if value is not None:
            problems.check((*path, "value"), check_value(defn, value))
        for vindex, allowed_value in enumerate(allowed):
            problems.check((*path, "allowedValues", vindex), check_value(defn, allowed_value))
        if override == OverridePolicy.RESTRICTED:
            if not allowed:
                problems.add((*path, "allowedValues"), "RESTRICTED needs at least one allowed value")
            elif value is not None and value not in allowed:
                problems.add((*path, "value"), "must be one of the allowed values: " + ", ".join(allowed))
        elif allowed:
            problems.add((*path, "allowedValues"), "allowed values apply only with override RESTRICTED")
        if required and value is None and override == OverridePolicy.NOT_ALLOWED:
            problems.add(
                (*path, "value"),
                f'input "{item.name}" is required and users may not override it: give it a value',
                ErrorCode.REQUIRED,
            )
        settings[item.name] = {
            "name": item.name,
            # No value given: the template's default stands (users may still override it).
            "value": value if value is not None else defn.default,
            "required": required,
            "override": override,
            "allowedValues": allowed,
        }
    result = []
    for defn in definitions:
        setting = settings.get(defn.name) or {
            "name": defn.name,
            "value": defn.default,
            "required": defn.required,
            "override": OverridePolicy.ALLOWED,
            "allowedValues": [],
        }
        result.append(setting)
    return result


def resolve_output_settings(
    problems: Collector,
    outputs: Sequence[OutputDefinition],
    given: Sequence[OutputSettingIn] | None,
    previous: Sequence[dict[str, Any]],
) -> list[dict[str, Any]]:
    names = [o.name for o in outputs]
    settings = {item["name"]: dict(item) for item in previous if item["name"] in names}
    seen: set[str] = set()
    for index, item in enumerate(given or ()):
        path = ("input", "outputSettings", index)
        if item.name not in names:
            problems.add(
                (*path, "name"),
                f'the template version has no output "{item.name}" (declared: {", ".join(names) or "none"})',
            )
            continue
        if item.name in seen:
            problems.add((*path, "name"), f'output "{item.name}" is set twice')
            continue
        seen.add(item.name)
        display = item.display_name.strip() if item.display_name else None
        if display:
            problems.check((*path, "displayName"), validation.display_name(display))
        settings[item.name] = {
            "name": item.name,
            "displayName": display or None,
            "visible": True if item.visible is None else item.visible,
        }
    return [settings.get(name) or {"name": name, "displayName": None, "visible": True} for name in names]
