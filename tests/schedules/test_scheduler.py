"""The scheduler with a controllable clock (no worker runs here: it asks for the stop or destroy
through the services, and the run is QUEUED as a person's would be): the warning before an
auto-stop, the auto-stop itself and the maximum lifetime, exactly once even with several
schedulers at the same moment, refusals, extending through the API, and project schedules across
daylight saving time changes."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gpupaas.accounts import service as accounts
from gpupaas.catalog.service.profiles import ResourcesIn
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core import time_limits
from gpupaas.core.actor import Role
from gpupaas.core.gpus import Vendor
from gpupaas.events.bus import STATUS_TOPIC
from gpupaas.events.models import OutboxMessage
from gpupaas.instance_templates import service as instance_templates
from gpupaas.runs.models import DeploymentRun
from gpupaas.runs.states import RunAction, RunStatus
from gpupaas.schedules.models import Schedule, ScheduleAction, ScheduleTarget
from gpupaas.service_instances import service as services
from gpupaas.service_instances.models import ServiceInstance
from gpupaas.service_instances.states import ServiceStatus
from gpupaas.workers.scheduler import Scheduler, Tick
from tests.conftest import GraphQLClient, QueryCounter
from tests.factories import (
    Person,
    make_instance,
    make_profile,
    make_project,
    make_user,
    make_webhook,
    platform_actor,
)

# A Monday after the real clock: extending counts from the later of now and the due time.
T0 = datetime(2031, 6, 2, 8, 0, tzinfo=UTC)

EXTEND_SERVICE = """mutation($id: ID!, $minutes: Int!) { extendServiceInstanceAutoStop(id: $id, minutes: $minutes) {
  serviceInstance { timeLimits { stopsAt stopReason warned lifetimeEndsAt } }
  userErrors { field message code } } }"""
SET_SERVICE_LIMITS = """mutation($id: ID!, $t: TimeLimitsInput!) {
  setServiceInstanceTimeLimits(id: $id, timeLimits: $t) {
    serviceInstance { timeLimits { autoStopMinutes maxLifetimeMinutes stopsAt stopReason } }
    userErrors { field message code } } }"""
SET_COMPUTE_LIMITS = """mutation($id: ID!, $t: TimeLimitsInput!) {
  setComputeInstanceTimeLimits(id: $id, timeLimits: $t) {
    computeInstance { timeLimits { autoStopMinutes maxLifetimeMinutes } }
    userErrors { field message code } } }"""
CREATE_SCHEDULE = """mutation($input: CreateScheduleInput!) { createSchedule(input: $input) {
  schedule { id name action appliesTo days timeOfDay timeZone nextRunAt lastRunAt lastResult }
  userErrors { field message code } } }"""
SCHEDULES = "query($p: String!) { schedules(project: $p) { name nextRunAt lastResult } }"
DELETE_SCHEDULE = (
    "mutation($id: ID!) { deleteSchedule(id: $id) { deletedId userErrors { field message code } } }"
)


class Clock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


@dataclass
class World:
    owner: Person
    member: Person
    admin: Person
    box: ComputeInstance  # the owner's, SUCCESS
    template: str  # a CPU instance template of "ml"


@pytest.fixture
async def world(db: object) -> World:
    owner, member, admin = await make_user("olivia"), await make_user("bob"), await make_user("alice")
    ml = await make_project("ml", olivia=Role.MEMBER, bob=Role.MEMBER, alice=Role.ADMIN)
    profile = await make_profile(
        ml,
        resources=ResourcesIn(cpu="1", memory="1Gi", storage="1Gi", gpu_count=0, gpu_vendor=Vendor.CPU),
        time_limits=time_limits.Limits(None, 24 * 60),
    )
    box = await make_instance(ml, profile, "box", by=owner)
    await ComputeInstance.filter(id=box.id).update(status=DeploymentStatus.SUCCESS)
    template = await instance_templates.create_template(
        await platform_actor(),
        "ml",
        instance_templates.TemplateIn(name="cpu", vendor=Vendor.CPU, image="ubuntu"),
    )
    return World(owner, member, admin, await ComputeInstance.get(id=box.id), str(template.id))


async def running_service(world: World, name: str, limits: time_limits.Limits, since: datetime = T0) -> str:
    """The owner's service instance in the box, RUNNING since `since` with `limits` armed."""
    actor = await accounts.actor_for(world.owner.user)
    data = services.ServiceIn(
        project="ml", compute_instance=str(world.box.id), template=world.template, name=name, start=False
    )
    service = await services.create_service(actor, data, secret_key="k" * 64)
    await ServiceInstance.filter(id=service.id).update(
        status=ServiceStatus.RUNNING,
        auto_stop_minutes=limits.auto_stop_minutes,
        max_lifetime_minutes=limits.max_lifetime_minutes,
        **time_limits.arm(limits, since),
    )
    return str(service.id)


