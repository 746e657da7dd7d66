"""check_version as a whole: definitions, every problem at once, and the trial render's sample values."""

from __future__ import annotations

import pytest

from gpupaas.provisioning.inputs import InputDefinition
from gpupaas.provisioning.render.checks import check_version, sample_context
from gpupaas.provisioning.render.rendering import OutputDefinition
from tests.provisioning.render.templates import GPUS, NAMESPACE, QUOTA, SERVICE, only_problem


def test_a_sound_version_has_no_problems() -> None:
    outputs = [
        OutputDefinition("namespace", None, "{{ instance.namespace }}"),
        OutputDefinition("port", None, "{{ objects.Service.spec.ports.0.nodePort }}"),
    ]

    problems = check_version(NAMESPACE + "---\n" + QUOTA + "---\n" + SERVICE, [GPUS], outputs)

    assert problems == []


def test_a_bad_document_does_not_hide_the_problems_of_the_others() -> None:
    # given a version whose first document has no name and whose second reads an unknown variable
    resources = "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n---\n" + QUOTA

    # when it is checked
    problems = check_version(resources, [], [])

    # then both are reported
    assert [(p.document, p.path) for p in problems] == [
        (0, ("metadata", "name")),
        (1, ("spec", "hard", "requests.{{ resources.gpuResourceName }}")),
    ]


def test_a_string_input_whose_pattern_no_sample_matches_does_not_fail_the_trial_render() -> None:
    # given a STRING input for a quota whose pattern matches none of the trial render's samples
    memory = InputDefinition("memory", "STRING", pattern="[0-9]+Gi")
    resources = QUOTA.replace('"{{ resources.cpu }}"', '"{{ inputs.memory }}"')
    assert sample_context([memory]).inputs == {"memory": "sample"}  # a stand-in, not a quantity

    # when the version is checked
    problems = check_version(resources, [GPUS, memory], [])

    # then what the stand-in value breaks is not blamed on the template
    assert problems == []


def test_the_stand_in_of_a_pattern_input_only_excuses_the_fields_it_lands_in() -> None:
    memory = InputDefinition("memory", "STRING", pattern="[0-9]+Gi")
    resources = QUOTA.replace('"{{ resources.cpu }}"', '"{{ inputs.memory }}"') + '    limits.cpu: "x"\n'

    problem = only_problem(check_version(resources, [GPUS, memory], []))

    assert problem.path == ("spec", "hard", "limits.cpu")


def test_output_names_follow_the_input_name_rule_and_are_unique() -> None:
    outputs = [
        OutputDefinition("url", None, "x"),
        OutputDefinition("node-port", None, "y"),
        OutputDefinition("url", None, "z"),
    ]

    problems = check_version(NAMESPACE, [], outputs)

    assert [(p.field, p.path) for p in problems] == [("outputs", (1, "name")), ("outputs", (2, "name"))]
    assert problems[0].message.startswith("output name 'node-port' must start with a letter")
    assert problems[1].message == 'output name "url" is used more than once'


def test_duplicate_input_names() -> None:
    inputs = [GPUS, InputDefinition("memory", "QUANTITY"), InputDefinition("gpus", "STRING")]

    problem = only_problem(check_version(QUOTA, inputs, []))

    assert (problem.field, problem.path) == ("inputs", (2, "name"))
    assert problem.message == 'input name "gpus" is used more than once'
    assert str(problem) == 'inputs[2].name: input name "gpus" is used more than once'


@pytest.mark.parametrize(
    ("defn", "path", "message"),
    [
        (
            InputDefinition("size", "STRING", default="xl", options=("s", "m")),
            (1, "default"),
            "the default must be one of: s, m",
        ),
        (InputDefinition("size", "NUMBER", min=8, max=1), (1, "min"), "min (8) is greater than max (1)"),
        (
            InputDefinition("size", "STRING", pattern="[a-z"),
            (1, "pattern"),
            "is not a valid regular expression: unterminated character set",
        ),
        (InputDefinition("si ze", "STRING"), (1, "name"), "input name 'si ze' must start with a letter"),
    ],
)
def test_bad_input_definitions(defn: InputDefinition, path: tuple[int, str], message: str) -> None:
    problem = only_problem(check_version(QUOTA, [GPUS, defn], []))

    assert (problem.field, problem.path, problem.document) == ("inputs", path, None)
    assert problem.message.startswith(message)
    assert problem.api_field() == ["inputs", *(str(part) for part in path)]


def test_static_problems_are_all_reported_together() -> None:
    # given a version wrong in its resources, its inputs and its outputs at once
    resources = QUOTA.replace("resources.cpu", "resources.cpus")
    inputs = [GPUS, InputDefinition("n", "NUMBER", min=2, max=1)]
    outputs = [OutputDefinition("x", None, "{{ nope }}")]

    # when it is checked
    problems = check_version(resources, inputs, outputs)

    # then every one is reported, and the trial render (which would only repeat them) is skipped
    assert [p.field for p in problems] == ["resources", "inputs", "outputs"]


def test_outputs_are_checked_even_when_the_yaml_is_bad() -> None:
    outputs = [OutputDefinition("x", None, "{{ objects.Service.spec.type }} {{ nope }}")]

    problems = check_version("a: [", [], outputs)

    # objects.Service cannot be checked without the resources; the unknown variable can
    assert [(p.field, p.message.split(";")[0]) for p in problems] == [
        (
            "resources",
            "invalid YAML at line 1, column 5: expected the node content, but found '<stream end>' "
            "(while parsing a flow node)",
        ),
        ("outputs", 'unknown variable "nope"'),
    ]


def test_sample_values_satisfy_their_definitions() -> None:
    inputs = [
        InputDefinition("a", "NUMBER", min=3, max=5),
        InputDefinition("b", "NUMBER", max=-2),
        InputDefinition("c", "STRING", options=("x", "y")),
        InputDefinition("d", "STRING", pattern="[0-9]+"),
        InputDefinition("e", "BOOLEAN"),
        InputDefinition("f", "QUANTITY", default="2Gi"),
        InputDefinition("g", "NUMBER", min=0.5, max=0.75),
    ]

    context = sample_context(inputs)

    assert context.inputs == {"a": 3, "b": -2, "c": "x", "d": "1", "e": True, "f": "2Gi", "g": 0.5}
