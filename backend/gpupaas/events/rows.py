"""A model's row carried in an event's payload (JSON), and the model built back from it, as the
database would have given it: a status event says what its subject was when it was written, so a
subscriber need not read it again (compute/run_kind.py `status_event`)."""

from __future__ import annotations

from datetime import date, datetime
from enum import Enum
from typing import Any, TypeVar

from tortoise.models import Model

M = TypeVar("M", bound=Model)


def dump(instance: Model) -> dict[str, Any]:
    """Every column of `instance` (its foreign keys as their ids), by column name, as JSON values."""
    meta = instance._meta
    found: dict[str, Any] = {}
    for name, column in meta.fields_db_projection.items():
        # The attribute, not the field's `to_db_value`: that would move an `auto_now` date on.
        value = getattr(instance, name)
        if isinstance(value, datetime | date):
            value = value.isoformat()
        elif isinstance(value, Enum):
            value = value.value
        elif value is not None and not isinstance(value, str | int | float | bool | dict | list):
            value = str(value)  # a UUID, a Decimal
        found[column] = value
    return found


def load(model: type[M], row: dict[str, Any]) -> M:
    """The model from `dump`'s row, each column converted as its field converts what it reads."""
    meta = model._meta
    values: dict[str, Any] = {}
    for name, column in meta.fields_db_projection.items():
        if column not in row:
            raise ValueError(f"the row has no {column!r}")
        values[column] = meta.fields_map[name].to_python_value(row[column])
    return model._init_from_db(**values)
