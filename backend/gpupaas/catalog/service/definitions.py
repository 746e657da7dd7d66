"""The inputs and outputs a template version declares, as stored (JSON in the version's row), and
what a profile's settings of them share with the instances launched from it: the override
policies, the mask that stands for a sensitive value, and how sensitive values are kept.

Templates store definitions, profiles check their settings against them, and compute instances
read them from their snapshot: this module is the one all three depend on.

A sensitive input's default (in the version's definitions) and value (in a profile's settings, an
instance's own inputs) are stored sealed (core.crypto.Sealer), so that no copy of them is plain
text in the database: the snapshots instances take copy them sealed. They are unsealed only where
they are used: checked against the definition when a profile is saved, rendered by the worker, and
shown to the owning project's admins who ask for them (catalog.service.visibility).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from gpupaas.core.crypto import DecryptionError, Sealer
from gpupaas.core.errors import ErrorCode, UserErrors
from gpupaas.provisioning.inputs import InputDefinition
from gpupaas.provisioning.render.rendering import OutputDefinition

# Turns a stored value into the one it holds (Sealer.unseal), or into what a reader may see of it.
Unseal = Callable[[str], str]
# Turns a value into the one stored (Sealer.seal).
Seal = Callable[[str], str]


class OverridePolicy:
    NOT_ALLOWED = "NOT_ALLOWED"
    ALLOWED = "ALLOWED"
    RESTRICTED = "RESTRICTED"
    ALL = (NOT_ALLOWED, ALLOWED, RESTRICTED)


# What the API shows instead of a sensitive input's value. Given back unchanged (a form that
# round-trips what it was shown), it means "keep the value stored".
SENSITIVE_MASK = "********"


def definition_from_json(data: dict[str, Any], unseal: Unseal) -> InputDefinition:
    """A stored definition; `unseal` opens a sensitive input's sealed default."""
    default = data.get("default")
    return InputDefinition(
        name=data["name"],
        type=data["type"],
        description=data.get("description"),
        required=bool(data.get("required", False)),
        default=unseal(default) if default is not None and data.get("sensitive") else default,
        options=tuple(data.get("options") or ()),
        pattern=data.get("pattern"),
        min=data.get("min"),
        max=data.get("max"),
        sensitive=bool(data.get("sensitive", False)),
    )


def definition_to_json(defn: InputDefinition, seal: Seal) -> dict[str, Any]:
    """The definition as stored; `seal` keeps a sensitive input's default."""
    default = defn.default
    return {
        "name": defn.name,
        "type": defn.type,
        "description": defn.description,
        "required": defn.required,
        "default": seal(default) if default is not None and defn.sensitive else default,
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


def sensitive_names(definitions: Iterable[dict[str, Any]]) -> frozenset[str]:
    """The names of the stored definitions' sensitive inputs."""
    return frozenset(d["name"] for d in definitions if d.get("sensitive"))


def settings_with_values(
    settings: Sequence[dict[str, Any]], sensitive: frozenset[str], change: Callable[[str], str]
) -> list[dict[str, Any]]:
    """Input settings (a profile's, as stored) with the value of each sensitive input that has
    one changed by `change` (sealed, unsealed, masked); the others as they are. New dicts: the
    given ones are left as they are."""
    return [
        {**setting, "value": change(setting["value"])}
        if setting["name"] in sensitive and setting.get("value") is not None
        else setting
        for setting in settings
    ]


def unsealing(sealer: Sealer, what: str) -> Unseal:
    """`sealer.unseal` for a request: a value sealed with another key is an error that says so
    (`what` holds the value: "compute profile", "template version"), not an internal one."""

    def unseal(stored: str) -> str:
        try:
            return sealer.unseal(stored)
        except DecryptionError:
            raise UserErrors.one(
                None,
                f"a sensitive value stored with this {what} cannot be read: it was sealed with another "
                "GPUPAAS_SECRET_KEY (start gpupaas with that key again)",
                ErrorCode.INVALID_STATE,
            ) from None

    return unseal
