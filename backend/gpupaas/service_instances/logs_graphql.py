"""GraphQL for a GPU service instance's container logs and events: queries (a download, the events
now) and subscriptions (followed live). Thin: the rules live in service_instances/logs.py."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from datetime import datetime
from typing import Annotated

import strawberry

from gpupaas.compute.cluster_reads import batched
from gpupaas.compute.events_graphql import ClusterEventType_
from gpupaas.graphql.context import Info
from gpupaas.provisioning.drivers.base import ClusterEvent, LogLine
from gpupaas.service_instances import logs


@strawberry.type(description="One line of a container's log.")
class ContainerLogLine:
    at: datetime | None = strawberry.field(description="When the container wrote it.")
    text: str
    pod: str
    container: str

    @classmethod
    def of(cls, line: LogLine) -> ContainerLogLine:
        return cls(at=line.at, text=line.text, pod=line.pod, container=line.container)


CONTAINERS = "The containers of the pod the lines are from: those whose log may be asked for instead."


def _containers(lines: list[LogLine]) -> list[str]:
    return list(lines[0].containers) if lines else []


@strawberry.type(description="Lines of a container's log that came together (a tail, a burst).")
class ContainerLogChunk:
    lines: list[ContainerLogLine]
    containers: list[str] = strawberry.field(description=CONTAINERS)


@strawberry.type(description="A container's log, for reading at once or downloading.")
class ContainerLog:
    lines: list[ContainerLogLine]
    containers: list[str] = strawberry.field(description=CONTAINERS + " Empty when the log is.")

    @strawberry.field(description="The lines as a .log file holds them: each with its time first.")
    def text(self) -> str:
        return "".join(f"{line.at.isoformat() if line.at else '-'} {line.text}\n" for line in self.lines)


TailArg = Annotated[
    int | None,
    strawberry.argument(
        description="Its last lines only: 1 to 10000 (default 500 to follow, 10000 to read)."
    ),
]
ContainerArg = Annotated[
    str | None, strawberry.argument(description="The container (default: the pod's only one).")
]
PreviousArg = Annotated[
    bool | None,
    strawberry.argument(
        description="The container's instance before its last restart (kubectl logs --previous)."
    ),
]


def _lines(
    info: Info, id: str, container: str | None, tail_lines: int | None, *, follow: bool, previous: bool
) -> AsyncGenerator[LogLine, None]:
    return logs.logs(  # type: ignore[return-value]
        info.context.actor,
        id,
        info.context.drivers.driver,
        members_see_all=info.context.settings.members_see_all_instances,
        container=container,
        tail_lines=tail_lines,
        follow=follow,
        previous=previous,
    )


def _events(info: Info, id: str, *, follow: bool) -> AsyncGenerator[ClusterEvent, None]:
    return logs.events(  # type: ignore[return-value]
        info.context.actor,
        id,
        info.context.drivers.driver,
        members_see_all=info.context.settings.members_see_all_instances,
        follow=follow,
    )


@strawberry.type
class ServiceLogsQuery:
    @strawberry.field(
        description="The service instance's container log now (a download): its owner and its "
        "project's admins only (a log may hold its token)."
    )
    async def service_instance_logs(
        self,
        info: Info,
        id: strawberry.ID,
        container: ContainerArg = None,
        tail_lines: TailArg = None,
        previous: PreviousArg = False,
    ) -> ContainerLog:
        read = [
            line
            async for line in _lines(info, id, container, tail_lines, follow=False, previous=bool(previous))
        ]
        return ContainerLog(lines=[ContainerLogLine.of(line) for line in read], containers=_containers(read))

    @strawberry.field(
        description="The Kubernetes events of the service instance's objects (its pods, ReplicaSets, "
        "Deployment, claim), oldest first. For those who see it."
    )
    async def service_instance_cluster_events(self, info: Info, id: strawberry.ID) -> list[ClusterEventType_]:
        return [ClusterEventType_.of(event) async for event in _events(info, id, follow=False)]


@strawberry.type
class ServiceLogsSubscription:
    @strawberry.subscription(
        description="The service instance's container log: its last lines, then (follow, the default) "
        "its new lines as the container writes them, in chunks; ends when the container stops. Its "
        "owner and its project's admins only."
    )
    async def service_instance_logs(
        self,
        info: Info,
        id: strawberry.ID,
        container: ContainerArg = None,
        tail_lines: TailArg = None,
        follow: bool = True,
        previous: PreviousArg = False,
    ) -> AsyncGenerator[ContainerLogChunk, None]:
        lines = _lines(info, id, container, tail_lines, follow=follow, previous=bool(previous))
        async for chunk in batched(lines):
            yield ContainerLogChunk(
                lines=[ContainerLogLine.of(line) for line in chunk], containers=_containers(chunk)
            )

    @strawberry.subscription(
        description="The service instance's events (as the query), then new ones and repeats (the "
        "same name, a higher count) as they happen."
    )
    async def service_instance_cluster_events(
        self, info: Info, id: strawberry.ID
    ) -> AsyncGenerator[ClusterEventType_, None]:
        async for event in _events(info, id, follow=True):
            yield ClusterEventType_.of(event)
