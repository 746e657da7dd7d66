"""Rendering templates for an instance (render) and their outputs after a deploy (render_outputs)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpupaas.provisioning.render.placeholders import KNOWN_VARIABLES
from gpupaas.provisioning.render.problems import TemplateError
from gpupaas.provisioning.render.rendering import OutputDefinition, render, render_outputs
from tests.provisioning.render.templates import NAMESPACE, QUOTA, make_context, only_problem


def test_a_sole_placeholder_keeps_the_type_of_its_value() -> None:
    # given a template whose strings are exactly one placeholder each
    resources = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data:
  count: "{{ inputs.count }}"
  ratio: "{{inputs.ratio}}"
  debug: "{{   inputs.debug   }}"
  image: "{{ inputs.image }}"
  gpus: "{{ resources.gpuCount }}"
"""
    context = make_context(inputs={"count": 3, "ratio": 0.5, "debug": True, "image": "8"})

    # when it is rendered
    [config_map] = render(resources, context)

    # then numbers stay numbers, booleans booleans and strings strings, even one that looks like a number
    assert config_map["data"] == {"count": 3, "ratio": 0.5, "debug": True, "image": "8", "gpus": 8}
    assert type(config_map["data"]["debug"]) is bool


def test_a_placeholder_inside_a_longer_string_is_formatted_into_it() -> None:
    resources = """\
apiVersion: v1
kind: ConfigMap
metadata: {name: "{{ instance.name }}-settings"}
data:
  summary: "{{ inputs.count }} x {{ resources.gpuModel }}, debug={{ inputs.debug }}, ratio {{ inputs.ratio }}"
  token: "Bearer {{ generated.token }}"
"""
    context = make_context(inputs={"count": 3, "ratio": 0.5, "debug": False})

    [config_map] = render(resources, context)

    assert config_map["metadata"]["name"] == "train-1-settings"
    assert config_map["data"] == {"summary": "3 x H100, debug=false, ratio 0.5", "token": "Bearer tok-123"}


def test_placeholders_in_keys_render_as_strings() -> None:
    # given a quota whose GPU key is built from the profile's resource name
    context = make_context(inputs={"gpus": 4}, gpu_resource_name="amd.com/gpu")

    # when it is rendered
    [quota] = render(QUOTA, context)

    # then the key carries the resource name and the value the typed input
    assert quota["spec"]["hard"] == {"requests.cpu": "32", "requests.amd.com/gpu": 4}
    assert quota["metadata"] == {"name": "train-1-quota", "namespace": "team-a-train-1"}


def test_every_variable_renders() -> None:
    resources = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: all}\ndata:\n" + "".join(
        f'  "{name}": "{{{{ {name} }}}}"\n' for name in KNOWN_VARIABLES
    )

    [config_map] = render(resources, make_context())

    assert config_map["data"] == {
        "instance.name": "train-1",
        "instance.namespace": "team-a-train-1",
        "instance.id": "3f1c2a9e-0000-4000-8000-000000000001",
        "profile.name": "h100-x8",
        "resources.cpu": "32",
        "resources.memory": "256Gi",
        "resources.storage": "1Ti",
        "resources.gpuCount": 8,
        "resources.gpuVendor": "NVIDIA",
        "resources.gpuModel": "H100",
        "resources.gpuResourceName": "nvidia.com/gpu",
        "generated.token": "tok-123",
    }


def test_a_missing_gpu_model_renders_as_an_empty_string() -> None:
    resources = (
        'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: m}\ndata: {model: "{{ resources.gpuModel }}"}\n'
    )

    [config_map] = render(resources, make_context(gpu_model=None))

    assert config_map["data"] == {"model": ""}


def test_empty_documents_are_skipped() -> None:
    resources = "---\n" + NAMESPACE + "---\n---\n# only a comment\n---\n" + QUOTA + "---\n"

    manifests = render(resources, make_context(inputs={"gpus": 1}))

    assert [manifest["kind"] for manifest in manifests] == ["Namespace", "ResourceQuota"]


