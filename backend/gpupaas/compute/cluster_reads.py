"""What the API process reads of a cluster for people, read only: the events of a compute
instance's objects (and, for service_instances/logs.py, the same plumbing for a service's logs and
events). The driver is the one of the instance's cluster (the registry the API process holds, as
for the cluster check); nothing here writes to a cluster.

Who: those who see the compute instance (its project's members, but another member's hidden one
when members do not see each other's; the projects it is shared with) see its events.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Callable
from typing import TypeVar

from gpupaas.clusters import service as clusters
from gpupaas.compute import service as compute
from gpupaas.compute.models import ComputeInstance
from gpupaas.core.actor import Actor
from gpupaas.core.errors import InvalidArgument, NotFound, Unavailable
from gpupaas.provisioning.drivers.base import MAX_TAIL_LINES, ClusterEvent, Driver, EventQuery, Owner
from gpupaas.provisioning.plan import INSTANCE_LABEL, DriverError, namespace_for
from gpupaas.provisioning.registry import ClusterTarget

__all__ = [
    "DriverFor",
    "batched",
    "check_container",
    "check_tail",
    "driver_of",
    "events",
    "namespace_of",
    "readable",
]

T = TypeVar("T")

# The driver of a cluster (DriverRegistry.driver).
DriverFor = Callable[[ClusterTarget | None], Driver]

_CONTAINER = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


def check_tail(tail_lines: int | None, *, default: int | None) -> int | None:
    """tailLines as asked, or `default`; InvalidArgument saying the range when it is outside it."""
    if tail_lines is None:
        return default
    if not 1 <= tail_lines <= MAX_TAIL_LINES:
        raise InvalidArgument(f"tailLines must be between 1 and {MAX_TAIL_LINES}, not {tail_lines}.")
    return tail_lines


def check_container(container: str | None) -> str | None:
    """A container's name, as Kubernetes names them (a DNS label), or None for the pod's first."""
    if container is None or container == "":
        return None
    if _CONTAINER.fullmatch(container) is None:
        raise InvalidArgument(
            f'container "{container[:80]}" is not a container name (lower-case letters, digits and "-", '
            "at most 63)."
        )
    return container


def namespace_of(instance: ComputeInstance, project_name: str) -> str:
    """The compute instance's namespace, as its runs name it (provisioning/plan.py)."""
    return namespace_for(project_name, instance.name, str(instance.id))


async def driver_of(instance: ComputeInstance, drivers: DriverFor) -> Driver:
    """The driver of the cluster the compute instance deploys to."""
    try:
        target = await clusters.target_for(instance.profile_snapshot.cluster_id)
    except DriverError as error:
        raise Unavailable(str(error)) from None
    return drivers(target)


async def readable(items: AsyncIterator[T], what: str) -> AsyncIterator[T]:
    """The items, a driver's error turned into what the caller reads (Unavailable, naming `what`)."""
    try:
        async for item in items:
            yield item
    except DriverError as error:
        raise Unavailable(f"{what}: {error}") from None
    finally:
        closing = getattr(items, "aclose", None)
        if closing is not None:
            await closing()


async def batched(items: AsyncIterator[T], *, most: int = 500) -> AsyncIterator[list[T]]:
    """The items in lists: those that come together (a log's tail, a burst) in one list of at most
    `most`, so that a client gets one message for them rather than one each. The items are read
    by a task of their own, which ends with the iterator."""
    queue: asyncio.Queue[tuple[bool, T | BaseException | None]] = asyncio.Queue(maxsize=most * 4)

    async def pump() -> None:
        try:
            async for item in items:
                await queue.put((True, item))
            await queue.put((False, None))
        except asyncio.CancelledError:
            raise
        except BaseException as error:
            await queue.put((False, error))

    task = asyncio.create_task(pump())
    try:
        while True:
            more, value = await queue.get()
            batch: list[T] = []
            while True:
                if not more:
                    if batch:
                        yield batch
                    if isinstance(value, BaseException):
                        raise value
                    return
                batch.append(value)  # type: ignore[arg-type]
                if len(batch) >= most or queue.empty():
                    break
                more, value = queue.get_nowait()
            yield batch
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        closing = getattr(items, "aclose", None)
        if closing is not None:
            with contextlib.suppress(Exception):
                await closing()


async def events(
    actor: Actor, instance_id: str, drivers: DriverFor, *, members_see_all: bool, follow: bool
) -> AsyncIterator[ClusterEvent]:
    """The events of the compute instance's own objects (not those of the GPU services in it),
    oldest first; with `follow`, then new ones and changes as they happen."""
    instance = await compute.get_instance(actor, instance_id, members_see_all=members_see_all)
    if instance is None:
        raise NotFound("No such compute instance.")
    driver = await driver_of(instance, drivers)
    query = EventQuery(
        namespace_of(instance, instance.project.name), Owner(INSTANCE_LABEL, str(instance.id)), follow
    )
    async for event in readable(driver.events(query), f'the events of compute instance "{instance.name}"'):
        yield event
