"""Small helpers of the fake Kubernetes API server: timestamps, quantities, names, JSON copies."""

from __future__ import annotations

import copy
import datetime as dt
import hashlib
import json
import random
import string
from collections.abc import Callable
from decimal import Decimal
from typing import Any, TypeVar

from kubernetes import utils as _kube_utils

Obj = dict[str, Any]
T = TypeVar("T")

# kubernetes.utils is not annotated: its parse_quantity takes a str or a number, returns a Decimal.
_parse_quantity: Callable[[Any], Decimal] = _kube_utils.parse_quantity

_BINARY = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))
_BYTE_RESOURCES = ("memory", "storage", "ephemeral-storage")
# The alphabet of generated name suffixes (client-go's utilrand: no vowels, no look-alikes).
_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_micro() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def now_nano() -> str:
    """RFC 3339 with nanoseconds, as the container runtime stamps log lines."""
    moment = dt.datetime.now(dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond:06d}000Z"


def deep(obj: T) -> T:
    return copy.deepcopy(obj)


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def short_hash(value: Any, length: int = 10) -> str:
    """A stable name-safe hash, like the pod-template-hash label."""
    digest = hashlib.sha256(canonical_json(value).encode()).digest()
    return "".join(_SUFFIX_ALPHABET[b % len(_SUFFIX_ALPHABET)] for b in digest[:length])


def random_suffix(length: int = 5) -> str:
    return "".join(random.choice(_SUFFIX_ALPHABET) for _ in range(length))


def random_hex(length: int = 64) -> str:
    return "".join(random.choice(string.hexdigits[:16]) for _ in range(length))


def parse_quantity(value: Any) -> Decimal:
    """A Kubernetes quantity as a Decimal; ValueError when it is not one."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a quantity")
    return _parse_quantity(value)


def format_quantity(value: Decimal, resource: str = "") -> str:
    """A quantity the way the API prints a sum: 64Gi, 4, 500m."""
    if value == 0:
        return "0"
    if value == value.to_integral_value():
        number = int(value)
        if any(resource.endswith(name) for name in _BYTE_RESOURCES):
            for suffix, size in _BINARY:
                if number % size == 0:
                    return f"{number // size}{suffix}"
        return str(number)
    milli = value * 1000
    if milli == milli.to_integral_value():
        return f"{int(milli)}m"
    return str(value)


def get_path(obj: Any, *keys: str | int, default: Any = None) -> Any:
    for key in keys:
        if isinstance(key, int):
            if not isinstance(obj, list) or key >= len(obj):
                return default
        elif not isinstance(obj, dict) or key not in obj:
            return default
        obj = obj[key]
    return obj


def strip_nulls(value: Any) -> Any:
    """The value without null fields (the API treats null as unset)."""
    if isinstance(value, dict):
        return {k: strip_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [strip_nulls(v) for v in value]
    return value
