"""The Kubernetes objects of one GPU service instance, built by pure functions from its spec and its
generated values.

Up to four objects, applied in this order (`build_objects`):

1. The workspace, mounted at the spec's mount path, as its storage mode says (spec.Storage). By
   default (NEW_VOLUME) a PersistentVolumeClaim `<name>-workspace` of its own
   (`build_workspace_volume`; or the claim name and storage class its storage gives), because a
   service instance is stopped and started again: notebooks,
   checkpoints and downloaded models must survive that, and survive the pod moving to another
   node. It counts against the compute instance's `requests.storage` quota. Deleting the service
   instance deletes the claim, unless its reclaim is KEEP: the claim then carries the annotation
   `gpupaas.io/reclaim: Keep` (provisioning.plan.RECLAIM_ANNOTATION), which the drivers read on a
   delete: they leave it in the namespace without the service's labels, for another service to
   mount as an EXISTING_CLAIM. EXISTING_CLAIM mounts a claim of the namespace by name and renders
   none. EPHEMERAL is an emptyDir (gone with the pod, at every stop and restart); with a size, that
   is its sizeLimit and is added to the container's ephemeral-storage requests and limits, so
   that the scheduler and the namespace's `requests.ephemeral-storage` quota count it.
2. The generated values (`build_generated_secret`): a Secret `<name>-generated` that holds the
   values of the `{{generated_*}}` placeholders the command and env use (the JupyterLab token),
   when they use any. The container reads each from it as the env variable GPUPAAS_<NAME>
   (`secretKeyRef`), and the command and env refer to it as `$(GPUPAAS_<NAME>)`, which the kubelet
   expands: so the Deployment, which everyone who may read the namespace's workloads reads, and
   what a cluster stores of it hold no token, only the Secret does (as a cluster keeps Secrets).
   A spec given already resolved (values in place) gets no Secret. A service whose image comes from
   a private registry also gets `<name>-registry` (`build_registry_secret`), of type
   kubernetes.io/dockerconfigjson, from its project's image pull secret, which the pod names in
   `imagePullSecrets`.
3. The workload: a Deployment with one replica (`build_workload`), not a bare Pod. A bare Pod is
   gone for good when its node is drained or it is evicted; a Deployment makes a new one. Stop is
   `replicas: 0` and start is `replicas: 1`, which keeps the object, its Service and the node ports
   the connect links show. Strategy Recreate: the old pod must let go of the GPUs (the namespace's
   quota has exactly the instance's GPUs) and of the ReadWriteOnce workspace before the new one
   starts. progressDeadlineSeconds is an hour, because pulling a 10+ GB CUDA image and loading a
   model take longer than the default 10 minutes, which the driver would report as a failure.
4. The Service (`build_service`): type NodePort by default, so that the connect links (access
   address + node port) reach it from outside the cluster; None when the spec has no ports.

The container: the spec's image and pull policy (ALWAYS -> Always, IF_NOT_PRESENT -> IfNotPresent,
NEVER -> Never), its command as `command` (exec form; the image's entrypoint when empty), its env
and ports, working directory = the mount path, the container disk as `ephemeral-storage` requests
and limits, the GPUs as the vendor's extended resource in requests and limits (none for CPU), and
optional CPU and memory (requests = limits: the namespace's quota limits both, and its LimitRange
default of 1Gi of memory would otherwise kill a model server). Besides:

- /dev/shm is a memory-backed emptyDir: the container runtime's default 64 MiB breaks PyTorch data
  loaders and vLLM's tensor parallelism (their docs say `--ipc=host` or `--shm-size`). It counts
  against the container's memory.
- enableServiceLinks is off: Kubernetes would otherwise set `<SERVICE>_PORT=tcp://...` variables
  for every Service of the namespace, and vLLM reads VLLM_PORT (a Service named "vllm" breaks it).
- automountServiceAccountToken is off: a notebook has no business with the Kubernetes API.
- fsGroup 100 ("users") with OnRootMismatch: images that run as a non-root user (the Jupyter
  Docker Stacks' jovyan is in group 100) can write to a fresh workspace; root images are unaffected.
- A TCP readiness probe on a port where something listens, so that the instance is RUNNING only
  once its server answers (vLLM opens its port after loading the model): the first TCP port that is
  not an SSH port, unless the command only waits (`sleep infinity`, `tail -f /dev/null`: nothing of
  the image listens then); else the port of the SSH server gpupaas starts; else none. An SSH-looking
  port without SSH access declared is never probed: nothing is known to listen there. No liveness
  probe: a slow start must not be killed.

SSH access (`spec.ssh`, with `ssh`: the tools image, the authorized_keys and the host key), which
needs nothing from the image:

- An init container from the tools image (GPUPAAS_SSH_IMAGE, infra/container/ssh-tools.Containerfile)
  copies a static dropbear and busybox into an emptyDir, mounted at /gpupaas-ssh.
- A Secret `<name>-ssh` holds `authorized_keys` (the owner's keys and those added to the service)
  and `ssh_host_ed25519_key` (the service's host key, kept encrypted in the database so that it is
  the same after every restart), mounted read-only at /gpupaas-ssh-keys.
- The command is wrapped: busybox's sh links the user's ~/.ssh/authorized_keys (the home from the
  image's /etc/passwd) to the Secret's file, converts the host key, starts dropbear on the SSH port
  (keys only, `-w` when the user is not root) in the background and execs the user's command, which
  keeps its arguments (and the kubelet's `$(VAR)` expansion). The Secret volume is updated in place
  when the keys change (the kubelet swaps its files) and dropbear reads authorized_keys at every
  login: a key change reaches a running pod without a restart, and the pod template never carries
  the keys, so applying new keys rolls out nothing.
- No GPUs requested: NVIDIA_VISIBLE_DEVICES=void (unless the spec sets it). On nodes whose default
  runtime is NVIDIA's, an NVIDIA image (which sets NVIDIA_VISIBLE_DEVICES=all) would otherwise see
  every GPU of the node without the scheduler knowing; "void" makes the runtime behave like runc.

Vendors: the extended resource (`gpu_resource_name`, see provisioning.plan.GPU_RESOURCE_NAMES:
nvidia.com/gpu, amd.com/gpu, gpu.intel.com/i915, huawei.com/Ascend910) is all a pod needs: the
device plugin mounts the devices, and the ExtendedResourceToleration admission plugin (where the
cluster enables it) tolerates the GPU nodes' taints. No node selector: requesting the resource
already restricts scheduling to nodes that have it. Ascend nodes need the Ascend Docker Runtime
(MindX DL) to mount the driver into the container; we add no hostPath mounts.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, Literal

from gpupaas.core import quantities, validation
from gpupaas.instance_templates import placeholders
from gpupaas.instance_templates.spec import Port, ServiceSpec, port_kubernetes_names, ssh_port
from gpupaas.provisioning.plan import (
    COMPUTE_INSTANCE_LABEL,
    MANAGED_BY,
    RECLAIM_ANNOTATION,
    RECLAIM_KEEP,
    SERVICE_LABEL,
)
from gpupaas.service_instances.connect import is_ssh_port

__all__ = [
    "CONTAINER_NAME",
    "DEFAULT_WORKSPACE_SIZE",
    "NAME_LABEL",
    "PROGRESS_DEADLINE_SECONDS",
    "PULL_POLICIES",
    "RESTART_ANNOTATION",
    "SERVICE_LABEL",
    "SSH_HOST_KEY_FILE",
    "SSH_KEYS_FILE",
    "SshSetup",
    "build_generated_secret",
    "build_objects",
    "build_service",
    "build_ssh_secret",
    "build_workload",
    "build_workspace_volume",
    "generated_env_name",
    "generated_secret_name",
    "identity_labels",
    "probe_port",
    "service_name",
    "ssh_secret_name",
    "workspace_claim_name",
]

NAME_LABEL = "app.kubernetes.io/name"
CONTAINER_NAME = "main"
DEFAULT_WORKSPACE_SIZE = "20Gi"
PROGRESS_DEADLINE_SECONDS = 3600
# On the pod template: a new value rolls out a new pod (what `kubectl rollout restart` does).
RESTART_ANNOTATION = "gpupaas.io/restarted-by"
WORKSPACE_VOLUME = "workspace"
SHM_VOLUME = "dshm"
# The "users" group: the Jupyter Docker Stacks' user is in it, root images do not care.
FS_GROUP = 100

PULL_POLICIES: dict[str, str] = {"ALWAYS": "Always", "IF_NOT_PRESENT": "IfNotPresent", "NEVER": "Never"}

ServiceType = Literal["ClusterIP", "NodePort"]

# SSH access: the tools (an emptyDir the init container fills) and the keys (the Secret).
SSH_TOOLS_VOLUME = "gpupaas-ssh"
SSH_TOOLS_DIR = "/gpupaas-ssh"
SSH_KEYS_VOLUME = "gpupaas-ssh-keys"
SSH_KEYS_DIR = "/gpupaas-ssh-keys"
SSH_INIT_CONTAINER = "gpupaas-ssh"
# Where the tools image keeps them (infra/container/ssh-tools.Containerfile).
SSH_IMAGE_DIR = "/opt/gpupaas-ssh"
SSH_KEYS_FILE = "authorized_keys"
SSH_HOST_KEY_FILE = "ssh_host_ed25519_key"

_NO_LABELS: Mapping[str, str] = MappingProxyType({})
_NO_VALUES: Mapping[str, str] = MappingProxyType({})
_DNS_1035_LABEL = re.compile(validation.DNS_1035_LABEL_PATTERN, re.ASCII)


# ---------------------------------------------------------------------------------------- names


def workspace_claim_name(name: str, claim_name: str | None = None) -> str:
    """The PersistentVolumeClaim of the workspace: ``<name>-workspace``, or the name its storage
    gives (`claim_name`, a NEW_VOLUME's)."""
    return claim_name or f"{name}-workspace"


def service_name(name: str) -> str:
    """The Service's name: `name` when it is a DNS-1035 label (Services must start with a letter),
    else ``svc-<name>``, shortened with a hash of the name when that is longer than 63 characters."""
    if _DNS_1035_LABEL.fullmatch(name) and len(name) <= 63:
        return name
    prefixed = f"svc-{name}"
    if len(prefixed) <= 63:
        return prefixed
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"svc-{name[:50].rstrip('-')}-{digest}"


def generated_secret_name(name: str) -> str:
    """The Secret of the generated values: ``<name>-generated``."""
    return f"{name}-generated"


def generated_env_name(placeholder: str) -> str:
    """The container's env variable of a generated value: generated_token -> GPUPAAS_GENERATED_TOKEN."""
    return f"GPUPAAS_{placeholder.upper()}"


def identity_labels(
    *, name: str, instance_id: str, compute_instance_id: str, labels: Mapping[str, str] = _NO_LABELS
) -> dict[str, str]:
    """The labels of every object of the service instance; `labels` cannot override these."""
    return {
        **labels,
        MANAGED_BY: "gpupaas",
        COMPUTE_INSTANCE_LABEL: compute_instance_id,
        SERVICE_LABEL: instance_id,
        NAME_LABEL: name,
    }


def _check_identity(name: str, namespace: str, instance_id: str, compute_instance_id: str) -> None:
    checks = (
        ("name", name, validation.dns_label(name)),
        ("namespace", namespace, validation.dns_label(namespace)),
        (
            "instance_id",
            instance_id,
            validation.label_value(instance_id) if instance_id else "must not be empty",
        ),
        (
            "compute_instance_id",
            compute_instance_id,
            validation.label_value(compute_instance_id) if compute_instance_id else "must not be empty",
        ),
    )
    for what, value, problem in checks:
        if problem is not None:
            raise ValueError(f"{what} {value!r} {problem}")


def _metadata(name: str, namespace: str, labels: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": dict(labels)}


# ---------------------------------------------------------------------------------------- workspace


def build_workspace_volume(
    *,
    name: str,
    namespace: str,
    instance_id: str,
    compute_instance_id: str,
    size: str = DEFAULT_WORKSPACE_SIZE,
    storage_class: str | None = None,
    labels: Mapping[str, str] = _NO_LABELS,
    keep: bool = False,
    claim_name: str | None = None,
) -> dict[str, Any]:
    """The workspace's PersistentVolumeClaim (ReadWriteOnce; the cluster's default storage class
    unless `storage_class` names one), named `claim_name` or `<name>-workspace`; `keep`: left in
    the namespace when the service is deleted."""
    _check_identity(name, namespace, instance_id, compute_instance_id)
    problem = quantities.memory_quantity(size, allow_zero=False)
    if problem is not None:
        raise ValueError(f"workspace size {size!r} {problem}")
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": size}},
    }
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    if claim_name is not None and (problem := validation.dns_subdomain(claim_name)) is not None:
        raise ValueError(f"claim name {claim_name!r} {problem}")
    metadata = _metadata(
        workspace_claim_name(name, claim_name),
        namespace,
        identity_labels(
            name=name, instance_id=instance_id, compute_instance_id=compute_instance_id, labels=labels
        ),
    )
    if keep:
        metadata["annotations"] = {RECLAIM_ANNOTATION: RECLAIM_KEEP}
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": metadata, "spec": spec}


# ---------------------------------------------------------------------------------------- generated values


def _pod_placeholders(spec: ServiceSpec) -> list[str]:
    """The placeholders the pod itself uses (command and env; access params stay with the links)."""
    texts = [*spec.command, *(value for _, value in spec.env)]
    return sorted({name for text in texts for name in placeholders.names_in(text)})


def _referring(spec: ServiceSpec, generated: Mapping[str, str]) -> tuple[ServiceSpec, list[str]]:
    """The spec with each placeholder of its command and env replaced by a reference to its env
    variable, and the placeholders replaced. Raises ValueError for one without a value."""
    used = _pod_placeholders(spec)
    missing = [name for name in used if name not in generated]
    if missing:
        raise ValueError(
            f"the spec still has placeholders ({', '.join(missing)}) without a generated value: "
            "resolve it first, or give their values"
        )
    references = {name: f"$({generated_env_name(name)})" for name in used}
    for key, _ in spec.env:
        if key in {generated_env_name(name) for name in used}:
            raise ValueError(f"env {key} is where gpupaas puts a generated value: name it otherwise")
    referring = replace(
        spec,
        command=tuple(placeholders.substitute(item, references) for item in spec.command),
        env=tuple((key, placeholders.substitute(value, references)) for key, value in spec.env),
    )
    return referring, used


def registry_secret_name(name: str) -> str:
    """The Secret of the service's image pull credentials."""
    return f"{name}-registry"


def docker_config(registry: str, username: str, password: str) -> str:
    """A `.dockerconfigjson` as `kubectl create secret docker-registry` writes it."""
    auth = base64.b64encode(f"{username}:{password}".encode()).decode()
    entry = {"username": username, "password": password, "auth": auth}
    return json.dumps({"auths": {registry: entry}}, sort_keys=True, separators=(",", ":"))


def build_registry_secret(
    *,
    name: str,
    namespace: str,
    instance_id: str,
    compute_instance_id: str,
    registry: tuple[str, str, str],
    labels: Mapping[str, str] = _NO_LABELS,
) -> dict[str, Any]:
    """The Secret of type kubernetes.io/dockerconfigjson that the pod pulls its image with, from
    the project's image pull secret (registry, user, password)."""
    _check_identity(name, namespace, instance_id, compute_instance_id)
    config = docker_config(*registry)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _metadata(
            registry_secret_name(name),
            namespace,
            identity_labels(
                name=name, instance_id=instance_id, compute_instance_id=compute_instance_id, labels=labels
            ),
        ),
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": base64.b64encode(config.encode()).decode()},
    }


