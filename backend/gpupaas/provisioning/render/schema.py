"""What the Kubernetes API would reject in a rendered object: `validate_manifest`.

The strict JSON schemas of kubernetes-validate (an unknown field is an error), each problem worded
for a person and located by its path, plus what the schema cannot say: names must be DNS names
and quantities must parse. The schemas are read once per Kubernetes version and kind.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Mapping
from typing import Any

import jsonschema
import kubernetes_validate.utils as kv_utils
from referencing import Registry, Resource

from gpupaas.core.quantities import parse_quantity
from gpupaas.core.validation import DNS_1035_LABEL_PATTERN, DNS_LABEL_PATTERN, dns_label
from gpupaas.provisioning.render.parse import API_VERSION, KIND
from gpupaas.provisioning.render.problems import Path, did_you_mean
from gpupaas.provisioning.wording import type_name

__all__ = ["manifest_problems", "validate_manifest"]


# Object names: Services' are DNS-1035 labels (they start with a letter), most others DNS-1123
# subdomains, namespaces DNS-1123 labels (core.validation.dns_label).
_DNS_1035_LABEL = re.compile(DNS_1035_LABEL_PATTERN)
_DNS_SUBDOMAIN = re.compile(rf"{DNS_LABEL_PATTERN}(?:\.{DNS_LABEL_PATTERN})*")
# RBAC objects are named by path segments, e.g. "system:aggregate-to-admin".
_PATH_SEGMENT_NAMED_KINDS = frozenset({"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"})
_MAX_SCHEMA_PROBLEMS_PER_DOCUMENT = 20


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version)[:2])


@functools.lru_cache(maxsize=8)
def _schema_dir(kubernetes_version: str) -> str:
    wanted = _version_key(kubernetes_version)
    versions = kv_utils.all_versions()
    usable = [version for version in versions if _version_key(version) <= wanted]
    if not usable or wanted > _version_key(versions[-1]):
        raise ValueError(f"kubernetes-validate has no schemas for Kubernetes {kubernetes_version}")
    return f"kubernetes-json-schema/v{usable[-1]}-local-strict"


@functools.lru_cache(maxsize=8)
def _definitions(schema_dir: str) -> Resource[Any]:
    return Resource.from_contents(kv_utils.schema_contents(f"{schema_dir}/_definitions.json", schema_dir))


@functools.lru_cache(maxsize=256)
def _validator(schema_dir: str, kind: str, api_version: str) -> Any:
    """A validator for one kind, or None when there is no schema for it.

    kubernetes_validate.validate() reads and parses 1.8 MB of JSON definitions on every call
    (~7 ms); this does the same lookup once per kind (~0.2 ms a validation afterwards).
    """
    # The file naming of kubernetes-validate: rbac.authorization.k8s.io/v1 -> rbac-v1.
    group_version = re.sub(r"^([^./]*)(?:\.[^/]*)?/", r"\1-", api_version)
    try:
        schema = kv_utils.schema_contents(f"{schema_dir}/{kind.lower()}-{group_version}.json", schema_dir)
    except FileNotFoundError:
        return None
    registry: Registry[Any] = _definitions(schema_dir) @ (Resource.from_contents(schema) @ Registry())
    return jsonschema.validators.Draft202012Validator(schema, registry=registry)


def _is_builtin_group(api_version: str) -> bool:
    group = api_version.rpartition("/")[0]
    return "." not in group or (group.endswith(".k8s.io") and not group.endswith(".x-k8s.io"))


def _expected(types: object) -> str:
    names = [types] if isinstance(types, str) else list(types) if isinstance(types, list) else []
    wanted = [
        {"array": "a list", "object": "a mapping", "integer": "an integer", "boolean": "a boolean"}.get(
            name, f"a {name}"
        )
        for name in names
        if name != "null"
    ]
    return " or ".join(wanted) or "null"


def _schema_error_problems(error: Any) -> list[tuple[Path, str, str]]:
    """(path, message, JSON-schema keyword) for one jsonschema error, in words a person reads."""
    path: Path = tuple(error.absolute_path)
    keyword = str(error.validator)
    instance = error.instance
    if keyword == "type":
        return [(path, f"must be {_expected(error.validator_value)}, not {type_name(instance)}", keyword)]
    if keyword == "additionalProperties" and isinstance(instance, dict):
        allowed = set(error.schema.get("properties", {}))
        unknown = sorted(key for key in instance if key not in allowed)
        return [
            (
                (*path, key),
                "is not a field of this object" + did_you_mean(key, sorted(allowed)),
                keyword,
            )
            for key in unknown
        ]
    if keyword == "enum":
        return [(path, "must be one of: " + ", ".join(str(item) for item in error.validator_value), keyword)]
    if keyword == "required" and isinstance(instance, dict):
        return [
            ((*path, name), "is required", keyword) for name in error.validator_value if name not in instance
        ]
    if (
        keyword in ("oneOf", "anyOf")
        and error.context
        and all(sub.validator == "type" for sub in error.context)
    ):
        types = [sub.validator_value for sub in error.context]
        flat = [name for item in types for name in ([item] if isinstance(item, str) else item)]
        return [(path, f"must be {_expected(sorted(set(flat)))}, not {type_name(instance)}", keyword)]
    return [(path, error.message, keyword)]


def _path_order(path: Path) -> tuple[tuple[int, int, str], ...]:
    return tuple((0, part, "") if isinstance(part, int) else (1, 0, part) for part in path)


def _name_problem(kind: str, name: object) -> str | None:
    if not isinstance(name, str):
        return f"must be a string, not {type_name(name)}"
    if kind == "Namespace":
        if dns_label(name) is not None:
            return (
                f'"{name}" is not a valid namespace name: lowercase letters, digits and "-", starting '
                "and ending with a letter or digit, at most 63 characters"
            )
    elif kind == "Service":
        if len(name) > 63 or _DNS_1035_LABEL.fullmatch(name) is None:
            return (
                f'"{name}" is not a valid Service name: lowercase letters, digits and "-", starting '
                "with a letter and ending with a letter or digit, at most 63 characters"
            )
    elif kind in _PATH_SEGMENT_NAMED_KINDS:
        if name in ("", ".", "..") or "/" in name or "%" in name:
            return f'"{name}" is not a valid {kind} name: it may not be "." or ".." or contain "/" or "%"'
    elif len(name) > 253 or _DNS_SUBDOMAIN.fullmatch(name) is None:
        return (
            f'"{name}" is not a valid Kubernetes name: lowercase letters, digits, "-" and ".", '
            "each part between dots starting and ending with a letter or digit, at most 253 characters"
        )
    return None


def _quantity_problem(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None  # the schema reports wrong types
    try:
        quantity = parse_quantity(str(value)) if isinstance(value, str) else value
    except ValueError:
        return f'"{value}" is not a Kubernetes quantity such as 500m, 8 or 64Gi'
    return f'"{value}" must not be negative' if quantity < 0 else None


def _quantity_maps(manifest: Mapping[str, Any]) -> list[tuple[Path, Mapping[str, Any]]]:
    """The maps of resource quantities in a built-in object, which the schema lets be any string."""
    maps: list[tuple[Path, Any]] = []
    spec = manifest.get("spec")
    if isinstance(spec, dict) and manifest.get("kind") == "ResourceQuota":
        maps.append((("spec", "hard"), spec.get("hard")))
    if (
        isinstance(spec, dict)
        and manifest.get("kind") == "LimitRange"
        and isinstance(spec.get("limits"), list)
    ):
        for i, limit in enumerate(spec["limits"]):
            if isinstance(limit, dict):
                maps.extend(
                    (("spec", "limits", i, key), limit.get(key))
                    for key in ("default", "defaultRequest", "max", "min", "maxLimitRequestRatio")
                )
    # Container and claim resources: every `resources: {requests: ..., limits: ...}` mapping.
    stack: list[tuple[Path, Any]] = [((), manifest)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "resources" and isinstance(item, dict):
                    maps.extend(((*path, key, sub), item.get(sub)) for sub in ("requests", "limits"))
                stack.append(((*path, key), item))
        elif isinstance(value, list):
            stack.extend(((*path, i), item) for i, item in enumerate(value))
    return [(path, value) for path, value in maps if isinstance(value, dict)]


def validate_manifest(
    manifest: Mapping[str, Any], kubernetes_version: str = "1.37.0"
) -> list[tuple[Path, str]]:
    """What the Kubernetes API would reject in one rendered manifest, as (path, message) pairs.

    The strict schema of kubernetes-validate (unknown fields are errors), plus what the schema
    cannot say: names must be DNS-1123 names and quantities must parse. Objects of kinds from
    other API groups (custom resources) are checked for their name only.
    """
    return [(path, message) for path, message, _ in manifest_problems(manifest, kubernetes_version)]


def manifest_problems(manifest: Mapping[str, Any], kubernetes_version: str) -> list[tuple[Path, str, str]]:
    """`validate_manifest`'s problems with the JSON-schema keyword of each ("type", "required", ...;
    "kind", "name" and "quantity" for the checks of our own), by which check_version's trial render
    tells which problems a stand-in value may have caused."""
    kind, api_version = str(manifest.get("kind", "")), str(manifest.get("apiVersion", ""))
    problems: list[tuple[Path, str, str]] = []
    validator = None
    if KIND.fullmatch(kind) and API_VERSION.fullmatch(api_version):
        validator = _validator(_schema_dir(kubernetes_version), kind, api_version)
    if validator is None and _is_builtin_group(api_version):
        major_minor = ".".join(str(part) for part in _version_key(kubernetes_version))
        problems.append(
            (("kind",), f"Kubernetes {major_minor} has no kind {kind} in apiVersion {api_version}", "kind")
        )
    elif validator is not None:
        schema_problems = [
            problem
            for error in itertools.islice(validator.iter_errors(manifest), _MAX_SCHEMA_PROBLEMS_PER_DOCUMENT)
            for problem in _schema_error_problems(error)
        ]
        problems.extend(sorted(schema_problems, key=lambda problem: _path_order(problem[0])))
    metadata = manifest.get("metadata")
    if isinstance(metadata, dict):
        message = _name_problem(kind, metadata.get("name"))
        if message is not None:
            problems.append((("metadata", "name"), message, "name"))
        namespace = metadata.get("namespace")
        if isinstance(namespace, str) and dns_label(namespace) is not None:
            problems.append(
                (("metadata", "namespace"), f'"{namespace}" is not a valid namespace name', "name")
            )
    if validator is not None:
        for path, quantities in _quantity_maps(manifest):
            for key, value in quantities.items():
                message = _quantity_problem(value)
                if message is not None:
                    problems.append(((*path, key), message, "quantity"))
    return problems
