"""What should answer at simulated services' Connect links (the simulated driver's endpoints,
provisioning/drivers/simulated/endpoints.py, serve it): for every RUNNING service instance of a
SIMULATED cluster, each web port's node port, with the access params its link carries. A stopped
service's endpoint closes; starting it again opens it with the same token. The port a service
declares SSH access on gets an SSH server with the service's host key, user and authorized keys
(ssh_material.py), which follow its key changes. `ready_endpoints`: a service's endpoints from the
outputs of the apply that starts it, opened before it turns RUNNING."""

from __future__ import annotations

import uuid
from collections.abc import Mapping

from gpupaas.clusters.models import Cluster
from gpupaas.core import crypto
from gpupaas.instance_templates.spec import port_kubernetes_names, ssh_port
from gpupaas.provisioning.drivers.simulated.endpoints import AnyEndpoint, Endpoint, SshServerEndpoint
from gpupaas.provisioning.plan import Plan
from gpupaas.provisioning.registry import ClusterDriver
from gpupaas.service_instances.connect import is_web_port
from gpupaas.service_instances.models import ServiceInstance
from gpupaas.service_instances.plan import node_ports_of
from gpupaas.service_instances.service import resolved_spec
from gpupaas.service_instances.ssh_material import authorized_keys, host_key_of
from gpupaas.service_instances.states import ServiceStatus


async def wanted_endpoints(secret_key: str) -> dict[int, AnyEndpoint]:
    """Node port -> endpoint, for every web port of every RUNNING service on a simulated cluster."""
    services = await ServiceInstance.filter(status=ServiceStatus.RUNNING).select_related("compute_instance")
    if not services:
        return {}
    clusters = {cluster.id: cluster for cluster in await Cluster.all()}
    default = next((c for c in clusters.values() if c.is_default), None)
    wanted: dict[int, AnyEndpoint] = {}
    for service in services:
        cluster_id = service.compute_instance.profile_snapshot.cluster_id
        cluster = clusters.get(uuid.UUID(cluster_id)) if cluster_id else default
        if cluster is None or cluster.driver != ClusterDriver.SIMULATED:
            continue
        wanted.update(await _endpoints(secret_key, service, service.node_ports))
    return wanted


async def _endpoints(
    secret_key: str, service: ServiceInstance, node_ports: Mapping[str, int]
) -> dict[int, AnyEndpoint]:
    try:
        spec = resolved_spec(secret_key, service)
        host_key = host_key_of(secret_key, service) if spec.ssh is not None else None
    except (crypto.DecryptionError, ValueError):
        return {}
    declared = ssh_port(spec)
    endpoints: dict[int, AnyEndpoint] = {}
    for port, k8s_name in zip(spec.ports, port_kubernetes_names(spec), strict=True):
        node_port = node_ports.get(k8s_name)
        if node_port is None:
            continue
        if port is declared and spec.ssh is not None and host_key is not None:
            endpoints[node_port] = SshServerEndpoint(
                service=service.display_name,
                image=spec.image,
                port=port.name,
                user=spec.ssh.user,
                host_key=host_key,
                authorized_keys=await authorized_keys(service),
            )
        elif is_web_port(port):
            endpoints[node_port] = Endpoint(service.display_name, spec.image, port.name, port.access_params)
    return endpoints


async def ready_endpoints(secret_key: str, plan: Plan, outputs: Mapping[str, str]) -> dict[int, AnyEndpoint]:
    """The endpoints of the service that `plan` starts, at the node ports its apply gave."""
    service = await ServiceInstance.get_or_none(id=plan.instance_id)
    if service is None:
        return {}
    return await _endpoints(secret_key, service, node_ports_of(outputs))
