"""The spec of a container service: what check_spec refuses, and how, and its JSON form."""

from __future__ import annotations

import dataclasses
import re
from typing import Any, cast

import pytest

from gpupaas.instance_templates.spec import (
    Port,
    Protocol,
    Resources,
    ServiceSpec,
    Storage,
    check_spec,
    spec_from_json,
    spec_to_json,
)

BASE = ServiceSpec(vendor="NVIDIA", image="nvcr.io/nvidia/pytorch:25.01-py3")


def with_(**changes: Any) -> ServiceSpec:
    return dataclasses.replace(BASE, **changes)


def port(name: str = "http", number: int = 8000, protocol: str = "TCP", params: Any = ()) -> Port:
    # the cases below build invalid ports too, which the checks must reject
    return Port(name=name, port=number, protocol=cast(Protocol, protocol), access_params=tuple(params))


VALID: list[tuple[str, ServiceSpec]] = [
    ("defaults", BASE),
    ("every vendor: CPU", with_(vendor="CPU", image="ubuntu:24.04")),
    ("pull policy NEVER", with_(image_pull_policy="NEVER")),
    ("a command with a token", with_(command=("jupyter", "lab", "--ServerApp.token={{ generated_token }}"))),
    ("a Go template is literal text", with_(command=("docker", "ps", "--format={{.Names}}"))),
    ("container disk in bytes", with_(container_disk="10G")),
    ("a mount path under /var", with_(mount_path="/var/workspace")),
    ("a mount path under /opt", with_(mount_path="/opt/work")),
    ("a deep mount path", with_(mount_path="/home/jovyan/work")),
    ("/development is not /dev", with_(mount_path="/development")),
    (
        "the same port number over TCP and UDP",
        with_(ports=(port("dns-tcp", 53), port("dns-udp", 53, "UDP"), port("sctp", 9999, "SCTP"))),
    ),
    ("a 15-character port name", with_(ports=(port("a" * 15, 8000),))),
    (
        "port names as people write them",
        with_(
            ports=(
                port("SSH", 22),
                port("JUPYTER", 8888),
                port("Web UI", 8080),
                port("8443", 8443),
                port("jupyter-notebook-server", 8000),
                port("my_port", 9000),
            )
        ),
    ),
    ("port 1 and 65535", with_(ports=(port("low", 1), port("high", 65535)))),
    (
        "access params",
        with_(ports=(port("jupyter", 8888, params=[("token", "{{generated_token}}"), ("a.b-c_d", "")]),)),
    ),
    (
        "env names with dots and dashes",
        with_(env=(("HF_HOME", "/workspace/hf"), ("my.var-1", ""), ("_x", "1"))),
    ),
    ("a placeholder in an env value", with_(env=(("JUPYTER_TOKEN", "{{generated_token}}"),))),
]


@pytest.mark.parametrize(("case", "spec"), VALID, ids=[case for case, _ in VALID])
def test_a_sound_spec_has_no_problems(case: str, spec: ServiceSpec) -> None:
    # given a sound spec / when it is checked / then nothing is wrong
    assert check_spec(spec) == []


