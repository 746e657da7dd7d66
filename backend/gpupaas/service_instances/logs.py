"""A GPU service instance's container logs and Kubernetes events, read by the API process through
the driver of its cluster (compute/cluster_reads.py), read only.

Who: the events, those who see the service instance (its project's members, but another member's
when members do not see each other's; never another project). The logs, only those who manage it
(its owner and the project's admins), as for its connect links' access params: a container's log
is where servers print their tokens (JupyterLab prints its URL with `?token=`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from gpupaas.compute.cluster_reads import (
    DriverFor,
    check_container,
    check_tail,
    driver_of,
    namespace_of,
    readable,
)
from gpupaas.compute.models import ComputeInstance
from gpupaas.core.actor import Actor
from gpupaas.core.errors import Forbidden, NotFound
from gpupaas.provisioning.drivers.base import ClusterEvent, EventQuery, LogLine, LogQuery, Owner
from gpupaas.provisioning.plan import SERVICE_LABEL
from gpupaas.service_instances import service as services
from gpupaas.service_instances.models import ServiceInstance

__all__ = ["DOWNLOAD_TAIL", "FOLLOW_TAIL", "events", "logs"]

# The lines a follower starts with, and a download holds, when tailLines is not given.
FOLLOW_TAIL = 500
DOWNLOAD_TAIL = 10000


async def _seen(
    actor: Actor, service_id: str, *, members_see_all: bool
) -> tuple[ServiceInstance, ComputeInstance]:
    found = await services.get_service(actor, service_id, members_see_all=members_see_all)
    if found is None:
        raise NotFound("No such service instance.")
    instance = await ComputeInstance.get(id=found.compute_instance_id)
    return found, instance


async def logs(
    actor: Actor,
    service_id: str,
    drivers: DriverFor,
    *,
    members_see_all: bool,
    container: str | None = None,
    tail_lines: int | None = None,
    follow: bool = False,
    previous: bool = False,
) -> AsyncIterator[LogLine]:
    """The log of the service instance's container (`container`: its only one when None): its last
    `tail_lines` lines (FOLLOW_TAIL or DOWNLOAD_TAIL when None), then, with `follow`, its new lines
    until it stops; `previous`: the container's instance before its last restart."""
    tail = check_tail(tail_lines, default=FOLLOW_TAIL if follow else DOWNLOAD_TAIL)
    name = check_container(container)
    found, instance = await _seen(actor, service_id, members_see_all=members_see_all)
    if not services.manages(actor, found):
        raise Forbidden(
            f'Only the owner of service instance "{found.name}" and its project\'s admins read its logs '
            "(a log may hold its token)."
        )
    driver = await driver_of(instance, drivers)
    query = LogQuery(
        namespace=namespace_of(instance, found.project.name),
        owner=Owner(SERVICE_LABEL, str(found.id)),
        container=name,
        tail_lines=tail,
        follow=follow,
        previous=previous,
    )
    async for line in readable(driver.logs(query), f'the log of service instance "{found.name}"'):
        yield line


async def events(
    actor: Actor, service_id: str, drivers: DriverFor, *, members_see_all: bool, follow: bool
) -> AsyncIterator[ClusterEvent]:
    """The events of the service instance's objects (its pods, ReplicaSets, Deployment, claim),
    oldest first; with `follow`, then new ones and changes as they happen."""
    found, instance = await _seen(actor, service_id, members_see_all=members_see_all)
    driver = await driver_of(instance, drivers)
    query = EventQuery(
        namespace_of(instance, found.project.name), Owner(SERVICE_LABEL, str(found.id)), follow
    )
    async for event in readable(driver.events(query), f'the events of service instance "{found.name}"'):
        yield event
