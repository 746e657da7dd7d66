"""GraphQL for time limits and schedules: an instance's own limits, extending its auto-stop, and a
project's schedules. Thin: the rules live in `schedules.service`."""

from __future__ import annotations

from datetime import datetime

import strawberry

from gpupaas.compute.graphql import ComputeInstancePayload, ComputeInstanceType
from gpupaas.compute.models import ComputeInstance
from gpupaas.graphql.common import DeletePayload, UserError, attempt, delete_payload
from gpupaas.graphql.context import Info
from gpupaas.graphql.time_limits import TimeLimitsInput
from gpupaas.schedules import service
from gpupaas.schedules.models import Schedule, ScheduleAction, ScheduleTarget
from gpupaas.service_instances.graphql import ServiceInstancePayload, ServiceInstanceType
from gpupaas.service_instances.models import ServiceInstance

ScheduleActionEnum = strawberry.enum(
    ScheduleAction,
    name="ScheduleAction",
    description="STOP: service instances are stopped (their workspaces kept). DESTROY: compute instances "
    "are destroyed (their settings kept; a deploy brings them back).",
)
ScheduleTargetEnum = strawberry.enum(ScheduleTarget, name="ScheduleTarget")


@strawberry.type(name="Schedule", description="Runs at a time of day on chosen days, in a time zone.")
class ScheduleType:
    id: strawberry.ID
    name: str
    action: ScheduleAction
    applies_to: ScheduleTarget
    days: list[str] = strawberry.field(description='Days of the week: "MON" ... "SUN".')
    time_of_day: str = strawberry.field(description='"HH:MM", 24-hour, in timeZone.')
    time_zone: str = strawberry.field(description='An IANA time zone: "Europe/Berlin".')
    next_run_at: datetime = strawberry.field(description="In UTC, daylight saving time taken into account.")
    last_run_at: datetime | None
    last_result: str | None = strawberry.field(description="What its last run did.")

    @classmethod
    def of(cls, schedule: Schedule) -> ScheduleType:
        return cls(
            id=strawberry.ID(str(schedule.id)),
            name=schedule.name,
            action=schedule.action,
            applies_to=schedule.applies_to,
            days=list(schedule.days),
            time_of_day=schedule.time_of_day,
            time_zone=schedule.time_zone,
            next_run_at=schedule.next_run_at,
            last_run_at=schedule.last_run_at,
            last_result=schedule.last_result,
        )


@strawberry.input
class CreateScheduleInput:
    project: str
    name: str
    action: ScheduleAction
    applies_to: ScheduleTarget
    days: list[str]
    time_of_day: str
    time_zone: str


@strawberry.type
class SchedulePayload:
    schedule: ScheduleType | None
    user_errors: list[UserError]


@strawberry.type
class SchedulesQuery:
    @strawberry.field(description="The project's schedules, by name (its members read them).")
    async def schedules(self, info: Info, project: str) -> list[ScheduleType]:
        return [ScheduleType.of(s) for s in await service.list_schedules(info.context.actor, project)]


def _compute(found: ComputeInstance | None, errors: list[UserError]) -> ComputeInstancePayload:
    return ComputeInstancePayload(
        compute_instance=ComputeInstanceType.of(found) if found else None, user_errors=errors
    )


def _service(found: ServiceInstance | None, errors: list[UserError]) -> ServiceInstancePayload:
    return ServiceInstancePayload(
        service_instance=ServiceInstanceType.of(found) if found else None, user_errors=errors
    )


@strawberry.type
class SchedulesMutation:
    @strawberry.mutation(
        description="Project admins: a schedule that stops or destroys the project's instances."
    )
    async def create_schedule(self, info: Info, input: CreateScheduleInput) -> SchedulePayload:
        data = service.ScheduleIn(
            project=input.project,
            name=input.name,
            action=input.action,
            applies_to=input.applies_to,
            days=input.days,
            time_of_day=input.time_of_day,
            time_zone=input.time_zone,
        )
        found, errors = await attempt(service.create_schedule(info.context.actor, data))
        return SchedulePayload(schedule=ScheduleType.of(found) if found else None, user_errors=errors)

    @strawberry.mutation(description="Project admins.")
    async def delete_schedule(self, info: Info, id: strawberry.ID) -> DeletePayload:
        return await delete_payload(service.delete_schedule(info.context.actor, id))

    @strawberry.mutation(
        description="The owner or a project admin: the instance's own auto-stop and maximum lifetime, within "
        "its profile's maximum lifetime. While it runs, they count from when it started."
    )
    async def set_compute_instance_time_limits(
        self, info: Info, id: strawberry.ID, time_limits: TimeLimitsInput
    ) -> ComputeInstancePayload:
        return _compute(
            *await attempt(service.set_compute_limits(info.context.actor, id, time_limits.to_service()))
        )

    @strawberry.mutation(
        description="The owner or a project admin: the service instance's own auto-stop and maximum "
        "lifetime, within its compute instance's maximum lifetime."
    )
    async def set_service_instance_time_limits(
        self, info: Info, id: strawberry.ID, time_limits: TimeLimitsInput
    ) -> ServiceInstancePayload:
        return _service(
            *await attempt(service.set_service_limits(info.context.actor, id, time_limits.to_service()))
        )

    @strawberry.mutation(
        description="The owner or a project admin: moves the auto-stop `minutes` later (from now, when it "
        "is nearer), never past the maximum lifetime; the warning goes out again before the new time."
    )
    async def extend_compute_instance_auto_stop(
        self, info: Info, id: strawberry.ID, minutes: int
    ) -> ComputeInstancePayload:
        return _compute(*await attempt(service.extend_compute(info.context.actor, id, minutes)))

    @strawberry.mutation(description="As extendComputeInstanceAutoStop, for a service instance.")
    async def extend_service_instance_auto_stop(
        self, info: Info, id: strawberry.ID, minutes: int
    ) -> ServiceInstancePayload:
        return _service(*await attempt(service.extend_service(info.context.actor, id, minutes)))
