"""The built-in environment templates: sound versions that render valid Kubernetes objects."""

from __future__ import annotations

import json

import kubernetes_validate
import pytest

from gpupaas.provisioning.builtins import (
    BUILTIN_TEMPLATES,
    BuiltinTemplate,
    builtin_template,
    load_builtin_template,
)
from gpupaas.provisioning.inputs import typed_value
from gpupaas.provisioning.render.checks import check_version
from gpupaas.provisioning.render.rendering import RenderContext, render, render_outputs
from gpupaas.provisioning.render.schema import validate_manifest

NAMES = ["gpu-dedicated", "gpu-namespace"]


def context_for(template: BuiltinTemplate, **resources: object) -> RenderContext:
    # The inputs as a profile that keeps every default would fill them.
    inputs = {
        defn.name: typed_value(defn, defn.default) for defn in template.inputs if defn.default is not None
    }
    values: dict[str, object] = {
        "instance_name": "train-1",
        "instance_namespace": "team-a-train-1",
        "instance_id": "3f1c2a9e-0000-4000-8000-000000000001",
        "profile_name": "h100-x8",
        "cpu": "32",
        "memory": "256Gi",
        "storage": "1Ti",
        "gpu_count": 8,
        "gpu_vendor": "NVIDIA",
        "gpu_model": "H100",
        "gpu_resource_name": "nvidia.com/gpu",
    }
    values.update(resources)
    return RenderContext(inputs=inputs, **values)  # type: ignore[arg-type]


CONTEXTS: dict[str, dict[str, object]] = {
    "nvidia-8": {},
    "amd": {
        "gpu_vendor": "AMD",
        "gpu_model": "MI300X",
        "gpu_resource_name": "amd.com/gpu",
        "gpu_count": 4,
        "cpu": "500m",
        "memory": "1.5Gi",
    },
    "cpu-only": {"gpu_vendor": "CPU", "gpu_model": None, "gpu_count": 0, "cpu": "4", "memory": "16Gi"},
}


def test_both_builtins_ship() -> None:
    assert sorted(template.name for template in BUILTIN_TEMPLATES) == NAMES
    for template in BUILTIN_TEMPLATES:
        assert template.version == "1.0.0"
        assert template.display_name
        assert template.description
        assert {"namespace", "quota", "gpuResource"} <= {output.name for output in template.outputs}


@pytest.mark.parametrize("name", NAMES)
def test_a_builtin_version_has_no_problems(name: str) -> None:
    template = builtin_template(name)
    assert template is not None

    problems = check_version(template.resources, template.inputs, template.outputs)

    assert [str(problem) for problem in problems] == []


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("context_name", sorted(CONTEXTS))
def test_a_builtin_renders_objects_kubernetes_accepts(name: str, context_name: str) -> None:
    # given a built-in and a profile's resources
    template = builtin_template(name)
    assert template is not None
    context = context_for(template, **CONTEXTS[context_name])

    # when it is rendered
    manifests = render(template.resources, context)

    # then every object passes the strict schema, by the library itself and by our checks
    assert [manifest["kind"] for manifest in manifests] == ["Namespace", "ResourceQuota", "LimitRange"]
    for manifest in manifests:
        kubernetes_validate.validate(manifest, "1.37.0", strict=True)
        assert validate_manifest(manifest) == []