def build_generated_secret(
    *,
    name: str,
    namespace: str,
    instance_id: str,
    compute_instance_id: str,
    values: Mapping[str, str],
    labels: Mapping[str, str] = _NO_LABELS,
) -> dict[str, Any]:
    """The Secret of the generated values (placeholder name -> value), as `data` (base64): what the
    API server keeps of a Secret either way."""
    _check_identity(name, namespace, instance_id, compute_instance_id)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _metadata(
            generated_secret_name(name),
            namespace,
            identity_labels(
                name=name, instance_id=instance_id, compute_instance_id=compute_instance_id, labels=labels
            ),
        ),
        "type": "Opaque",
        "data": {key: base64.b64encode(value.encode()).decode() for key, value in sorted(values.items())},
    }


# ---------------------------------------------------------------------------------------- SSH


@dataclass(frozen=True)
class SshSetup:
    """What SSH access needs besides the spec: the tools image, the authorized_keys file's content
    and the host key (an OpenSSH private key, PEM)."""

    image: str
    authorized_keys: str
    host_key: str


def ssh_secret_name(name: str) -> str:
    """The Secret of the SSH server's keys: ``<name>-ssh``."""
    return f"{name}-ssh"


def build_ssh_secret(
    *,
    name: str,
    namespace: str,
    instance_id: str,
    compute_instance_id: str,
    ssh: SshSetup,
    labels: Mapping[str, str] = _NO_LABELS,
) -> dict[str, Any]:
    """The Secret `<name>-ssh`: authorized_keys and the host key (base64 `data`)."""
    _check_identity(name, namespace, instance_id, compute_instance_id)
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": _metadata(
            ssh_secret_name(name),
            namespace,
            identity_labels(
                name=name, instance_id=instance_id, compute_instance_id=compute_instance_id, labels=labels
            ),
        ),
        "type": "Opaque",
        "data": {
            SSH_KEYS_FILE: base64.b64encode(ssh.authorized_keys.encode()).decode(),
            SSH_HOST_KEY_FILE: base64.b64encode(ssh.host_key.encode()).decode(),
        },
    }


