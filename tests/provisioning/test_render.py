"""Parsing, checking and rendering environment-template versions."""

from __future__ import annotations

import dataclasses
from typing import Any

import kubernetes_validate
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpupaas.provisioning.inputs import InputDefinition
from gpupaas.provisioning.render import (
    KNOWN_VARIABLES,
    OutputDefinition,
    Problem,
    RenderContext,
    TemplateError,
    check_version,
    parse_documents,
    placeholders_in,
    render,
    render_outputs,
    sample_context,
    validate_manifest,
)


def make_context(**changes: Any) -> RenderContext:
    context = RenderContext(
        inputs={},
        instance_name="train-1",
        instance_namespace="team-a-train-1",
        instance_id="3f1c2a9e-0000-4000-8000-000000000001",
        profile_name="h100-x8",
        cpu="32",
        memory="256Gi",
        storage="1Ti",
        gpu_count=8,
        gpu_vendor="NVIDIA",
        gpu_model="H100",
        gpu_resource_name="nvidia.com/gpu",
        generated_token="tok-123",
    )
    return dataclasses.replace(context, **changes)


QUOTA = """\
apiVersion: v1
kind: ResourceQuota
metadata:
  name: "{{ instance.name }}-quota"
  namespace: "{{ instance.namespace }}"
spec:
  hard:
    requests.cpu: "{{ resources.cpu }}"
    "requests.{{ resources.gpuResourceName }}": "{{ inputs.gpus }}"
"""
NAMESPACE = """\
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
"""
GPUS = InputDefinition("gpus", "NUMBER", default="1", min=0, max=8)


def deployment(replicas: str = "1", name: str = "web") -> str:
    return f"""\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  replicas: {replicas}
  selector:
    matchLabels: {{app: web}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      containers:
        - name: web
          image: nginx
"""


def only_problem(problems: list[Problem]) -> Problem:
    assert len(problems) == 1, [str(problem) for problem in problems]
    return problems[0]


# ---------------------------------------------------------------------------------------- render


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


# ---------------------------------------------------------------------------------------- outputs

SERVICE = """\
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  type: NodePort
  selector: {app: web}
  ports: [{port: 80}]
"""


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


# ---------------------------------------------------------------------------------- check_version


def test_a_sound_version_has_no_problems() -> None:
    outputs = [
        OutputDefinition("namespace", None, "{{ instance.namespace }}"),
        OutputDefinition("port", None, "{{ objects.Service.spec.ports.0.nodePort }}"),
    ]

    problems = check_version(NAMESPACE + "---\n" + QUOTA + "---\n" + SERVICE, [GPUS], outputs)

    assert problems == []


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


def test_dates_stay_strings_as_in_kubernetes() -> None:
    [config_map] = parse_documents(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {day: 2024-01-31}\n"
    )

    assert config_map["data"] == {"day": "2024-01-31"}


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
    problem = only_problem(check_version(resources, [], []))

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

    problem = only_problem(check_version(resources, [], []))

    assert problem.path == ("kind",)
    assert problem.message == "Kubernetes 1.37 has no kind Deployment in apiVersion extensions/v1beta1"


def test_custom_resources_are_checked_for_their_name_only() -> None:
    resources = (
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {name: queue}\nspec: {anything: 1}\n"
    )

    assert check_version(resources, [], []) == []


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
    from gpupaas.provisioning import render as module

    module._parsed.cache_clear()
    render(QUOTA, make_context(inputs={"gpus": 1}))
    assert module._parsed.cache_info().currsize == 1
    large = QUOTA + "# " + "x" * module._CACHED_TEXT_LIMIT + "\n"
    assert render(large, make_context(inputs={"gpus": 1})) == render(QUOTA, make_context(inputs={"gpus": 1}))
    assert module._parsed.cache_info().currsize == 1  # the large text was parsed, not kept
