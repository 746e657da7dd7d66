"""The rules of time limits and schedules: an instance's own time limits (within its profile's, or
its compute instance's), extending an auto-stop, and a project's schedules.

Who: the owner of an instance and its project's admins set its limits and extend its auto-stop
(as they stop or destroy it themselves); a project's admins create and delete its schedules (they
act on every member's instances), its members read them. The scheduler acts as `SCHEDULER`, a
system actor with a platform admin's rights, through the same service calls a person's stop or
destroy makes.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tortoise.exceptions import IntegrityError
from tortoise.transactions import in_transaction

from gpupaas.accounts.models import Project
from gpupaas.accounts.service import project_by_name, require_project
from gpupaas.audit import recorder as audit
from gpupaas.catalog.models import ComputeProfile
from gpupaas.compute import owners
from gpupaas.compute import service as compute
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.run_kind import COMPUTE
from gpupaas.core import time_limits, validation
from gpupaas.core.actor import Actor
from gpupaas.core.errors import Collector, ErrorCode, Forbidden, NotFound, UserErrors
from gpupaas.core.ids import parse_id
from gpupaas.core.natural import natural_sorted
from gpupaas.events import outbox
from gpupaas.runs import lifecycle as runs
from gpupaas.runs.kinds import RunKind
from gpupaas.schedules import timing
from gpupaas.schedules.models import Schedule, ScheduleAction, ScheduleTarget
from gpupaas.service_instances import service as services
from gpupaas.service_instances.models import ServiceInstance
from gpupaas.service_instances.run_kind import SERVICES

MAX_SCHEDULES_PER_PROJECT = 50


SYSTEM_USER_ID = uuid.UUID(int=0)


@dataclass(frozen=True)
class SystemUser:
    """Who the scheduler acts as: not a person, so never a member; rights of a platform admin."""

    id: uuid.UUID = SYSTEM_USER_ID
    username: str = "gpupaas-scheduler"
    is_platform_admin: bool = True
    disabled_at: datetime | None = None


SCHEDULER = Actor(user=SystemUser())


def now() -> datetime:
    return datetime.now(UTC)


# ---------------------------------------------------------------- an instance's time limits


async def _managed_compute(actor: Actor, instance_id: str, verb: str) -> ComputeInstance:
    instance = await compute.get_instance(actor, instance_id, members_see_all=True)
    if instance is None:
        raise UserErrors.one(("id",), "No such compute instance.", ErrorCode.NOT_FOUND)
    if not actor.is_member_of(instance.project_id):
        raise Forbidden(compute.READ_ONLY)
    if not compute.manages(actor, instance):
        raise Forbidden(owners.not_manager("compute instance", instance.name, verb, instance.owner_id))
    return instance


async def _managed_service(actor: Actor, service_id: str, verb: str) -> ServiceInstance:
    service = await services.get_service(actor, service_id, members_see_all=True)
    if service is None:
        raise UserErrors.one(("id",), "No such service instance.", ErrorCode.NOT_FOUND)
    if not services.manages(actor, service):
        raise Forbidden(owners.not_manager("service instance", service.name, verb, service.owner_id))
    return service


def _check(limits: time_limits.Limits, bound: time_limits.Limits | None, bound_name: str) -> None:
    problems = Collector()
    for field, message in time_limits.check_limits(limits, bound, bound_name):
        problems.add(("input", field), message)
    problems.raise_if_any()


def _rearmed(subject: ComputeInstance | ServiceInstance, limits: time_limits.Limits) -> dict[str, Any]:
    """New limits of a running instance count from when it started running (due at once when that
    is already past)."""
    columns: dict[str, Any] = {
        "auto_stop_minutes": limits.auto_stop_minutes,
        "max_lifetime_minutes": limits.max_lifetime_minutes,
    }
    if subject.running_since is not None:
        columns.update(time_limits.arm(limits, subject.running_since))
    return columns


async def _write(kind: RunKind[Any], subject: Any, columns: dict[str, Any]) -> None:
    """The columns, with the version moved on and a status event (live pages show the new due
    time), conditional on the version read."""
    before = {name: getattr(subject, name) for name in columns}
    project = await Project.get(id=subject.project_id)
    async with in_transaction():
        changed = await kind.model.filter(id=subject.id, version=subject.version).update(
            **columns, version=subject.version + 1, updated_at=runs.now()
        )
        if not changed:
            raise UserErrors.one(
                ("id",),
                f"the {kind.noun} was changed by another request at the same moment: look again and retry",
                ErrorCode.CONFLICT,
            )
        for name, value in columns.items():
            setattr(subject, name, value)
        subject.version += 1
        await runs.announce(kind, subject)
        await audit.record(
            type(subject).__name__, subject.id, subject.name, project=project, before=before, after=columns
        )
    outbox.notify()


async def set_compute_limits(actor: Actor, instance_id: str, limits: time_limits.Limits) -> ComputeInstance:
    """The compute instance's own limits, within its profile's maximum lifetime (or, when its
    profile is gone, within its own)."""
    instance = await _managed_compute(actor, instance_id, "change the time limits of")
    profile = (
        await ComputeProfile.get_or_none(id=instance.profile_id) if instance.profile_id is not None else None
    )
    if profile is not None:
        bound = time_limits.Limits(profile.auto_stop_minutes, profile.max_lifetime_minutes)
        bound_name = f'compute profile "{profile.name}"'
    else:
        bound = time_limits.Limits(instance.auto_stop_minutes, instance.max_lifetime_minutes)
        bound_name = "the instance (its profile was deleted)"
    _check(limits, bound, bound_name)
    await _write(COMPUTE, instance, _rearmed(instance, limits))
    return instance


async def set_service_limits(actor: Actor, service_id: str, limits: time_limits.Limits) -> ServiceInstance:
    """The service instance's own limits, within its compute instance's maximum lifetime."""
    service = await _managed_service(actor, service_id, "change the time limits of")
    instance = await ComputeInstance.get(id=service.compute_instance_id)
    bound = time_limits.Limits(instance.auto_stop_minutes, instance.max_lifetime_minutes)
    _check(limits, bound, f'compute instance "{instance.name}"')
    await _write(SERVICES, service, _rearmed(service, limits))
    return service


async def _extend(kind: RunKind[Any], subject: Any, minutes: int, moment: datetime) -> None:
    try:
        stop_at, reason = time_limits.extended(
            subject.stop_at, subject.lifetime_ends_at, subject.max_lifetime_minutes, minutes, moment
        )
    except time_limits.CannotExtend as error:
        code = ErrorCode.INVALID if minutes < 1 else ErrorCode.INVALID_STATE
        field = ("minutes",) if code == ErrorCode.INVALID else ("id",)
        raise UserErrors.one(field, str(error), code) from None
    # The warning is armed again for the new due time.
    await _write(kind, subject, {"stop_at": stop_at, "stop_reason": reason, "stop_warned_at": None})


async def extend_compute(
    actor: Actor, instance_id: str, minutes: int, *, at: datetime | None = None
) -> ComputeInstance:
    instance = await _managed_compute(actor, instance_id, "extend the auto-stop of")
    await _extend(COMPUTE, instance, minutes, at or now())
    return instance


async def extend_service(
    actor: Actor, service_id: str, minutes: int, *, at: datetime | None = None
) -> ServiceInstance:
    service = await _managed_service(actor, service_id, "extend the auto-stop of")
    await _extend(SERVICES, service, minutes, at or now())
    return service


# ---------------------------------------------------------------- schedules


@dataclass
class ScheduleIn:
    project: str
    name: str
    action: ScheduleAction
    applies_to: ScheduleTarget
    days: Sequence[str]
    time_of_day: str
    time_zone: str


def _check_schedule(problems: Collector, data: ScheduleIn) -> None:
    problems.check(("input", "name"), validation.dns_label(data.name))
    if data.applies_to == ScheduleTarget.COMPUTE_INSTANCES and data.action == ScheduleAction.STOP:
        problems.add(
            ("input", "action"),
            "compute instances are not stopped but destroyed (their settings stay, and a deploy "
            "brings them back): choose DESTROY",
        )
    if data.applies_to == ScheduleTarget.SERVICE_INSTANCES and data.action == ScheduleAction.DESTROY:
        problems.add(
            ("input", "action"),
            "a schedule stops service instances, it does not delete them (their workspaces would be "
            "lost): choose STOP",
        )
    if not data.days:
        problems.add(("input", "days"), "choose at least one day of the week", ErrorCode.REQUIRED)
    if len(set(data.days)) != len(data.days):
        problems.add(("input", "days"), "each day at most once")
    if timing.parse_time(data.time_of_day) is None:
        problems.add(
            ("input", "timeOfDay"), f'"{data.time_of_day}" is not a time of day: use HH:MM, 24-hour ("20:00")'
        )
    if timing.zone(data.time_zone) is None:
        problems.add(
            ("input", "timeZone"),
            f'"{data.time_zone}" is not an IANA time zone: use a name such as "Europe/Berlin" or "UTC"'
            + timing.zone_suggestion(data.time_zone),
        )


def first_run(schedule: Schedule, after: datetime) -> datetime:
    at = timing.parse_time(schedule.time_of_day)
    tz = timing.zone(schedule.time_zone)
    assert at is not None, "checked when saved"
    assert tz is not None, "checked when saved"
    return timing.next_run(list(schedule.days), at, tz, after)


async def list_schedules(actor: Actor, project: str) -> list[Schedule]:
    """The project's schedules, by name: its members read them."""
    owner = await project_by_name(actor, project)
    if owner is None or not actor.is_member_of(owner.id):
        raise NotFound(f'project "{project}" not found')
    return natural_sorted(await Schedule.filter(project_id=owner.id), lambda s: s.name)