def test_an_unknown_variable_is_an_error_at_render() -> None:
    # given a template naming a variable that does not exist
    resources = NAMESPACE + "---\n" + QUOTA.replace("resources.cpu", "resources.cpus")

    # when it is rendered
    with pytest.raises(TemplateError) as caught:
        render(resources, make_context(inputs={"gpus": 1}))

    # then the problem says which variable, where
    problem = only_problem(caught.value.problems)
    assert problem.document == 1
    assert problem.path == ("spec", "hard", "requests.cpu")
    assert problem.message.startswith('unknown variable "resources.cpus"; known variables: instance.name,')


def test_an_input_without_a_value_is_an_error_at_render() -> None:
    with pytest.raises(TemplateError) as caught:
        render(QUOTA, make_context(inputs={"cpus": 2, "memory": "1Gi"}))

    problem = only_problem(caught.value.problems)
    assert (problem.document, problem.path) == (
        0,
        ("spec", "hard", "requests.{{ resources.gpuResourceName }}"),
    )
    assert problem.message == 'no value for input "gpus"; values were given for: cpus, memory'


def test_keys_that_render_to_the_same_string_are_an_error() -> None:
    resources = QUOTA + '    "requests.nvidia.com/gpu": 2\n'

    with pytest.raises(
        TemplateError, match=r"renders to \"requests.nvidia.com/gpu\", which is already a key"
    ):
        render(resources, make_context(inputs={"gpus": 1}))


def test_yaml_aliases_render_as_independent_copies() -> None:
    # given a template that repeats a mapping through an alias
    resources = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: shared
  labels: &labels {team: "{{ instance.name }}"}
  annotations: *labels
"""

    # when it is rendered and the caller changes one copy
    [config_map] = render(resources, make_context())
    config_map["metadata"]["labels"]["extra"] = "x"

    # then the other is untouched
    assert config_map["metadata"]["annotations"] == {"team": "train-1"}


# The template of the injection property: a placeholder as a whole value, inside a string, in a key,
# in a list and in a nested mapping.
INJECTION_TEMPLATE = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: probe
data:
  whole: "{{ inputs.text }}"
  inside: 'before {{inputs.text}} after'
  "key-{{ inputs.text }}": fixed
  items: ["{{ inputs.text }}", 1, {nested: "x{{ inputs.text }}"}]
"""


NASTY_TEXT = st.lists(
    st.one_of(
        st.text(),
        st.sampled_from(
            [
                "\n",
                ": ",
                "---",
                "\n---\n",
                "{{",
                "}}",
                "{{ inputs.text }}",
                "{{ instance.name }}",
                '"',
                "'",
                "!!python/object/apply:os.system ['true']",
                "&a",
                "*a",
                "- ",
                "# ",
                "\\",
                "\\g<0>",
                "\\1",
                "\t",
                "\x00",
                "\u2028",
                "null",
                "true",
                "8",
                "[",
                "{",
            ]
        ),
    ),
    max_size=6,
).map("".join)


@given(text=NASTY_TEXT)
def test_an_input_value_can_never_inject_yaml(text: str) -> None:
    # given any text as the value of an input
    context = make_context(inputs={"text": text})

    # when the template is rendered
    rendered = render(INJECTION_TEMPLATE, context)

    # then the structure is the template's and the text stands verbatim where its placeholders were
    assert rendered == [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "probe"},
            "data": {
                "whole": text,
                "inside": f"before {text} after",
                f"key-{text}": "fixed",
                "items": [text, 1, {"nested": f"x{text}"}],
            },
        }
    ]


# ---------------------------------------------------------------------------------------- outputs


