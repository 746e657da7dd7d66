"""The `{{ ... }}` placeholders of environment templates and the variables they may name.

A placeholder names exactly one variable: `inputs.<name>`, one of `KNOWN_VARIABLES`, or, in an
output's value only, `objects.<Kind>.<path>` (read from the applied objects after a deploy).
`expression_problem` says what is wrong with one placeholder, with a suggestion where one is close.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Any

from gpupaas.provisioning.render.problems import MAX_VALUES, Path, did_you_mean

__all__ = ["KNOWN_VARIABLES", "PLACEHOLDER", "expression_problem", "placeholders_in"]


KNOWN_VARIABLES: tuple[str, ...] = (
    "instance.name",
    "instance.namespace",
    "instance.id",
    "profile.name",
    "resources.cpu",
    "resources.memory",
    "resources.storage",
    "resources.gpuCount",
    "resources.gpuVendor",
    "resources.gpuModel",
    "resources.gpuResourceName",
    "generated.token",
)


# `{{` ... `}}`, the inside never crossing a `}}`; everything between the braces is one expression.
PLACEHOLDER = re.compile(r"\{\{((?:(?!\}\}).)*)\}\}", re.DOTALL)
_EXPRESSION = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*")


def placeholders_in(value: Any) -> list[tuple[Path, str]]:
    """Every placeholder expression (stripped) in a parsed value, with the path of its key or value.

    A placeholder in a mapping key is reported at the path of that entry.
    """
    found: list[tuple[Path, str]] = []
    budget = MAX_VALUES
    stack: list[tuple[Path, Any]] = [((), value)]
    while stack and budget > 0:
        budget -= 1
        path, item = stack.pop()
        if isinstance(item, str):
            found.extend((path, match.group(1).strip()) for match in PLACEHOLDER.finditer(item))
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                stack.append(((*path, key), child))
                if isinstance(key, str):
                    stack.append(((*path, key), key))
        elif isinstance(item, list):
            stack.extend(((*path, i), child) for i, child in reversed(list(enumerate(item))))
    return found


def _suggestion(expression: str, candidates: Sequence[str]) -> str:
    # Compared after the shared prefix, else every "instance.x" would look like "instance.id".
    prefix, _, rest = expression.partition(".")
    siblings = [c for c in candidates if c.startswith(f"{prefix}.")]
    if not rest or not siblings:
        return did_you_mean(expression, candidates)
    close = difflib.get_close_matches(rest, [c.partition(".")[2] for c in siblings], n=1)
    return f' (did you mean "{prefix}.{close[0]}"?)' if close else ""


def expression_problem(
    expression: str, input_names: Sequence[str], kinds: Sequence[str] | None, *, in_output: bool
) -> str | None:
    """What is wrong with one placeholder expression, or None.

    `kinds` lists the kinds of the template's objects, or is None when they are unknown (the
    resources did not parse), in which case `objects.<Kind>` is not checked.
    """
    if _EXPRESSION.fullmatch(expression) is None:
        return (
            f'"{{{{ {expression} }}}}" is not a valid placeholder: it must name one variable, '
            "such as {{ inputs.gpus }} or {{ instance.namespace }}"
        )
    if expression.startswith("inputs."):
        name = expression.removeprefix("inputs.")
        if "." in name or name not in input_names:
            if not input_names:
                return f'unknown variable "{expression}"; this version declares no inputs'
            suggestion = _suggestion(expression, [f"inputs.{known}" for known in input_names])
            return f'unknown variable "{expression}"{suggestion}; declared inputs: ' + ", ".join(
                sorted(input_names)
            )
        return None
    if expression.startswith("objects."):
        if not in_output:
            return f'"{expression}": objects.<Kind> can only be used in output values, after a deploy'
        kind, _, rest = expression.removeprefix("objects.").partition(".")
        if not rest:
            return f'"{expression}" must name a field of the object, such as objects.{kind}.metadata.name'
        if kinds is not None and kind not in kinds:
            listed = ", ".join(sorted(set(kinds))) or "none"
            return f'"{expression}": the template has no object of kind {kind}; its kinds: {listed}'
        return None
    if expression not in KNOWN_VARIABLES:
        known = [*KNOWN_VARIABLES, "inputs.<name>"] + (["objects.<Kind>.<path>"] if in_output else [])
        suggestion = _suggestion(expression, KNOWN_VARIABLES)
        return f'unknown variable "{expression}"{suggestion}; known variables: ' + ", ".join(known)
    return None
