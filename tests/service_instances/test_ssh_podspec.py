"""SSH access in a service's objects: the checks of the template field, the init container, the
wrapped command, the `<name>-ssh` Secret and the readiness probe (on ports where something listens)."""

from __future__ import annotations

import base64
from dataclasses import replace
from typing import Any

import pytest

from gpupaas.instance_templates.spec import (
    Port,
    ServiceSpec,
    SshAccess,
    check_spec,
    spec_from_json,
    spec_to_json,
)
from gpupaas.provisioning.render.schema import validate_manifest
from gpupaas.service_instances.podspec import (
    SshSetup,
    build_objects,
    only_waits,
    probe_port,
    ssh_command,
)
from gpupaas.service_instances.ssh_material import host_key_fingerprint, new_host_key
from tests.ssh_keys.keygen import key_pair

IMAGE = "registry.example.com/gpupaas/ssh-tools:2025.88-1"
SSH_SPEC = ServiceSpec(
    vendor="CPU",
    image="ubuntu:24.04",
    command=("tail", "-f", "/dev/null"),
    ports=(Port(name="SSH", port=22), Port(name="jupyter", port=8888)),
    ssh=SshAccess(port="SSH", user="root"),
)


def objects(
    spec: ServiceSpec = SSH_SPEC, keys: str = "", host_key: str | None = None
) -> list[dict[str, Any]]:
    return build_objects(
        spec=spec,
        name="box",
        namespace="team-a-train-1",
        instance_id="5d0c7f7e-0000-4000-8000-00000000000a",
        compute_instance_id="3f1c2a9e-0000-4000-8000-000000000001",
        gpu_count=0,
        gpu_resource_name="",
        ssh=SshSetup(IMAGE, keys, host_key or new_host_key()),
    )


