"""Placeholders: where they are, and what is wrong with one that names no variable (in resources and outputs)."""

from __future__ import annotations

import pytest

from gpupaas.provisioning.inputs import InputDefinition
from gpupaas.provisioning.render.checks import check_version
from gpupaas.provisioning.render.parse import parse_documents
from gpupaas.provisioning.render.placeholders import KNOWN_VARIABLES, placeholders_in
from gpupaas.provisioning.render.rendering import OutputDefinition
from tests.provisioning.render.templates import GPUS, NAMESPACE, QUOTA, only_problem


def test_placeholders_in_lists_every_expression_with_its_path() -> None:
    [document] = parse_documents(QUOTA)

    found = placeholders_in(document)

    assert sorted(found, key=str) == sorted(
        [
            (("metadata", "name"), "instance.name"),
            (("metadata", "namespace"), "instance.namespace"),
            (("spec", "hard", "requests.cpu"), "resources.cpu"),
            (("spec", "hard", "requests.{{ resources.gpuResourceName }}"), "resources.gpuResourceName"),
            (("spec", "hard", "requests.{{ resources.gpuResourceName }}"), "inputs.gpus"),
        ],
        key=str,
    )


def test_an_unknown_variable_is_reported_with_the_known_ones() -> None:
    resources = QUOTA.replace("{{ instance.name }}-quota", "{{ instance.nmae }}-quota")

    problem = only_problem(check_version(resources, [GPUS], []))

    assert (problem.document, problem.path, problem.field) == (0, ("metadata", "name"), "resources")
    assert problem.message == (
        'unknown variable "instance.nmae" (did you mean "instance.name"?); known variables: '
        + ", ".join(KNOWN_VARIABLES)
        + ", inputs.<name>"
    )


def test_an_undeclared_input_is_reported_with_the_declared_ones() -> None:
    # given a quota reading inputs.cpus where only gpus and memory are declared
    resources = (
        NAMESPACE
        + "---\n"
        + QUOTA.replace("resources.cpu", "inputs.cpus").replace("{{ instance.name }}-quota", "gpu-quota")
    )
    inputs = [GPUS, InputDefinition("memory", "QUANTITY", default="1Gi")]

    # when the version is checked
    problem = only_problem(check_version(resources, inputs, []))

    # then the problem is located and lists what is declared
    assert (problem.document, problem.path) == (1, ("spec", "hard", "requests.cpu"))
    assert (
        problem.message
        == 'unknown variable "inputs.cpus" (did you mean "inputs.gpus"?); declared inputs: gpus, memory'
    )
    assert str(problem) == (
        'document 2 (ResourceQuota gpu-quota), spec.hard.requests.cpu: unknown variable "inputs.cpus" '
        '(did you mean "inputs.gpus"?); declared inputs: gpus, memory'
    )
    assert problem.api_field() == ["resources"]


def test_an_input_in_a_version_without_inputs() -> None:
    problem = only_problem(check_version(QUOTA, [], []))

    assert problem.message == 'unknown variable "inputs.gpus"; this version declares no inputs'


@pytest.mark.parametrize(
    ("placeholder", "message"),
    [
        ("{{ }}", '"{{  }}" is not a valid placeholder'),
        ("{{ inputs.gpus | default(1) }}", '"{{ inputs.gpus | default(1) }}" is not a valid placeholder'),
        ("{{ .Values.gpus }}", '"{{ .Values.gpus }}" is not a valid placeholder'),
        (
            "{{ objects.Namespace.metadata.uid }}",
            '"objects.Namespace.metadata.uid": objects.<Kind> can only be used in output values',
        ),
        ("{{ gpus }}", 'unknown variable "gpus"'),
    ],
)
def test_placeholders_that_are_not_variables(placeholder: str, message: str) -> None:
    resources = NAMESPACE + f"  labels: {{x: 'a{placeholder}'}}\n"

    problem = only_problem(check_version(resources, [GPUS], []))

    assert (problem.document, problem.path) == (0, ("metadata", "labels", "x"))
    assert problem.message.startswith(message)


def test_an_output_with_an_unknown_variable() -> None:
    outputs = [
        OutputDefinition("namespace", None, "{{ instance.namespace }}"),
        OutputDefinition("url", None, "http://{{ instance.host }}"),
    ]

    problem = only_problem(check_version(NAMESPACE, [], outputs))

    assert (problem.field, problem.path, problem.document) == ("outputs", (1, "value"), None)
    assert problem.message.startswith('unknown variable "instance.host"; known variables: ')
    assert problem.message.endswith("inputs.<name>, objects.<Kind>.<path>")
    assert str(problem).startswith('outputs[1].value: unknown variable "instance.host"')
    assert problem.api_field() == ["outputs", "1", "value"]


def test_an_output_reading_a_kind_the_template_does_not_have() -> None:
    outputs = [OutputDefinition("port", None, "{{ objects.Service.spec.ports.0.nodePort }}")]

    problem = only_problem(check_version(NAMESPACE + "---\n" + QUOTA, [GPUS], outputs))

    assert (problem.field, problem.path) == ("outputs", (0, "value"))
    assert problem.message == (
        '"objects.Service.spec.ports.0.nodePort": the template has no object of kind Service; '
        "its kinds: Namespace, ResourceQuota"
    )


def test_an_output_reading_a_whole_object() -> None:
    outputs = [OutputDefinition("ns", None, "{{ objects.Namespace }}")]

    problem = only_problem(check_version(NAMESPACE, [], outputs))

    assert problem.message.startswith('"objects.Namespace" must name a field of the object')