def scheduler(clock: Clock, warning_minutes: int = 15) -> Scheduler:
    return Scheduler(warning_minutes=warning_minutes, interval_seconds=1.0, clock=clock)


async def warnings_about(subject_id: str) -> list[dict[str, Any]]:
    rows = await OutboxMessage.filter(topic=STATUS_TOPIC, key=subject_id).order_by("id")
    return [r.payload for r in rows if "warning" in r.payload]


# ---------------------------------------------------------------- auto-stop


async def test_a_service_is_warned_then_stopped_once_after_its_auto_stop(world: World) -> None:
    sid = await running_service(world, "nb", time_limits.Limits(240, None))
    clock = Clock(T0 + timedelta(hours=3, minutes=44))
    # before the warning window: nothing
    assert (await scheduler(clock).tick()).warned == 0
    # 15 minutes before: one warning event on the status topic, with when and why
    clock.at = T0 + timedelta(hours=3, minutes=46)
    assert (await scheduler(clock).tick()).warned == 1
    assert (await scheduler(clock).tick()).warned == 0  # not twice
    [warning] = await warnings_about(sid)
    assert warning["status"] == "RUNNING"
    assert warning["warning"] == {
        "type": "AUTO_STOP_WARNING",
        "stopAt": (T0 + timedelta(hours=4)).isoformat(),
        "reason": "auto-stop after 4h",
    }
    assert warning["message"] == (
        "this service instance stops in 14m (2031-06-02 12:00 UTC, auto-stop after 4h): its owner can extend it"
    )
    # due: stopped through the service's stop, with the reason on the run and the status
    clock.at = T0 + timedelta(hours=4)
    done = await scheduler(clock).tick()
    assert (done.stopped, done.refused) == (1, 0)
    service = await ServiceInstance.get(id=sid)
    assert service.status == ServiceStatus.STOPPING
    assert service.status_message == "auto-stop after 4h"
    [run] = await DeploymentRun.filter(service_id=sid)
    assert (run.action, run.status, run.reason) == (RunAction.STOP, RunStatus.QUEUED, "auto-stop after 4h")
    # a later pass does nothing more
    clock.at += timedelta(minutes=5)
    assert (await scheduler(clock).tick()).stopped == 0
    assert await DeploymentRun.filter(service_id=sid).count() == 1


async def test_the_warning_goes_to_the_projects_webhooks_that_want_it(world: World) -> None:
    import json

    from gpupaas.webhooks.models import WebhookDelivery, WebhookEvent

    await make_webhook("ml", WebhookEvent.AUTO_STOP_WARNING)
    await make_webhook("ml", WebhookEvent.QUOTA_REACHED)
    sid = await running_service(world, "nb", time_limits.Limits(240, None))
    assert (await scheduler(Clock(T0 + timedelta(hours=3, minutes=46))).tick()).warned == 1
    # one delivery, in the warning's transaction, to the webhook that wants warnings
    [delivery] = await WebhookDelivery.all()
    body = json.loads(delivery.body)
    assert body["type"] == "AUTO_STOP_WARNING"
    assert body["data"]["id"] == sid and body["data"]["reason"] == "auto-stop after 4h"
    assert body["data"]["stopAt"] == (T0 + timedelta(hours=4)).isoformat()


async def test_several_schedulers_at_the_same_moment_stop_each_instance_once(world: World) -> None:
    ids = [await running_service(world, f"nb{i}", time_limits.Limits(60, None)) for i in range(5)]
    clock = Clock(T0 + timedelta(minutes=50))
    warned = await asyncio.gather(*(scheduler(clock).tick() for _ in range(4)))
    assert sum(t.warned for t in warned) == 5
    for sid in ids:
        assert len(await warnings_about(sid)) == 1
    clock.at = T0 + timedelta(minutes=61)
    ticks = await asyncio.gather(*(scheduler(clock).tick() for _ in range(4)))
    assert sum(t.stopped for t in ticks) == 5
    for sid in ids:
        assert await DeploymentRun.filter(service_id=sid, action=RunAction.STOP).count() == 1


