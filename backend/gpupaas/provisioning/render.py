"""Parsing, checking and rendering the versions of environment templates.

A version's `resources` is a YAML stream of Kubernetes manifests with `{{ ... }}` placeholders in
its strings. The YAML is parsed first and the placeholders are then substituted inside the parsed
strings, so an input value is only ever data: it can never add keys, documents or YAML tags. A
string that is exactly one placeholder takes the value's own type (a number stays a number).

`check_version` finds everything wrong with a version when it is added (never when a user deploys):
shape, variables, input and output definitions, and a trial render validated against the Kubernetes
schema. `render` and `render_outputs` are what a deploy uses.
"""

from __future__ import annotations

import difflib
import functools
import itertools
import json
import math
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from dataclasses import field as dataclass_field
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs; kubernetes-validate depends on it
import kubernetes_validate.utils as kv_utils
import yaml
from referencing import Registry, Resource

from gpupaas.core.quantities import parse_quantity
from gpupaas.core.validation import DNS_LABEL_PATTERN, dns_label
from gpupaas.provisioning.inputs import (
    INPUT_NAME_RULE,
    InputDefinition,
    check_definition,
    check_value,
    format_number,
    is_valid_name,
    typed_value,
)
from gpupaas.provisioning.yaml_values import type_name

__all__ = [
    "KNOWN_VARIABLES",
    "OutputDefinition",
    "Problem",
    "RenderContext",
    "TemplateError",
    "check_version",
    "parse_documents",
    "placeholders_in",
    "render",
    "render_outputs",
    "sample_context",
    "validate_manifest",
]

KNOWN_VARIABLES: tuple[str, ...] = (
    "instance.name",
    "instance.namespace",
    "instance.id",
    "profile.name",
    "resources.cpu",
    "resources.memory",
    "resources.storage",
    "resources.gpuCount",
    "resources.gpuVendor",
    "resources.gpuModel",
    "resources.gpuResourceName",
    "generated.token",
)

Path = tuple[str | int, ...]