def _ssh_script(port: int, user: str) -> str:
    """The shell script (busybox sh, from the tools) that starts dropbear and then execs "$@", the
    user's command. `user` passed check_spec (a plain user name) and `port` is a number: both are
    safe inside the script."""
    busybox = f"{SSH_TOOLS_DIR}/bin/busybox"
    keys = f"{SSH_KEYS_DIR}/{SSH_KEYS_FILE}"
    no_root = " -w" if user != "root" else ""
    return "\n".join(
        (
            f"B={busybox}",
            f"home=$($B awk -F: '$1 == \"{user}\" {{ print $6; exit }}' /etc/passwd)",
            'if [ -z "$home" ]; then',
            f'  echo "gpupaas: the image has no user {user} (/etc/passwd): no SSH server" >&2',
            "else",
            '  $B mkdir -p "$home/.ssh" && $B chmod 700 "$home/.ssh"',
            f'  [ "$($B id -u)" = 0 ] && $B chown {user} "$home/.ssh"',
            f'  $B ln -sfn {keys} "$home/.ssh/authorized_keys"',
            f"  {SSH_TOOLS_DIR}/bin/dropbearconvert openssh dropbear {SSH_KEYS_DIR}/{SSH_HOST_KEY_FILE} "
            f"{SSH_TOOLS_DIR}/host_key >/dev/null 2>&1",
            f"  {SSH_TOOLS_DIR}/bin/dropbear -F -E -s{no_root} -p {port} -r {SSH_TOOLS_DIR}/host_key &",
            "fi",
            'exec "$@"',
        )
    )


