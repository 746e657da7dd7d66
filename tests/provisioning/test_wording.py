"""How messages name things: a YAML value's type (in the schema's words and in a file's), a count."""

from __future__ import annotations

import pytest

from gpupaas.provisioning.wording import plural, type_name


@pytest.mark.parametrize(
    ("value", "schema", "file"),
    [
        (None, "null", "empty"),
        (True, "a boolean", "a boolean"),
        (3, "an integer", "a number"),
        (1.5, "a number", "a number"),
        ("x", "a string", "a string"),
        ([1], "a list", "a list"),
        ({"a": 1}, "a mapping", "a mapping"),
        (b"x", "bytes", "bytes"),
    ],
)
def test_type_names(value: object, schema: str, file: str) -> None:
    assert type_name(value) == schema
    assert type_name(value, null="empty", integers=False) == file


def test_plural() -> None:
    assert [plural(n, "object") for n in (0, 1, 2)] == ["0 objects", "1 object", "2 objects"]
