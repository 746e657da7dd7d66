"""The built-in instance templates: sound specs that make valid objects and working links."""

from __future__ import annotations

import pytest

from gpupaas.core import validation
from gpupaas.instance_templates.builtins import (
    BUILTIN_INSTANCE_TEMPLATES,
    BuiltinInstanceTemplate,
    builtin_instance_template,
)
from gpupaas.instance_templates.placeholders import generate_values
from gpupaas.instance_templates.spec import (
    Port,
    SshAccess,
    check_spec,
    find_placeholders,
    resolve,
    spec_from_json,
    spec_to_json,
    unknown_placeholders,
)
from gpupaas.provisioning.plan import GPU_RESOURCE_NAMES
from gpupaas.provisioning.render.schema import validate_manifest
from gpupaas.service_instances.connect import ConnectLink, connect_links
from gpupaas.service_instances.podspec import SshSetup, build_objects
from gpupaas.service_instances.ssh_material import new_host_key

NAMES = ["jupyterlab-pytorch", "pytorch", "pytorch-rocm", "vllm-openai", "ubuntu", "cann-910b", "cann-310p"]


def template(name: str) -> BuiltinInstanceTemplate:
    found = builtin_instance_template(name)
    assert found is not None
    return found


def test_the_builtins_ship_in_order() -> None:
    assert [t.name for t in BUILTIN_INSTANCE_TEMPLATES] == NAMES
    assert {t.spec.vendor for t in BUILTIN_INSTANCE_TEMPLATES} == {"NVIDIA", "AMD", "ASCEND", "CPU"}
    assert builtin_instance_template("nope") is None


@pytest.mark.parametrize("name", NAMES)
def test_a_builtin_is_sound(name: str) -> None:
    # given a built-in template
    builtin = template(name)

    # then its name, display name and description pass the API's rules, and its spec has no problems
    assert validation.dns_label(builtin.name) is None
    assert validation.display_name(builtin.display_name) is None
    assert validation.description(builtin.description) is None
    assert check_spec(builtin.spec) == []
    assert unknown_placeholders(builtin.spec) == []
    assert spec_from_json(spec_to_json(builtin.spec)) == builtin.spec


@pytest.mark.parametrize("name", NAMES)
def test_a_builtins_objects_are_valid_kubernetes_objects(name: str) -> None:
    # given a built-in's spec, resolved as a new service instance resolves it
    builtin = template(name)
    spec = resolve(builtin.spec, generate_values(find_placeholders(builtin.spec)))
    gpus = 0 if spec.vendor == "CPU" else 1

    # when its objects are built for its vendor
    objects = build_objects(
        spec=spec,
        name=name,
        namespace="team-a-train-1",
        instance_id="5d0c7f7e-0000-4000-8000-00000000000a",
        compute_instance_id="3f1c2a9e-0000-4000-8000-000000000001",
        gpu_count=gpus,
        gpu_resource_name=GPU_RESOURCE_NAMES[spec.vendor],
        cpu="8",
        memory="32Gi",
        ssh=SshSetup("ghcr.io/gpupaas/ssh-tools:1", "", new_host_key()) if spec.ssh else None,
    )

    # then the Kubernetes API would take every one of them
    kinds = [obj["kind"] for obj in objects]
    assert kinds[:2] == ["PersistentVolumeClaim", "Secret" if spec.ssh else "Deployment"]
    assert ("Service" in [obj["kind"] for obj in objects]) == bool(spec.ports)
    for obj in objects:
        assert validate_manifest(obj) == [], obj["kind"]


def test_jupyterlab_logs_in_with_the_instances_token() -> None:
    # given the JupyterLab template
    builtin = template("jupyterlab-pytorch")

    # then it runs the command users know, with the flags a container needs
    assert builtin.spec.command == (
        "jupyter",
        "lab",
        "--ServerApp.token={{generated_token}}",
        "--notebook-dir=/workspace",
        "--allow-root",
        "--ip=0.0.0.0",
        "--port=8888",
    )
    assert [(p.name, p.port, p.protocol) for p in builtin.spec.ports] == [("jupyter", 8888, "TCP")]
    assert builtin.spec.ports[0].access_params == (("token", "{{generated_token}}"),)

    # when an instance is created from it
    values = generate_values(find_placeholders(builtin.spec))
    spec = resolve(builtin.spec, values)

    # then its link carries the token the server was started with
    token = values["generated_token"]
    assert f"--ServerApp.token={token}" in spec.command
    assert connect_links(spec, access_address="127.0.0.1", node_ports={"jupyter": 31888}) == [
        ConnectLink(port="jupyter", url=f"http://127.0.0.1:31888/?token={token}")
    ]


def test_vllm_serves_a_small_model_behind_the_generated_api_key() -> None:
    builtin = template("vllm-openai")
    command = builtin.spec.command

    assert builtin.spec.image.startswith("vllm/vllm-openai:v")
    assert command[:3] == ("vllm", "serve", "Qwen/Qwen2.5-0.5B-Instruct")
    assert command[command.index("--api-key") + 1] == "{{generated_token}}"
    assert command[command.index("--port") + 1] == "8000"
    assert [(p.name, p.port, p.access_params) for p in builtin.spec.ports] == [("http", 8000, ())]
    assert connect_links(builtin.spec, access_address="127.0.0.1") == [
        ConnectLink(port="http", url="http://127.0.0.1:8000/")
    ]


@pytest.mark.parametrize(
    ("name", "vendor", "image"),
    [
        ("pytorch", "NVIDIA", "nvcr.io/nvidia/pytorch:"),
        ("pytorch-rocm", "AMD", "rocm/pytorch:"),
        ("ubuntu", "CPU", "ubuntu:24.04"),
        ("cann-910b", "ASCEND", "quay.io/ascend/cann:8.5.0-910b-"),
        ("cann-310p", "ASCEND", "quay.io/ascend/cann:8.5.0-310p-"),
    ],
)
def test_the_shells_wait_for_users_to_log_in_over_ssh(name: str, vendor: str, image: str) -> None:
    builtin = template(name)

    assert builtin.spec.vendor == vendor
    assert builtin.spec.image.startswith(image)
    assert builtin.spec.command == ("sleep", "infinity")
    # SSH is declared on port 22: gpupaas starts an SSH server beside the command
    assert builtin.spec.ports == (Port(name="SSH", port=22),)
    assert builtin.spec.ssh == SshAccess(port="SSH", user="root")
    assert connect_links(builtin.spec, access_address="gpu.example.com", node_ports={"ssh": 30022}) == [
        ConnectLink(port="SSH", url="ssh -p 30022 root@gpu.example.com")
    ]