def ssh_command(spec: ServiceSpec) -> list[str]:
    """The container's command with the SSH server started beside it (spec.ssh must be set and
    checked: a TCP port, a command)."""
    port = ssh_port(spec)
    if spec.ssh is None or port is None or not spec.command:
        raise ValueError("SSH access needs a declared SSH port and a command")
    # The kubelet expands $(NAME) in a command; $$( is how a literal $( is written.
    script = _ssh_script(port.port, spec.ssh.user).replace("$(", "$$(")
    return [f"{SSH_TOOLS_DIR}/bin/busybox", "sh", "-c", script, "gpupaas-ssh", *spec.command]


def _ssh_init_container(image: str) -> dict[str, Any]:
    return {
        "name": SSH_INIT_CONTAINER,
        "image": image,
        "imagePullPolicy": "IfNotPresent",
        "command": [f"{SSH_IMAGE_DIR}/bin/busybox", "cp", "-a", f"{SSH_IMAGE_DIR}/.", f"{SSH_TOOLS_DIR}/"],
        "volumeMounts": [{"name": SSH_TOOLS_VOLUME, "mountPath": SSH_TOOLS_DIR}],
        "resources": {
            "requests": {"cpu": "10m", "memory": "16Mi", "ephemeral-storage": "16Mi"},
            "limits": {"cpu": "100m", "memory": "64Mi", "ephemeral-storage": "16Mi"},
        },
    }