async def test_the_maximum_lifetime_stops_what_has_no_auto_stop(world: World) -> None:
    sid = await running_service(world, "nb", time_limits.Limits(None, 24 * 60))
    clock = Clock(T0 + timedelta(hours=23, minutes=59))
    assert (await scheduler(clock).tick()).stopped == 0
    clock.at = T0 + timedelta(hours=24)
    assert (await scheduler(clock).tick()).stopped == 1
    run = await DeploymentRun.get(service_id=sid)
    assert run.reason == "maximum lifetime 1d reached"


async def test_a_compute_instance_past_its_lifetime_is_destroyed(world: World) -> None:
    await ComputeInstance.filter(id=world.box.id).update(
        **time_limits.arm(time_limits.Limits(None, 24 * 60), T0)
    )
    clock = Clock(T0 + timedelta(days=1, seconds=1))
    assert (await scheduler(clock).tick()).stopped == 1
    box = await ComputeInstance.get(id=world.box.id)
    assert (box.status, box.status_message) == (DeploymentStatus.DESTROYING, "maximum lifetime 1d reached")
    run = await DeploymentRun.get(instance_id=box.id, service_id=None)
    assert (run.action, run.reason) == (RunAction.DESTROY, "maximum lifetime 1d reached")


async def test_a_compute_instance_that_runs_services_is_not_destroyed_and_says_why(world: World) -> None:
    await running_service(world, "nb", time_limits.Limits(None, None))
    await ComputeInstance.filter(id=world.box.id).update(**time_limits.arm(time_limits.Limits(60, None), T0))
    clock = Clock(T0 + timedelta(hours=2))
    done = await scheduler(clock).tick()
    assert (done.stopped, done.refused) == (0, 1)
    box = await ComputeInstance.get(id=world.box.id)
    assert box.status == DeploymentStatus.SUCCESS
    assert box.stop_at is None
    assert box.stop_refused == (
        "auto-stop after 1h, but not carried out: cannot destroy an instance that runs service instances "
        "(nb): delete them first (their workspaces would be lost with the instance)"
    )
    assert not await DeploymentRun.filter(instance_id=box.id, service_id=None).exists()
    assert (await scheduler(clock).tick()).refused == 0  # said once


async def test_an_instance_that_is_not_running_is_left_alone(world: World) -> None:
    sid = await running_service(world, "nb", time_limits.Limits(60, None))
    await ServiceInstance.filter(id=sid).update(status=ServiceStatus.STOPPED)
    assert (await scheduler(Clock(T0 + timedelta(hours=2))).tick()).stopped == 0


async def test_a_service_that_failed_after_it_ran_is_still_stopped_when_due(world: World) -> None:
    sid = await running_service(world, "nb", time_limits.Limits(None, 60))
    await ServiceInstance.filter(id=sid).update(status=ServiceStatus.FAILED, drifted=True)
    assert (await scheduler(Clock(T0 + timedelta(hours=1))).tick()).stopped == 1
    assert (await ServiceInstance.get(id=sid)).status == ServiceStatus.STOPPING


async def test_a_pass_with_nothing_due_reads_a_fixed_number_of_queries(
    world: World, count_queries: QueryCounter
) -> None:
    for i in range(10):
        await running_service(world, f"nb{i}", time_limits.Limits(240, None))
    count_queries.statements.clear()
    done = await scheduler(Clock(T0 + timedelta(hours=1))).tick()
    assert done == Tick()
    # per kind: the warnings due, the stops due; then the schedules due: one SELECT each
    assert len(count_queries.statements) == 5, count_queries.statements


# ---------------------------------------------------------------- extending and setting limits


