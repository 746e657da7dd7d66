"""The search of every list: a case-insensitive substring of any of the named fields.

A search term is at most MAX_SEARCH characters (README, "Security"): longer ones are refused with
INVALID before any SQL (SQLite refuses LIKE patterns over 50,000 bytes with an internal error, and
no name or description is that long).
"""

from __future__ import annotations

from typing import Any

from tortoise.expressions import Q
from tortoise.queryset import QuerySet

from gpupaas.core.errors import InvalidArgument

MAX_SEARCH = 200


def search_term(search: str | None) -> str:
    """The term to look for ("" for none); InvalidArgument when it is too long."""
    term = (search or "").strip()
    if len(term) > MAX_SEARCH:
        raise InvalidArgument(f"search: must be at most {MAX_SEARCH} characters (not {len(term)})")
    return term


def matching(query: QuerySet[Any], search: str | None, *fields: str) -> QuerySet[Any]:
    term = search_term(search)
    if not term:
        return query
    condition = Q()
    for name in fields:
        condition |= Q(**{f"{name}__icontains": term})
    return query.filter(condition)