_IDLE_COMMANDS = (("sleep", "infinity"), ("tail", "-f", "/dev/null"))
_SHELLS = ("sh", "bash", "/bin/sh", "/bin/bash", "/usr/bin/bash")


def only_waits(command: tuple[str, ...]) -> bool:
    """Whether the command only keeps the container alive (`sleep infinity`, `tail -f /dev/null`,
    also through `sh -c`): then nothing of the image listens on its ports."""
    if command in _IDLE_COMMANDS:
        return True
    if len(command) == 3 and command[0] in _SHELLS and command[1] == "-c":
        return tuple(command[2].split()) in _IDLE_COMMANDS
    return False


def probe_port(spec: ServiceSpec) -> Port | None:
    """The port the readiness probe knocks at: one where something listens (module docstring)."""
    declared = ssh_port(spec) if spec.ssh is not None else None
    if not only_waits(spec.command):
        for port in spec.ports:
            if port.protocol == "TCP" and port is not declared and not is_ssh_port(port):
                return port
    return declared if declared is not None and declared.protocol == "TCP" else None


# ---------------------------------------------------------------------------------------- workload


def _add_sizes(first: str, second: str) -> str:
    """Two sizes added, in bytes as a quantity ("15Gi" + "10Gi" -> "26843545600")."""
    for value in (first, second):
        problem = quantities.memory_quantity(value, allow_zero=False)
        if problem is not None:
            raise ValueError(f"size {value!r} {problem}")
    total = quantities.parse_quantity(first) + quantities.parse_quantity(second)
    for suffix, power in (("Ti", 4), ("Gi", 3), ("Mi", 2), ("Ki", 1)):
        if total % 1024**power == 0:
            return f"{int(total // 1024**power)}{suffix}"
    return str(int(total))