INVALID: list[tuple[str, ServiceSpec, tuple[str | int, ...], str]] = [
    ("unknown vendor", with_(vendor="GPU"), ("vendor",), "must be one of NVIDIA, AMD, INTEL, ASCEND, CPU"),
    ("empty image", with_(image=""), ("image",), "must not be empty"),
    ("upper-case image", with_(image="Ubuntu:24.04"), ("image",), "lowercase"),
    (
        "image with a scheme",
        with_(image="https://nvcr.io/nvidia/pytorch"),
        ("image",),
        'must not start with "https://"',
    ),
    (
        "placeholder in the image",
        with_(image="ubuntu:{{generated_token}}"),
        ("image",),
        "cannot hold a placeholder",
    ),
    (
        "pull policy in Kubernetes' spelling",
        with_(image_pull_policy="Always"),
        ("imagePullPolicy",),
        "ALWAYS",
    ),
    ("empty command item", with_(command=("sleep", "")), ("command", 1), "must not be empty"),
    ("too many command items", with_(command=("x",) * 65), ("command",), "at most 64 items (it has 65)"),
    ("a command item too long", with_(command=("x" * 4097,)), ("command", 0), "at most 4096 characters"),
    ("a NUL in the command", with_(command=("a\0b",)), ("command", 0), "NUL"),
    ("zero container disk", with_(container_disk="0"), ("containerDisk",), "greater than zero"),
    ("container disk in GB", with_(container_disk="15GB"), ("containerDisk",), "did you mean 15Gi?"),
    (
        "container disk in thousandths",
        with_(container_disk="500m"),
        ("containerDisk",),
        "did you mean 500Mi?",
    ),
    (
        "container disk not a quantity",
        with_(container_disk="big"),
        ("containerDisk",),
        "must be a quantity of bytes",
    ),
    ("negative container disk", with_(container_disk="-1Gi"), ("containerDisk",), "must not be negative"),
    (
        "placeholder in the disk",
        with_(container_disk="{{generated_token}}"),
        ("containerDisk",),
        "cannot hold a placeholder",
    ),
    ("empty mount path", with_(mount_path=""), ("mountPath",), "must not be empty"),
    (
        "relative mount path",
        with_(mount_path="workspace"),
        ("mountPath",),
        'absolute path starting with "/", like "/workspace"',
    ),
    ("mount path /", with_(mount_path="/"), ("mountPath",), 'must not be "/"'),
    ("mount path //", with_(mount_path="//"), ("mountPath",), 'must not be "/"'),
    ("trailing slash", with_(mount_path="/workspace/"), ("mountPath",), 'did you mean "/workspace"?'),
    ("double slash", with_(mount_path="//workspace"), ("mountPath",), 'did you mean "/workspace"?'),
    ("a dot part", with_(mount_path="/data/./work"), ("mountPath",), 'did you mean "/data/work"?'),
    ("a dot-dot part", with_(mount_path="/data/../etc"), ("mountPath",), 'must not contain ".."'),
    ("/etc", with_(mount_path="/etc"), ("mountPath",), "must not be /etc or a directory under it"),
    (
        "under /usr",
        with_(mount_path="/usr/local/work"),
        ("mountPath",),
        "must not be /usr or a directory under it",
    ),
    ("under /proc", with_(mount_path="/proc/1"), ("mountPath",), "/proc"),
    ("/dev/shm", with_(mount_path="/dev/shm"), ("mountPath",), "/dev"),
    (
        "/var itself",
        with_(mount_path="/var"),
        ("mountPath",),
        'must not be /var itself: the workspace would hide the image\'s files there; use a directory below it like "/var/workspace"',
    ),
    ("/opt itself", with_(mount_path="/opt"), ("mountPath",), "/opt itself"),
    ("mount path too long", with_(mount_path="/" + "a" * 1024), ("mountPath",), "at most 1024 characters"),
    (
        "control character",
        with_(mount_path="/work\nspace"),
        ("mountPath",),
        "control characters (U+000A found)",
    ),
    (
        "placeholder in the mount path",
        with_(mount_path="/{{generated_token}}"),
        ("mountPath",),
        "cannot hold a placeholder",
    ),
    ("empty port name", with_(ports=(port(""),)), ("ports", 0, "name"), "must not be empty"),
    ("a blank port name", with_(ports=(port("   "),)), ("ports", 0, "name"), "must not be empty"),
    (
        "a port name of 64 characters",
        with_(ports=(port("P" * 64, 8888),)),
        ("ports", 0, "name"),
        "must be at most 63 characters (it has 64)",
    ),
    (
        "a port name of two lines",
        with_(ports=(port("Web\nUI", 8888),)),
        ("ports", 0, "name"),
        "must be a single line",
    ),
    (
        "port names that differ in letter case only",
        with_(ports=(port("Jupyter", 8888), port("JUPYTER", 8889))),
        ("ports", 1, "name"),
        'duplicate port name "JUPYTER" (port "Jupyter" has it, letter case aside)',
    ),
    (
        "placeholder in a port name",
        with_(ports=(port("{{generated_token}}"),)),
        ("ports", 0, "name"),
        "cannot hold a placeholder",
    ),
    ("port 0", with_(ports=(port("web", 0),)), ("ports", 0, "port"), "from 1 to 65535 (not 0)"),
    ("port 65536", with_(ports=(port("web", 65536),)), ("ports", 0, "port"), "from 1 to 65535 (not 65536)"),
    ("port True", with_(ports=(port("web", True),)), ("ports", 0, "port"), "from 1 to 65535 (not True)"),
    (
        "protocol HTTP",
        with_(ports=(port("web", 80, "HTTP"),)),
        ("ports", 0, "protocol"),
        "must be one of TCP, UDP, SCTP",
    ),
    (
        "duplicate port name",
        with_(ports=(port("web", 80), port("web", 81))),
        ("ports", 1, "name"),
        'duplicate port name "web"',
    ),
    (
        "duplicate port number",
        with_(ports=(port("web", 80), port("www", 80))),
        ("ports", 1, "port"),
        '80/TCP is already exposed as "web"',
    ),
    (
        "empty access param key",
        with_(ports=(port(params=[("", "x")]),)),
        ("ports", 0, "accessParams", 0, "key"),
        "must not be empty",
    ),
    (
        "access param key with a space",
        with_(ports=(port(params=[("to ken", "x")]),)),
        ("ports", 0, "accessParams", 0, "key"),
        'letters, digits, "_", "." and "-"',
    ),
    (
        "duplicate access param",
        with_(ports=(port(params=[("a", "1"), ("a", "2")]),)),
        ("ports", 0, "accessParams", 1, "key"),
        'duplicate access param "a"',
    ),
    (
        "access param value too long",
        with_(ports=(port(params=[("a", "x" * 1025)]),)),
        ("ports", 0, "accessParams", 0, "value"),
        "at most 1024 characters",
    ),
    (
        "placeholder in an access param key",
        with_(ports=(port(params=[("{{generated_token}}", "x")]),)),
        ("ports", 0, "accessParams", 0, "key"),
        "cannot hold a placeholder",
    ),
    (
        "too many access params",
        with_(ports=(port(params=[(f"k{i}", "") for i in range(17)]),)),
        ("ports", 0, "accessParams"),
        "at most 16",
    ),
    (
        "too many ports",
        with_(ports=tuple(port(f"p{i}", 1000 + i) for i in range(33))),
        ("ports",),
        "at most 32 ports",
    ),
    (
        "env name starting with a digit",
        with_(env=(("1X", ""),)),
        ("env", 0, "key"),
        "must not start with a digit",
    ),
    ("empty env name", with_(env=(("", "x"),)), ("env", 0, "key"), "must not be empty"),
    ("duplicate env name", with_(env=(("A", "1"), ("A", "2"))), ("env", 1, "key"), 'duplicate variable "A"'),
    (
        "placeholder in an env name",
        with_(env=(("{{generated_token}}", "x"),)),
        ("env", 0, "key"),
        "cannot hold a placeholder",
    ),
    ("NUL in an env value", with_(env=(("A", "a\0"),)), ("env", 0, "value"), "NUL"),
    (
        "too many env variables",
        with_(env=tuple((f"V{i}", "") for i in range(257))),
        ("env",),
        "at most 256 variables",
    ),
    (
        "unknown placeholder in the command",
        with_(command=("--password={{generated_password}}",)),
        ("command", 0),
        'unknown placeholder "generated_password": the known one is {{generated_token}}',
    ),
    (
        "malformed placeholder in an env value",
        with_(env=(("TOKEN", "{{token}}"),)),
        ("env", 0, "value"),
        "did you mean {{generated_token}}?",
    ),
    (
        "malformed placeholder in an access param",
        with_(ports=(port(params=[("token", "{{ generated_ }}")]),)),
        ("ports", 0, "accessParams", 0, "value"),
        '"{{ generated_ }}" is not a valid placeholder',
    ),
]


