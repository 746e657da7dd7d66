"""How a message names the type of a value read from YAML ("a string", "a mapping", "an integer").

One wording for everything in provisioning that reports a value of the wrong type to a person: the
template checks (render) and the simulated cluster's inventory file (inventory.py).
"""

from __future__ import annotations

__all__ = ["type_name"]


def type_name(value: object, *, null: str = "null", integers: bool = True) -> str:
    """What `value` is, as a message names it: "must be a string, not {type_name(value)}".

    The defaults speak the Kubernetes schema's language, which tells an integer from a number and
    calls a missing value null. A file a person edits by hand reads better with `null="empty"` and
    `integers=False` (every number is "a number").
    """
    if value is None:
        return null
    if isinstance(value, bool):
        return "a boolean"
    if integers and isinstance(value, int):
        return "an integer"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__