def _workspace_volume(spec: ServiceSpec, name: str) -> dict[str, Any]:
    """The pod's workspace volume, as the spec's storage mode says."""
    storage = spec.storage
    if storage.mode == "EPHEMERAL":
        return {"name": WORKSPACE_VOLUME, "emptyDir": {"sizeLimit": storage.size} if storage.size else {}}
    if storage.mode == "EXISTING_CLAIM":
        if not storage.claim_name:
            raise ValueError("an EXISTING_CLAIM workspace needs the claim's name")
        return {"name": WORKSPACE_VOLUME, "persistentVolumeClaim": {"claimName": storage.claim_name}}
    return {
        "name": WORKSPACE_VOLUME,
        "persistentVolumeClaim": {"claimName": workspace_claim_name(name, storage.claim_name)},
    }


def _container(
    spec: ServiceSpec,
    *,
    gpu_count: int,
    gpu_resource_name: str,
    cpu: str | None,
    memory: str | None,
    cpu_limit: str | None,
    memory_limit: str | None,
    scratch: str | None,
    generated: list[dict[str, Any]],
    ssh: bool,
) -> dict[str, Any]:
    # The generated values first: the kubelet expands $(NAME) only from variables defined before.
    env = [*generated, *({"name": key, "value": value} for key, value in spec.env)]
    if gpu_count == 0 and all(key != "NVIDIA_VISIBLE_DEVICES" for key, _ in spec.env):
        env.append({"name": "NVIDIA_VISIBLE_DEVICES", "value": "void"})
    disk = spec.container_disk if scratch is None else _add_sizes(spec.container_disk, scratch)
    resources: dict[str, str] = {"ephemeral-storage": disk}
    limits: dict[str, str] = {"ephemeral-storage": disk}
    for key, request, limit in (("cpu", cpu, cpu_limit), ("memory", memory, memory_limit)):
        if request is not None or limit is not None:
            resources[key] = request if request is not None else str(limit)
            limits[key] = limit if limit is not None else str(request)
    if gpu_count > 0:
        resources[gpu_resource_name] = str(gpu_count)
        limits[gpu_resource_name] = str(gpu_count)
    container: dict[str, Any] = {
        "name": CONTAINER_NAME,
        "image": spec.image,
        "imagePullPolicy": PULL_POLICIES[spec.image_pull_policy],
    }
    if ssh:
        container["command"] = ssh_command(spec)
    elif spec.command:
        container["command"] = list(spec.command)
    container["workingDir"] = spec.mount_path
    if env:
        container["env"] = env
    if spec.ports:
        container["ports"] = [
            {"name": k8s_name, "containerPort": port.port, "protocol": port.protocol}
            for port, k8s_name in zip(spec.ports, port_kubernetes_names(spec), strict=True)
        ]
    container["resources"] = {"requests": resources, "limits": limits}
    container["volumeMounts"] = [
        {"name": WORKSPACE_VOLUME, "mountPath": spec.mount_path},
        {"name": SHM_VOLUME, "mountPath": "/dev/shm"},  # noqa: S108  # the container's own tmpfs
    ]
    if ssh:
        container["volumeMounts"] += [
            {"name": SSH_TOOLS_VOLUME, "mountPath": SSH_TOOLS_DIR},
            {"name": SSH_KEYS_VOLUME, "mountPath": SSH_KEYS_DIR, "readOnly": True},
        ]
    tcp = probe_port(spec)
    if tcp is not None:
        container["readinessProbe"] = {
            "tcpSocket": {"port": tcp.port},
            "periodSeconds": 5,
            "failureThreshold": 3,
        }
    return container