async def test_the_owner_extends_within_the_lifetime_and_the_warning_is_armed_again(
    world: World, gql: GraphQLClient
) -> None:
    sid = await running_service(world, "nb", time_limits.Limits(240, 6 * 60))
    clock = Clock(T0 + timedelta(hours=3, minutes=50))
    assert (await scheduler(clock).tick()).warned == 1
    # a member who does not own it may not
    body = await gql(EXTEND_SERVICE, {"id": sid, "minutes": 60}, world.member.token)
    assert body["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    # the owner moves it an hour on: the warning goes out again before the new time
    data = await gql.data(EXTEND_SERVICE, {"id": sid, "minutes": 60}, world.owner.token)
    limits = data["extendServiceInstanceAutoStop"]["serviceInstance"]["timeLimits"]
    assert limits["stopsAt"] == "2031-06-02T13:00:00+00:00"
    assert limits["warned"] is False
    assert limits["stopReason"] == "auto-stop extended to 2031-06-02 13:00 UTC"
    clock.at = T0 + timedelta(hours=4, minutes=1)
    assert (await scheduler(clock).tick()).stopped == 0  # not at the old time
    clock.at = T0 + timedelta(hours=4, minutes=50)
    assert (await scheduler(clock).tick()).warned == 1
    # never past the maximum lifetime (6h): capped, and then no further
    data = await gql.data(EXTEND_SERVICE, {"id": sid, "minutes": 600}, world.owner.token)
    limits = data["extendServiceInstanceAutoStop"]["serviceInstance"]["timeLimits"]
    assert limits["stopsAt"] == limits["lifetimeEndsAt"] == "2031-06-02T14:00:00+00:00"
    assert limits["stopReason"] == "maximum lifetime 6h reached"
    data = await gql.data(EXTEND_SERVICE, {"id": sid, "minutes": 60}, world.owner.token)
    [error] = data["extendServiceInstanceAutoStop"]["userErrors"]
    assert error["code"] == "INVALID_STATE"
    assert error["message"].startswith(
        "it stops at the end of its maximum lifetime (6h), 2031-06-02 14:00 UTC"
    )
    data = await gql.data(EXTEND_SERVICE, {"id": sid, "minutes": 0}, world.owner.token)
    assert data["extendServiceInstanceAutoStop"]["userErrors"][0]["field"] == ["minutes"]


async def test_limits_are_set_within_the_profile_and_count_from_the_start(
    world: World, gql: GraphQLClient
) -> None:
    box = str(world.box.id)
    # the profile limits the lifetime to 1d: no more, and not removed
    data = await gql.data(
        SET_COMPUTE_LIMITS, {"id": box, "t": {"maxLifetimeMinutes": 2000}}, world.owner.token
    )
    [error] = data["setComputeInstanceTimeLimits"]["userErrors"]
    assert error["field"] == ["input", "maxLifetimeMinutes"]
    assert 'compute profile "' in error["message"]
    assert "limits the lifetime to 1d (1440 minutes): 2000 is more" in error["message"]
    data = await gql.data(SET_COMPUTE_LIMITS, {"id": box, "t": {"autoStopMinutes": 60}}, world.owner.token)
    assert "cannot be removed" in data["setComputeInstanceTimeLimits"]["userErrors"][0]["message"]
    data = await gql.data(
        SET_COMPUTE_LIMITS,
        {"id": box, "t": {"autoStopMinutes": 5, "maxLifetimeMinutes": 600}},
        world.owner.token,
    )
    [error] = data["setComputeInstanceTimeLimits"]["userErrors"]
    assert error["field"] == ["input", "autoStopMinutes"]
    assert error["message"].startswith("the auto-stop must be between 15 minutes and 366 days")
    data = await gql.data(
        SET_COMPUTE_LIMITS,
        {"id": box, "t": {"autoStopMinutes": 700, "maxLifetimeMinutes": 600}},
        world.owner.token,
    )
    assert data["setComputeInstanceTimeLimits"]["userErrors"][0]["message"] == (
        "the auto-stop (11h40m) comes after the maximum lifetime (10h): set 600 minutes or less, or leave it empty"
    )
    data = await gql.data(
        SET_COMPUTE_LIMITS,
        {"id": box, "t": {"autoStopMinutes": 120, "maxLifetimeMinutes": 600}},
        world.owner.token,
    )
    assert data["setComputeInstanceTimeLimits"] == {
        "computeInstance": {"timeLimits": {"autoStopMinutes": 120, "maxLifetimeMinutes": 600}},
        "userErrors": [],
    }
    # a running service's new limits count from when it started, within its compute instance's
    sid = await running_service(world, "nb", time_limits.Limits(None, None))
    data = await gql.data(SET_SERVICE_LIMITS, {"id": sid, "t": {"autoStopMinutes": 60}}, world.owner.token)
    assert "limits the lifetime to 10h" in data["setServiceInstanceTimeLimits"]["userErrors"][0]["message"]
    data = await gql.data(
        SET_SERVICE_LIMITS,
        {"id": sid, "t": {"autoStopMinutes": 60, "maxLifetimeMinutes": 300}},
        world.owner.token,
    )
    limits = data["setServiceInstanceTimeLimits"]["serviceInstance"]["timeLimits"]
    assert (limits["stopsAt"], limits["stopReason"]) == ("2031-06-02T09:00:00+00:00", "auto-stop after 1h")


# ---------------------------------------------------------------- schedules


def evening(**changes: Any) -> dict[str, Any]:
    return {
        "project": "ml",
        "name": "evening",
        "action": "STOP",
        "appliesTo": "SERVICE_INSTANCES",
        "days": ["MON", "TUE", "WED", "THU", "FRI"],
        "timeOfDay": "20:00",
        "timeZone": "Europe/Berlin",
        **changes,
    }


async def test_schedules_are_validated_with_messages_a_person_can_act_on(
    world: World, gql: GraphQLClient
) -> None:
    data = await gql.data(
        CREATE_SCHEDULE,
        {
            "input": evening(
                name="Evening!", days=[], timeOfDay="8pm", timeZone="Berlin", appliesTo="COMPUTE_INSTANCES"
            )
        },
        world.admin.token,
    )
    errors = {tuple(e["field"]): e["message"] for e in data["createSchedule"]["userErrors"]}
    assert set(errors) == {
        ("input", "name"),
        ("input", "days"),
        ("input", "timeOfDay"),
        ("input", "timeZone"),
        ("input", "action"),
    }
    assert errors[("input", "timeOfDay")] == '"8pm" is not a time of day: use HH:MM, 24-hour ("20:00")'
    assert errors[("input", "timeZone")] == (
        '"Berlin" is not an IANA time zone: use a name such as "Europe/Berlin" or "UTC" (did you mean "Europe/Berlin"?)'
    )
    assert errors[("input", "action")].endswith("choose DESTROY")
    data = await gql.data(CREATE_SCHEDULE, {"input": evening(action="DESTROY")}, world.admin.token)
    assert data["createSchedule"]["userErrors"][0]["message"].endswith("choose STOP")
    data = await gql.data(CREATE_SCHEDULE, {"input": evening(days=["MON", "MON"])}, world.admin.token)
    assert data["createSchedule"]["userErrors"][0]["message"] == "each day at most once"
    # a member may not; the admin may, once per name
    body = await gql(CREATE_SCHEDULE, {"input": evening()}, world.owner.token)
    assert body["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    made = (await gql.data(CREATE_SCHEDULE, {"input": evening()}, world.admin.token))["createSchedule"]
    assert made["userErrors"] == []
    assert made["schedule"]["days"] == ["MON", "TUE", "WED", "THU", "FRI"]
    again = (await gql.data(CREATE_SCHEDULE, {"input": evening()}, world.admin.token))["createSchedule"]
    assert again["userErrors"][0]["code"] == "TAKEN"
    # members read them; admins delete them
    listed = (await gql.data(SCHEDULES, {"p": "ml"}, world.member.token))["schedules"]
    assert [s["name"] for s in listed] == ["evening"]
    body = await gql(DELETE_SCHEDULE, {"id": made["schedule"]["id"]}, world.member.token)
    assert body["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    data = await gql.data(DELETE_SCHEDULE, {"id": made["schedule"]["id"]}, world.admin.token)
    assert data["deleteSchedule"]["deletedId"] == made["schedule"]["id"]
    assert (await gql.data(SCHEDULES, {"p": "ml"}, world.member.token))["schedules"] == []


@pytest.mark.parametrize(
    ("friday", "friday_run", "monday_run"),
    [
        # spring forward on Sunday 2026-03-29: 19:00 UTC (CET) on Friday, 18:00 UTC (CEST) on Monday
        (
            datetime(2026, 3, 27, 12, tzinfo=UTC),
            "2026-03-27T19:00:00+00:00",
            datetime(2026, 3, 30, 18, tzinfo=UTC),
        ),
        # fall back on Sunday 2026-10-25: 18:00 UTC (CEST) on Friday, 19:00 UTC (CET) on Monday
        (
            datetime(2026, 10, 23, 12, tzinfo=UTC),
            "2026-10-23T18:00:00+00:00",
            datetime(2026, 10, 26, 19, tzinfo=UTC),
        ),
    ],
)
async def test_a_schedule_stops_every_running_service_at_its_local_time_across_dst(
    world: World, gql: GraphQLClient, friday: datetime, friday_run: str, monday_run: datetime
) -> None:
    from gpupaas.schedules import service as schedules

    admin = await accounts.actor_for(world.admin.user)
    data = schedules.ScheduleIn(
        project="ml",
        name="evening",
        action=ScheduleAction.STOP,
        applies_to=ScheduleTarget.SERVICE_INSTANCES,
        days=["MON", "TUE", "WED", "THU", "FRI"],
        time_of_day="20:00",
        time_zone="Europe/Berlin",
    )
    # created on Friday at noon UTC
    made = await schedules.create_schedule(admin, data, at=friday)
    assert made.next_run_at.isoformat() == friday_run
    running = [await running_service(world, f"nb{i}", time_limits.Limits(None, None)) for i in range(3)]
    stopped = await running_service(world, "idle", time_limits.Limits(None, None))
    await ServiceInstance.filter(id=stopped).update(status=ServiceStatus.STOPPED)
    clock = Clock(made.next_run_at - timedelta(seconds=1))
    assert (await scheduler(clock).tick()).schedules_run == 0
    clock.at = made.next_run_at
    ticks = await asyncio.gather(*(scheduler(clock).tick() for _ in range(3)))  # three workers at once
    assert sum(t.schedules_run for t in ticks) == 1
    for sid in running:
        service = await ServiceInstance.get(id=sid)
        assert (service.status, service.status_message) == (
            ServiceStatus.STOPPING,
            "schedule 'evening' (20:00 Europe/Berlin)",
        )
        [run] = await DeploymentRun.filter(service_id=sid)
        assert run.reason == "schedule 'evening' (20:00 Europe/Berlin)"
    assert not await DeploymentRun.filter(service_id=stopped).exists()
    schedule = await Schedule.get(id=made.id)
    assert schedule.next_run_at == monday_run  # across the change, at the new offset
    assert schedule.last_result == "stopped 3 service instances: nb0, nb1, nb2"
    listed = (await gql.data(SCHEDULES, {"p": "ml"}, world.member.token))["schedules"]
    assert listed == [
        {"name": "evening", "nextRunAt": monday_run.isoformat(), "lastResult": schedule.last_result}
    ]


async def test_a_destroy_schedule_destroys_compute_instances_and_reports_refusals(world: World) -> None:
    from gpupaas.schedules import service as schedules

    ml = await world.box.project
    profile = await make_profile(
        ml, resources=ResourcesIn(cpu="1", memory="1Gi", storage="1Gi", gpu_count=0, gpu_vendor=Vendor.CPU)
    )
    spare = await make_instance(ml, profile, "spare", by=world.owner)
    await ComputeInstance.filter(id=spare.id).update(status=DeploymentStatus.SUCCESS)
    await running_service(world, "nb", time_limits.Limits(None, None))  # keeps the box
    admin = await accounts.actor_for(world.admin.user)
    data = schedules.ScheduleIn(
        project="ml",
        name="night",
        action=ScheduleAction.DESTROY,
        applies_to=ScheduleTarget.COMPUTE_INSTANCES,
        days=["MON"],
        time_of_day="23:30",
        time_zone="UTC",
    )
    made = await schedules.create_schedule(admin, data, at=T0)
    assert made.next_run_at == datetime(2031, 6, 2, 23, 30, tzinfo=UTC)
    assert (await scheduler(Clock(made.next_run_at)).tick()).schedules_run == 1
    assert (await ComputeInstance.get(id=spare.id)).status == DeploymentStatus.DESTROYING
    assert (await ComputeInstance.get(id=world.box.id)).status == DeploymentStatus.SUCCESS
    schedule = await Schedule.get(id=made.id)
    assert schedule.last_result == (
        "destroyed 1 compute instance: spare; not destroyed: box (cannot destroy an instance that runs "
        "service instances (nb): delete them first (their workspaces would be lost with the instance))"
    )
    assert schedule.next_run_at == datetime(2031, 6, 9, 23, 30, tzinfo=UTC)


async def test_the_running_scheduler_acts_at_its_next_pass(world: World) -> None:
    from tests.workers.conftest import eventually

    sid = await running_service(world, "nb", time_limits.Limits(60, None))
    running = Scheduler(warning_minutes=15, interval_seconds=0.01, clock=Clock(T0 + timedelta(hours=2)))
    await running.start()
    try:

        async def stopped() -> bool:
            return (await ServiceInstance.get(id=sid)).status == ServiceStatus.STOPPING

        await eventually(stopped, timeout=10, what="the due service to be stopped")
    finally:
        await running.stop()
    assert await DeploymentRun.filter(service_id=sid).count() == 1
