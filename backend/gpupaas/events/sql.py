"""Hand-written statements where the ORM would need two: an `UPDATE ... RETURNING` takes a row and
gives it back in one round trip (the relay's claim, a worker's take of a run, its finish), where
Tortoise would SELECT, then UPDATE, then SELECT again. One text for SQLite (3.35+) and PostgreSQL:
`?` placeholders, numbered for asyncpg; values as Tortoise stores them (UUIDs are text on SQLite).
Rows come back as the model, converted as Tortoise converts what it reads.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from pypika_tortoise.terms import LiteralValue
from tortoise.models import Model

M = TypeVar("M", bound=Model)


def dialect(model: type[Model]) -> str:
    """The dialect of the model's connection (the transaction's, inside one)."""
    name: str = model._meta.db.capabilities.dialect
    return name


async def rows(model: type[Model], sql: str, values: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """`sql` (with `?` placeholders) on the model's connection; the rows as dicts of columns."""
    connection = model._meta.db
    if connection.capabilities.dialect == "sqlite":
        values = [str(v) if isinstance(v, uuid.UUID) else v for v in values]
    else:  # asyncpg numbers them: $1, $2, ...
        parts = sql.split("?")
        sql = "".join(part + (f"${n}" if n < len(parts) else "") for n, part in enumerate(parts, 1))
    found: list[dict[str, Any]] = await connection.execute_query_dict(sql, list(values))
    return found


async def objects(model: type[M], sql: str, values: Sequence[Any] = ()) -> list[M]:
    """`sql` ending in `RETURNING *` (or selecting every column): the rows as models."""
    return [model._init_from_db(**row) for row in await rows(model, sql, values)]


async def updated(query: Any) -> list[Any]:
    """A Tortoise `Model.filter(...).update(...)` query run with `RETURNING *`: the rows it changed,
    as models, in the one statement (Tortoise's own UPDATE returns a count only)."""
    return [model for model, _ in await updated_with(query, {})]


async def updated_with(query: Any, expressions: Mapping[str, str]) -> list[tuple[Any, dict[str, Any]]]:
    """`updated`, each row with the values of `expressions` (SQL text by name, evaluated by the same
    statement on the row as it was written: a subquery on another table, say) as the driver
    returns them."""
    query._choose_db_if_not_chosen(True)
    query._make_query()
    terms = [LiteralValue(f"({text})", alias=name) for name, text in expressions.items()]
    sql_text, values = query.query.returning("*", *terms).get_parameterized_sql()
    found = await query._db.execute_query_dict(sql_text, values)
    rows = []
    for row in found:
        extra = {name: row.pop(name) for name in expressions}
        rows.append((query.model._init_from_db(**row), extra))
    return rows
