"""The search of every list: a case-insensitive substring of any of the named fields."""

from __future__ import annotations

from typing import Any

from tortoise.expressions import Q
from tortoise.queryset import QuerySet


def matching(query: QuerySet[Any], search: str | None, *fields: str) -> QuerySet[Any]:
    term = (search or "").strip()
    if not term:
        return query
    condition = Q()
    for name in fields:
        condition |= Q(**{f"{name}__icontains": term})
    return query.filter(condition)
