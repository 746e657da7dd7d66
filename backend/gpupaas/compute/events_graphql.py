"""GraphQL for the Kubernetes events of what runs on a cluster: the ClusterEvent type (GPU service
instances use it too) and a compute instance's events, as a query and a subscription. Thin: the
rules live in compute/cluster_reads.py."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from datetime import datetime
from enum import Enum

import strawberry

from gpupaas.compute import cluster_reads
from gpupaas.graphql.context import Info
from gpupaas.provisioning.drivers.base import ClusterEvent


@strawberry.enum(description="Whether an event is routine or says something went wrong.")
class ClusterEventType(Enum):
    NORMAL = "Normal"
    WARNING = "Warning"


@strawberry.type(
    name="ClusterEvent",
    description="A Kubernetes event about an object of the instance, as `kubectl get events` shows "
    "it. A repeat of the same event has the same name, a higher count and a later lastAt.",
)
class ClusterEventType_:
    name: str
    type: ClusterEventType
    reason: str
    message: str
    object_kind: str = strawberry.field(description="Pod, ReplicaSet, Deployment, ...")
    object_name: str
    count: int
    first_at: datetime | None
    last_at: datetime | None

    @classmethod
    def of(cls, event: ClusterEvent) -> ClusterEventType_:
        return cls(
            name=event.name,
            type=ClusterEventType.WARNING if event.type == "Warning" else ClusterEventType.NORMAL,
            reason=event.reason,
            message=event.message,
            object_kind=event.object_kind,
            object_name=event.object_name,
            count=event.count,
            first_at=event.first_at,
            last_at=event.last_at,
        )


def _events(info: Info, id: str, *, follow: bool) -> AsyncGenerator[ClusterEvent, None]:
    return cluster_reads.events(  # type: ignore[return-value]
        info.context.actor,
        id,
        info.context.drivers.driver,
        members_see_all=info.context.settings.members_see_all_instances,
        follow=follow,
    )


@strawberry.type
class ComputeEventsQuery:
    @strawberry.field(
        description="The Kubernetes events of the compute instance's own objects (not of the GPU "
        "services in it), oldest first. For those who see the instance."
    )
    async def compute_instance_cluster_events(self, info: Info, id: strawberry.ID) -> list[ClusterEventType_]:
        return [ClusterEventType_.of(event) async for event in _events(info, id, follow=False)]


@strawberry.type
class ComputeEventsSubscription:
    @strawberry.subscription(
        description="The compute instance's events (as the query), then new ones and repeats (the "
        "same name, a higher count) as they happen."
    )
    async def compute_instance_cluster_events(
        self, info: Info, id: strawberry.ID
    ) -> AsyncGenerator[ClusterEventType_, None]:
        async for event in _events(info, id, follow=True):
            yield ClusterEventType_.of(event)