# `{{` ... `}}`, the inside never crossing a `}}`; everything between the braces is one expression.
_PLACEHOLDER = re.compile(r"\{\{((?:(?!\}\}).)*)\}\}", re.DOTALL)
_EXPRESSION = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_-]+)*")
_KIND = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_API_VERSION = re.compile(r"(?:[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?/)?[a-z0-9]+")
_DNS_1035_LABEL = re.compile(r"[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(rf"{DNS_LABEL_PATTERN}(?:\.{DNS_LABEL_PATTERN})*")
# RBAC objects are named by path segments, e.g. "system:aggregate-to-admin".
_PATH_SEGMENT_NAMED_KINDS = frozenset({"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"})
# Repeats through YAML aliases count: a few nested anchors would otherwise expand to billions.
_MAX_VALUES = 100_000
_MAX_SCHEMA_PROBLEMS_PER_DOCUMENT = 20
_SAMPLE_STRINGS = ("sample", "sample-1", "a", "1", "A", "a1", "v1", "1.0.0", "sample@example.com")


@dataclass(frozen=True)
class OutputDefinition:
    """One output of a template version: a string with placeholders, rendered after a deploy."""

    name: str
    description: str | None
    value: str


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a template version, located well enough for its author to fix it.

    `document` is the 0-based index of the YAML document among the non-empty ones; the text of
    the problem counts documents from 1, as people and editors do. `path` is inside the document
    for field "resources", and (index, field) for "inputs" and "outputs". `object_ref` ("Kind name",
    as written in the template) only makes the text easier to read.
    """

    message: str
    document: int | None = None
    path: Path = ()
    field: str = "resources"
    object_ref: str | None = None

    def __str__(self) -> str:
        where: list[str] = []
        if self.document is not None:
            ref = f" ({self.object_ref})" if self.object_ref else ""
            where.append(f"document {self.document + 1}{ref}")
        if self.field != "resources":
            where.append(self.field + _format_path(self.path))
        elif self.path:
            where.append(_format_path(self.path).removeprefix("."))
        return f"{', '.join(where)}: {self.message}" if where else self.message

    def api_field(self) -> list[str]:
        """The path of the API input field this problem belongs to, for a UserError."""
        if self.field == "resources":
            return ["resources"]
        return [self.field, *(str(part) for part in self.path)]


class TemplateError(Exception):
    """A template that cannot be parsed or rendered; `problems` says why."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(str(problem) for problem in self.problems))


@dataclass(frozen=True)
class RenderContext:
    """The values the placeholders of one render read.

    For a CPU-only profile `gpu_resource_name` should still name a resource (for example
    nvidia.com/gpu with `gpu_count` 0), since templates use it in quota keys. A missing
    `gpu_model` renders as "".
    """

    inputs: Mapping[str, str | int | float | bool]
    instance_name: str
    instance_namespace: str
    instance_id: str
    profile_name: str
    cpu: str
    memory: str
    storage: str
    gpu_count: int
    gpu_vendor: str
    gpu_model: str | None
    gpu_resource_name: str
    # A secret: kept out of repr() so that it never reaches a log line.
    generated_token: str = dataclass_field(default="", repr=False)

    def variables(self) -> dict[str, object]:
        """Every variable a placeholder may name, by its full name ("inputs.gpus", "instance.id")."""
        variables: dict[str, object] = {
            "instance.name": self.instance_name,
            "instance.namespace": self.instance_namespace,
            "instance.id": self.instance_id,
            "profile.name": self.profile_name,
            "resources.cpu": self.cpu,
            "resources.memory": self.memory,
            "resources.storage": self.storage,
            "resources.gpuCount": self.gpu_count,
            "resources.gpuVendor": self.gpu_vendor,
            "resources.gpuModel": self.gpu_model or "",
            "resources.gpuResourceName": self.gpu_resource_name,
            "generated.token": self.generated_token,
        }
        variables.update({f"inputs.{name}": value for name, value in self.inputs.items()})
        return variables


def _format_path(path: Path) -> str:
    """("spec", "containers", 0, "image") -> ".spec.containers[0].image"."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in path)


def _format_value(value: object) -> str:
    """A value as it reads inside a longer string."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return format_number(value)
    if isinstance(value, str | int):
        return str(value)
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


# ---------------------------------------------------------------------------------------- parsing


class _Loader(yaml.SafeLoader):
    """SafeLoader read the way Kubernetes reads YAML: dates stay strings, duplicate keys are errors."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Hashable, Any]:
        seen: set[Hashable] = set()
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node)
            if isinstance(key, Hashable):
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping",
                        node.start_mark,
                        f"found duplicate key {key!r}",
                        key_node.start_mark,
                    )
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _construct_equals(loader: _Loader, node: yaml.Node) -> str:
    # A bare `=` resolves to the YAML "value" tag, which SafeLoader cannot build (pyyaml#89).
    return str(node.value)


_Loader.add_constructor("tag:yaml.org,2002:value", _construct_equals)
_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _yaml_message(exc: yaml.YAMLError) -> str:
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem_mark is not None:
        mark = exc.problem_mark
        detail = exc.problem or "invalid YAML"
        context = f" ({exc.context})" if exc.context else ""
        return f"invalid YAML at line {mark.line + 1}, column {mark.column + 1}: {detail}{context}"
    return f"invalid YAML: {exc}"


def _object_ref(document: Mapping[str, Any]) -> str | None:
    kind = document.get("kind")
    metadata = document.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    parts = [part for part in (kind, name) if isinstance(part, str) and part]
    return " ".join(parts) or None


def _json_problems(document: Any, index: int, ref: str | None) -> list[Problem]:
    """Keys must be strings and values JSON values, as the Kubernetes API takes them."""
    problems: list[Problem] = []
    budget = _MAX_VALUES
    stack: list[tuple[Path, Any]] = [((), document)]
    while stack:
        path, value = stack.pop()
        budget -= 1
        if budget < 0:
            return [
                Problem(
                    f"has more than {_MAX_VALUES} values (counting repeats through YAML aliases)",
                    index,
                    (),
                    object_ref=ref,
                )
            ]
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    problems.append(
                        Problem(
                            f"key {key!r} is {type_name(key)}, not a string: quote it",
                            index,
                            (*path, str(key)),
                            object_ref=ref,
                        )
                    )
                stack.append(((*path, str(key)), item))
        elif isinstance(value, list):
            stack.extend(((*path, i), item) for i, item in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            problems.append(
                Problem(f"{value} is not a number Kubernetes accepts", index, path, object_ref=ref)
            )
        elif not isinstance(value, str | int | float | bool) and value is not None:
            problems.append(
                Problem(f"a {type(value).__name__} value is not supported here", index, path, object_ref=ref)
            )
    return problems


def _shape_problems(document: Any, index: int) -> list[Problem]:
    hint = "every document must be a Kubernetes object with apiVersion, kind and metadata.name"
    if not isinstance(document, dict):
        return [Problem(f"is {type_name(document)}, not a Kubernetes object: {hint}", index)]
    ref = _object_ref(document)
    problems: list[Problem] = []
    for key, rule in (("apiVersion", _API_VERSION), ("kind", _KIND)):
        value = document.get(key)
        if value is None:
            problems.append(Problem(f"is missing: {hint}", index, (key,), object_ref=ref))
        elif not isinstance(value, str):
            problems.append(
                Problem(f"must be a string, not {type_name(value)}", index, (key,), object_ref=ref)
            )
        elif _PLACEHOLDER.search(value):
            problems.append(Problem("cannot contain placeholders", index, (key,), object_ref=ref))
        elif rule.fullmatch(value) is None:
            problems.append(Problem(f"{value!r} is not a Kubernetes {key}", index, (key,), object_ref=ref))
    metadata = document.get("metadata")
    if metadata is None:
        problems.append(Problem(f"is missing: {hint}", index, ("metadata",), object_ref=ref))
    elif not isinstance(metadata, dict):
        problems.append(
            Problem(f"must be a mapping, not {type_name(metadata)}", index, ("metadata",), object_ref=ref)
        )
    else:
        name = metadata.get("name")
        if name is None:
            problems.append(Problem(f"is missing: {hint}", index, ("metadata", "name"), object_ref=ref))
        elif not isinstance(name, str):
            problems.append(
                Problem(
                    f"must be a string, not {type_name(name)}", index, ("metadata", "name"), object_ref=ref
                )
            )
    return problems + _json_problems(document, index, ref)


def parse_documents(resources: str) -> list[dict[str, Any]]:
    """The manifests of a template, placeholders untouched; empty documents are skipped.

    Raises TemplateError when the YAML is invalid or a document is not a Kubernetes object
    (apiVersion, kind and metadata.name as strings).
    """
    documents, problems = _load(resources)
    if problems:
        raise TemplateError(problems)
    return documents


def _load(resources: str) -> tuple[list[Any], list[Problem]]:
    """The non-empty documents (none when the YAML is invalid) and the problems of their shape."""
    try:
        documents = [doc for doc in yaml.load_all(resources, Loader=_Loader) if doc is not None]
    except yaml.YAMLError as exc:
        return [], [Problem(_yaml_message(exc))]
    return documents, [
        problem for index, doc in enumerate(documents) for problem in _shape_problems(doc, index)
    ]


# ----------------------------------------------------------------------------------- placeholders


def placeholders_in(value: Any) -> list[tuple[Path, str]]:
    """Every placeholder expression (stripped) in a parsed value, with the path of its key or value.

    A placeholder in a mapping key is reported at the path of that entry.
    """
    found: list[tuple[Path, str]] = []
    budget = _MAX_VALUES
    stack: list[tuple[Path, Any]] = [((), value)]
    while stack and budget > 0:
        budget -= 1
        path, item = stack.pop()
        if isinstance(item, str):
            found.extend((path, match.group(1).strip()) for match in _PLACEHOLDER.finditer(item))
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                stack.append(((*path, key), child))
                if isinstance(key, str):
                    stack.append(((*path, key), key))
        elif isinstance(item, list):
            stack.extend(((*path, i), child) for i, child in reversed(list(enumerate(item))))
    return found


def _did_you_mean(word: str, candidates: Sequence[str]) -> str:
    close = difflib.get_close_matches(word, candidates, n=1)
    return f' (did you mean "{close[0]}"?)' if close else ""


def _suggestion(expression: str, candidates: Sequence[str]) -> str:
    # Compared after the shared prefix, else every "instance.x" would look like "instance.id".
    prefix, _, rest = expression.partition(".")
    siblings = [c for c in candidates if c.startswith(f"{prefix}.")]
    if not rest or not siblings:
        return _did_you_mean(expression, candidates)
    close = difflib.get_close_matches(rest, [c.partition(".")[2] for c in siblings], n=1)
    return f' (did you mean "{prefix}.{close[0]}"?)' if close else ""


def _expression_problem(
    expression: str, input_names: Sequence[str], kinds: Sequence[str] | None, *, in_output: bool
) -> str | None:
    """What is wrong with one placeholder expression, or None.

    `kinds` lists the kinds of the template's objects, or is None when they are unknown (the
    resources did not parse), in which case `objects.<Kind>` is not checked.
    """
    if _EXPRESSION.fullmatch(expression) is None:
        return (
            f'"{{{{ {expression} }}}}" is not a valid placeholder: it must name one variable, '
            "such as {{ inputs.gpus }} or {{ instance.namespace }}"
        )
    if expression.startswith("inputs."):
        name = expression.removeprefix("inputs.")
        if "." in name or name not in input_names:
            if not input_names:
                return f'unknown variable "{expression}"; this version declares no inputs'
            suggestion = _suggestion(expression, [f"inputs.{known}" for known in input_names])
            return f'unknown variable "{expression}"{suggestion}; declared inputs: ' + ", ".join(
                sorted(input_names)
            )
        return None
    if expression.startswith("objects."):
        if not in_output:
            return f'"{expression}": objects.<Kind> can only be used in output values, after a deploy'
        kind, _, rest = expression.removeprefix("objects.").partition(".")
        if not rest:
            return f'"{expression}" must name a field of the object, such as objects.{kind}.metadata.name'
        if kinds is not None and kind not in kinds:
            listed = ", ".join(sorted(set(kinds))) or "none"
            return f'"{expression}": the template has no object of kind {kind}; its kinds: {listed}'
        return None
    if expression not in KNOWN_VARIABLES:
        known = [*KNOWN_VARIABLES, "inputs.<name>"] + (["objects.<Kind>.<path>"] if in_output else [])
        suggestion = _suggestion(expression, KNOWN_VARIABLES)
        return f'unknown variable "{expression}"{suggestion}; known variables: ' + ", ".join(known)
    return None


# -------------------------------------------------------------------------------------- rendering


class _Renderer:
    """Substitutes placeholders in one parsed document, collecting every problem instead of stopping.

    Each node is visited with two paths: where it lands in the rendered object, and where it was
    written in the template (they differ below keys with placeholders). Problems use the second.
    """

    def __init__(
        self,
        variables: Mapping[str, object],
        document: int | None = None,
        object_ref: str | None = None,
        untrusted: frozenset[str] = frozenset(),
    ) -> None:
        self.variables = variables
        self.document = document
        self.object_ref = object_ref
        self.problems: list[Problem] = []
        # Expressions whose sample value could not satisfy its input's rules, and where they landed.
        self.untrusted = untrusted
        self.untrusted_paths: set[Path] = set()

    def lookup(self, expression: str, path: Path, source: Path) -> object:
        if expression in self.variables:
            if expression in self.untrusted:
                self.untrusted_paths.add(path)
            return self.variables[expression]
        if expression.startswith("inputs."):
            given = sorted(
                name.removeprefix("inputs.") for name in self.variables if name.startswith("inputs.")
            )
            message = f'no value for input "{expression.removeprefix("inputs.")}"' + (
                "; values were given for: " + ", ".join(given) if given else ""
            )
        else:
            message = f'unknown variable "{expression}"; known variables: ' + ", ".join(
                [*KNOWN_VARIABLES, "inputs.<name>"]
            )
        self.problems.append(Problem(message, self.document, source, object_ref=self.object_ref))
        return None

    def string(self, text: str, path: Path, source: Path, *, typed: bool) -> object:
        sole = _PLACEHOLDER.fullmatch(text)
        if sole is not None and typed:
            return self.lookup(sole.group(1).strip(), path, source)
        if "{{" not in text:
            return text
        # A function replacement: the value is inserted as it is, never read as a regex template.
        return _PLACEHOLDER.sub(
            lambda match: _format_value(self.lookup(match.group(1).strip(), path, source)), text
        )

    def node(self, value: Any, path: Path, source: Path) -> Any:
        if isinstance(value, str):
            return self.string(value, path, source, typed=True)
        if isinstance(value, list):
            return [self.node(item, (*path, i), (*source, i)) for i, item in enumerate(value)]
        if not isinstance(value, dict):
            return value
        rendered: dict[Any, Any] = {}
        for key, item in value.items():
            key_source = (*source, key)
            marked = len(self.untrusted_paths)
            new_key = (
                _format_value(self.string(key, (*path, key), key_source, typed=False))
                if isinstance(key, str)
                else key
            )
            if len(self.untrusted_paths) > marked:
                self.untrusted_paths.add((*path, new_key))
            if new_key in rendered:
                self.problems.append(
                    Problem(
                        f'key "{key}" renders to "{new_key}", which is already a key of this mapping',
                        self.document,
                        key_source,
                        object_ref=self.object_ref,
                    )
                )
            rendered[new_key] = self.node(item, (*path, new_key), key_source)
        return rendered


def render(resources: str, context: RenderContext) -> list[dict[str, Any]]:
    """The manifests of a template for one instance, as fresh objects the caller may change.

    Raises TemplateError when the template does not parse, names an unknown variable or an input
    without a value in `context`.
    """
    documents = _parsed(resources) if len(resources) <= _CACHED_TEXT_LIMIT else parse_documents(resources)
    rendered, problems, _ = _render(documents, context.variables())
    if problems:
        raise TemplateError(problems)
    return rendered


# Template texts up to this many characters have their parsed YAML kept (at most 128 of them, so a
# few MB at most); larger ones, rare, are parsed at each render.
_CACHED_TEXT_LIMIT = 32 * 1024


@functools.lru_cache(maxsize=128)
def _parsed(resources: str) -> tuple[dict[str, Any], ...]:
    """`parse_documents`, kept per template text: every run of a version renders the same text, and
    parsing its YAML was the largest part of a run's CPU. `_render` only reads the documents (it
    builds new objects), so they are shared; a template that fails to parse is not kept."""
    return tuple(parse_documents(resources))


def _render(
    documents: Sequence[Mapping[str, Any]],
    variables: Mapping[str, object],
    untrusted: frozenset[str] = frozenset(),
) -> tuple[list[dict[str, Any]], list[Problem], list[set[Path]]]:
    rendered: list[dict[str, Any]] = []
    problems: list[Problem] = []
    untrusted_paths: list[set[Path]] = []
    for index, document in enumerate(documents):
        renderer = _Renderer(variables, index, _object_ref(document), untrusted)
        rendered.append(renderer.node(document, (), ()))
        problems.extend(renderer.problems)
        untrusted_paths.append(renderer.untrusted_paths)
    return rendered, problems, untrusted_paths


_MISSING = object()


def _field_at(obj: Any, parts: Sequence[str]) -> Any:
    for part in parts:
        if isinstance(obj, Mapping) and part in obj:
            obj = obj[part]
        elif isinstance(obj, list) and re.fullmatch("[0-9]+", part) and int(part) < len(obj):
            obj = obj[int(part)]
        else:
            return _MISSING
    return obj


def render_outputs(
    outputs: Sequence[OutputDefinition], context: RenderContext, applied: Sequence[Mapping[str, Any]]
) -> dict[str, str]:
    """Every output's value as a string, reading `context` and the applied objects.

    `objects.<Kind>.<path>` reads the first applied object of that kind; list items are numbered
    from 0. A path that does not resolve (a field the server has not filled yet) gives "". Raises
    TemplateError on an unknown variable or an input without a value.
    """
    variables = context.variables()
    values: dict[str, str] = {}
    problems: list[Problem] = []
    for index, output in enumerate(outputs):
        renderer = _Renderer(variables)
        values[output.name] = _render_output(output.value, (index, "value"), renderer, applied)
        problems.extend(replace(problem, field="outputs") for problem in renderer.problems)
    if problems:
        raise TemplateError(problems)
    return values


def _render_output(text: str, path: Path, renderer: _Renderer, applied: Sequence[Mapping[str, Any]]) -> str:
    def substitute(match: re.Match[str]) -> str:
        expression = match.group(1).strip()
        if expression.startswith("objects."):
            kind, *parts = expression.removeprefix("objects.").split(".")
            obj = next((item for item in applied if item.get("kind") == kind), None)
            found = _field_at(obj, parts) if obj is not None else _MISSING
            return "" if found is _MISSING else _format_value(found)
        return _format_value(renderer.lookup(expression, path, path))

    return _PLACEHOLDER.sub(substitute, text)


# ------------------------------------------------------------------------------------- validation


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
                "is not a field of this object" + _did_you_mean(key, sorted(allowed)),
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
        if _DNS_1035_LABEL.fullmatch(name) is None:
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
    return [(path, message) for path, message, _ in _manifest_problems(manifest, kubernetes_version)]


def _manifest_problems(manifest: Mapping[str, Any], kubernetes_version: str) -> list[tuple[Path, str, str]]:
    kind, api_version = str(manifest.get("kind", "")), str(manifest.get("apiVersion", ""))
    problems: list[tuple[Path, str, str]] = []
    validator = None
    if _KIND.fullmatch(kind) and _API_VERSION.fullmatch(api_version):
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


# ---------------------------------------------------------------------------------------- checking


def _sample_input(defn: InputDefinition) -> tuple[str, bool]:
    """A value for a trial render, and whether it satisfies the input's rules.

    The default if it is valid, else the first valid option, else a value of the type within the
    bounds. A pattern may match none of the few strings tried: the value then still has the
    right type, and check_version ignores what the schema says about the fields it lands in.
    """
    candidates = [defn.default] if defn.default is not None else []
    candidates.extend(defn.options)
    if defn.type == "NUMBER":
        low = defn.min if defn.min is not None else (min(1.0, defn.max) if defn.max is not None else 1.0)
        candidates.extend([format_number(low), "1"])
    elif defn.type == "BOOLEAN":
        candidates.extend(["true", "false"])
    elif defn.type == "QUANTITY":
        candidates.append("1")
    else:
        candidates.extend(_SAMPLE_STRINGS)
    for candidate in candidates:
        if check_value(defn, candidate) is None:
            return candidate, True
    fallback = {"NUMBER": "1", "BOOLEAN": "true", "QUANTITY": "1"}.get(defn.type, "sample")
    return fallback, False


def sample_context(inputs: Sequence[InputDefinition] = ()) -> RenderContext:
    """The context of a trial render (check_version), or of a preview.

    Sample instance, profile and resources (one NVIDIA GPU), and for every input a value that
    satisfies its definition when one of a few tried does.
    """
    values: dict[str, str | int | float | bool] = {}
    for defn in inputs:
        if defn.name in values:  # a duplicate, reported by check_version: the first one counts
            continue
        value, _ = _sample_input(defn)
        try:
            values[defn.name] = typed_value(defn, value)
        except ValueError:  # an input whose type is unknown: check_definition reports it
            values[defn.name] = value
    return RenderContext(
        inputs=values,
        instance_name="sample",
        instance_namespace="gpupaas-sample",
        instance_id="00000000-0000-0000-0000-000000000000",
        profile_name="sample-profile",
        cpu="4",
        memory="16Gi",
        storage="100Gi",
        gpu_count=1,
        gpu_vendor="NVIDIA",
        gpu_model="H100",
        gpu_resource_name="nvidia.com/gpu",
        generated_token="sample-token",
    )


def _definition_problems(
    inputs: Sequence[InputDefinition], outputs: Sequence[OutputDefinition], kinds: Sequence[str] | None
) -> list[Problem]:
    problems: list[Problem] = []
    seen: set[str] = set()
    for index, defn in enumerate(inputs):
        problems.extend(
            Problem(message, path=(index, part), field="inputs") for part, message in check_definition(defn)
        )
        if defn.name in seen:
            problems.append(
                Problem(
                    f'input name "{defn.name}" is used more than once', path=(index, "name"), field="inputs"
                )
            )
        seen.add(defn.name)
    input_names = [defn.name for defn in inputs]
    seen = set()
    for index, output in enumerate(outputs):
        if not is_valid_name(output.name):
            problems.append(
                Problem(
                    f"output name {output.name!r} {INPUT_NAME_RULE}", path=(index, "name"), field="outputs"
                )
            )
        if output.name in seen:
            problems.append(
                Problem(
                    f'output name "{output.name}" is used more than once',
                    path=(index, "name"),
                    field="outputs",
                )
            )
        seen.add(output.name)
        for _, expression in placeholders_in(output.value):
            message = _expression_problem(expression, input_names, kinds, in_output=True)
            if message is not None:
                problems.append(Problem(message, path=(index, "value"), field="outputs"))
    return problems


def check_version(
    resources: str,
    inputs: Sequence[InputDefinition],
    outputs: Sequence[OutputDefinition],
    *,
    kubernetes_version: str = "1.37.0",
) -> list[Problem]:
    """Everything wrong with a template version; an empty list when it may be added.

    After the static checks (YAML, object shape, variables, definitions), the version is rendered
    with `sample_context(inputs)` and every object is checked by `validate_manifest` (so a
    `kubernetes_version` kubernetes-validate has no schemas for raises ValueError). When no
    sample satisfies a STRING input's pattern, a plain string stands in for it and problems the
    schema reports at the fields that string lands in are not reported (their type still is):
    they would be about the stand-in, not about the template.
    """
    documents, problems = _load(resources)
    parsed = not (problems and problems[0].document is None)
    # Without the YAML, the kinds are unknown and objects.<Kind> in outputs cannot be checked.
    kinds = [doc["kind"] for doc in documents if isinstance(doc, dict) and isinstance(doc.get("kind"), str)]
    input_names = [defn.name for defn in inputs]
    for index, document in enumerate(documents):
        ref = _object_ref(document) if isinstance(document, dict) else None
        for path, expression in placeholders_in(document):
            message = _expression_problem(expression, input_names, kinds, in_output=False)
            if message is not None:
                problems.append(Problem(message, index, path, object_ref=ref))
    problems.extend(_definition_problems(inputs, outputs, kinds if parsed else None))
    if any(problem.field == "resources" for problem in problems):
        return problems
    problems.extend(_trial_render(documents, inputs, kubernetes_version))
    return problems


def _trial_render(
    documents: Sequence[Mapping[str, Any]], inputs: Sequence[InputDefinition], kubernetes_version: str
) -> list[Problem]:
    context = sample_context(inputs)
    first = {defn.name: defn for defn in reversed(inputs)}.values()
    untrusted = frozenset(f"inputs.{defn.name}" for defn in first if not _sample_input(defn)[1])
    rendered, problems, untrusted_paths = _render(documents, context.variables(), untrusted)
    if problems:
        return problems
    for index, (manifest, skip) in enumerate(zip(rendered, untrusted_paths, strict=True)):
        ref = _object_ref(documents[index])
        for path, message, keyword in _manifest_problems(manifest, kubernetes_version):
            if path in skip and keyword != "type":
                continue
            problems.append(Problem(message, index, path, object_ref=ref))
    return problems
