"""Rendering an environment template for one instance: what a deploy uses.

`render` substitutes the placeholders of the parsed documents with the values of a `RenderContext`
(a string that is exactly one placeholder keeps the value's type); `render_outputs` renders a
version's outputs after a deploy, reading the context and the applied objects. Every problem is
collected, not just the first, and raised as one TemplateError.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from dataclasses import field as dataclass_field
from typing import Any

from gpupaas.provisioning.inputs import format_number
from gpupaas.provisioning.render.parse import parse_documents
from gpupaas.provisioning.render.placeholders import KNOWN_VARIABLES, PLACEHOLDER
from gpupaas.provisioning.render.problems import Path, Problem, TemplateError, object_ref

__all__ = ["OutputDefinition", "RenderContext", "render", "render_documents", "render_outputs"]


@dataclass(frozen=True)
class OutputDefinition:
    """One output of a template version: a string with placeholders, rendered after a deploy."""

    name: str
    description: str | None
    value: str


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
        sole = PLACEHOLDER.fullmatch(text)
        if sole is not None and typed:
            return self.lookup(sole.group(1).strip(), path, source)
        if "{{" not in text:
            return text
        # A function replacement: the value is inserted as it is, never read as a regex template.
        return PLACEHOLDER.sub(
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
    rendered, problems, _ = render_documents(documents, context.variables())
    if problems:
        raise TemplateError(problems)
    return rendered


# Template texts up to this many characters have their parsed YAML kept (at most 128 of them, so a
# few MB at most); larger ones, rare, are parsed at each render.
_CACHED_TEXT_LIMIT = 32 * 1024


@functools.lru_cache(maxsize=128)
def _parsed(resources: str) -> tuple[dict[str, Any], ...]:
    """`parse_documents`, kept per template text: every run of a version renders the same text, and
    parsing its YAML was the largest part of a run's CPU. `render_documents` only reads the
    documents (it builds new objects), so they are shared; a template that fails to parse is not
    kept."""
    return tuple(parse_documents(resources))


def render_documents(
    documents: Sequence[Mapping[str, Any]],
    variables: Mapping[str, object],
    untrusted: frozenset[str] = frozenset(),
) -> tuple[list[dict[str, Any]], list[Problem], list[set[Path]]]:
    """The parsed documents rendered with `variables`, every problem, and per document the paths
    where the value of an `untrusted` expression landed (check_version's trial render excuses
    what its stand-in values break there)."""
    rendered: list[dict[str, Any]] = []
    problems: list[Problem] = []
    untrusted_paths: list[set[Path]] = []
    for index, document in enumerate(documents):
        renderer = _Renderer(variables, index, object_ref(document), untrusted)
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

    return PLACEHOLDER.sub(substitute, text)