@pytest.mark.parametrize(("case", "spec", "path", "fragment"), INVALID, ids=[case[0] for case in INVALID])
def test_a_problem_names_its_field_and_what_to_do(
    case: str, spec: ServiceSpec, path: tuple[str | int, ...], fragment: str
) -> None:
    # given a spec with one thing wrong
    # when it is checked
    problems = check_spec(spec)

    # then exactly that field is reported, with a message that says what to change
    assert [p for p, _ in problems] == [path], problems
    assert fragment in problems[0][1]


def test_all_problems_are_reported_at_once_in_field_order() -> None:
    # given a spec with several things wrong, listed out of order
    spec = ServiceSpec(
        vendor="NVIDIA",
        image="",
        container_disk="0",
        env=(("1X", ""),),
        ports=(port("web", 0),),
        command=("",),
    )

    # when it is checked
    paths = [path for path, _ in check_spec(spec)]

    # then every field is reported, in the order of the form
    assert paths == [("image",), ("command", 0), ("containerDisk",), ("ports", 0, "port"), ("env", 0, "key")]


def test_a_field_too_long_is_not_also_reported_for_its_placeholders() -> None:
    # given a command item that is too long and holds an unknown placeholder
    spec = with_(command=("{{generated_x}}" + "a" * 4096,))

    # when it is checked / then the item is reported once
    assert [path for path, _ in check_spec(spec)] == [("command", 0)]


# ---------------------------------------------------------------------------------------- JSON

