"""What the Kubernetes API would reject in a rendered object, located and worded for a person."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest

from gpupaas.provisioning.inputs import InputDefinition
from gpupaas.provisioning.render.checks import check_version
from gpupaas.provisioning.render.policy import TemplateScope
from gpupaas.provisioning.render.schema import validate_manifest
from tests.provisioning.render.templates import GPUS, NAMESPACE, QUOTA, SERVICE, deployment, only_problem


def test_a_schema_error_points_at_the_field() -> None:
    # given a quota whose spec.hard is a list
    resources = NAMESPACE + "---\n" + QUOTA.replace("  hard:\n", "  hard:\n    - x\n  herd:\n")

    # when the version is checked
    problems = check_version(resources, [GPUS], [])

    # then the trial render's schema check names both fields
    assert [(p.document, p.path, p.message) for p in problems] == [
        (1, ("spec", "hard"), "must be a mapping, not a list"),
        (1, ("spec", "herd"), 'is not a field of this object (did you mean "hard"?)'),
    ]


def test_a_wrong_type_in_a_deployment_points_at_the_field() -> None:
    problem = only_problem(check_version(deployment(replicas='"x"'), [], []))

    assert (problem.document, problem.path) == (0, ("spec", "replicas"))
    assert problem.message == "must be an integer, not a string"
    assert str(problem) == "document 1 (Deployment web), spec.replicas: must be an integer, not a string"


def test_a_string_input_where_the_schema_wants_an_integer() -> None:
    # given replicas from a STRING input: its value can never be a number
    resources = deployment(replicas='"{{ inputs.replicas }}"')

    problem = only_problem(check_version(resources, [InputDefinition("replicas", "STRING", default="2")], []))

    assert problem.path == ("spec", "replicas")
    assert problem.message == "must be an integer, not a string"


def test_a_number_input_where_the_schema_wants_an_integer() -> None:
    resources = deployment(replicas='"{{ inputs.replicas }}"')

    problems = check_version(resources, [InputDefinition("replicas", "NUMBER", default="2", min=1)], [])

    assert problems == []


def test_a_field_deep_in_a_list_is_located() -> None:
    resources = deployment().replace(
        "image: nginx", "image: nginx\n          imagePullPolicy: 3\n          colour: red"
    )

    problems = check_version(resources, [], [])

    assert [(p.path, p.message) for p in problems] == [
        (("spec", "template", "spec", "containers", 0, "colour"), "is not a field of this object"),
        (
            ("spec", "template", "spec", "containers", 0, "imagePullPolicy"),
            "must be a string, not an integer",
        ),
    ]
    assert str(problems[0]) == (
        "document 1 (Deployment web), spec.template.spec.containers[0].colour: is not a field of this object"
    )


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        (deployment(name='"{{ instance.name }}_web"'), '"sample_web" is not a valid Kubernetes name'),
        (deployment(name='"Web"'), '"Web" is not a valid Kubernetes name'),
        (deployment(name='"web-"'), '"web-" is not a valid Kubernetes name'),
        (deployment(name='"a..b"'), '"a..b" is not a valid Kubernetes name'),
        (deployment(name='"a-.b"'), '"a-.b" is not a valid Kubernetes name'),
        (deployment(name='"' + "a" * 254 + '"'), "is not a valid Kubernetes name"),
        (NAMESPACE.replace('"{{ instance.namespace }}"', "team.a"), '"team.a" is not a valid namespace name'),
        (SERVICE.replace("name: web", "name: 1web"), '"1web" is not a valid Service name'),
    ],
)
def test_an_invalid_rendered_name_is_reported(resources: str, message: str) -> None:
    # A platform template: for a project's, a Namespace not named after the instance breaks the
    # confinement too.
    problem = only_problem(check_version(resources, [], [], scope=TemplateScope.PLATFORM))

    assert (problem.document, problem.path) == (0, ("metadata", "name"))
    assert message in problem.message


def test_rbac_objects_are_named_by_path_segments() -> None:
    resources = (
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {name: 'gpupaas:reader'}\n"
        "rules: [{apiGroups: [''], resources: [pods], verbs: [get]}]\n"
    )

    assert check_version(resources, [], []) == []


def test_a_missing_required_field_is_located() -> None:
    resources = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {restartPolicy: Never}\n"

    problem = only_problem(check_version(resources, [], []))

    assert (problem.path, problem.message) == (("spec", "containers"), "is required")


def test_a_quantity_of_the_wrong_type_says_what_it_may_be() -> None:
    resources = QUOTA.replace('"{{ resources.cpu }}"', "true")

    problem = only_problem(check_version(resources, [GPUS], []))

    assert (problem.path, problem.message) == (
        ("spec", "hard", "requests.cpu"),
        "must be a number or a string, not a boolean",
    )


def test_a_pattern_input_of_the_wrong_type_is_still_reported() -> None:
    # given a STRING input no sample satisfies, used where the schema wants an integer
    replicas = InputDefinition("replicas", "STRING", pattern="[0-9]{3}x")
    resources = deployment(replicas='"{{ inputs.replicas }}"')

    # when the version is checked
    problem = only_problem(check_version(resources, [replicas], []))

    # then the type problem is reported: no STRING value could ever be right there
    assert (problem.path, problem.message) == (("spec", "replicas"), "must be an integer, not a string")


def test_a_name_with_dots_is_fine_for_most_kinds() -> None:
    assert check_version(deployment(name="web.v2"), [], []) == []


def test_a_bad_quantity_is_reported_where_the_schema_cannot() -> None:
    resources = QUOTA.replace('"{{ resources.cpu }}"', '"4 cores"')

    problem = only_problem(check_version(resources, [GPUS], []))

    assert problem.path == ("spec", "hard", "requests.cpu")
    assert problem.message == '"4 cores" is not a Kubernetes quantity such as 500m, 8 or 64Gi'


def test_a_kind_kubernetes_does_not_have_is_reported() -> None:
    resources = deployment().replace("apiVersion: apps/v1", "apiVersion: extensions/v1beta1")

    # A platform template: a project's would be refused the kind by the confinement too.
    problem = only_problem(check_version(resources, [], [], scope=TemplateScope.PLATFORM))

    assert problem.path == ("kind",)
    assert problem.message == "Kubernetes 1.37 has no kind Deployment in apiVersion extensions/v1beta1"


def test_custom_resources_are_checked_for_their_name_only() -> None:
    resources = (
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {name: queue}\nspec: {anything: 1}\n"
    )

    # A platform template's (a project's own may create only the kinds of the confinement).
    assert check_version(resources, [], [], scope=TemplateScope.PLATFORM) == []


@pytest.mark.parametrize(
    "manifest",
    [
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "q"},
            "spec": {"hard": {"cpu": "4"}},
        },
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"}, "spec": {"hard": ["x"]}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}, "spec": {"finalizers": "x"}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "r"},
            "rules": [{"verbs": 1}],
        },
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": "x"}},
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "extra": 1}]},
        },
    ],
)
def test_validate_manifest_agrees_with_kubernetes_validate(manifest: dict[str, Any]) -> None:
    # given the library's own verdict
    try:
        kubernetes_validate.validate(manifest, "1.37.0", strict=True)
        library_error_path = None
    except kubernetes_validate.ValidationError as error:
        library_error_path = tuple(error.path)

    # when our cached validator checks the same manifest
    problems = validate_manifest(manifest, "1.37.0")

    # then both agree on whether it is valid, and ours reports the library's error among its own
    if library_error_path is None:
        assert problems == []
    else:
        assert any(path[: len(library_error_path)] == library_error_path for path, _ in problems), problems


def test_validate_manifest_refuses_a_kubernetes_version_it_has_no_schema_for() -> None:
    with pytest.raises(ValueError, match=r"no schemas for Kubernetes 9\.0"):
        validate_manifest({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}, "9.0.0")
