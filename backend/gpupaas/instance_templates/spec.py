"""The spec of a container service, as an instance template holds it and a service instance copies it.

The fields are GPUStack's (image, pull policy, start command, container disk, mount path, ports
with access params, env, vendor). `check_spec` finds everything wrong with one, as (path, message)
pairs whose paths use the API's camelCase field names: `("ports", 0, "port")`, `("env", 1, "key")`,
`("containerDisk",)`. The rules are what Kubernetes accepts for a container, so that a spec that
passes always makes a workload the API server takes.

Storage (`Storage`): where the workspace at the mount path lives. EPHEMERAL: an emptyDir on the node,
gone when the pod goes (stop, restart, a new node); with a size, its sizeLimit, added to the
container's ephemeral-storage requests and limits so that the namespace's quota counts it.
NEW_VOLUME (the default): a PersistentVolumeClaim of its own (`<service>-workspace`, or the
`claim_name` given; of the cluster's default storage class, or the `storage_class` given), which a
delete removes (reclaim RELEASE, the default) or leaves in the namespace for later services
(KEEP). EXISTING_CLAIM: a
claim the compute instance's namespace already has, by name, never created nor deleted by the
service. Resources (`Resources`): the container's CPU and memory requests and limits; what is left
out follows the GPUs' share of the compute instance (service_instances/sizing.py).

`spec_to_json` / `spec_from_json` convert to and from the API's shape (camelCase keys, key/value
lists), which is also how the spec is stored.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import astuple, dataclass, replace
from typing import Any, Literal, get_args

from gpupaas.core import gpu_resources, quantities, validation
from gpupaas.instance_templates import placeholders, port_names

__all__ = [
    "MAX_ACCESS_PARAMS",
    "MAX_COMMAND_ITEMS",
    "MAX_COMMAND_ITEM_LENGTH",
    "MAX_ENV",
    "MAX_PORTS",
    "PORT_NAME_MAX",
    "PROTOCOLS",
    "PULL_POLICIES",
    "RECLAIM_POLICIES",
    "STORAGE_MODES",
    "VENDORS",
    "Port",
    "Protocol",
    "PullPolicy",
    "ReclaimPolicy",
    "Resources",
    "ServiceSpec",
    "SshAccess",
    "Storage",
    "StorageMode",
    "Vendor",
    "check_spec",
    "port_kubernetes_names",
    "resources_from_json",
    "resources_to_json",
    "spec_from_json",
    "spec_to_json",
    "ssh_port",
    "storage_from_json",
    "storage_to_json",
]

Vendor = Literal["NVIDIA", "AMD", "INTEL", "ASCEND", "CPU"]
PullPolicy = Literal["ALWAYS", "IF_NOT_PRESENT", "NEVER"]
Protocol = Literal["TCP", "UDP", "SCTP"]

VENDORS: tuple[str, ...] = get_args(Vendor)
PULL_POLICIES: tuple[str, ...] = get_args(PullPolicy)
PROTOCOLS: tuple[str, ...] = get_args(Protocol)
StorageMode = Literal["EPHEMERAL", "NEW_VOLUME", "EXISTING_CLAIM"]
ReclaimPolicy = Literal["KEEP", "RELEASE"]
STORAGE_MODES: tuple[str, ...] = get_args(StorageMode)
RECLAIM_POLICIES: tuple[str, ...] = get_args(ReclaimPolicy)

Path = tuple[str | int, ...]

MAX_COMMAND_ITEMS = 64
MAX_COMMAND_ITEM_LENGTH = 4096
MAX_MOUNT_PATH_LENGTH = 1024
MAX_PORTS = 32
MAX_ACCESS_PARAMS = 16
MAX_ACCESS_PARAM_KEY_LENGTH = 128
MAX_ACCESS_PARAM_VALUE_LENGTH = 1024
MAX_ENV = 256
MAX_ENV_VALUE_LENGTH = 32 * 1024
PORT_NAME_MAX = port_names.LABEL_MAX

# Mounting the workspace at or under these would hide what every image needs to run.
_SYSTEM_DIRS = (
    "/proc",
    "/sys",
    "/dev",
    "/etc",
    "/bin",
    "/sbin",
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/boot",
    "/run",
)
# These themselves hold the image's packages (/var/lib/dpkg, /opt/conda); a directory below is fine.
_WHOLE_DIRS = ("/var", "/opt")

_ACCESS_PARAM_KEY_RE = re.compile(r"[A-Za-z0-9_.-]+", re.ASCII)


@dataclass(frozen=True)
class Port:
    """A container port; its access params become the query string of its connect link. `name` is
    the label a person gave it ("SSH", "Web UI"); Kubernetes gets `port_kubernetes_names`'s."""

    name: str
    port: int
    protocol: Protocol = "TCP"
    access_params: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Storage:
    """Where the workspace lives (see the module's docstring). `size` None: for NEW_VOLUME the
    GPUs' share of the compute instance's storage, for EPHEMERAL no limit; `claim_name` and
    `storage_class` not for EPHEMERAL; `reclaim` only matters for NEW_VOLUME."""

    mode: StorageMode = "NEW_VOLUME"
    size: str | None = None
    reclaim: ReclaimPolicy = "RELEASE"
    # EXISTING_CLAIM: the claim it mounts; NEW_VOLUME: the name of the claim it creates (None:
    # `<service>-workspace`).
    claim_name: str | None = None
    # NEW_VOLUME only: the claim's storage class (None: the cluster's default).
    storage_class: str | None = None