FULL = ServiceSpec(
    vendor="AMD",
    image="rocm/pytorch:latest",
    image_pull_policy="ALWAYS",
    command=("sleep", "infinity"),
    container_disk="30Gi",
    mount_path="/data",
    ports=(
        Port(name="jupyter", port=8888, access_params=(("token", "{{generated_token}}"),)),
        Port(name="dns", port=53, protocol="UDP"),
    ),
    env=(("A", "1"), ("B", "")),
    storage=Storage(mode="NEW_VOLUME", size="50Gi", reclaim="KEEP"),
    resources=Resources(cpu_request="2", cpu_limit="4", memory_limit="16Gi"),
)


def test_the_json_form_uses_the_apis_field_names() -> None:
    # given a spec with every field set / when it is converted
    data = spec_to_json(FULL)

    # then the keys are the API's
    assert data == {
        "vendor": "AMD",
        "image": "rocm/pytorch:latest",
        "imagePullPolicy": "ALWAYS",
        "command": ["sleep", "infinity"],
        "containerDisk": "30Gi",
        "mountPath": "/data",
        "ports": [
            {
                "name": "jupyter",
                "port": 8888,
                "protocol": "TCP",
                "accessParams": [{"key": "token", "value": "{{generated_token}}"}],
            },
            {"name": "dns", "port": 53, "protocol": "UDP", "accessParams": []},
        ],
        "env": [{"key": "A", "value": "1"}, {"key": "B", "value": ""}],
        "gpuPartition": None,
        "imagePullSecret": None,
        "storage": {
            "mode": "NEW_VOLUME",
            "size": "50Gi",
            "reclaim": "KEEP",
            "claimName": None,
            "storageClass": None,
        },
        "resources": {"cpuRequest": "2", "cpuLimit": "4", "memoryRequest": None, "memoryLimit": "16Gi"},
        "ssh": None,
    }


@pytest.mark.parametrize(
    "spec",
    [
        BASE,
        FULL,
        with_(vendor="CPU", image="ubuntu:24.04"),
        with_(gpu_partition="nvidia.com/mig-1g.10gb"),
        with_(image_pull_secret="ngc"),
    ],
)
def test_json_round_trips(spec: ServiceSpec) -> None:
    # given a spec / when it goes to JSON and back / then it is the same spec
    assert spec_from_json(spec_to_json(spec)) == spec


def test_missing_and_null_optional_fields_take_their_defaults() -> None:
    # given the smallest input the API takes, with nulls where GraphQL sends them
    data = {
        "vendor": "NVIDIA",
        "image": "nvcr.io/nvidia/pytorch:25.01-py3",
        "command": None,
        "ports": [{"name": "web", "port": 80, "protocol": None}],
    }

    # when it is read / then the defaults fill the rest
    assert spec_from_json(data) == with_(ports=(Port(name="web", port=80),))


MALFORMED: list[tuple[str, Any, str]] = [
    ("not an object", ["image"], "a spec must be an object, not list"),
    ("no vendor", {"image": "x"}, "vendor: is required"),
    ("no image", {"vendor": "CPU"}, "image: is required"),
    ("image a number", {"vendor": "CPU", "image": 1}, "image: must be a string, not int"),
    (
        "command a string",
        {"vendor": "CPU", "image": "x", "command": "sleep"},
        "command: must be a list, not str",
    ),
    (
        "command item a number",
        {"vendor": "CPU", "image": "x", "command": ["sleep", 1]},
        "command[1]: must be a string, not int",
    ),
    (
        "port a string",
        {"vendor": "CPU", "image": "x", "ports": [{"name": "a", "port": "80"}]},
        "ports[0].port: must be an integer, not str",
    ),
    (
        "port a boolean",
        {"vendor": "CPU", "image": "x", "ports": [{"name": "a", "port": True}]},
        "ports[0].port: must be an integer, not bool",
    ),
    (
        "port without a name",
        {"vendor": "CPU", "image": "x", "ports": [{"port": 80}]},
        "ports[0].name: is required",
    ),
    (
        "port not an object",
        {"vendor": "CPU", "image": "x", "ports": [80]},
        "ports[0]: must be an object with name, port and protocol",
    ),
    (
        "env item a string",
        {"vendor": "CPU", "image": "x", "env": ["A=1"]},
        "env[0]: must be an object with key and value",
    ),
    (
        "env without a key",
        {"vendor": "CPU", "image": "x", "env": [{"value": "1"}]},
        "env[0].key: is required",
    ),
    (
        "access param value a number",
        {
            "vendor": "CPU",
            "image": "x",
            "ports": [{"name": "a", "port": 1, "accessParams": [{"key": "k", "value": 1}]}],
        },
        "ports[0].accessParams[0].value: must be a string, not int",
    ),
]


