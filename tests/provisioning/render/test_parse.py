"""Parsing a template's YAML as Kubernetes reads it, and the shape of its documents."""

from __future__ import annotations

import pytest

from gpupaas.provisioning.render.checks import check_version
from gpupaas.provisioning.render.parse import parse_documents
from tests.provisioning.render.templates import NAMESPACE, only_problem


def test_bad_yaml_is_reported_with_its_line_and_column() -> None:
    resources = NAMESPACE + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n   bad: indent\n"

    problem = only_problem(check_version(resources, [], []))

    assert problem.document is None
    assert problem.field == "resources"
    assert problem.message == ("invalid YAML at line 10, column 7: mapping values are not allowed here")


def test_duplicate_keys_are_invalid_yaml() -> None:
    problem = only_problem(check_version(NAMESPACE + "kind: Namespace\n", [], []))

    assert problem.message.startswith("invalid YAML at line 5, column 1: found duplicate key 'kind'")


def test_yaml_tags_that_build_python_objects_are_refused() -> None:
    resources = NAMESPACE + "data: !!python/object/apply:os.system ['true']\n"

    problem = only_problem(check_version(resources, [], []))

    assert problem.message.startswith("invalid YAML at line 5, column 7: could not determine a constructor")


def test_a_document_without_kind_is_reported_at_its_index() -> None:
    resources = NAMESPACE + "---\napiVersion: v1\nmetadata: {name: settings}\n"

    problem = only_problem(check_version(resources, [], []))

    assert (problem.document, problem.path) == (1, ("kind",))
    assert problem.message == (
        "is missing: every document must be a Kubernetes object with apiVersion, kind and metadata.name"
    )
    assert str(problem) == (
        "document 2 (settings), kind: is missing: "
        "every document must be a Kubernetes object with apiVersion, kind and metadata.name"
    )


def test_a_document_without_a_name_is_reported() -> None:
    resources = "---\n\n---\n" + NAMESPACE + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  labels: {}\n"

    problem = only_problem(check_version(resources, [], []))

    # the empty document does not count
    assert (problem.document, problem.path) == (1, ("metadata", "name"))
    assert problem.message.startswith("is missing")


@pytest.mark.parametrize(
    ("resources", "path", "message"),
    [
        ("- a\n- b\n", (), "is a list, not a Kubernetes object"),
        ("just text\n", (), "is a string, not a Kubernetes object"),
        ("apiVersion: v1\nkind: 3\nmetadata: {name: x}\n", ("kind",), "must be a string, not an integer"),
        (
            "apiVersion: v1\nkind: Config Map\nmetadata: {name: x}\n",
            ("kind",),
            "'Config Map' is not a Kubernetes kind",
        ),
        (
            'apiVersion: v1\nkind: "{{ instance.name }}"\nmetadata: {name: x}\n',
            ("kind",),
            "cannot contain placeholders",
        ),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: [x]\n", ("metadata",), "must be a mapping, not a list"),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: 7}\n",
            ("metadata", "name"),
            "must be a string, not an integer",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {80: http}\n",
            ("data", "80"),
            "key 80 is an integer, not a string: quote it",
        ),
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: .nan}\n",
            ("data", "a"),
            "nan is not a number Kubernetes accepts",
        ),
    ],
)
def test_documents_that_are_not_kubernetes_objects(
    resources: str, path: tuple[str, ...], message: str
) -> None:
    problem = only_problem(check_version(resources, [], []))

    assert (problem.document, problem.path) == (0, path)
    assert problem.message.startswith(message)


def test_dates_stay_strings_as_in_kubernetes() -> None:
    [config_map] = parse_documents(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {day: 2024-01-31}\n"
    )

    assert config_map["data"] == {"day": "2024-01-31"}


def test_a_template_too_large_through_aliases_is_refused() -> None:
    # given a "billion laughs" template: a few nested aliases expand to ~10^9 values
    lines = ['a0: &a0 ["x"]']
    lines += [f"a{i}: &a{i} [{', '.join(f'*a{i - 1}' for _ in range(10))}]" for i in range(1, 9)]
    resources = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: lol}\ndata:\n" + "".join(
        f"  {line}\n" for line in lines
    )

    # when it is checked
    problem = only_problem(check_version(resources, [], []))

    # then it is refused quickly instead of being walked
    assert problem.message.startswith("has more than 100000 values")
