"""The plan of one GPU service instance's run, built by a pure function, as compute instances' plans
are: a redelivered command builds the same plan, and the drivers need nothing else.

The objects (service_instances.podspec) go into the compute instance's namespace and are found by the
service's own label (`owner_label` gpupaas.io/service), so that applying, watching and deleting
them never touches the compute instance's objects or another service's. `within` names the
compute instance: a driver admits no capacity for the service, only its compute instance's quota.

Resources (sizing.py). The GPUs are the service's `gpu_count` of the vendor's (and GPU model's)
resource, or of its partition's (`spec.gpu_partition`, a MIG profile: each device its share of a GPU
in what follows). CPU and memory follow the GPUs: a service with n of its compute instance's N GPUs
gets n/N of the instance's CPU and memory (requests = limits), so that one service on a one-GPU
instance has all of it and the instance's quota still fits every GPU service it can hold. A service
without GPUs sets none and gets the namespace's LimitRange defaults. The workspace claim gets the
same share of the instance's storage (all of the default 20Gi, or less when the instance has less,
without GPUs). What the spec gives itself (its CPU and memory requests and limits, its workspace's
size) is taken as it is.

Placement: the plan carries its compute instance's allocation (DEDICATED or SHARED) and GPU model,
so that the kubernetes driver puts the service's pod where the instance's GPUs are (the model's
nodes, the cluster's dedicated nodes for a DEDICATED instance).

Outputs: `nodePort.<port name>` for each port, read from the Service as the cluster filled it in.

Failure injection for the simulated cluster (tests and demos): the compute instance's annotation
`simulated.gpupaas.io/service-fail` (or `service-fail-times`) becomes `simulated.gpupaas.io/fail`
(`fail-times`) on its services' plans; see drivers/simulated/failures.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpupaas.core import gpu_resources
from gpupaas.instance_templates.spec import ServiceSpec, port_kubernetes_names
from gpupaas.provisioning.plan import SERVICE_LABEL, Plan, namespace_for
from gpupaas.provisioning.render.rendering import OutputDefinition, RenderContext
from gpupaas.service_instances.podspec import SshSetup, build_objects
from gpupaas.service_instances.sizing import service_resources, size_service

__all__ = ["NODE_PORT_OUTPUT", "build_service_plan", "node_ports_of", "service_resources"]

NODE_PORT_OUTPUT = "nodePort."
_SIMULATED = "simulated.gpupaas.io/"
_SERVICE_PREFIX = _SIMULATED + "service-"


def simulated_annotations(annotations: Mapping[str, str]) -> dict[str, str]:
    """The compute instance's `simulated.gpupaas.io/service-*` annotations, for its services."""
    return {
        _SIMULATED + key.removeprefix(_SERVICE_PREFIX): value
        for key, value in annotations.items()
        if key.startswith(_SERVICE_PREFIX)
    }


def build_service_plan(
    *,
    service_id: str,
    name: str,
    spec: ServiceSpec,
    gpu_count: int,
    compute_id: str,
    compute_name: str,
    project: str,
    compute_resources: Mapping[str, Any],
    profile_name: str,
    gpu_resource_names: Mapping[str, str] | None = None,
    allocation: str = "SHARED",
    running: bool = True,
    restart: str | None = None,
    annotations: Mapping[str, str] | None = None,
    generated: Mapping[str, str] | None = None,
    registry: tuple[str, str, str] | None = None,
    ssh: SshSetup | None = None,
) -> Plan:
    """The plan of a service instance: running (one replica, `restart` to replace the pod) or
        stopped (zero replicas), placed as its compute instance (`allocation`, the GPU model of
        `compute_resources`). The values of the placeholders of `spec`'s command and env are in
        `generated` (the pod reads them from a Secret: podspec.py), or `spec` is resolved. `registry`
    (registry, user, password): the credentials of the spec's image pull secret; `ssh`: the SSH
    setup a spec with SSH access needs (tools image, authorized_keys, host key). Raises
        ValueError for what cannot make valid objects (a spec that passed check_spec, its values and a
        checked gpu_count always can)."""
    gpu_model = compute_resources.get("gpuModel") or None
    # A partition is its own resource (nvidia.com/mig-1g.10gb); whole GPUs are the vendor's and model's.
    resource_name = spec.gpu_partition or gpu_resources.resource_name(
        spec.vendor, gpu_model, gpu_resource_names
    )
    namespace = namespace_for(project, compute_name, compute_id)
    sizing = size_service(compute_resources, gpu_count, spec)
    cpu, memory, workspace = sizing.cpu_request, sizing.memory_request, sizing.workspace
    manifests = build_objects(
        spec=spec,
        name=name,
        namespace=namespace,
        instance_id=service_id,
        compute_instance_id=compute_id,
        gpu_count=gpu_count,
        gpu_resource_name=resource_name,
        replicas=1 if running else 0,
        cpu=cpu,
        memory=memory,
        cpu_limit=sizing.cpu_limit,
        memory_limit=sizing.memory_limit,
        restart=restart if running else None,
        workspace_size=workspace,
        generated=generated or {},
        registry=registry,
        ssh=ssh,
    )
    outputs = tuple(
        OutputDefinition(
            name=NODE_PORT_OUTPUT + k8s_name,
            description=f"The node port of port {port.name}",
            value=f"{{{{ objects.Service.spec.ports.{index}.nodePort }}}}",
        )
        for index, (port, k8s_name) in enumerate(zip(spec.ports, port_kubernetes_names(spec), strict=True))
    )
    context = RenderContext(
        inputs={},
        instance_name=name,
        instance_namespace=namespace,
        instance_id=service_id,
        profile_name=profile_name,
        cpu=cpu or "0",
        memory=memory or "0",
        storage=workspace,
        gpu_count=gpu_count,
        gpu_vendor=spec.vendor,
        gpu_model=gpu_model,
        gpu_resource_name=resource_name,
    )
    return Plan(
        instance_id=service_id,
        instance_name=name,
        project=project,
        namespace=namespace,
        allocation=allocation,
        cpu=cpu or "0",
        memory=memory or "0",
        storage=workspace,
        gpu_count=gpu_count,
        gpu_vendor=spec.vendor,
        gpu_model=gpu_model,
        gpu_resource_name=resource_name,
        manifests=tuple(manifests),
        outputs=outputs,
        context=context,
        annotations=simulated_annotations(annotations or {}),
        owner_label=SERVICE_LABEL,
        within=compute_id,
    )


def node_ports_of(outputs: Mapping[str, str]) -> dict[str, int]:
    """The node ports, by the ports' Kubernetes names, from an apply's outputs (ports without one
    are left out)."""
    ports: dict[str, int] = {}
    for key, value in outputs.items():
        if key.startswith(NODE_PORT_OUTPUT) and value.isdigit():
            ports[key.removeprefix(NODE_PORT_OUTPUT)] = int(value)
    return ports
