"""Reading an environment template's YAML the way Kubernetes reads it, and checking each document's
shape: a Kubernetes object with apiVersion, kind and metadata.name, whose keys are strings and
whose values are JSON values.

Placeholders are left untouched here: they are substituted inside the parsed strings afterwards
(rendering.py), so that an input value can never add YAML.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable
from typing import Any

import yaml

from gpupaas.core.yaml_limits import LimitedSafeLoader
from gpupaas.provisioning.render.placeholders import PLACEHOLDER
from gpupaas.provisioning.render.problems import MAX_VALUES, Path, Problem, TemplateError, object_ref
from gpupaas.provisioning.wording import type_name

__all__ = ["API_VERSION", "KIND", "load", "parse_documents"]


# The forms of kind and apiVersion; schema.py reads them too.
KIND = re.compile(r"[A-Za-z][A-Za-z0-9]*")
API_VERSION = re.compile(r"(?:[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?/)?[a-z0-9]+")


class _Loader(LimitedSafeLoader):
    """SafeLoader read the way Kubernetes reads YAML: dates stay strings, duplicate keys are errors;
    nesting is limited (core/yaml_limits.py)."""

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


def _json_problems(document: Any, index: int, ref: str | None) -> list[Problem]:
    """Keys must be strings and values JSON values, as the Kubernetes API takes them."""
    problems: list[Problem] = []
    budget = MAX_VALUES
    stack: list[tuple[Path, Any]] = [((), document)]
    while stack:
        path, value = stack.pop()
        budget -= 1
        if budget < 0:
            return [
                Problem(
                    f"has more than {MAX_VALUES} values (counting repeats through YAML aliases)",
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
    ref = object_ref(document)
    problems: list[Problem] = []
    for key, rule in (("apiVersion", API_VERSION), ("kind", KIND)):
        value = document.get(key)
        if value is None:
            problems.append(Problem(f"is missing: {hint}", index, (key,), object_ref=ref))
        elif not isinstance(value, str):
            problems.append(
                Problem(f"must be a string, not {type_name(value)}", index, (key,), object_ref=ref)
            )
        elif PLACEHOLDER.search(value):
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
    documents, problems = load(resources)
    if problems:
        raise TemplateError(problems)
    return documents


def load(resources: str) -> tuple[list[Any], list[Problem]]:
    """The non-empty documents (none when the YAML is invalid) and the problems of their shape."""
    try:
        documents = [doc for doc in yaml.load_all(resources, Loader=_Loader) if doc is not None]
    except yaml.YAMLError as exc:
        return [], [Problem(_yaml_message(exc))]
    return documents, [
        problem for index, doc in enumerate(documents) for problem in _shape_problems(doc, index)
    ]