@dataclass(frozen=True)
class Resources:
    """CPU and memory requests and limits; None: derived (a request from its limit and the other
    way round, both from the GPUs' share when neither is given)."""

    cpu_request: str | None = None
    cpu_limit: str | None = None
    memory_request: str | None = None
    memory_limit: str | None = None

    def given(self) -> bool:
        return any(value is not None for value in astuple(self))


@dataclass(frozen=True)
class SshAccess:
    """SSH into the service: gpupaas starts an SSH server on the port named `port` (one of the
    spec's TCP ports, by its label), beside the container's command, that lets in `user` with the
    keys of the service's owner and those added to the service (service_instances/ssh.py)."""

    port: str
    user: str = "root"


# A POSIX user name as useradd takes it (the SSH server logs into an account of the image).
_USER_RE = re.compile(r"[a-z_][a-z0-9_-]{0,31}", re.ASCII)


def ssh_port(spec: ServiceSpec) -> Port | None:
    """The port SSH access is declared on, or None (no SSH, or a port the spec does not have)."""
    if spec.ssh is None:
        return None
    wanted = spec.ssh.port.strip().casefold()
    return next((port for port in spec.ports if port.name.strip().casefold() == wanted), None)


@dataclass(frozen=True)
class ServiceSpec:
    vendor: Vendor
    image: str
    image_pull_policy: PullPolicy = "IF_NOT_PRESENT"
    command: tuple[str, ...] = ()
    container_disk: str = "15Gi"
    mount_path: str = "/workspace"
    ports: tuple[Port, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    # A partition of a GPU instead of whole GPUs: a MIG profile's resource (nvidia.com/mig-1g.10gb),
    # NVIDIA only. Whether a cluster has it is checked where the service runs (service_instances).
    gpu_partition: str | None = None
    # The name of an image pull secret of the service's project (pull_secrets), for a private image.
    image_pull_secret: str | None = None
    storage: Storage = Storage()
    resources: Resources = Resources()
    # SSH access (an SSH server gpupaas starts beside the command), or None.
    ssh: SshAccess | None = None


# ---------------------------------------------------------------------------------------- checking


def _one_of(value: str, allowed: tuple[str, ...]) -> str | None:
    if value in allowed:
        return None
    return f'must be one of {", ".join(allowed)} (not "{value}")'


def _control_char(value: str) -> str | None:
    for c in value:
        if ord(c) < 0x20 or ord(c) == 0x7F:
            return f"U+{ord(c):04X}"
    return None


def mount_path_problem(path: str) -> str | None:
    """The mount path of the workspace: an absolute, normalized directory outside the system's."""
    if not path:
        return 'must not be empty: give an absolute path like "/workspace"'
    if len(path) > MAX_MOUNT_PATH_LENGTH:
        return f"must be at most {MAX_MOUNT_PATH_LENGTH} characters (it has {len(path)})"
    bad = _control_char(path)
    if bad is not None:
        return f"must not contain control characters ({bad} found)"
    if not path.startswith("/"):
        return f'must be an absolute path starting with "/", like "/{path.lstrip("./") or "workspace"}"'
    parts = path.split("/")
    if ".." in parts:
        return 'must not contain ".." (give the directory itself, like "/workspace")'
    normalized = "/" + "/".join(part for part in parts if part not in ("", "."))
    if normalized == "/":
        return 'must not be "/": the workspace would hide the whole image; use a directory like "/workspace"'
    if normalized != path:
        return f'must be a normalized path (no "//", "/./" or "/" at the end): did you mean "{normalized}"?'
    for system_dir in _SYSTEM_DIRS:
        if path == system_dir or path.startswith(system_dir + "/"):
            return (
                f"must not be {system_dir} or a directory under it: the workspace would hide system files "
                'the container needs; use a directory like "/workspace"'
            )
    if path in _WHOLE_DIRS:
        return (
            f"must not be {path} itself: the workspace would hide the image's files there; use a "
            f'directory below it like "{path}/workspace", or "/workspace"'
        )
    return None


def _text_field(
    problems: list[tuple[Path, str]], path: Path, value: str, message: str | None, *, placeholders_ok: bool
) -> None:
    """Reports a field's problem; outside the placeholder fields a placeholder is the problem."""
    if not placeholders_ok:
        misplaced = placeholders.misplaced(value)
        if misplaced is not None:
            problems.append((path, misplaced))
            return
    if message is not None:
        problems.append((path, message))


def _check_command(spec: ServiceSpec, problems: list[tuple[Path, str]]) -> None:
    if len(spec.command) > MAX_COMMAND_ITEMS:
        problems.append(
            (("command",), f"must have at most {MAX_COMMAND_ITEMS} items (it has {len(spec.command)})")
        )
        return
    for index, item in enumerate(spec.command):
        path: Path = ("command", index)
        if not item:
            problems.append((path, "must not be empty: remove the item or give it a value"))
        elif len(item) > MAX_COMMAND_ITEM_LENGTH:
            problems.append(
                (path, f"must be at most {MAX_COMMAND_ITEM_LENGTH} characters (it has {len(item)})")
            )
        elif "\0" in item:
            problems.append((path, "must not contain a NUL character (U+0000)"))


def _check_ports(spec: ServiceSpec, problems: list[tuple[Path, str]]) -> None:
    if len(spec.ports) > MAX_PORTS:
        problems.append((("ports",), f"must have at most {MAX_PORTS} ports (it has {len(spec.ports)})"))
        return
    names: dict[str, str] = {}
    numbers: dict[tuple[int, str], str] = {}
    for index, port in enumerate(spec.ports):
        base: Path = ("ports", index)
        name_problem = port_names.label_problem(port.name)
        folded = port.name.strip().casefold()
        if name_problem is None and folded in names:
            name_problem = (
                f'duplicate port name "{port.name}" (port "{names[folded]}" has it, letter case aside): '
                "each port needs a name of its own"
            )
        _text_field(problems, (*base, "name"), port.name, name_problem, placeholders_ok=False)
        names.setdefault(folded, port.name)
        protocol_problem = _one_of(port.protocol, PROTOCOLS)
        if protocol_problem is not None:
            problems.append(((*base, "protocol"), protocol_problem))
        if isinstance(port.port, bool) or not isinstance(port.port, int) or not 1 <= port.port <= 65535:
            problems.append(((*base, "port"), f"must be a port number from 1 to 65535 (not {port.port!r})"))
        elif (port.port, port.protocol) in numbers:
            other = numbers[(port.port, port.protocol)]
            problems.append(((*base, "port"), f'{port.port}/{port.protocol} is already exposed as "{other}"'))
        else:
            numbers[(port.port, port.protocol)] = port.name
        _check_access_params(port, base, problems)


def _check_access_params(port: Port, base: Path, problems: list[tuple[Path, str]]) -> None:
    if len(port.access_params) > MAX_ACCESS_PARAMS:
        problems.append(
            (
                (*base, "accessParams"),
                f"must have at most {MAX_ACCESS_PARAMS} access params (it has {len(port.access_params)})",
            )
        )
        return
    keys: set[str] = set()
    for index, (key, value) in enumerate(port.access_params):
        path: Path = (*base, "accessParams", index)
        key_problem: str | None = None
        if not key:
            key_problem = 'must not be empty: give the query parameter\'s name, like "token"'
        elif len(key) > MAX_ACCESS_PARAM_KEY_LENGTH:
            key_problem = f"must be at most {MAX_ACCESS_PARAM_KEY_LENGTH} characters (it has {len(key)})"
        elif not _ACCESS_PARAM_KEY_RE.fullmatch(key):
            key_problem = 'must consist of letters, digits, "_", "." and "-", like "token"'
        elif key in keys:
            key_problem = f'duplicate access param "{key}"'
        keys.add(key)
        _text_field(problems, (*path, "key"), key, key_problem, placeholders_ok=False)
        if len(value) > MAX_ACCESS_PARAM_VALUE_LENGTH:
            problems.append(
                (
                    (*path, "value"),
                    f"must be at most {MAX_ACCESS_PARAM_VALUE_LENGTH} characters (it has {len(value)})",
                )
            )


def _check_env(spec: ServiceSpec, problems: list[tuple[Path, str]]) -> None:
    if len(spec.env) > MAX_ENV:
        problems.append((("env",), f"must have at most {MAX_ENV} variables (it has {len(spec.env)})"))
        return
    seen: set[str] = set()
    for index, (key, value) in enumerate(spec.env):
        key_problem = validation.env_var_name(key)
        if key_problem is None and key in seen:
            key_problem = f'duplicate variable "{key}": each variable may be set once'
        seen.add(key)
        _text_field(problems, ("env", index, "key"), key, key_problem, placeholders_ok=False)
        if len(value) > MAX_ENV_VALUE_LENGTH:
            problems.append(
                (
                    ("env", index, "value"),
                    f"must be at most {MAX_ENV_VALUE_LENGTH} characters (it has {len(value)})",
                )
            )
        elif "\0" in value:
            problems.append((("env", index, "value"), "must not contain a NUL character (U+0000)"))


def _check_storage(storage: Storage, problems: list[tuple[Path, str]]) -> None:
    mode_problem = _one_of(storage.mode, STORAGE_MODES)
    if mode_problem is not None:
        problems.append((("storage", "mode"), mode_problem))
        return
    reclaim_problem = _one_of(storage.reclaim, RECLAIM_POLICIES)
    if reclaim_problem is not None:
        problems.append((("storage", "reclaim"), reclaim_problem))
    elif storage.reclaim == "KEEP" and storage.mode != "NEW_VOLUME":
        problems.append(
            (
                ("storage", "reclaim"),
                "KEEP is for a NEW_VOLUME: an EPHEMERAL workspace goes with its pod and an existing "
                "claim is never deleted; leave it RELEASE",
            )
        )
    if storage.size is not None:
        if storage.mode == "EXISTING_CLAIM":
            problems.append(
                (("storage", "size"), "an existing claim has its own size: leave size out (null)")
            )
        else:
            _text_field(
                problems,
                ("storage", "size"),
                storage.size,
                quantities.memory_quantity(storage.size, allow_zero=False),
                placeholders_ok=False,
            )
    if storage.mode == "EXISTING_CLAIM":
        if not storage.claim_name:
            problems.append(
                (
                    ("storage", "claimName"),
                    "EXISTING_CLAIM needs the name of a PersistentVolumeClaim of the compute instance's "
                    "namespace (its volumeClaims list them)",
                )
            )
        else:
            _text_field(
                problems,
                ("storage", "claimName"),
                storage.claim_name,
                validation.dns_subdomain(storage.claim_name),
                placeholders_ok=False,
            )
    elif storage.claim_name is not None:
        if storage.mode == "EPHEMERAL":
            problems.append(
                (
                    ("storage", "claimName"),
                    "an EPHEMERAL workspace is no claim: leave claimName out (null), or choose "
                    "NEW_VOLUME or EXISTING_CLAIM",
                )
            )
        else:
            _text_field(
                problems,
                ("storage", "claimName"),
                storage.claim_name,
                validation.dns_subdomain(storage.claim_name),
                placeholders_ok=False,
            )
    if storage.storage_class is not None:
        if storage.mode != "NEW_VOLUME":
            problems.append(
                (
                    ("storage", "storageClass"),
                    f"only a NEW_VOLUME is created with a storage class (mode is {storage.mode}): "
                    "leave storageClass out (null)",
                )
            )
        else:
            _text_field(
                problems,
                ("storage", "storageClass"),
                storage.storage_class,
                validation.dns_subdomain(storage.storage_class),
                placeholders_ok=False,
            )


def _check_resources(resources: Resources, problems: list[tuple[Path, str]]) -> None:
    for key, value, check in (
        ("cpuRequest", resources.cpu_request, quantities.cpu_quantity),
        ("cpuLimit", resources.cpu_limit, quantities.cpu_quantity),
        ("memoryRequest", resources.memory_request, quantities.memory_quantity),
        ("memoryLimit", resources.memory_limit, quantities.memory_quantity),
    ):
        if value is not None:
            _text_field(
                problems, ("resources", key), value, check(value, allow_zero=False), placeholders_ok=False
            )
    reported = {path for path, _ in problems}
    for what, request, limit in (
        ("cpu", resources.cpu_request, resources.cpu_limit),
        ("memory", resources.memory_request, resources.memory_limit),
    ):
        path: Path = ("resources", f"{what}Request")
        if request is None or limit is None or path in reported or ("resources", f"{what}Limit") in reported:
            continue
        if quantities.parse_quantity(request) > quantities.parse_quantity(limit):
            problems.append((path, f"must be at most the {what} limit ({request} requested, limit {limit})"))


def _check_ssh(spec: ServiceSpec, problems: list[tuple[Path, str]]) -> None:
    if spec.ssh is None:
        return
    port = ssh_port(spec)
    names = ", ".join(f'"{p.name}"' for p in spec.ports if p.protocol == "TCP")
    if port is None:
        problems.append(
            (
                ("ssh", "port"),
                f'must be the name of one of the ports (not "{spec.ssh.port}"): '
                + (f"its TCP ports are {names}" if names else 'add a TCP port for it, like "SSH" 22'),
            )
        )
    elif port.protocol != "TCP":
        problems.append((("ssh", "port"), f'port "{port.name}" is {port.protocol}: SSH needs a TCP port'))
    elif port.access_params:
        problems.append(
            (("ssh", "port"), f'port "{port.name}" has access params, which an ssh command cannot carry')
        )
    if not _USER_RE.fullmatch(spec.ssh.user):
        problems.append(
            (
                ("ssh", "user"),
                "must be a user name of the image, like root (lowercase letters, digits, _ and -, "
                f'at most 32, not starting with a digit or -; not "{spec.ssh.user}")',
            )
        )
    if not spec.command:
        problems.append(
            (
                ("ssh", "port"),
                "SSH access needs a command: the SSH server starts beside it, and without one the "
                'image\'s own entrypoint is unknown (give one, like ["sleep", "infinity"])',
            )
        )


def check_spec(spec: ServiceSpec) -> list[tuple[Path, str]]:
    """Everything wrong with a spec, as (field path, message) pairs; empty when it is sound."""
    problems: list[tuple[Path, str]] = []
    vendor_problem = _one_of(spec.vendor, VENDORS)
    if vendor_problem is not None:
        problems.append((("vendor",), vendor_problem))
    _text_field(
        problems, ("image",), spec.image, validation.image_reference(spec.image), placeholders_ok=False
    )
    policy_problem = _one_of(spec.image_pull_policy, PULL_POLICIES)
    if policy_problem is not None:
        problems.append((("imagePullPolicy",), policy_problem))
    _check_command(spec, problems)
    _text_field(
        problems,
        ("containerDisk",),
        spec.container_disk,
        quantities.memory_quantity(spec.container_disk, allow_zero=False),
        placeholders_ok=False,
    )
    _text_field(
        problems, ("mountPath",), spec.mount_path, mount_path_problem(spec.mount_path), placeholders_ok=False
    )
    _check_ports(spec, problems)
    _check_env(spec, problems)
    if spec.image_pull_secret is not None:
        problem = validation.dns_label(spec.image_pull_secret)
        if problem is not None:
            problems.append((("imagePullSecret",), f"must be the name of an image pull secret: {problem}"))
    if spec.gpu_partition is not None:
        partition_problem = gpu_resources.partition_problem(spec.vendor, spec.gpu_partition)
        if partition_problem is not None:
            problems.append((("gpuPartition",), partition_problem))
    _check_storage(spec.storage, problems)
    _check_resources(spec.resources, problems)
    _check_ssh(spec, problems)
    reported = {path for path, _ in problems}
    problems.extend((path, message) for path, message in unknown_placeholders(spec) if path not in reported)
    return sorted(problems, key=lambda problem: _path_order(problem[0]))


_FIELD_ORDER = (
    "vendor",
    "image",
    "imagePullPolicy",
    "imagePullSecret",
    "command",
    "containerDisk",
    "mountPath",
    "ports",
    "env",
    "gpuPartition",
    "storage",
    "resources",
    "ssh",
)


def _path_order(path: Path) -> tuple[tuple[int, str], ...]:
    head, *rest = path
    first = (_FIELD_ORDER.index(str(head)) if head in _FIELD_ORDER else len(_FIELD_ORDER), "")
    return (first, *((part, "") if isinstance(part, int) else (0, part) for part in rest))


# ---------------------------------------------------------------------------------------- JSON


def port_kubernetes_names(spec: ServiceSpec) -> list[str]:
    """The Kubernetes name of each port, in order (port_names.py says how they are derived)."""
    return port_names.kubernetes_names([port.name for port in spec.ports])


def spec_to_json(spec: ServiceSpec) -> dict[str, Any]:
    """The spec in the API's shape (camelCase keys, key/value lists), which is also how it is stored."""
    return {
        "vendor": spec.vendor,
        "image": spec.image,
        "imagePullPolicy": spec.image_pull_policy,
        "command": list(spec.command),
        "containerDisk": spec.container_disk,
        "mountPath": spec.mount_path,
        "ports": [
            {
                "name": port.name,
                "port": port.port,
                "protocol": port.protocol,
                "accessParams": [{"key": key, "value": value} for key, value in port.access_params],
            }
            for port in spec.ports
        ],
        "env": [{"key": key, "value": value} for key, value in spec.env],
        "gpuPartition": spec.gpu_partition,
        "imagePullSecret": spec.image_pull_secret,
        "storage": storage_to_json(spec.storage),
        "resources": resources_to_json(spec.resources),
        "ssh": None if spec.ssh is None else {"port": spec.ssh.port, "user": spec.ssh.user},
    }


def storage_to_json(storage: Storage) -> dict[str, Any]:
    return {
        "mode": storage.mode,
        "size": storage.size,
        "reclaim": storage.reclaim,
        "claimName": storage.claim_name,
        "storageClass": storage.storage_class,
    }


def resources_to_json(resources: Resources) -> dict[str, Any]:
    return {
        "cpuRequest": resources.cpu_request,
        "cpuLimit": resources.cpu_limit,
        "memoryRequest": resources.memory_request,
        "memoryLimit": resources.memory_limit,
    }


def storage_from_json(data: Mapping[str, Any] | None, path: Path = ("storage",)) -> Storage:
    """Storage from the API's shape; null or missing fields take their defaults."""
    if data is None:
        return Storage()
    if not isinstance(data, Mapping):
        raise ValueError(f"{_where(path)}: must be an object, not {type(data).__name__}")
    return Storage(
        mode=_get(data, "mode", path, str, "NEW_VOLUME"),
        size=_get(data, "size", path, str, None) or None,
        reclaim=_get(data, "reclaim", path, str, "RELEASE"),
        claim_name=_get(data, "claimName", path, str, None) or None,
        storage_class=_get(data, "storageClass", path, str, None) or None,
    )


def resources_from_json(data: Mapping[str, Any] | None, path: Path = ("resources",)) -> Resources:
    if data is None:
        return Resources()
    if not isinstance(data, Mapping):
        raise ValueError(f"{_where(path)}: must be an object, not {type(data).__name__}")
    return Resources(
        cpu_request=_get(data, "cpuRequest", path, str, None) or None,
        cpu_limit=_get(data, "cpuLimit", path, str, None) or None,
        memory_request=_get(data, "memoryRequest", path, str, None) or None,
        memory_limit=_get(data, "memoryLimit", path, str, None) or None,
    )


def _where(path: Path) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _get(data: Mapping[str, Any], key: str, path: Path, kind: type, default: Any) -> Any:
    value = data.get(key)
    if value is None:
        if default is _REQUIRED:
            raise ValueError(f"{_where((*path, key))}: is required")
        return default
    if (isinstance(value, bool) and kind is not bool) or not isinstance(value, kind):
        raise ValueError(f"{_where((*path, key))}: must be {_KIND_NAMES[kind]}, not {type(value).__name__}")
    return value


_REQUIRED = object()
_KIND_NAMES = {str: "a string", int: "an integer", list: "a list", dict: "an object"}


def _strings(data: Mapping[str, Any], key: str, path: Path) -> tuple[str, ...]:
    items = _get(data, key, path, list, [])
    for index, item in enumerate(items):
        if not isinstance(item, str):
            raise ValueError(f"{_where((*path, key, index))}: must be a string, not {type(item).__name__}")
    return tuple(items)


def _key_values(data: Mapping[str, Any], key: str, path: Path) -> tuple[tuple[str, str], ...]:
    pairs: list[tuple[str, str]] = []
    for index, item in enumerate(_get(data, key, path, list, [])):
        where: Path = (*path, key, index)
        if not isinstance(item, dict):
            raise ValueError(f"{_where(where)}: must be an object with key and value")
        pairs.append((_get(item, "key", where, str, _REQUIRED), _get(item, "value", where, str, "")))
    return tuple(pairs)


def spec_from_json(data: Mapping[str, Any]) -> ServiceSpec:
    """A spec from the API's shape. Optional fields missing or null take their defaults.

    Raises ValueError naming the field when a value has the wrong type; the values themselves are
    `check_spec`'s business.
    """
    if not isinstance(data, Mapping):
        raise ValueError(f"a spec must be an object, not {type(data).__name__}")
    ports: list[Port] = []
    for index, item in enumerate(_get(data, "ports", (), list, [])):
        where: Path = ("ports", index)
        if not isinstance(item, dict):
            raise ValueError(f"{_where(where)}: must be an object with name, port and protocol")
        ports.append(
            Port(
                name=_get(item, "name", where, str, _REQUIRED),
                port=_get(item, "port", where, int, _REQUIRED),
                protocol=_get(item, "protocol", where, str, "TCP"),
                access_params=_key_values(item, "accessParams", where),
            )
        )
    return ServiceSpec(
        vendor=_get(data, "vendor", (), str, _REQUIRED),
        image=_get(data, "image", (), str, _REQUIRED),
        image_pull_policy=_get(data, "imagePullPolicy", (), str, "IF_NOT_PRESENT"),
        command=_strings(data, "command", ()),
        container_disk=_get(data, "containerDisk", (), str, "15Gi"),
        mount_path=_get(data, "mountPath", (), str, "/workspace"),
        ports=tuple(ports),
        env=_key_values(data, "env", ()),
        gpu_partition=_get(data, "gpuPartition", (), str, None) or None,
        image_pull_secret=_get(data, "imagePullSecret", (), str, None) or None,
        storage=storage_from_json(data.get("storage")),
        resources=resources_from_json(data.get("resources")),
        ssh=_ssh_from_json(data),
    )


def _ssh_from_json(data: Mapping[str, Any]) -> SshAccess | None:
    ssh = _get(data, "ssh", (), dict, None)
    if ssh is None:
        return None
    return SshAccess(
        port=_get(ssh, "port", ("ssh",), str, _REQUIRED), user=_get(ssh, "user", ("ssh",), str, "root")
    )


# ---------------------------------------------------------------- placeholders in a spec


def placeholder_fields(spec: ServiceSpec) -> Iterator[tuple[Path, str]]:
    """The fields placeholders are filled in, with their paths (the API's camelCase names)."""
    for index, item in enumerate(spec.command):
        yield ("command", index), item
    for index, (_, value) in enumerate(spec.env):
        yield ("env", index, "value"), value
    for index, port in enumerate(spec.ports):
        for param_index, (_, value) in enumerate(port.access_params):
            yield ("ports", index, "accessParams", param_index, "value"), value


def find_placeholders(spec: ServiceSpec) -> set[str]:
    """The names of the well-formed placeholders in the spec (known or not): {"generated_token"}."""
    return {name for _, text in placeholder_fields(spec) for name in placeholders.names_in(text)}


def unknown_placeholders(spec: ServiceSpec) -> list[tuple[Path, str]]:
    """Unknown (`{{generated_password}}`) and malformed (`{{token}}`, `{{ generated_ }}`) placeholders."""
    return [
        (path, "; ".join(problems))
        for path, text in placeholder_fields(spec)
        if (problems := placeholders.text_problems(text))
    ]


def resolve(spec: ServiceSpec, values: Mapping[str, str]) -> ServiceSpec:
    """The spec with every `{{generated_*}}` placeholder replaced by its value, the same value
    everywhere (placeholders.py says where placeholders work).

    Raises ValueError when a placeholder has no value or is malformed (check the spec first), or
    when a value itself holds placeholder syntax (which would make resolving twice differ).
    """
    placeholders.check_values(values)

    def substitute(text: str) -> str:
        return placeholders.substitute(text, values)

    return replace(
        spec,
        command=tuple(substitute(item) for item in spec.command),
        env=tuple((key, substitute(value)) for key, value in spec.env),
        ports=tuple(
            replace(port, access_params=tuple((key, substitute(value)) for key, value in port.access_params))
            for port in spec.ports
        ),
    )