def build_workload(
    *,
    spec: ServiceSpec,
    name: str,
    namespace: str,
    instance_id: str,
    compute_instance_id: str,
    gpu_count: int,
    gpu_resource_name: str,
    labels: Mapping[str, str] = _NO_LABELS,
    replicas: int = 1,
    cpu: str | None = None,
    memory: str | None = None,
    restart: str | None = None,
    generated: Mapping[str, str] = _NO_VALUES,
    pulls_with_secret: bool = False,
    cpu_limit: str | None = None,
    memory_limit: str | None = None,
    ssh_image: str | None = None,
) -> dict[str, Any]:
    """The service instance's Deployment: one replica when running, `replicas=0` when stopped.
    `restart` (the restart's id) on the pod template replaces the running pod with a new one.

    Each placeholder of the command and env must have its value in `generated` (they are read from
    the Secret `build_generated_secret` makes), or the spec be resolved; `gpu_count` GPUs of
    `gpu_resource_name` for a GPU vendor, 0 for CPU. A spec with SSH access needs `ssh_image` (the
    tools' image) and its pod mounts the Secret `build_ssh_secret` makes. Raises ValueError for
    arguments that cannot make a valid Deployment.
    """
    _check_identity(name, namespace, instance_id, compute_instance_id)
    spec, used = _referring(spec, generated)
    secret = generated_secret_name(name)
    generated_env = [
        {"name": generated_env_name(key), "valueFrom": {"secretKeyRef": {"name": secret, "key": key}}}
        for key in used
    ]
    if isinstance(gpu_count, bool) or not isinstance(gpu_count, int) or gpu_count < 0:
        raise ValueError(f"gpu_count must be a whole number of GPUs, 0 or more (not {gpu_count!r})")
    if spec.vendor == "CPU" and gpu_count:
        raise ValueError(f"a CPU service cannot request GPUs (gpu_count {gpu_count})")
    if gpu_count and validation.label_key(gpu_resource_name) is not None:
        raise ValueError(
            f"gpu_resource_name {gpu_resource_name!r} is not a resource name like nvidia.com/gpu"
        )
    if replicas not in (0, 1):
        raise ValueError(f"replicas must be 1 (running) or 0 (stopped), not {replicas!r}")
    for what, value, check in (
        ("cpu", cpu, quantities.cpu_quantity),
        ("memory", memory, quantities.memory_quantity),
        ("cpu_limit", cpu_limit, quantities.cpu_quantity),
        ("memory_limit", memory_limit, quantities.memory_quantity),
    ):
        if value is not None and (problem := check(value, allow_zero=False)) is not None:
            raise ValueError(f"{what} {value!r} {problem}")
    all_labels = identity_labels(
        name=name, instance_id=instance_id, compute_instance_id=compute_instance_id, labels=labels
    )
    template_metadata: dict[str, Any] = {"labels": dict(all_labels)}
    if restart:
        problem = validation.label_value(restart)
        if problem is not None:
            raise ValueError(f"restart {restart!r} {problem}")
        template_metadata["annotations"] = {RESTART_ANNOTATION: restart}
    with_ssh = spec.ssh is not None
    if with_ssh:
        if not ssh_image:
            raise ValueError("the spec has SSH access: give the SSH tools' image (GPUPAAS_SSH_IMAGE)")
        problem = validation.image_reference(ssh_image)
        if problem is not None:
            raise ValueError(f"the SSH tools' image {ssh_image!r} {problem}")
    pod_spec: dict[str, Any] = {
        "containers": [
            _container(
                spec,
                gpu_count=gpu_count,
                gpu_resource_name=gpu_resource_name,
                cpu=cpu,
                memory=memory,
                cpu_limit=cpu_limit,
                memory_limit=memory_limit,
                scratch=spec.storage.size if spec.storage.mode == "EPHEMERAL" else None,
                generated=generated_env,
                ssh=with_ssh,
            )
        ],
        "volumes": [
            _workspace_volume(spec, name),
            {"name": SHM_VOLUME, "emptyDir": {"medium": "Memory"}},
        ],
        "restartPolicy": "Always",
        "enableServiceLinks": False,
        "automountServiceAccountToken": False,
        "securityContext": {"fsGroup": FS_GROUP, "fsGroupChangePolicy": "OnRootMismatch"},
    }
    if with_ssh:
        assert ssh_image is not None  # checked above
        pod_spec["initContainers"] = [_ssh_init_container(ssh_image)]
        pod_spec["volumes"] += [
            {"name": SSH_TOOLS_VOLUME, "emptyDir": {"sizeLimit": "64Mi"}},
            {
                "name": SSH_KEYS_VOLUME,
                "secret": {
                    "secretName": ssh_secret_name(name),
                    "items": [
                        # Public keys: readable by whichever user the SSH server checks them as.
                        {"key": SSH_KEYS_FILE, "path": SSH_KEYS_FILE, "mode": 0o444},
                        {"key": SSH_HOST_KEY_FILE, "path": SSH_HOST_KEY_FILE, "mode": 0o440},
                    ],
                },
            },
        ]
    if pulls_with_secret:
        pod_spec["imagePullSecrets"] = [{"name": registry_secret_name(name)}]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(name, namespace, all_labels),
        "spec": {
            "replicas": replicas,
            "strategy": {"type": "Recreate"},
            "revisionHistoryLimit": 2,
            "progressDeadlineSeconds": PROGRESS_DEADLINE_SECONDS,
            "selector": {"matchLabels": {SERVICE_LABEL: instance_id}},
            "template": {"metadata": template_metadata, "spec": pod_spec},
        },
    }


# ---------------------------------------------------------------------------------------- service


