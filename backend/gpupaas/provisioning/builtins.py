"""The environment templates that ship with gpupaas, ready to use.

Each lives in builtin_templates/<name>.yaml: a mapping with displayName, description, version,
inputs, outputs and resources (the YAML stream of manifests, as a block string).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources as package_files
from typing import Any

import yaml

from gpupaas.provisioning.inputs import INPUT_TYPES, InputDefinition
from gpupaas.provisioning.render.rendering import OutputDefinition

__all__ = ["BUILTIN_TEMPLATES", "BuiltinTemplate", "builtin_template", "load_builtin_template"]


@dataclass(frozen=True)
class BuiltinTemplate:
    """One built-in template with its single version."""

    name: str
    display_name: str
    description: str
    version: str
    resources: str
    inputs: tuple[InputDefinition, ...]
    outputs: tuple[OutputDefinition, ...]


def _text(value: object, where: str, *, optional: bool = False) -> str | None:
    # Unquoted YAML scalars arrive as numbers or booleans; values travel as strings.
    if value is None and optional:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise ValueError(f"{where} must be a string")


def _required_text(data: Mapping[str, Any], key: str, where: str) -> str:
    text = _text(data.get(key), f"{where}: {key}")
    if text is None:
        raise ValueError(f"{where}: {key} is required")
    return text


def _number(value: object, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{where} must be a number")
    return float(value)


def _input(data: object, where: str) -> InputDefinition:
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be a mapping")
    kind = data.get("type")
    if kind not in INPUT_TYPES:
        raise ValueError(f"{where}: type must be one of " + ", ".join(INPUT_TYPES))
    options = data.get("options", [])
    if not isinstance(options, list):
        raise ValueError(f"{where}: options must be a list")
    return InputDefinition(
        name=_required_text(data, "name", where),
        type=kind,
        description=_text(data.get("description"), f"{where}: description", optional=True),
        required=bool(data.get("required", False)),
        default=_text(data.get("default"), f"{where}: default", optional=True),
        options=tuple(_required_text({"option": option}, "option", where) for option in options),
        pattern=_text(data.get("pattern"), f"{where}: pattern", optional=True),
        min=_number(data.get("min"), f"{where}: min"),
        max=_number(data.get("max"), f"{where}: max"),
        sensitive=bool(data.get("sensitive", False)),
    )


def _output(data: object, where: str) -> OutputDefinition:
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be a mapping")
    return OutputDefinition(
        name=_required_text(data, "name", where),
        description=_text(data.get("description"), f"{where}: description", optional=True),
        value=_required_text(data, "value", where),
    )


def load_builtin_template(name: str, text: str) -> BuiltinTemplate:
    """A built-in template from the text of its file; raises ValueError naming what is wrong."""
    data = yaml.safe_load(text)
    if not isinstance(data, dict):
        raise ValueError(f"built-in template {name}: the file must hold a mapping")
    where = f"built-in template {name}"
    inputs, outputs = data.get("inputs", []), data.get("outputs", [])
    if not isinstance(inputs, list) or not isinstance(outputs, list):
        raise ValueError(f"{where}: inputs and outputs must be lists")
    return BuiltinTemplate(
        name=name,
        display_name=_required_text(data, "displayName", where),
        description=_required_text(data, "description", where),
        version=_required_text(data, "version", where),
        resources=_required_text(data, "resources", where),
        inputs=tuple(_input(item, f"{where}, inputs[{i}]") for i, item in enumerate(inputs)),
        outputs=tuple(_output(item, f"{where}, outputs[{i}]") for i, item in enumerate(outputs)),
    )


def _load_all() -> tuple[BuiltinTemplate, ...]:
    folder = package_files.files("gpupaas.provisioning") / "builtin_templates"
    files = sorted(
        (entry for entry in folder.iterdir() if entry.name.endswith(".yaml")), key=lambda e: e.name
    )
    return tuple(
        load_builtin_template(entry.name.removesuffix(".yaml"), entry.read_text(encoding="utf-8"))
        for entry in files
    )


BUILTIN_TEMPLATES: tuple[BuiltinTemplate, ...] = _load_all()


def builtin_template(name: str) -> BuiltinTemplate | None:
    """The built-in template called `name`, if there is one."""
    return next((template for template in BUILTIN_TEMPLATES if template.name == name), None)