async def create_schedule(actor: Actor, data: ScheduleIn, *, at: datetime | None = None) -> Schedule:
    owner = await require_project(actor, data.project, ("input", "project"))
    if not actor.is_member_of(owner.id):
        raise UserErrors.one(("input", "project"), f'project "{data.project}" not found', ErrorCode.NOT_FOUND)
    if not actor.is_admin_of(owner.id):
        raise Forbidden(f'Only admins of project "{owner.name}" may schedule stops of its instances.')
    problems = Collector()
    _check_schedule(problems, data)
    problems.raise_if_any()
    if await Schedule.filter(project_id=owner.id).count() >= MAX_SCHEDULES_PER_PROJECT:
        raise UserErrors.one(
            ("input", "project"),
            f"a project has at most {MAX_SCHEDULES_PER_PROJECT} schedules: delete one first",
        )
    schedule = Schedule(
        project=owner,
        name=data.name,
        action=data.action,
        applies_to=data.applies_to,
        days=[d for d in timing.DAYS if d in set(data.days)],
        time_of_day=data.time_of_day.strip(),
        time_zone=data.time_zone,
        created_by_id=actor.require_user().id,
    )
    schedule.next_run_at = first_run(schedule, at or now())
    taken = UserErrors.one(
        ("input", "name"), f'a schedule named "{data.name}" already exists in this project', ErrorCode.TAKEN
    )
    if await Schedule.exists(project_id=owner.id, name=data.name):
        raise taken
    try:
        async with in_transaction():
            await schedule.save()
            await audit.record(
                "Schedule", schedule.id, schedule.name, project=owner, after=audit.fields_of(schedule)
            )
    except IntegrityError:
        raise taken from None
    return schedule


async def delete_schedule(actor: Actor, schedule_id: str) -> str:
    sid = parse_id(schedule_id)
    schedule = await Schedule.get_or_none(id=sid).select_related("project") if sid else None
    if schedule is None or not actor.is_member_of(schedule.project_id):
        actor.require_user()
        raise UserErrors.one(("id",), "No such schedule.", ErrorCode.NOT_FOUND)
    if not actor.is_admin_of(schedule.project_id):
        raise Forbidden(f'Only admins of project "{schedule.project.name}" may delete its schedules.')
    async with in_transaction():
        await schedule.delete()
        await audit.record(
            "Schedule", schedule.id, schedule.name, project=schedule.project, before=audit.fields_of(schedule)
        )
    return schedule_id


def schedule_reason(schedule: Schedule) -> str:
    return f"schedule '{schedule.name}' ({schedule.time_of_day} {schedule.time_zone})"