def test_the_quota_carries_the_profile_resources_and_the_gpu_key() -> None:
    template = builtin_template("gpu-namespace")
    assert template is not None
    context = context_for(template, **CONTEXTS["amd"])

    namespace, quota, limits = render(template.resources, context)

    assert namespace["metadata"] == {"name": "team-a-train-1", "labels": {"gpupaas.io/profile": "h100-x8"}}
    assert quota["metadata"]["namespace"] == "team-a-train-1"
    assert quota["spec"]["hard"] == {
        "requests.cpu": "500m",
        "limits.cpu": "500m",
        "requests.memory": "1.5Gi",
        "limits.memory": "1.5Gi",
        "requests.storage": "1Ti",
        "requests.ephemeral-storage": "50Gi",
        "limits.ephemeral-storage": "50Gi",
        "pods": 100,
        "requests.amd.com/gpu": 4,
    }
    assert limits["spec"]["limits"] == [
        {
            "type": "Container",
            "defaultRequest": {"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "1Gi"},
            "default": {"cpu": "500m", "memory": "1Gi", "ephemeral-storage": "1Gi"},
        }
    ]


def test_a_cpu_only_profile_gets_a_zero_gpu_quota() -> None:
    template = builtin_template("gpu-namespace")
    assert template is not None

    _, quota, _ = render(template.resources, context_for(template, **CONTEXTS["cpu-only"]))

    assert quota["spec"]["hard"]["requests.nvidia.com/gpu"] == 0


def test_inputs_change_the_container_defaults() -> None:
    # given a profile that sets its own defaults
    template = builtin_template("gpu-namespace")
    assert template is not None
    base = context_for(template)
    context = RenderContext(
        **{
            **base.__dict__,
            "inputs": {**base.inputs, "defaultCpu": "2", "defaultMemory": "8Gi", "maxPods": 10},
        }
    )

    # when it is rendered
    _, quota, limits = render(template.resources, context)

    # then they land in the LimitRange and the quota
    assert limits["spec"]["limits"][0]["default"]["cpu"] == "2"
    assert limits["spec"]["limits"][0]["defaultRequest"]["memory"] == "8Gi"
    assert quota["spec"]["hard"]["pods"] == 10


def test_dedicated_pins_the_namespace_to_its_reserved_nodes() -> None:
    template = builtin_template("gpu-dedicated")
    assert template is not None

    namespace, *_ = render(template.resources, context_for(template))

    annotations = namespace["metadata"]["annotations"]
    assert (
        annotations["scheduler.alpha.kubernetes.io/node-selector"] == "gpupaas.io/reserved-for=team-a-train-1"
    )
    assert json.loads(annotations["scheduler.alpha.kubernetes.io/defaultTolerations"]) == [
        {
            "key": "gpupaas.io/reserved-for",
            "operator": "Equal",
            "value": "team-a-train-1",
            "effect": "NoSchedule",
        }
    ]
    assert "PodNodeSelector" in template.description
    assert "PodTolerationRestriction" in template.description


def test_shared_does_not_pin_its_namespace() -> None:
    template = builtin_template("gpu-namespace")
    assert template is not None

    namespace, *_ = render(template.resources, context_for(template))

    assert "annotations" not in namespace["metadata"]


@pytest.mark.parametrize("name", NAMES)
def test_builtin_outputs(name: str) -> None:
    template = builtin_template(name)
    assert template is not None
    context = context_for(template, **CONTEXTS["amd"])

    outputs = render_outputs(template.outputs, context, render(template.resources, context))

    assert outputs["namespace"] == "team-a-train-1"
    assert outputs["quota"] == "cpu 500m, memory 1.5Gi, storage 1Ti, amd.com/gpu 4"
    assert outputs["gpuResource"] == "amd.com/gpu"


def test_an_unknown_builtin_is_none() -> None:
    assert builtin_template("nope") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- a list\n", "the file must hold a mapping"),
        ("displayName: x\ndescription: y\nversion: '1'\n", "resources must be a string"),
        (
            "displayName: x\ndescription: y\nversion: '1'\nresources: ''\ninputs: [{name: a, type: TEXT}]\n",
            r"inputs\[0\]: type must be one of",
        ),
        (
            "displayName: x\ndescription: y\nversion: '1'\nresources: ''\ninputs: {}\n",
            "inputs and outputs must be lists",
        ),
        (
            "displayName: x\ndescription: y\nversion: '1'\nresources: ''\noutputs: [{name: a}]\n",
            r"outputs\[0\]: value must be a string",
        ),
    ],
)
def test_a_malformed_builtin_file_names_the_problem(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_builtin_template("broken", text)


def test_unquoted_scalars_in_a_builtin_file_become_strings() -> None:
    text = """\
displayName: x
description: y
version: 2
resources: ""
inputs:
  - {name: n, type: NUMBER, default: 4, options: [2, 4], min: 1, max: 8}
  - {name: b, type: BOOLEAN, default: true}
"""

    template = load_builtin_template("t", text)

    assert template.version == "2"
    assert template.inputs[0].default == "4"
    assert template.inputs[0].options == ("2", "4")
    assert (template.inputs[0].min, template.inputs[0].max) == (1.0, 8.0)
    assert template.inputs[1].default == "true"
