"""How provisioning's messages name things, so that every message names them alike: the type of a
value read from YAML ("a string", "a mapping", "an integer") and a count of things ("3 objects").

The template checks (render), the simulated cluster's inventory file (inventory.py) and both
drivers' progress messages use them.
"""

from __future__ import annotations

__all__ = ["plural", "type_name"]


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


def plural(count: int, word: str) -> str:
    """A count of things: "1 object", "3 objects" (a word whose plural takes an "s")."""
    return f"{count} {word}{'' if count == 1 else 's'}"
