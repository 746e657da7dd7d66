"""Kubernetes resource quantities ("500m", "64Gi", "1e3"): the one parser of their grammar, and the
checks of a field that holds one.

`parse_quantity` is for code that computes with a quantity (admission on the simulated cluster, node
capacities, template checks): the exact value, or a ValueError whose message a person can act on.
`read_quantity` is the parser under it, for callers that also want the suffix or decide themselves
what an absurd exponent means.

`quantity`, `cpu_quantity` and `memory_quantity` are field validators in the manner of
core/validation.py: None when the value is fine, else a message fragment ("must be ...") to show next
to the field. They are stricter than the grammar, as the fields are: no negative amounts, CPU in
thousandths of a core at most, memory in whole bytes.
"""

from __future__ import annotations

import decimal
import re
from dataclasses import dataclass
from decimal import Decimal

__all__ = [
    "MAX_EXPONENT",
    "Quantity",
    "cpu_quantity",
    "memory_quantity",
    "parse_quantity",
    "quantity",
    "read_quantity",
]

# The grammar of Kubernetes' resource.Quantity (k8s.io/apimachinery/pkg/api/resource). The doc
# comment there omits "n" and "u", but ParseQuantity accepts them, so they are accepted here too.
# ASCII only: [0-9], never another script's digits, which Kubernetes refuses.
_QUANTITY_RE = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:(?P<suffix>[KMGTPE]i|[numkMGTPE])|[eE](?P<exponent>[+-]?[0-9]+))?",
    re.ASCII,
)
_BINARY_FACTORS = {p + "i": Decimal(1024) ** (i + 1) for i, p in enumerate("KMGTPE")}
_DECIMAL_EXPONENTS = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}

# Kubernetes itself caps quantities far below this; the bound only keeps the arithmetic (and the
# integers callers make of a value) small for absurd input such as "1e99999999".
MAX_EXPONENT = 1000
# More digits than this in an exponent is past any bound (and past what int() parses by default).
_MAX_EXPONENT_DIGITS = 9


@dataclass(frozen=True)
class Quantity:
    """A quantity as written: its value in base units (cores, bytes) and its suffix.

    `value` is exact when `exact` is True. An exponent past the bound of `read_quantity` is not
    computed: the value then saturates to +-Infinity (0 for a zero number, and for a negative
    exponent) and `exact` is False.
    """

    value: Decimal
    suffix: str  # "Ki", "m", ... as written; "" when there is none and for an exponent ("1e3")
    exact: bool = True


def read_quantity(text: str, *, max_exponent: int = MAX_EXPONENT) -> Quantity | None:
    """The quantity `text` spells ("500m" -> 0.5, "64Gi" -> 68719476736, "1e3" -> 1000), or None
    when it is not one. `max_exponent` bounds the exponent ("e3", or a suffix's) that is computed;
    see `Quantity` for what lies beyond."""
    match = _QUANTITY_RE.fullmatch(text)
    if match is None:
        return None
    number = Decimal(match["number"])  # exact, whatever the context's precision
    suffix = match["suffix"] or ""
    factor = _BINARY_FACTORS.get(suffix, Decimal(1))
    exponent = _DECIMAL_EXPONENTS.get(suffix, 0)
    written = match["exponent"]
    if written is not None:
        digits = written.lstrip("+-").lstrip("0") or "0"
        size = int(digits) if len(digits) <= _MAX_EXPONENT_DIGITS else 10**_MAX_EXPONENT_DIGITS
        exponent = -size if written.startswith("-") else size
    if exponent > max_exponent:
        return Quantity(number * Decimal("Infinity") if number else Decimal(0), suffix, exact=False)
    if exponent < -max_exponent:
        return Quantity(Decimal(0), suffix, exact=False)
    # Precision for every digit of the number and of the factor: the product is exact.
    context = decimal.Context(
        prec=len(match["number"]) + 40, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN, traps=[]
    )
    return Quantity(context.multiply(number, factor).scaleb(exponent, context), suffix)


def parse_quantity(text: str) -> Decimal:
    """The exact value of a Kubernetes quantity ("500m" -> 0.5, "64Gi" -> 68719476736, "1e3" -> 1000).

    Raises ValueError with a message a person can act on when `text` is not a quantity, or when its
    exponent is beyond +-MAX_EXPONENT.
    """
    parsed = read_quantity(text)
    if parsed is None:
        raise ValueError(
            f"{text!r} is not a Kubernetes quantity: expected a number with an optional suffix "
            "(m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent such as e3), e.g. 500m, 8 or 64Gi"
        )
    if not parsed.exact:
        raise ValueError(f"{text!r} is out of range for a Kubernetes quantity")
    return parsed.value


# ---------------------------------------------------------------------------- field validators

# Long enough for any real quantity; keeps the arithmetic below cheap for absurd input.
_FIELD_MAX_LENGTH = 64
# Exact for every exponent a field of that length can sensibly spell; further out a value saturates
# (see Quantity), which the checks read as too large, or as zero.
_FIELD_MAX_EXPONENT = 10_000
# Kubernetes turns quantities into int64 (bytes; millicores for CPU) where it uses them.
_FIELD_MAX_VALUE = Decimal(2**63 - 1)