def build_service(
    *,
    spec: ServiceSpec,
    name: str,
    namespace: str,
    instance_id: str,
    compute_instance_id: str,
    labels: Mapping[str, str] = _NO_LABELS,
    service_type: ServiceType = "NodePort",
) -> dict[str, Any] | None:
    """The Service exposing the spec's ports (None when it has none). NodePort by default: the
    connect links use the node ports; ClusterIP for clusters that expose services otherwise."""
    _check_identity(name, namespace, instance_id, compute_instance_id)
    if service_type not in ("ClusterIP", "NodePort"):
        raise ValueError(f"service_type must be ClusterIP or NodePort, not {service_type!r}")
    if not spec.ports:
        return None
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(
            service_name(name),
            namespace,
            identity_labels(
                name=name, instance_id=instance_id, compute_instance_id=compute_instance_id, labels=labels
            ),
        ),
        "spec": {
            "type": service_type,
            "selector": {SERVICE_LABEL: instance_id},
            "ports": [
                {"name": k8s_name, "port": port.port, "targetPort": port.port, "protocol": port.protocol}
                for port, k8s_name in zip(spec.ports, port_kubernetes_names(spec), strict=True)
            ],
        },
    }


def build_objects(
    *,
    spec: ServiceSpec,
    name: str,
    namespace: str,
    instance_id: str,
    compute_instance_id: str,
    gpu_count: int,
    gpu_resource_name: str,
    labels: Mapping[str, str] = _NO_LABELS,
    replicas: int = 1,
    cpu: str | None = None,
    memory: str | None = None,
    restart: str | None = None,
    workspace_size: str = DEFAULT_WORKSPACE_SIZE,
    storage_class: str | None = None,
    service_type: ServiceType = "NodePort",
    generated: Mapping[str, str] = _NO_VALUES,
    registry: tuple[str, str, str] | None = None,
    cpu_limit: str | None = None,
    memory_limit: str | None = None,
    ssh: SshSetup | None = None,
) -> list[dict[str, Any]]:
    """Every object of the service instance in apply order: workspace claim (a NEW_VOLUME's), the
    Secret of the generated values its command and env use (if they use any), the Secret of its image pull
    credentials (`registry`: registry, user, password; if it has any), the Secret of its SSH
    server's keys (`ssh`, which a spec with SSH access needs), Deployment, Service."""
    if spec.ssh is not None and ssh is None:
        raise ValueError("the spec has SSH access: give its SSH setup (image, keys, host key)")
    workload = build_workload(
        spec=spec,
        name=name,
        namespace=namespace,
        instance_id=instance_id,
        compute_instance_id=compute_instance_id,
        gpu_count=gpu_count,
        gpu_resource_name=gpu_resource_name,
        labels=labels,
        replicas=replicas,
        cpu=cpu,
        memory=memory,
        restart=restart,
        generated=generated,
        pulls_with_secret=registry is not None,
        cpu_limit=cpu_limit,
        memory_limit=memory_limit,
        ssh_image=ssh.image if ssh is not None and spec.ssh is not None else None,
    )
    claims = (
        [
            build_workspace_volume(
                name=name,
                namespace=namespace,
                instance_id=instance_id,
                compute_instance_id=compute_instance_id,
                size=spec.storage.size or workspace_size,
                storage_class=spec.storage.storage_class or storage_class,
                labels=labels,
                keep=spec.storage.reclaim == "KEEP",
                claim_name=spec.storage.claim_name,
            )
        ]
        if spec.storage.mode == "NEW_VOLUME"
        else []
    )
    service = build_service(
        spec=spec,
        name=name,
        namespace=namespace,
        instance_id=instance_id,
        compute_instance_id=compute_instance_id,
        labels=labels,
        service_type=service_type,
    )
    used = _pod_placeholders(spec)
    secrets = (
        [
            build_generated_secret(
                name=name,
                namespace=namespace,
                instance_id=instance_id,
                compute_instance_id=compute_instance_id,
                values={key: generated[key] for key in used},
                labels=labels,
            )
        ]
        if used
        else []
    )
    if registry is not None:
        secrets.append(
            build_registry_secret(
                name=name,
                namespace=namespace,
                instance_id=instance_id,
                compute_instance_id=compute_instance_id,
                registry=registry,
                labels=labels,
            )
        )
    if ssh is not None and spec.ssh is not None:
        secrets.append(
            build_ssh_secret(
                name=name,
                namespace=namespace,
                instance_id=instance_id,
                compute_instance_id=compute_instance_id,
                ssh=ssh,
                labels=labels,
            )
        )
    return [*claims, *secrets, workload] if service is None else [*claims, *secrets, workload, service]
