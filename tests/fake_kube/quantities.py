"""Quantities as kube-apiserver keeps them: every field of a built-in kind whose schema is a
`resource.Quantity` (container resources, quota hard limits, LimitRange values, claim requests...)
is decoded and stored in canonical form, as Go's `resource.Quantity` prints it, and is always a
string, whether it was written as one or as a number (`nvidia.com/gpu: 1` is "1").

The canonical form keeps the kind of suffix that was written: binary (Ki, Mi, Gi...), decimal SI
(m, k, M, G...) or an exponent (e3), and writes the value with the largest suffix that leaves a
whole number: "1024Mi" is "1Gi", "1.5Gi" is "1536Mi", "2000m" is "2", "0.5" is "500m", "1000" is
"1k". A binary value under 1024, or one that is not a whole number, is printed as decimal SI
("0.5Ki" is "512"). What is not a quantity is left alone (validation says what is wrong with it).
Nothing else is touched: labels, annotations, ConfigMap data and the like keep what was written.
"""

from __future__ import annotations

import re
from decimal import ROUND_UP, Decimal, InvalidOperation
from typing import Any

from tests.fake_kube.schema import Schema, resolve

QUANTITY_REF = "#/$defs/io.k8s.apimachinery.pkg.api.resource.Quantity"
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {exponent: suffix for suffix, exponent in _DECIMAL.items()}
_BINARY = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_BINARY_SUFFIX = {power: suffix for suffix, power in _BINARY.items()}
_QUANTITY = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(.*)$")
_EXPONENT = re.compile(r"^[eE]([+-]?[0-9]+)$")
_NANO = Decimal("1e-9")


def canonical(value: Any) -> str | None:
    """The canonical text of a quantity, or None when `value` is not one."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    text = value if isinstance(value, str) else repr(value)
    match = _QUANTITY.match(text)
    if match is None:
        return None
    number, suffix = match.groups()
    try:
        amount = Decimal(number)
    except InvalidOperation:
        return None
    if suffix in _BINARY:
        style, amount = "binary", amount * Decimal(1024) ** _BINARY[suffix]
    elif suffix in _DECIMAL:
        style, amount = "decimal", amount.scaleb(_DECIMAL[suffix])
    elif (written := _EXPONENT.match(suffix)) is not None:
        style, amount = "exponent", amount.scaleb(int(written.group(1)))
    else:
        return None
    # A quantity holds nothing finer than a nano-unit: finer values are rounded away from zero.
    finest = amount.as_tuple().exponent
    if isinstance(finest, int) and finest < -9:
        amount = amount.quantize(_NANO, rounding=ROUND_UP)
    if amount == 0:
        return "0"
    if style == "binary":
        if abs(amount) < 1024 or amount != amount.to_integral_value():
            style = "decimal"
        else:
            whole, power = int(amount), 0
            while whole % 1024 == 0 and power < 6:
                whole, power = whole // 1024, power + 1
            return f"{whole}{_BINARY_SUFFIX.get(power, '')}"
    sign, digits, places = amount.normalize().as_tuple()
    mantissa = int("".join(map(str, digits))) * (-1 if sign else 1)
    exponent = int(places)
    shift = exponent % 3
    mantissa, exponent = mantissa * 10**shift, exponent - shift
    if style == "decimal" and exponent in _DECIMAL_SUFFIX:
        return f"{mantissa}{_DECIMAL_SUFFIX[exponent]}"
    return f"{mantissa}" if exponent == 0 else f"{mantissa}e{exponent}"


def _is_quantity(schema: Schema | None) -> bool:
    return schema is not None and schema.get("$ref") == QUANTITY_REF


def canonicalize(value: Any, schema: Schema | None) -> Any:
    """`value` with every quantity its schema declares in canonical form (dicts and lists in place)."""
    if schema is None:
        return value
    if _is_quantity(schema):
        text = canonical(value)
        return value if text is None else text
    resolved = resolve(schema)
    if resolved is None:
        return value
    if isinstance(value, dict):
        properties = resolved.get("properties") or {}
        extra = resolved.get("additionalProperties")
        for key in list(value):
            field = properties.get(key) if key in properties else (extra if isinstance(extra, dict) else None)
            if field is not None:
                value[key] = canonicalize(value[key], field)
    elif isinstance(value, list) and isinstance(resolved.get("items"), dict):
        for index, item in enumerate(value):
            value[index] = canonicalize(item, resolved["items"])
    return value
