"""GPUStack's instance-template catalog format, read and written (pure functions, no database).

The format (GPUStack's `gpu-instance-templates.yaml` and the templates of its API) is a YAML
document with `items:`, each a template:

```yaml
items:
  - name: pytorch-2-6            # a DNS label, unique in the file
    displayName: PyTorch 2.6
    description: ...
    manufacturer: nvidia          # cpu | nvidia | amd | intel | ascend
    spec:
      image: nvcr.io/nvidia/pytorch:24.12-py3
      imagePullPolicy: IfNotPresent   # Always | IfNotPresent | Never
      command: [jupyter, lab, "--ServerApp.token={{generated_token}}"]
      ports:
        - {name: JUPYTER, port: 8888, protocol: TCP, accessParams: {token: "{{generated_token}}"}}
      env: [{name: HF_HOME, value: /workspace/hf}]
      resources: {localStorage: 15Gi}
      volumeMount: /workspace
```

`parse_catalog` reads a whole file into one `Entry` per item: the template it describes, or the
problems that refuse it (as GPUStack paths, `items[3].spec.ports[0].port`, with a message), so that
one bad template does not stop the others. Fields gpupaas cannot honour (yet) are refused by name
(`UNSUPPORTED`), never dropped: a template imported is a template that runs as its file says.

SSH: GPUStack's templates say it with a port (`{name: SSH, port: 22}`) beside a command that keeps
the container up (`tail -f /dev/null`); its `sshPublicKeys` are refused (keys belong to people and
services). A template with a command and a TCP port named for SSH (or port 22) gets SSH access on
the first such port, as root (`ssh: {port, user}`): gpupaas then starts the SSH server GPUStack's
image never did. `x-gpupaas: {ssh: ...}` says otherwise: another port or user, or `null` for none.

Everything of a gpupaas template that GPUStack's format cannot say goes under the item's
`x-gpupaas` key (GPUStack ignores keys it does not know), so that `export_catalog` followed by
`parse_catalog` gives the same templates back. `gpustack_path` turns the API's field paths (what
the template service reports) into the file's.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml

from gpupaas.core import gpu_resources, yaml_limits
from gpupaas.instance_templates.port_names import kubernetes_name
from gpupaas.instance_templates.spec import Port, Resources, ServiceSpec, SshAccess, Storage

__all__ = [
    "EXTENSION_KEY",
    "MAX_TEMPLATES",
    "MAX_YAML_BYTES",
    "UNSUPPORTED",
    "CatalogError",
    "Entry",
    "Template",
    "export_catalog",
    "gpustack_path",
    "parse_catalog",
]

MAX_YAML_BYTES = 1024 * 1024
MAX_TEMPLATES = 500
EXTENSION_KEY = "x-gpupaas"

# GPUStack's manufacturer -> gpupaas's vendor.
_MANUFACTURERS = {"cpu": "CPU", "nvidia": "NVIDIA", "amd": "AMD", "intel": "INTEL", "ascend": "ASCEND"}
_VENDOR_MANUFACTURER = {vendor: manufacturer for manufacturer, vendor in _MANUFACTURERS.items()}
_PULL_POLICIES = {"Always": "ALWAYS", "IfNotPresent": "IF_NOT_PRESENT", "Never": "NEVER"}
_POLICY_NAMES = {policy: name for name, policy in _PULL_POLICIES.items()}

_ITEM_KEYS = ("name", "displayName", "description", "manufacturer", "spec", EXTENSION_KEY)
_SPEC_KEYS = (
    "image",
    "imagePullPolicy",
    "command",
    "ports",
    "env",
    "resources",
    "volumeMount",
    "imagePullSecret",
    "volume",
    "sshPublicKeys",
)
_PORT_KEYS = ("name", "port", "protocol", "accessParams")
_ENV_KEYS = ("name", "value")
_RESOURCE_KEYS = (
    "cpu",
    "ram",
    "localStorage",
    "accelerator",
    "acceleratorSlicedMemoryPercentage",
    "acceleratorSlicedCoresPercentage",
    "acceleratorPartitionedProfile",
)
# gpupaas's own settings GPUStack's format cannot say: CPU and memory requests that differ from
# their limits (GPUStack's `cpu` and `ram` are one amount each), and SSH access that its ports alone
# would not say.
_EXTENSION_KEYS: tuple[str, ...] = ("resources", "ssh")
_EXTENSION_RESOURCE_KEYS = ("cpuRequest", "cpuLimit", "memoryRequest", "memoryLimit")
_SSH_KEYS = ("port", "user")
# GPUStack's `volume`: one of these, each a mapping.
_VOLUME_KINDS = ("ephemeral", "persistent", "persistentTemplate")

# GPUStack's fields that gpupaas cannot honour yet, and why: refused by name, never dropped.
UNSUPPORTED: dict[str, str] = {
    "spec.resources.accelerator": (
        "a gpupaas template does not fix a GPU count: each service chooses it when it is launched "
        "(gpuCount, 1 by default); remove the field"
    ),
    "spec.resources.acceleratorSlicedMemoryPercentage": (
        "gpupaas does not slice GPUs by memory percentage; remove the field"
    ),
    "spec.resources.acceleratorSlicedCoresPercentage": (
        "gpupaas does not slice GPUs by compute percentage; remove the field"
    ),
    "spec.sshPublicKeys": (
        "SSH public keys are not part of a template: they belong to people (addSshPublicKey) and "
        "services (addServiceInstanceSshKey); remove the field (the SSH port gives SSH access)"
    ),
}


class CatalogError(ValueError):
    """The whole file cannot be read (not YAML, too large, no list of templates)."""


@dataclass(frozen=True)
class Template:
    name: str
    display_name: str | None
    description: str | None
    spec: ServiceSpec


@dataclass(frozen=True)
class Entry:
    """One item of the file: its template, or the problems (GPUStack path, message) refusing it."""

    index: int
    name: str | None
    template: Template | None
    problems: tuple[tuple[str, str], ...] = ()


# ---------------------------------------------------------------------------------------- reading


class _Refused(Exception):
    def __init__(self, problems: list[tuple[str, str]]) -> None:
        super().__init__(problems)
        self.problems = problems


def _kind(value: object) -> str:
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


class _Reader:
    """Reads one item, gathering every problem with its path."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.problems: list[tuple[str, str]] = []

    def where(self, path: str) -> str:
        return f"{self.base}.{path}" if path else self.base

    def add(self, path: str, message: str) -> None:
        self.problems.append((self.where(path), message))

    def keys(self, data: Mapping[Any, Any], allowed: Sequence[str], path: str) -> None:
        for key in data:
            if key in allowed:
                continue
            field = f"{path}.{key}" if path else str(key)
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f' (did you mean "{close[0]}"?)' if close else ""
            self.add(
                field,
                f"is not a field of GPUStack's template format{hint}; the fields are {', '.join(allowed)}",
            )

    def text(self, data: Mapping[str, Any], key: str, path: str, *, required: bool = False) -> str | None:
        value = data.get(key)
        field = f"{path}.{key}" if path else key
        if value is None:
            if required:
                self.add(field, "is required")
            return None
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            self.add(field, f"must be text, not {_kind(value)}")
            return None
        # YAML reads `15` or `1.0` as numbers; GPUStack's fields are text: take them as written.
        return value if isinstance(value, str) else str(value)

    def mapping(self, data: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
        value = data.get(key)
        field = f"{path}.{key}" if path else key
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.add(field, f"must be a mapping, not {_kind(value)}")
            return {}
        return value

    def items(self, data: Mapping[str, Any], key: str, path: str) -> list[Any]:
        value = data.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.add(f"{path}.{key}", f"must be a list, not {_kind(value)}")
            return []
        return value


def _ports(reader: _Reader, spec: Mapping[str, Any]) -> tuple[Port, ...]:
    ports: list[Port] = []
    for index, item in enumerate(reader.items(spec, "ports", "spec")):
        path = f"spec.ports[{index}]"
        if not isinstance(item, dict):
            reader.add(path, f"must be a mapping with port, name and protocol, not {_kind(item)}")
            continue
        reader.keys(item, _PORT_KEYS, path)
        number = item.get("port")
        if number is None:
            reader.add(f"{path}.port", "is required: the port number inside the container, like 8888")
            continue
        if isinstance(number, bool) or not isinstance(number, int):
            reader.add(f"{path}.port", f"must be a port number from 1 to 65535, not {_kind(number)}")
            continue
        protocol = reader.text(item, "protocol", path) or "TCP"
        # GPUStack's name is optional; a gpupaas port needs one: the protocol and number say it.
        name = reader.text(item, "name", path) or f"{protocol.lower()}-{number}"
        params: list[tuple[str, str]] = []
        access = reader.mapping(item, "accessParams", path)
        for key, value in access.items():
            if not isinstance(key, str):
                reader.add(f"{path}.accessParams", f"keys must be text, not {_kind(key)} ({key!r})")
            elif isinstance(value, bool) or not isinstance(value, (str, int, float)):
                reader.add(f"{path}.accessParams.{key}", f"must be text, not {_kind(value)}")
            else:
                params.append((key, value if isinstance(value, str) else str(value)))
        ports.append(Port(name=name, port=number, protocol=protocol, access_params=tuple(params)))  # type: ignore[arg-type]
    return tuple(ports)


def _env(reader: _Reader, spec: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    env: list[tuple[str, str]] = []
    for index, item in enumerate(reader.items(spec, "env", "spec")):
        path = f"spec.env[{index}]"
        if not isinstance(item, dict):
            reader.add(path, f"must be a mapping with name and value, not {_kind(item)}")
            continue
        reader.keys(item, _ENV_KEYS, path)
        name = reader.text(item, "name", path, required=True)
        value = reader.text(item, "value", path, required=True)
        if name is not None and value is not None:
            env.append((name, value))
    return tuple(env)


def _command(reader: _Reader, spec: Mapping[str, Any]) -> tuple[str, ...]:
    command: list[str] = []
    for index, item in enumerate(reader.items(spec, "command", "spec")):
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            reader.add(f"spec.command[{index}]", f"must be text, not {_kind(item)}")
        else:
            command.append(item if isinstance(item, str) else str(item))
    return tuple(command)


def _unsupported(reader: _Reader, spec: Mapping[str, Any], resources: Mapping[str, Any]) -> None:
    for key in ("sshPublicKeys",):
        if spec.get(key) not in (None, [], {}):
            reader.add(f"spec.{key}", UNSUPPORTED[f"spec.{key}"])
    for key in _RESOURCE_KEYS:
        if key not in _READ_RESOURCES and resources.get(key) is not None:
            reader.add(f"spec.resources.{key}", UNSUPPORTED[f"spec.resources.{key}"])


# The resources gpupaas reads: CPU and memory, the container disk, and a MIG profile ("1g.10gb")
# as the partition.
_READ_RESOURCES = ("cpu", "ram", "localStorage", "acceleratorPartitionedProfile")


def _resources(reader: _Reader, resources: Mapping[str, Any], extension: Mapping[str, Any]) -> Resources:
    """GPUStack's `cpu` and `ram` (one amount each: the container's request and limit), with
    gpupaas's own requests and limits from `x-gpupaas.resources` over them."""
    cpu = reader.text(resources, "cpu", "spec.resources")
    ram = reader.text(resources, "ram", "spec.resources")
    own = reader.mapping(extension, "resources", EXTENSION_KEY)
    reader.keys(own, _EXTENSION_RESOURCE_KEYS, f"{EXTENSION_KEY}.resources")
    given = {key: reader.text(own, key, f"{EXTENSION_KEY}.resources") for key in _EXTENSION_RESOURCE_KEYS}
    return Resources(
        cpu_request=given["cpuRequest"] or (cpu if "cpuLimit" not in own else None),
        cpu_limit=given["cpuLimit"] or (cpu if "cpuRequest" not in own else None),
        memory_request=given["memoryRequest"] or (ram if "memoryLimit" not in own else None),
        memory_limit=given["memoryLimit"] or (ram if "memoryRequest" not in own else None),
    )


def _volume(reader: _Reader, spec: Mapping[str, Any]) -> Storage:
    """GPUStack's `volume` (its GPUInstanceVolume), one of: `ephemeral: {capacity}` (EPHEMERAL; no
    capacity: no size limit), `persistent: {name}` (a volume that exists: EXISTING_CLAIM of the
    claim of that name in the compute instance's namespace), or `persistentTemplate: {name, spec:
    {type, capacity}, releaseWithInstance}` (a volume made with the service: NEW_VOLUME, the claim
    named `name`, of storage class `type`, released on delete unless releaseWithInstance is false,
    when it is kept). No volume: a new volume of the GPUs' share, released on delete."""
    volume = reader.mapping(spec, "volume", "spec")
    if not volume:
        return Storage()
    reader.keys(volume, _VOLUME_KINDS, "spec.volume")
    kinds = [kind for kind in _VOLUME_KINDS if volume.get(kind) is not None]
    if len(kinds) != 1:
        if kinds:
            reader.add(
                "spec.volume", f"must give one of {', '.join(_VOLUME_KINDS)}, not {' and '.join(kinds)}"
            )
        return Storage()
    kind = kinds[0]
    path = f"spec.volume.{kind}"
    body = reader.mapping(volume, kind, "spec.volume")
    if kind == "ephemeral":
        reader.keys(body, ("capacity",), path)
        return Storage(mode="EPHEMERAL", size=reader.text(body, "capacity", path))
    if kind == "persistent":
        reader.keys(body, ("name",), path)
        return Storage(mode="EXISTING_CLAIM", claim_name=reader.text(body, "name", path, required=True))
    reader.keys(body, ("name", "spec", "releaseWithInstance"), path)
    volume_spec = reader.mapping(body, "spec", path)
    reader.keys(volume_spec, ("type", "capacity"), f"{path}.spec")
    release = body.get("releaseWithInstance", True)
    if not isinstance(release, bool):
        reader.add(f"{path}.releaseWithInstance", f"must be true or false, not {_kind(release)}")
        release = True
    return Storage(
        mode="NEW_VOLUME",
        size=reader.text(volume_spec, "capacity", f"{path}.spec"),
        reclaim="RELEASE" if release else "KEEP",
        claim_name=reader.text(body, "name", path),
        storage_class=reader.text(volume_spec, "type", f"{path}.spec"),
    )


_PROFILE = re.compile(r"(?:nvidia\.com/)?(?:mig-)?([0-9]+g\.[0-9]+gb)")


def _partition(reader: _Reader, resources: Mapping[str, Any]) -> str | None:
    """GPUStack's partition profile ("1g.10gb") as gpupaas's resource (nvidia.com/mig-1g.10gb); a
    value of another shape is kept as written, for the template's checks to name."""
    profile = reader.text(resources, "acceleratorPartitionedProfile", "spec.resources")
    if not profile:
        return None
    match = _PROFILE.fullmatch(profile.strip())
    return f"nvidia.com/mig-{match.group(1)}" if match else profile


def _pull_secret(reader: _Reader, spec: Mapping[str, Any]) -> str | None:
    """GPUStack's `imagePullSecret: {name: ...}` (or just the name): a secret of the project that
    imports it (which the template's checks look for)."""
    value = spec.get("imagePullSecret")
    if value is None or value in ("", {}):
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        name = reader.text(value, "name", "spec.imagePullSecret", required=True)
        for key in value:
            if key != "name":
                reader.add(
                    f"spec.imagePullSecret.{key}",
                    "is not read: a template names one of the project's image pull secrets by name "
                    "(createImagePullSecret keeps the registry, user and password)",
                )
        return name
    reader.add("spec.imagePullSecret", f"must be a mapping with the secret's name, not {_kind(value)}")
    return None


def _derived_ssh(ports: Sequence[Port], command: Sequence[str]) -> SshAccess | None:
    """The SSH access a GPUStack template means: its first TCP port named for SSH (or port 22), as
    root, when it has a command for the SSH server to start beside."""
    if not command:
        return None
    for port in ports:
        if port.protocol == "TCP" and ("ssh" in kubernetes_name(port.name).split("-") or port.port == 22):
            return SshAccess(port=port.name, user="root")
    return None


def _ssh(
    reader: _Reader, extension: Mapping[str, Any], ports: Sequence[Port], command: Sequence[str]
) -> SshAccess | None:
    """`x-gpupaas: {ssh: {port, user}}` (or `ssh: null`: none) when given, else what GPUStack's ports mean."""
    if "ssh" not in extension:
        return _derived_ssh(ports, command)
    value = extension["ssh"]
    if value is None:
        return None
    path = f"{EXTENSION_KEY}.ssh"
    if not isinstance(value, dict):
        reader.add(path, f"must be a mapping with port and user, or null for none, not {_kind(value)}")
        return None
    reader.keys(value, _SSH_KEYS, path)
    port = reader.text(value, "port", path, required=True)
    user = reader.text(value, "user", path) or "root"
    return SshAccess(port=port, user=user) if port is not None else None


def _read_item(index: int, item: object) -> Entry:
    reader = _Reader(f"items[{index}]")
    if not isinstance(item, dict):
        reader.add("", f"must be a mapping (a template with name, manufacturer and spec), not {_kind(item)}")
        return Entry(index, None, None, tuple(reader.problems))
    reader.keys(item, _ITEM_KEYS, "")
    name = reader.text(item, "name", "", required=True)
    display_name = reader.text(item, "displayName", "")
    description = reader.text(item, "description", "")
    manufacturer = reader.text(item, "manufacturer", "") or "cpu"
    vendor = _MANUFACTURERS.get(manufacturer.lower())
    if vendor is None:
        reader.add(
            "manufacturer",
            f'gpupaas runs {", ".join(_MANUFACTURERS)} templates, not "{manufacturer}"',
        )
    spec = reader.mapping(item, "spec", "")
    if "spec" not in item:
        reader.add("spec", "is required: the template's image, command, ports...")
    reader.keys(spec, _SPEC_KEYS, "spec")
    image = reader.text(spec, "image", "spec", required=True)
    policy_name = reader.text(spec, "imagePullPolicy", "spec") or "IfNotPresent"
    policy = _PULL_POLICIES.get(policy_name)
    if policy is None:
        reader.add(
            "spec.imagePullPolicy", f'must be one of {", ".join(_PULL_POLICIES)} (not "{policy_name}")'
        )
    resources = reader.mapping(spec, "resources", "spec")
    reader.keys(resources, _RESOURCE_KEYS, "spec.resources")
    _unsupported(reader, spec, resources)
    extension = reader.mapping(item, EXTENSION_KEY, "")
    reader.keys(extension, _EXTENSION_KEYS, EXTENSION_KEY)
    command = _command(reader, spec)
    ports = _ports(reader, spec)
    service_spec = ServiceSpec(
        vendor=vendor or "CPU",  # type: ignore[arg-type]
        image=image or "",
        image_pull_policy=policy or "IF_NOT_PRESENT",  # type: ignore[arg-type]
        command=command,
        container_disk=reader.text(resources, "localStorage", "spec.resources") or "15Gi",
        mount_path=reader.text(spec, "volumeMount", "spec") or "/workspace",
        ports=ports,
        env=_env(reader, spec),
        gpu_partition=_partition(reader, resources),
        image_pull_secret=_pull_secret(reader, spec),
        storage=_volume(reader, spec),
        resources=_resources(reader, resources, extension),
        ssh=_ssh(reader, extension, ports, command),
    )
    if reader.problems:
        return Entry(index, name, None, tuple(reader.problems))
    assert name is not None
    return Entry(index, name, Template(name, display_name, description, service_spec))


def _items_of(document: object) -> list[Any]:
    if isinstance(document, dict) and "items" in document:
        items = document["items"]
        if not isinstance(items, list):
            raise CatalogError(f"items: must be a list of templates, not {_kind(items)}")
        return items
    if isinstance(document, list):
        return document
    if isinstance(document, dict) and "spec" in document:
        return [document]  # one template on its own
    raise CatalogError(
        "the file must hold GPUStack's templates: a mapping with `items:` (a list of templates), "
        f"or a list of templates; this one holds {_kind(document)}"
    )


def parse_catalog(text: str) -> list[Entry]:
    """Every item of a GPUStack catalog file, in order. Raises CatalogError when the file as a
    whole cannot be read; a bad item is refused in its Entry, the others are read."""
    size = len(text.encode())
    if size > MAX_YAML_BYTES:
        raise CatalogError(f"the file is {size} bytes: at most {MAX_YAML_BYTES} bytes (1 MiB) are read")
    try:
        document = yaml_limits.safe_load(text)
    except yaml.YAMLError as error:
        raise CatalogError(f"not valid YAML: {error}") from None
    items = _items_of(document)
    if len(items) > MAX_TEMPLATES:
        raise CatalogError(f"the file holds {len(items)} templates: at most {MAX_TEMPLATES} are read at once")
    entries: list[Entry] = []
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        entry = _read_item(index, item)
        if entry.name is not None and entry.name in first:
            entry = Entry(
                index,
                entry.name,
                None,
                (
                    (
                        f"items[{index}].name",
                        f'items[{first[entry.name]}] has the name "{entry.name}" too: '
                        "each template of a file needs a name of its own",
                    ),
                ),
            )
        elif entry.name is not None:
            first[entry.name] = index
        entries.append(entry)
    return entries


# ------------------------------------------------------------------------------- error paths


_FIELD_PATHS = {
    "name": "name",
    "displayName": "displayName",
    "description": "description",
    "vendor": "manufacturer",
    "image": "spec.image",
    "imagePullPolicy": "spec.imagePullPolicy",
    "command": "spec.command",
    "containerDisk": "spec.resources.localStorage",
    "mountPath": "spec.volumeMount",
    "ports": "spec.ports",
    "env": "spec.env",
    "gpuPartition": "spec.resources.acceleratorPartitionedProfile",
    "imagePullSecret": "spec.imagePullSecret.name",
    "ssh": f"{EXTENSION_KEY}.ssh",
}
_STORAGE_PATHS = {
    ("EPHEMERAL", "size"): "spec.volume.ephemeral.capacity",
    ("NEW_VOLUME", "size"): "spec.volume.persistentTemplate.spec.capacity",
    ("NEW_VOLUME", "reclaim"): "spec.volume.persistentTemplate.releaseWithInstance",
    ("NEW_VOLUME", "claimName"): "spec.volume.persistentTemplate.name",
    ("NEW_VOLUME", "storageClass"): "spec.volume.persistentTemplate.spec.type",
    ("EXISTING_CLAIM", "claimName"): "spec.volume.persistent.name",
}


def gpustack_path(index: int, field: Sequence[str] | None, spec: ServiceSpec) -> str:
    """The file's path of a field the template service reported: ("input", "ports", "0", "name")
    -> "items[3].spec.ports[0].name"; ("input", "env", "1", "key") -> "items[3].spec.env[1].name"."""
    base = f"items[{index}]"
    parts = [part for part in (field or ()) if part != "input"]
    if not parts:
        return base
    head, *rest = parts
    if head == "storage":
        return f"{base}.{_STORAGE_PATHS.get((spec.storage.mode, rest[0] if rest else ''), 'spec.volume')}"
    if head == "resources" and rest:
        resources = spec.resources
        cpu_alike = resources.cpu_request == resources.cpu_limit
        memory_alike = resources.memory_request == resources.memory_limit
        if rest[0].startswith("cpu") and cpu_alike:
            return f"{base}.spec.resources.cpu"
        if rest[0].startswith("memory") and memory_alike:
            return f"{base}.spec.resources.ram"
        return f"{base}.{EXTENSION_KEY}.resources.{rest[0]}"
    path = f"{base}.{_FIELD_PATHS.get(head, head)}"
    if head == "command" and rest:
        return f"{path}[{rest[0]}]"
    if head == "env" and rest:
        path += f"[{rest[0]}]"
        return path + (".name" if rest[1:] == ["key"] else f".{rest[1]}" if len(rest) > 1 else "")
    if head == "ports" and rest:
        path += f"[{rest[0]}]"
        if len(rest) >= 3 and rest[1] == "accessParams" and rest[0].isdigit() and rest[2].isdigit():
            port, param = int(rest[0]), int(rest[2])
            if port < len(spec.ports) and param < len(spec.ports[port].access_params):
                return f"{path}.accessParams.{spec.ports[port].access_params[param][0]}"
            return f"{path}.accessParams"
        return path + "".join(f".{part}" for part in rest[1:])
    return path + "".join(f".{part}" for part in rest)


# ---------------------------------------------------------------------------------------- writing


def template_item(template: Template) -> dict[str, Any]:
    """One template as an item of GPUStack's format."""
    spec = template.spec
    body: dict[str, Any] = {
        "image": spec.image,
        "imagePullPolicy": _POLICY_NAMES[spec.image_pull_policy],
    }
    if spec.command:
        body["command"] = list(spec.command)
    if spec.ports:
        ports = []
        for port in spec.ports:
            written: dict[str, Any] = {"name": port.name, "port": port.port, "protocol": port.protocol}
            if port.access_params:
                written["accessParams"] = dict(port.access_params)
            ports.append(written)
        body["ports"] = ports
    if spec.env:
        body["env"] = [{"name": key, "value": value} for key, value in spec.env]
    body["resources"] = {"localStorage": spec.container_disk}
    if spec.gpu_partition is not None:
        partition = gpu_resources.parse_partition(spec.gpu_partition)
        body["resources"]["acceleratorPartitionedProfile"] = (
            partition.profile if partition else spec.gpu_partition
        )
    extension: dict[str, Any] = {}
    resources = spec.resources
    own: dict[str, str] = {}
    for gpustack_key, request_key, limit_key, request, limit in (
        ("cpu", "cpuRequest", "cpuLimit", resources.cpu_request, resources.cpu_limit),
        ("ram", "memoryRequest", "memoryLimit", resources.memory_request, resources.memory_limit),
    ):
        if request is not None and request == limit:
            body["resources"][gpustack_key] = request
        else:
            own.update({key: value for key, value in ((request_key, request), (limit_key, limit)) if value})
    if own:
        extension["resources"] = own
    body["volumeMount"] = spec.mount_path
    volume = _volume_item(spec.storage)
    if volume is not None:
        body["volume"] = volume
    if spec.image_pull_secret is not None:
        body["imagePullSecret"] = {"name": spec.image_pull_secret}
    item: dict[str, Any] = {"name": template.name}
    if template.display_name is not None:
        item["displayName"] = template.display_name
    if template.description:
        item["description"] = template.description
    item["manufacturer"] = _VENDOR_MANUFACTURER[spec.vendor]
    item["spec"] = body
    if spec.ssh != _derived_ssh(spec.ports, spec.command):
        # What the ports alone would not say: SSH on another port or user, or none at all.
        extension["ssh"] = None if spec.ssh is None else {"port": spec.ssh.port, "user": spec.ssh.user}
    if extension:
        item[EXTENSION_KEY] = extension
    return item


def _volume_item(storage: Storage) -> dict[str, Any] | None:
    """The storage as GPUStack's `volume` (None: the default, which GPUStack writes as no volume)."""
    if storage == Storage():
        return None
    if storage.mode == "EPHEMERAL":
        return {"ephemeral": {"capacity": storage.size} if storage.size else {}}
    if storage.mode == "EXISTING_CLAIM":
        return {"persistent": {"name": storage.claim_name}}
    template: dict[str, Any] = {}
    if storage.claim_name:
        template["name"] = storage.claim_name
    volume_spec = {
        key: value for key, value in (("type", storage.storage_class), ("capacity", storage.size)) if value
    }
    if volume_spec:
        template["spec"] = volume_spec
    template["releaseWithInstance"] = storage.reclaim == "RELEASE"
    return {"persistentTemplate": template}


def export_catalog(templates: Sequence[Template]) -> str:
    """The templates as a GPUStack catalog file (what `parse_catalog` reads back the same)."""
    document = {"items": [template_item(template) for template in templates]}
    return yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=100)