def test_outputs_read_the_context_and_the_applied_objects() -> None:
    # given outputs reading the instance and the applied Service
    outputs = [
        OutputDefinition("namespace", None, "{{ instance.namespace }}"),
        OutputDefinition("url", "Where to go", "http://node:{{ objects.Service.spec.ports.0.nodePort }}/"),
        OutputDefinition("gpus", None, "{{ inputs.gpus }}"),
        OutputDefinition("type", None, "{{ objects.Service.spec.type }}"),
    ]
    applied = [
        {"kind": "Namespace", "metadata": {"name": "team-a-train-1"}},
        {
            "kind": "Service",
            "metadata": {"name": "web"},
            "spec": {"type": "NodePort", "ports": [{"nodePort": 30080}]},
        },
    ]

    # when they are rendered
    values = render_outputs(outputs, make_context(inputs={"gpus": 8}), applied)

    # then every output is a string
    assert values == {
        "namespace": "team-a-train-1",
        "url": "http://node:30080/",
        "gpus": "8",
        "type": "NodePort",
    }


@pytest.mark.parametrize(
    "expression",
    [
        "objects.Service.spec.ports.0.nodePort",  # not filled yet
        "objects.Service.spec.ports.3.port",  # no such item
        "objects.Service.spec.ports.x",  # not an index
        "objects.Service.spec.ports.\u00b2",  # a digit to str.isdigit(), not to int()
        "objects.Ingress.spec",  # no such object
    ],
)
def test_an_output_path_that_does_not_resolve_is_empty(expression: str) -> None:
    applied = [{"kind": "Service", "spec": {"ports": [{"port": 80}]}}]

    values = render_outputs(
        [OutputDefinition("x", None, f"[{{{{ {expression} }}}}]")], make_context(), applied
    )

    assert values == {"x": "[]"}


def test_an_unknown_variable_in_an_output_is_an_error() -> None:
    outputs = [
        OutputDefinition("ok", None, "{{ instance.name }}"),
        OutputDefinition("bad", None, "{{ instance.nam }}"),
    ]

    with pytest.raises(TemplateError) as caught:
        render_outputs(outputs, make_context(), [])

    problem = only_problem(caught.value.problems)
    assert (problem.field, problem.path, problem.document) == ("outputs", (1, "value"), None)
    assert problem.message.startswith('unknown variable "instance.nam"')


# ------------------------------------------------------------------------------------------ cache


def test_rendering_the_same_template_again_is_not_changed_by_what_callers_did_to_earlier_results() -> None:
    # render() keeps each template text's parsed YAML: its results must still be fresh objects.
    template = (
        QUOTA + "---\n" + "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  list: [a, b]\n"
    )
    first = render(template, make_context(inputs={"gpus": 1}))
    first[0]["spec"]["hard"]["requests.cpu"] = "changed"
    first[0]["metadata"]["labels"] = {"added": "yes"}
    first[1]["data"]["list"].append("c")
    again = render(template, make_context(inputs={"gpus": 1}, cpu="8"))
    assert again[0]["spec"]["hard"]["requests.cpu"] == "8"
    assert "labels" not in again[0]["metadata"]
    assert again[1]["data"]["list"] == ["a", "b"]
    with pytest.raises(TemplateError):  # a broken text is reported every time, not cached as good
        render("kind: [", make_context())
    with pytest.raises(TemplateError):
        render("kind: [", make_context())


def test_only_small_template_texts_are_kept_parsed() -> None:
    from gpupaas.provisioning.render import rendering as module

    module._parsed.cache_clear()
    render(QUOTA, make_context(inputs={"gpus": 1}))
    assert module._parsed.cache_info().currsize == 1
    large = QUOTA + "# " + "x" * module._CACHED_TEXT_LIMIT + "\n"
    assert render(large, make_context(inputs={"gpus": 1})) == render(QUOTA, make_context(inputs={"gpus": 1}))
    assert module._parsed.cache_info().currsize == 1  # the large text was parsed, not kept