_QUANTITY_EXAMPLES = 'like "8", "1.5", "500m", "64Gi" or "10G"'
_CPU_EXAMPLES = 'like "8", "0.5" or "500m" (thousandths of a core)'
_MEMORY_EXAMPLES = 'like "64Gi", "512Mi" or "10G"'

# Units people write for bytes that Kubernetes does not know, mapped to the binary unit they most
# likely mean (memory and disks are sold and reported in GiB-sized units).
_MEMORY_UNIT_GUESSES = {
    **dict.fromkeys(("k", "kb", "kib", "ki"), "Ki"),
    **dict.fromkeys(("m", "mb", "mib", "mi"), "Mi"),
    **dict.fromkeys(("g", "gb", "gib", "gi"), "Gi"),
    **dict.fromkeys(("t", "tb", "tib", "ti"), "Ti"),
    **dict.fromkeys(("p", "pb", "pib", "pi"), "Pi"),
}
_NUMBER_AND_UNIT_RE = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([A-Za-z]+)\s*", re.ASCII)


def _field_quantity(value: str) -> Quantity | None:
    return read_quantity(value, max_exponent=_FIELD_MAX_EXPONENT)


def _check_quantity(value: str, examples: str, allow_zero: bool) -> tuple[str | None, Decimal, str]:
    if not value:
        return f"must not be empty: give a quantity {examples}", Decimal(0), ""
    if len(value) > _FIELD_MAX_LENGTH:
        return f"is too long for a quantity (at most {_FIELD_MAX_LENGTH} characters)", Decimal(0), ""
    parsed = _field_quantity(value)
    if parsed is None:
        squeezed = "".join(value.split())
        if squeezed != value and _field_quantity(squeezed) is not None:
            return f'must not contain spaces: did you mean "{squeezed}"?', Decimal(0), ""
        return f"must be a quantity {examples}", Decimal(0), ""
    amount, suffix = parsed.value, parsed.suffix
    if value.startswith("-") and amount != 0:
        return "must not be negative", amount, suffix
    if value.startswith("-"):
        return 'must not start with "-"', amount, suffix
    if amount == 0 and not allow_zero:
        return "must be greater than zero", amount, suffix
    if amount > _FIELD_MAX_VALUE:
        return "is too large", amount, suffix
    return None, amount, suffix


def quantity(value: str, *, allow_zero: bool = True) -> str | None:
    """A non-negative Kubernetes quantity (``8``, ``1.5``, ``500m``, ``64Gi``, ``1e3``)."""
    return _check_quantity(value, _QUANTITY_EXAMPLES, allow_zero)[0]


def cpu_quantity(value: str, *, allow_zero: bool = True) -> str | None:
    """A number of CPU cores as Kubernetes takes it: ``8``, ``0.5`` or ``500m``."""
    problem, amount, suffix = _check_quantity(value, f"of CPU cores {_CPU_EXAMPLES}", allow_zero)
    if problem is not None:
        return problem
    if suffix in _BINARY_FACTORS:
        return f'must be a number of CPU cores {_CPU_EXAMPLES}: "{suffix}" is a unit of bytes'
    if amount * 1000 > _FIELD_MAX_VALUE:
        return "is too large"
    # Kubernetes silently rounds CPU up to whole millicores; say so rather than change the value.
    if (amount * 1000) != (amount * 1000).to_integral_value():
        return "can be given to a thousandth of a core at most (1m = 0.001 cores)"
    return None


def memory_quantity(value: str, *, allow_zero: bool = True) -> str | None:
    """An amount of memory or storage in bytes: ``64Gi``, ``512Mi``, ``10G``."""
    unit_match = _NUMBER_AND_UNIT_RE.fullmatch(value)
    if unit_match is not None:
        number, unit = unit_match[1], unit_match[2]
        # "64m" is valid Kubernetes syntax but means 0.064 bytes: nobody wants that.
        if unit == "m":
            return (
                f'uses "m", which means thousandths ("{value}" is a fraction of a byte): '
                f"did you mean {number}Mi?"
            )
        guess = _MEMORY_UNIT_GUESSES.get(unit.lower())
        if guess is not None and _QUANTITY_RE.fullmatch(value) is None:
            return f"must be an amount of bytes {_MEMORY_EXAMPLES}: did you mean {number}{guess}?"
    problem, amount, suffix = _check_quantity(value, f"of bytes {_MEMORY_EXAMPLES}", allow_zero)
    if problem is not None:
        return problem
    if suffix in ("m", "u", "n"):
        return f'must not use "{suffix}", a fraction: give whole bytes {_MEMORY_EXAMPLES}'
    if amount != amount.to_integral_value():
        plain = f"{amount.normalize():f}"
        if plain != value:
            return f"must be a whole number of bytes ({value} is {plain} bytes)"
        return "must be a whole number of bytes"
    return None
