"""Natural order for names that people number: "pytorch-2-6" before "pytorch-2-10".

A plain string sort puts "pytorch-2-10" first ("1" < "6"). `natural_key` splits a name into runs of
digits and of everything else and compares the digit runs as numbers, the text runs case-folded, so
that lists ordered by name read the way their versions count. Equal keys ("a01" and "a1") fall back
to the name itself, so the order is total and the same on every database.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TypeVar

__all__ = ["natural_key", "natural_sorted"]

T = TypeVar("T")

_RUNS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple[tuple[tuple[int, int | str], ...], str]:
    """The sort key of one name. Every part is (kind, value): numbers (0) before text (1) at the
    same place, so that keys of any two names compare without mixing int and str."""
    parts = tuple(
        (0, int(run)) if index % 2 else (1, run.casefold())
        for index, run in enumerate(_RUNS.split(name))
        if run or index == 0
    )
    return parts, name


def natural_sorted(items: Iterable[T], name: Callable[[T], str]) -> list[T]:
    """`items` in the natural order of their names (stable for equal names)."""
    return sorted(items, key=lambda item: natural_key(name(item)))