def by_kind(objs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(obj for obj in objs if obj["kind"] == kind)


def test_an_ssh_service_gets_an_init_container_a_secret_and_a_wrapped_command() -> None:
    # given a template with SSH access on port 22 and the owner's key
    owner = key_pair(comment="alice@laptop")
    host_key = new_host_key()

    # when its objects are built
    objs = objects(keys=owner.public_line + "\n", host_key=host_key)

    # then the API server takes every one of them (kubernetes-validate strict)
    assert [obj["kind"] for obj in objs] == ["PersistentVolumeClaim", "Secret", "Deployment", "Service"]
    for obj in objs:
        assert validate_manifest(obj) == [], obj["kind"]
    # the Secret <name>-ssh holds authorized_keys and the host key
    secret = by_kind(objs, "Secret")
    assert secret["metadata"]["name"] == "box-ssh"
    data = {key: base64.b64decode(value).decode() for key, value in secret["data"].items()}
    assert data == {"authorized_keys": owner.public_line + "\n", "ssh_host_ed25519_key": host_key}
    pod = by_kind(objs, "Deployment")["spec"]["template"]["spec"]
    # an init container from the configured image copies the tools into an emptyDir
    [init] = pod["initContainers"]
    assert init["image"] == IMAGE
    assert init["command"] == [
        "/opt/gpupaas-ssh/bin/busybox",
        "cp",
        "-a",
        "/opt/gpupaas-ssh/.",
        "/gpupaas-ssh/",
    ]
    volumes = {volume["name"]: volume for volume in pod["volumes"]}
    assert volumes["gpupaas-ssh"]["emptyDir"] == {"sizeLimit": "64Mi"}
    assert volumes["gpupaas-ssh-keys"]["secret"]["secretName"] == "box-ssh"
    # the container runs busybox's sh, which starts dropbear on 22 and then execs the user's command
    [main] = pod["containers"]
    assert main["command"][:3] == ["/gpupaas-ssh/bin/busybox", "sh", "-c"]
    assert main["command"][4:] == ["gpupaas-ssh", "tail", "-f", "/dev/null"]
    script = main["command"][3]
    assert "/gpupaas-ssh/bin/dropbear -F -E -s -p 22 -r /gpupaas-ssh/host_key &" in script
    assert 'ln -sfn /gpupaas-ssh-keys/authorized_keys "$home/.ssh/authorized_keys"' in script
    assert script.endswith('exec "$@"')
    # the kubelet would expand $(...): the script writes $$( for a literal $(
    assert "$(" not in script.replace("$$(", "")
    mounts = {mount["name"]: mount for mount in main["volumeMounts"]}
    assert mounts["gpupaas-ssh-keys"] == {
        "name": "gpupaas-ssh-keys",
        "mountPath": "/gpupaas-ssh-keys",
        "readOnly": True,
    }
    # the probe knocks where dropbear listens: the command only waits, so not at jupyter's 8888
    assert main["readinessProbe"]["tcpSocket"] == {"port": 22}


def test_new_keys_change_the_secret_and_not_the_pod_template() -> None:
    # given the same service rendered with one key, then with two
    host_key = new_host_key()
    one = objects(keys=key_pair().public_line + "\n", host_key=host_key)
    two = objects(keys=key_pair().public_line + "\n" + key_pair().public_line + "\n", host_key=host_key)

    # then only the Secret differs: applying new keys rolls out no new pod
    assert by_kind(one, "Secret") != by_kind(two, "Secret")
    assert by_kind(one, "Deployment") == by_kind(two, "Deployment")


def test_a_non_root_user_is_let_in_alone() -> None:
    spec = replace(SSH_SPEC, ssh=SshAccess(port="SSH", user="jovyan"))
    script = ssh_command(spec)[3]
    assert '$1 == "jovyan"' in script
    assert "dropbear -F -E -s -w -p 22" in script  # -w: no root logins


@pytest.mark.parametrize(
    ("spec", "probed"),
    [
        # SSH declared, the command waits: only dropbear listens
        (SSH_SPEC, 22),
        # SSH declared, the command serves jupyter: jupyter is what readiness means
        (replace(SSH_SPEC, command=("jupyter", "lab")), 8888),
        # an SSH port without SSH access: nothing is known to listen there
        (
            replace(SSH_SPEC, ssh=None, command=("sleep", "infinity"), ports=(Port(name="SSH", port=22),)),
            None,
        ),
        (replace(SSH_SPEC, ssh=None, command=("vllm", "serve")), 8888),
        # a GPUStack-style idle shell through sh -c
        (replace(SSH_SPEC, command=("sh", "-c", "sleep infinity")), 22),
    ],
)
def test_the_readiness_probe_knocks_only_where_something_listens(
    spec: ServiceSpec, probed: int | None
) -> None:
    port = probe_port(spec)
    assert (port.port if port else None) == probed


def test_commands_that_only_wait() -> None:
    assert only_waits(("sleep", "infinity"))
    assert only_waits(("tail", "-f", "/dev/null"))
    assert only_waits(("bash", "-c", "tail -f /dev/null"))
    assert not only_waits(("jupyter", "lab"))
    assert not only_waits(())


def test_a_spec_with_ssh_needs_its_setup() -> None:
    with pytest.raises(ValueError, match="SSH setup"):
        build_objects(
            spec=SSH_SPEC,
            name="box",
            namespace="team-a-train-1",
            instance_id="5d0c7f7e-0000-4000-8000-00000000000a",
            compute_instance_id="3f1c2a9e-0000-4000-8000-000000000001",
            gpu_count=0,
            gpu_resource_name="",
        )


@pytest.mark.parametrize(
    ("spec", "path", "words"),
    [
        (
            replace(SSH_SPEC, ssh=SshAccess(port="shell")),
            ("ssh", "port"),
            'its TCP ports are "SSH", "jupyter"',
        ),
        (
            replace(SSH_SPEC, ports=(Port(name="SSH", port=22, protocol="UDP"),)),
            ("ssh", "port"),
            "SSH needs a TCP port",
        ),
        (replace(SSH_SPEC, ssh=SshAccess(port="SSH", user="Root; rm")), ("ssh", "user"), "user name"),
        (replace(SSH_SPEC, command=()), ("ssh", "port"), "SSH access needs a command"),
        (
            replace(SSH_SPEC, ports=(Port(name="SSH", port=22, access_params=(("a", "b"),)),)),
            ("ssh", "port"),
            "access params",
        ),
    ],
)
def test_bad_ssh_access_is_refused_with_what_to_do(
    spec: ServiceSpec, path: tuple[str, ...], words: str
) -> None:
    problems = check_spec(spec)
    assert [p for p, _ in problems] == [path]
    assert words in problems[0][1]


def test_ssh_access_round_trips_through_json_and_names_the_port_letter_case_aside() -> None:
    spec = replace(SSH_SPEC, ssh=SshAccess(port="ssh", user="root"))
    assert check_spec(spec) == []
    assert spec_from_json(spec_to_json(spec)) == spec
    assert spec_to_json(spec)["ssh"] == {"port": "ssh", "user": "root"}
    assert spec_from_json({**spec_to_json(spec), "ssh": None}).ssh is None


def test_the_host_key_fingerprint_is_what_ssh_shows() -> None:
    host_key = new_host_key()
    fingerprint = host_key_fingerprint(host_key)
    assert fingerprint.startswith("SHA256:") and len(fingerprint) == 50
    assert host_key_fingerprint(host_key) == fingerprint
    assert host_key_fingerprint(new_host_key()) != fingerprint