@pytest.mark.parametrize(("case", "data", "message"), MALFORMED, ids=[case[0] for case in MALFORMED])
def test_malformed_json_names_the_field(case: str, data: Any, message: str) -> None:
    # given JSON of the wrong shape / when it is read / then the error names the field
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        spec_from_json(data)


# ---------------------------------------------------------------------------------------- storage and resources


@pytest.mark.parametrize(
    ("storage", "path", "words"),
    [
        (
            Storage(mode=cast(Any, "SCRATCH")),
            ("storage", "mode"),
            "must be one of EPHEMERAL, NEW_VOLUME, EXISTING_CLAIM",
        ),
        (Storage(mode="EPHEMERAL", reclaim="KEEP"), ("storage", "reclaim"), "KEEP is for a NEW_VOLUME"),
        (
            Storage(mode="NEW_VOLUME", reclaim=cast(Any, "LATER")),
            ("storage", "reclaim"),
            "must be one of KEEP, RELEASE",
        ),
        (Storage(size="lots"), ("storage", "size"), "must be"),
        (Storage(size="0"), ("storage", "size"), "must be"),
        (
            Storage(mode="EXISTING_CLAIM"),
            ("storage", "claimName"),
            "needs the name of a PersistentVolumeClaim",
        ),
        (Storage(mode="EXISTING_CLAIM", claim_name="Data_1"), ("storage", "claimName"), "lowercase"),
        (Storage(mode="EXISTING_CLAIM", claim_name="data", size="1Gi"), ("storage", "size"), "its own size"),
        (Storage(mode="EPHEMERAL", claim_name="data"), ("storage", "claimName"), "is no claim"),
        (Storage(mode="NEW_VOLUME", claim_name="Data_1"), ("storage", "claimName"), "lowercase"),
        (Storage(mode="NEW_VOLUME", storage_class="Fast SSD"), ("storage", "storageClass"), "lowercase"),
        (
            Storage(mode="EXISTING_CLAIM", claim_name="data", storage_class="fast"),
            ("storage", "storageClass"),
            "only a NEW_VOLUME is created with a storage class",
        ),
    ],
)
def test_storage_problems_name_the_field(storage: Storage, path: tuple[str, ...], words: str) -> None:
    # given a spec whose storage is wrong / when it is checked / then the field is named
    problems = dict(check_spec(with_(storage=storage)))
    assert path in problems, problems
    assert words in problems[path]


@pytest.mark.parametrize(
    "storage",
    [
        Storage(),
        Storage(mode="EPHEMERAL"),
        Storage(mode="EPHEMERAL", size="10Gi"),
        Storage(mode="NEW_VOLUME", size="100Gi", reclaim="KEEP"),
        Storage(mode="EXISTING_CLAIM", claim_name="datasets.v2"),
    ],
)
def test_sound_storage_passes(storage: Storage) -> None:
    assert check_spec(with_(storage=storage)) == []


def test_a_request_over_its_limit_is_refused() -> None:
    # given requests over their limits / when checked / then each request is named with both values
    problems = dict(
        check_spec(
            with_(
                resources=Resources(cpu_request="8", cpu_limit="4", memory_request="2Gi", memory_limit="1Gi")
            )
        )
    )
    assert problems[("resources", "cpuRequest")] == "must be at most the cpu limit (8 requested, limit 4)"
    assert (
        problems[("resources", "memoryRequest")]
        == "must be at most the memory limit (2Gi requested, limit 1Gi)"
    )


def test_resource_quantities_are_checked() -> None:
    problems = dict(check_spec(with_(resources=Resources(cpu_limit="two", memory_request="1.5"))))
    assert set(problems) == {("resources", "cpuLimit"), ("resources", "memoryRequest")}


def test_storage_and_resources_come_back_from_json() -> None:
    # given a spec with both / when it goes to JSON and back / then it is the same
    spec = with_(
        storage=Storage(mode="EXISTING_CLAIM", claim_name="data"),
        resources=Resources(cpu_request="500m", memory_limit="8Gi"),
    )
    assert spec_from_json(spec_to_json(spec)) == spec
    # and a spec stored before these fields existed has the defaults
    data = spec_to_json(BASE)
    del data["storage"], data["resources"]
    assert spec_from_json(data) == BASE
