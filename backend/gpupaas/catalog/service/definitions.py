"""The inputs and outputs a template version declares, as stored (JSON in the version's row), and
what a profile's settings of them share with the instances launched from it: the override
policies and the mask that stands for a sensitive value.

Templates store definitions, profiles check their settings against them, and compute instances
read them from their snapshot: this module is the one all three depend on.
"""

from __future__ import annotations

from typing import Any

from gpupaas.provisioning.inputs import InputDefinition
from gpupaas.provisioning.render.rendering import OutputDefinition


class OverridePolicy:
    NOT_ALLOWED = "NOT_ALLOWED"
    ALLOWED = "ALLOWED"
    RESTRICTED = "RESTRICTED"
    ALL = (NOT_ALLOWED, ALLOWED, RESTRICTED)


# What the API shows instead of a sensitive input's value. Given back unchanged (a form that
# round-trips what it was shown), it means "keep the value stored".
SENSITIVE_MASK = "********"


def definition_from_json(data: dict[str, Any]) -> InputDefinition:
    return InputDefinition(
        name=data["name"],
        type=data["type"],
        description=data.get("description"),
        required=bool(data.get("required", False)),
        default=data.get("default"),
        options=tuple(data.get("options") or ()),
        pattern=data.get("pattern"),
        min=data.get("min"),
        max=data.get("max"),
        sensitive=bool(data.get("sensitive", False)),
    )


def definition_to_json(defn: InputDefinition) -> dict[str, Any]:
    return {
        "name": defn.name,
        "type": defn.type,
        "description": defn.description,
        "required": defn.required,
        "default": defn.default,
        "options": list(defn.options),
        "pattern": defn.pattern,
        "min": defn.min,
        "max": defn.max,
        "sensitive": defn.sensitive,
    }


def output_from_json(data: dict[str, Any]) -> OutputDefinition:
    return OutputDefinition(name=data["name"], description=data.get("description"), value=data["value"])


def output_to_json(out: OutputDefinition) -> dict[str, Any]:
    return {"name": out.name, "description": out.description, "value": out.value}
