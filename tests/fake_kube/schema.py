"""The OpenAPI schemas of the served kinds, from kubernetes-validate's strict 1.37 JSON schemas.

Two uses. Validation: the same schema files and Draft 2020-12 validator that
`kubernetes_validate.validate(obj, "1.37.0", strict=True)` uses, built once per kind (the library
re-reads 1.8 MB of definitions on every call) and asked for every error rather than the first, so
that a 422 can list each field as the real API server does in `details.causes`. Structure: the
list semantics (`x-kubernetes-list-type` map/set/atomic with its map keys, the strategic-merge
`x-kubernetes-patch-merge-key`) and atomic maps that server-side apply and strategic merge patch
follow.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import resources as importlib_resources
from typing import Any

import jsonschema
import kubernetes_validate
from referencing import Registry, Resource

from tests.fake_kube.resources import KUBERNETES_VERSION

_SCHEMA_DIR = f"kubernetes-json-schema/v{KUBERNETES_VERSION}-local-strict"
Schema = dict[str, Any]


def _read(name: str) -> Any:
    ref = importlib_resources.files(kubernetes_validate).joinpath(f"{_SCHEMA_DIR}/{name}")
    return json.loads(ref.read_text())


@functools.cache
def _definitions() -> dict[str, Schema]:
    defs: dict[str, Schema] = _read("_definitions.json")["$defs"]
    return defs


@functools.cache
def _definitions_resource() -> Resource[Any]:
    return Resource.from_contents(_read("_definitions.json"))


def _file_name(api_version: str, kind: str) -> str:
    # kubernetes-validate's naming: rbac.authorization.k8s.io/v1 -> rbac-v1, v1 -> v1.
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    return f"{kind.lower()}-{group_version}.json"


@functools.cache
def kind_schema(api_version: str, kind: str) -> Schema | None:
    try:
        schema: Schema = _read(_file_name(api_version, kind))
    except FileNotFoundError:
        return None
    return schema


@functools.cache
def _validator(api_version: str, kind: str) -> Any:
    schema = kind_schema(api_version, kind)
    if schema is None:
        return None
    registry: Registry[Any] = _definitions_resource() @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


# Navigation --------------------------------------------------------------------------------


def resolve(schema: Schema | None) -> Schema | None:
    while schema is not None and "$ref" in schema:
        schema = _definitions().get(schema["$ref"].rpartition("#/$defs/")[2])
    return schema


def child(schema: Schema | None, key: str) -> Schema | None:
    """The schema of a field (a struct property or a map value)."""
    schema = resolve(schema)
    if schema is None:
        return None
    properties = schema.get("properties")
    if properties and key in properties:
        return resolve(properties[key])
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        return resolve(extra)
    return None


def items(schema: Schema | None) -> Schema | None:
    schema = resolve(schema)
    return resolve(schema.get("items")) if schema else None


def is_struct(schema: Schema | None) -> bool:
    """A struct (named properties), not a free map (string keys to values)."""
    schema = resolve(schema)
    return bool(schema and schema.get("properties"))


def is_atomic_map(schema: Schema | None) -> bool:
    schema = resolve(schema)
    return bool(schema and schema.get("x-kubernetes-map-type") == "atomic")


@dataclass(frozen=True)
class ListType:
    kind: str  # "map", "set" or "atomic"
    keys: tuple[str, ...] = ()


def list_type(schema: Schema | None) -> ListType:
    """How server-side apply merges a list: by map keys, as a set, or as one value."""
    schema = resolve(schema)
    if schema is None:
        return ListType("atomic")
    kind = schema.get("x-kubernetes-list-type")
    if kind == "map":
        return ListType("map", tuple(schema.get("x-kubernetes-list-map-keys") or ()))
    if kind == "set":
        return ListType("set")
    if schema.get("x-kubernetes-patch-strategy", "").startswith("merge") and schema.get(
        "x-kubernetes-patch-merge-key"
    ):
        return ListType("map", (schema["x-kubernetes-patch-merge-key"],))
    return ListType("atomic")


def patch_merge_key(schema: Schema | None) -> str | None:
    """The merge key of a list for strategic merge patch, None when the list is replaced."""
    schema = resolve(schema)
    if schema is None or "merge" not in schema.get("x-kubernetes-patch-strategy", ""):
        return None
    key = schema.get("x-kubernetes-patch-merge-key")
    return str(key) if key else None


def patch_merges_primitives(schema: Schema | None) -> bool:
    """A list of scalars that strategic merge patch merges (finalizers) instead of replacing."""
    schema = resolve(schema)
    return bool(schema and "merge" in schema.get("x-kubernetes-patch-strategy", ""))


# Validation --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cause:
    """One entry of Status.details.causes."""

    reason: str
    message: str
    field: str

    def to_json(self) -> dict[str, str]:
        return {"reason": self.reason, "message": self.message, "field": self.field}

    def text(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


def format_path(root: Schema | None, path: Iterator[Any] | list[Any] | tuple[Any, ...]) -> str:
    """A field path the way the API server writes it: spec.containers[0].resources.limits[cpu]."""
    text = ""
    schema = root
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
            schema = items(schema)
        else:
            if is_struct(schema) or schema is None:
                text += f".{part}" if text else str(part)
            else:
                text += f"[{part}]"
            schema = child(schema, str(part))
    return text


def _quote(value: Any) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))[:200]
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _type_word(types: Any) -> str:
    names = [types] if isinstance(types, str) else list(types or [])
    names = [name for name in names if name != "null"]
    return " or ".join(names) or "null"


def _causes_of(error: Any, root: Schema) -> list[Cause]:
    path = list(error.absolute_path)
    keyword = error.validator
    if keyword == "required":
        return [
            Cause("FieldValueRequired", "Required value", format_path(root, [*path, name]))
            for name in error.validator_value
            if isinstance(error.instance, dict) and name not in error.instance
        ]
    if keyword == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        return [
            Cause(
                "FieldValueInvalid",
                f'Invalid value: "{key}": field not declared in schema',
                format_path(root, [*path, key]),
            )
            for key in sorted(error.instance)
            if key not in allowed
        ]
    if keyword == "enum":
        supported = ", ".join(_quote(v) for v in error.validator_value if v is not None)
        return [
            Cause(
                "FieldValueNotSupported",
                f"Unsupported value: {_quote(error.instance)}: supported values: {supported}",
                format_path(root, path),
            )
        ]
    if keyword == "type":
        return [
            Cause(
                "FieldValueTypeInvalid",
                f"Invalid value: {_quote(error.instance)}: must be of type {_type_word(error.validator_value)}",
                format_path(root, path),
            )
        ]
    if (
        keyword in ("oneOf", "anyOf")
        and error.context
        and all(sub.validator == "type" for sub in error.context)
    ):
        types = sorted({_type_word(sub.validator_value) for sub in error.context})
        return [
            Cause(
                "FieldValueTypeInvalid",
                f"Invalid value: {_quote(error.instance)}: must be of type {' or '.join(types)}",
                format_path(root, path),
            )
        ]
    return [
        Cause(
            "FieldValueInvalid",
            f"Invalid value: {_quote(error.instance)}: {error.message}",
            format_path(root, path),
        )
    ]


def schema_causes(obj: dict[str, Any], max_errors: int = 50) -> list[Cause]:
    """What the strict schema rejects in the object, one Cause per field (empty when valid).

    The validator is the one kubernetes_validate.validate(obj, "1.37.0", strict=True) builds.
    """
    api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
    validator = _validator(api_version, kind)
    if validator is None:
        return [Cause("FieldValueNotSupported", f"no schema for {kind} in {api_version}", "kind")]
    root = kind_schema(api_version, kind)
    assert root is not None
    causes: list[Cause] = []
    for count, error in enumerate(validator.iter_errors(obj)):
        if count >= max_errors:
            break
        causes.extend(_causes_of(error, root))
    return sorted(dict.fromkeys(causes), key=lambda c: c.field)
