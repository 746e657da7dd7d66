"""Input definitions of environment-template versions and the checks on their values.

An input's value always travels as a string (through the API, the profile, the snapshot); this module
says whether a string is acceptable for a definition and turns it into the value a template sees.
A QUANTITY input is read by the project's one quantity parser (core/quantities.py).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from decimal import Decimal, DecimalException
from typing import Literal, get_args

from gpupaas.core.quantities import parse_quantity

__all__ = [
    "INPUT_NAME_RULE",
    "INPUT_TYPES",
    "QUANTITY_HINT",
    "InputDefinition",
    "InputType",
    "check_definition",
    "check_value",
    "format_number",
    "is_valid_name",
    "typed_value",
]

InputType = Literal["STRING", "NUMBER", "BOOLEAN", "QUANTITY"]
INPUT_TYPES: tuple[InputType, ...] = get_args(InputType)

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
INPUT_NAME_RULE = (
    'must start with a letter or "_" and hold only letters, digits and "_" (at most 63 characters)'
)

# Stricter than float(): ASCII digits only, no spaces, no "_" separators, no "inf"/"nan" spellings.
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)

QUANTITY_HINT = "must be a Kubernetes quantity such as 500m, 8 or 64Gi"


@dataclass(frozen=True)
class InputDefinition:
    """One input of a template version, as declared by the template's author."""

    name: str
    type: InputType
    description: str | None = None
    required: bool = False
    default: str | None = None
    options: tuple[str, ...] = ()
    pattern: str | None = None
    min: float | None = None
    max: float | None = None
    sensitive: bool = False


def is_valid_name(name: str) -> bool:
    """Whether `name` may name an input or an output (it is used as `inputs.<name>` in placeholders)."""
    return _NAME.fullmatch(name) is not None


def _parse_number(value: str) -> Decimal | None:
    if _NUMBER.fullmatch(value) is None:
        return None
    try:
        number = Decimal(value)
    except DecimalException:  # an exponent beyond what Decimal can hold
        return None
    # float() is where the number ends up in min/max checks and templates: it must stay finite.
    return number if math.isfinite(float(number)) else None


def _parse_boolean(value: str) -> bool | None:
    lowered = value.lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    return None


def format_number(number: float) -> str:
    """A bound or a number as people write it: 1.0 -> "1", 0.5 -> "0.5"."""
    number = float(number)  # an int passes for a float in type hints, but has no is_integer() before 3.12
    return str(int(number)) if number.is_integer() else repr(number)


def _type_problem(defn: InputDefinition, value: str) -> str | None:
    if defn.type == "NUMBER":
        if _NUMBER.fullmatch(value) is not None and _parse_number(value) is None:
            return "must be a finite number"
        return None if _parse_number(value) is not None else "must be a number"
    if defn.type == "BOOLEAN":
        return None if _parse_boolean(value) is not None else "must be true or false"
    if defn.type == "QUANTITY":
        try:
            quantity = parse_quantity(value)
        except ValueError:
            return QUANTITY_HINT
        # The grammar allows a sign, but no resource request or limit may be negative.
        return "must not be negative" if quantity < 0 else None
    if defn.type == "STRING":
        return None
    return f"cannot be checked: the input's type {defn.type!r} is unknown"


def _same_option(defn: InputDefinition, value: str, option: str) -> bool:
    # Options compare by meaning where the type has one: "8.0" is the option "8", "TRUE" is "true".
    if defn.type == "NUMBER":
        a, b = _parse_number(value), _parse_number(option)
        return a is not None and a == b
    if defn.type == "BOOLEAN":
        return _parse_boolean(value) is not None and _parse_boolean(value) == _parse_boolean(option)
    return value == option


def check_value(defn: InputDefinition, value: str) -> str | None:
    """None when `value` satisfies `defn`, else what is wrong with it, phrased "must ...".

    The message never repeats the value itself, since the input may be sensitive. A pattern must
    match the whole value.
    """
    problem = _type_problem(defn, value)
    if problem is not None:
        return problem
    if defn.options and not any(_same_option(defn, value, option) for option in defn.options):
        return "must be one of: " + ", ".join(defn.options)
    if defn.pattern is not None:
        try:
            matches = re.fullmatch(defn.pattern, value) is not None
        except re.error:
            return "cannot be checked: the input's pattern is not a valid regular expression"
        if not matches:
            return f"must match {defn.pattern}"
    if defn.type == "NUMBER":
        number = float(value)
        if defn.min is not None and number < defn.min:
            return f"must be at least {format_number(defn.min)}"
        if defn.max is not None and number > defn.max:
            return f"must be at most {format_number(defn.max)}"
    return None


def typed_value(defn: InputDefinition, value: str) -> str | int | float | bool:
    """The value as a template sees it: NUMBER -> int when integral else float, BOOLEAN -> bool.

    Raises ValueError when `value` is not of the input's type (options, pattern and bounds are the
    business of check_value).
    """
    if defn.type == "NUMBER":
        number = _parse_number(value)
        if number is None:
            raise ValueError(f"input {defn.name!r} must be a number")
        return int(number) if number == number.to_integral_value() else float(number)
    if defn.type == "BOOLEAN":
        boolean = _parse_boolean(value)
        if boolean is None:
            raise ValueError(f"input {defn.name!r} must be true or false")
        return boolean
    return value


def check_definition(defn: InputDefinition) -> list[tuple[str, str]]:
    """What is wrong with a definition itself, as (field, message) pairs.

    The field is one of "name", "type", "pattern", "min", "max", "options", "default".
    """
    problems: list[tuple[str, str]] = []
    if not is_valid_name(defn.name):
        problems.append(("name", f"input name {defn.name!r} {INPUT_NAME_RULE}"))
    if defn.type not in INPUT_TYPES:
        problems.append(("type", "must be one of " + ", ".join(INPUT_TYPES)))
        return problems

    pattern_ok = True
    if defn.pattern is not None:
        if defn.type not in ("STRING", "QUANTITY"):
            problems.append(("pattern", "a pattern applies to STRING and QUANTITY inputs only"))
            pattern_ok = False
        else:
            try:
                re.compile(defn.pattern)
            except re.error as exc:
                problems.append(("pattern", f"is not a valid regular expression: {exc}"))
                pattern_ok = False

    bounds_ok = True
    for field, bound in (("min", defn.min), ("max", defn.max)):
        if bound is None:
            continue
        if defn.type != "NUMBER":
            problems.append((field, f"{field} applies to NUMBER inputs only"))
            bounds_ok = False
        elif not math.isfinite(bound):
            problems.append((field, f"{field} must be a finite number"))
            bounds_ok = False
    if bounds_ok and defn.min is not None and defn.max is not None and defn.min > defn.max:
        problems.append(
            ("min", f"min ({format_number(defn.min)}) is greater than max ({format_number(defn.max)})")
        )
        bounds_ok = False

    # Values are checked against the rules that are themselves sound, so one mistake is reported once.
    rules = replace(
        defn,
        pattern=defn.pattern if pattern_ok else None,
        min=defn.min if bounds_ok else None,
        max=defn.max if bounds_ok else None,
    )
    seen: set[str] = set()
    for option in defn.options:
        if option in seen:
            problems.append(("options", f"option {option!r} is listed more than once"))
        seen.add(option)
        message = check_value(replace(rules, options=()), option)
        if message is not None:
            problems.append(("options", f"option {option!r} {message}"))
    if defn.default is not None:
        message = check_value(rules, defn.default)
        if message is not None:
            problems.append(("default", f"the default {message}"))
    return problems
