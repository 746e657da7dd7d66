"""The usage meter (metering/meter.py, driven by runs/lifecycle.py): intervals opened and ended by a
compute instance's own status changes, exact across redeploys, resizes, drift, worker crashes,
replays, transfers and deletion; at most one open interval per instance, which the database
enforces; and a property test over random sequences of all of these against a simple model."""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tortoise.exceptions import IntegrityError
from tortoise.transactions import in_transaction

from gpupaas.accounts import service as accounts
from gpupaas.accounts.models import Project
from gpupaas.compute import service as compute
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.run_kind import COMPUTE
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.metering import service as usage
from gpupaas.metering.models import UsageInterval
from gpupaas.runs import lifecycle as runs
from gpupaas.runs.models import DeploymentRun
from gpupaas.runs.states import RunStatus
from tests.conftest import QueryCounter
from tests.factories import make_instance, make_profile, make_project, make_user, platform_actor

LEASE = timedelta(seconds=30)
T0 = datetime(2026, 3, 1, 22, 0, tzinfo=UTC)


class Clock:
    """The time the lifecycle and the reports read: moves only when a test moves it."""

    def __init__(self, start: datetime) -> None:
        self.moment = start

    def __call__(self) -> datetime:
        return self.moment

    def advance(self, seconds: float) -> datetime:
        self.moment += timedelta(seconds=seconds)
        return self.moment


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock(T0)
    monkeypatch.setattr(runs, "now", fake)
    monkeypatch.setattr(usage, "now", fake)
    return fake


async def intervals(instance_id: uuid.UUID) -> list[UsageInterval]:
    return await UsageInterval.filter(subject_id=instance_id).order_by("started_at", "ended_at")


def spans(rows: list[UsageInterval]) -> list[tuple[datetime, datetime | None, int]]:
    return [(r.started_at, r.ended_at, r.gpu_count) for r in rows]


async def current_run(instance_id: uuid.UUID) -> DeploymentRun:
    return await DeploymentRun.filter(instance_id=instance_id).order_by("-created_at").first()  # type: ignore[return-value]


async def run_through(instance_id: uuid.UUID, *, succeeded: bool = True, worker: str = "w1") -> None:
    run = await current_run(instance_id)
    assert await runs.claim(COMPUTE, str(run.id), worker, LEASE) is not None
    assert await runs.finish(
        COMPUTE, run.id, worker, succeeded=succeeded, message=None if succeeded else "boom"
    )


async def set_gpus(instance_id: uuid.UUID, count: int) -> None:
    """What a resize does to the instance's snapshot (its next deploy applies the new size)."""
    instance = await ComputeInstance.get(id=instance_id)
    snapshot = dict(instance.snapshot)
    snapshot["resources"] = {**snapshot["resources"], "gpuCount": count}
    await ComputeInstance.filter(id=instance_id).update(snapshot=snapshot)


@pytest.fixture
async def instance(db: object, clock: Clock) -> ComputeInstance:
    project = await make_project("ml")
    return await make_instance(project, await make_profile(project), name="box")  # type: ignore[no-any-return]


async def test_a_deploy_meters_from_success_until_the_destroy_ends(
    instance: ComputeInstance, clock: Clock
) -> None:
    root = await platform_actor()
    await compute.deploy(root, str(instance.id))
    clock.advance(60)
    run = await current_run(instance.id)
    await runs.claim(COMPUTE, str(run.id), "w1", LEASE)
    assert await intervals(instance.id) == []  # queued and in progress: nothing held yet
    clock.advance(30)
    await runs.finish(COMPUTE, run.id, "w1", succeeded=True, message=None)
    started = clock()
    [opened] = await intervals(instance.id)
    assert (opened.started_at, opened.ended_at, opened.open_subject) == (started, None, instance.id)
    assert (opened.gpu_count, opened.gpu_vendor, opened.cpu_millicores, opened.memory_bytes) == (
        1,
        "NVIDIA",
        4000,
        16 * 1024**3,
    )
    assert opened.project_id == instance.project_id and opened.subject_name == "box"

    clock.advance(3600)
    await compute.destroy(root, str(instance.id))  # DESTROYING: still held
    assert (await intervals(instance.id))[0].ended_at is None
    clock.advance(45)
    await run_through(instance.id)
    [ended] = await intervals(instance.id)
    assert (ended.started_at, ended.ended_at, ended.open_subject) == (started, clock(), None)


async def test_a_redeploy_keeps_the_meter_and_a_resize_splits_it(
    instance: ComputeInstance, clock: Clock
) -> None:
    root = await platform_actor()
    await compute.deploy(root, str(instance.id))
    await run_through(instance.id)
    first = clock()
    clock.advance(100)
    await compute.deploy(root, str(instance.id))  # the same size: one interval goes on
    await run_through(instance.id)
    assert spans(await intervals(instance.id)) == [(first, None, 1)]

    clock.advance(100)
    await set_gpus(instance.id, 4)
    await compute.deploy(root, str(instance.id))
    clock.advance(20)  # the old size is held until the new one is deployed
    await run_through(instance.id)
    resized = clock()
    assert spans(await intervals(instance.id)) == [(first, resized, 1), (resized, None, 4)]


async def test_failed_and_drift_end_it_and_recovery_starts_a_new_one(
    instance: ComputeInstance, clock: Clock
) -> None:
    root = await platform_actor()
    await compute.deploy(root, str(instance.id))
    await run_through(instance.id, succeeded=False)
    assert await intervals(instance.id) == []  # a deploy that failed held nothing

    await compute.deploy(root, str(instance.id))
    await run_through(instance.id)
    up = clock()
    clock.advance(50)
    assert await runs.report_drift(COMPUTE, str(instance.id), True, "pod died")
    down = clock()
    clock.advance(70)
    assert not await runs.report_drift(COMPUTE, str(instance.id), True, "pod died")  # a replay
    assert await runs.report_drift(COMPUTE, str(instance.id), False, None)
    back = clock()
    assert spans(await intervals(instance.id)) == [(up, down, 1), (back, None, 1)]


async def test_a_run_taken_over_after_a_crash_is_metered_once(
    instance: ComputeInstance, clock: Clock
) -> None:
    root = await platform_actor()
    await compute.deploy(root, str(instance.id))
    run = await current_run(instance.id)
    await runs.claim(COMPUTE, str(run.id), "w1", LEASE)
    clock.advance(LEASE.total_seconds() + 1)  # w1 died
    assert await runs.requeue_stale(COMPUTE, queued_for=timedelta(minutes=5), max_attempts=5) == 1
    assert await runs.claim(COMPUTE, str(run.id), "w2", LEASE) is not None
    assert await runs.claim(COMPUTE, str(run.id), "w2", LEASE) is None  # a redelivered command
    await runs.finish(COMPUTE, run.id, "w2", succeeded=True, message=None)
    done = clock()
    clock.advance(10)
    # the first worker wakes up and reports too late: its result is refused, the meter untouched
    assert not await runs.finish(COMPUTE, run.id, "w1", succeeded=True, message=None)
    assert spans(await intervals(instance.id)) == [(done, None, 1)]


async def test_drift_recovery_resumes_the_deployed_size_not_a_resize_not_yet_deployed(
    instance: ComputeInstance, clock: Clock
) -> None:
    root = await platform_actor()
    await compute.deploy(root, str(instance.id))
    await run_through(instance.id)
    up = clock()
    clock.advance(10)
    await runs.report_drift(COMPUTE, str(instance.id), True, "pod died")
    down = clock()
    await set_gpus(instance.id, 8)
    clock.advance(10)
    await runs.report_drift(COMPUTE, str(instance.id), False, None)
    assert spans(await intervals(instance.id)) == [(up, down, 1), (clock(), None, 1)]


async def test_a_transfer_charges_the_new_owner_from_then_on(instance: ComputeInstance, clock: Clock) -> None:
    tina = await make_user("tina")
    project = await Project.get(id=instance.project_id)
    await accounts.set_member(None, project.name, "tina", Role.MEMBER)
    root = await platform_actor()
    await compute.deploy(root, str(instance.id))
    await run_through(instance.id)
    first = clock()
    clock.advance(600)
    await compute.transfer(root, str(instance.id), "tina")
    given = clock()
    rows = await intervals(instance.id)
    assert [(r.started_at, r.ended_at, r.owner_id) for r in rows] == [
        (first, given, instance.owner_id),
        (given, None, tina.user.id),
    ]


async def test_deleting_a_deployed_instance_ends_its_interval_and_keeps_it(
    instance: ComputeInstance, clock: Clock
) -> None:
    root = await platform_actor()
    await compute.deploy(root, str(instance.id))
    await run_through(instance.id)
    up = clock()
    clock.advance(200)
    await compute.delete(root, str(instance.id))
    clock.advance(5)
    await run_through(instance.id)
    assert not await ComputeInstance.exists(id=instance.id)
    assert spans(await intervals(instance.id)) == [(up, clock(), 1)]


async def test_the_database_refuses_a_second_open_interval(instance: ComputeInstance, clock: Clock) -> None:
    root = await platform_actor()
    await compute.deploy(root, str(instance.id))
    await run_through(instance.id)
    [row] = await intervals(instance.id)
    with pytest.raises(IntegrityError):
        async with in_transaction():
            await UsageInterval.create(
                **{k: getattr(row, k) for k in ("subject_kind", "subject_id", "subject_name", "project_id")},
                gpu_count=1,
                gpu_vendor="NVIDIA",
                cpu_millicores=1,
                memory_bytes=1,
                started_at=clock(),
                open_subject=instance.id,
            )


async def test_the_meter_costs_statements_only_where_it_starts_or_ends(
    instance: ComputeInstance, clock: Clock, count_queries: QueryCounter
) -> None:
    def metered() -> list[str]:
        return [s for s in count_queries.statements if "usage_intervals" in s]

    root = await platform_actor()
    await compute.deploy(root, str(instance.id))
    run = await current_run(instance.id)
    await runs.claim(COMPUTE, str(run.id), "w1", LEASE)
    # the status that starts it: one INSERT, which opens the interval as none is open
    count_queries.statements.clear()
    await runs.finish(COMPUTE, run.id, "w1", succeeded=True, message=None)
    assert [s.split()[0] for s in metered()] == ["INSERT"], metered()
    # a redeploy that holds the same: the INSERT does nothing, and one SELECT finds it as it is
    await compute.deploy(root, str(instance.id))
    run = await current_run(instance.id)
    await runs.claim(COMPUTE, str(run.id), "w1", LEASE)
    count_queries.statements.clear()
    await runs.finish(COMPUTE, run.id, "w1", succeeded=True, message=None)
    assert [s.split()[0] for s in metered()] == ["INSERT", "SELECT"], metered()
    assert await UsageInterval.filter(subject_id=instance.id).count() == 1
    # statuses that keep it going: nothing
    count_queries.statements.clear()
    await compute.destroy(root, str(instance.id))
    run = await current_run(instance.id)
    await runs.claim(COMPUTE, str(run.id), "w1", LEASE)
    assert metered() == []
    # the status that ends it: one UPDATE
    await runs.finish(COMPUTE, run.id, "w1", succeeded=True, message=None)
    assert len(metered()) == 1 and metered()[0].startswith("UPDATE"), metered()


# ---------------------------------------------------------------- random sequences against a model


@dataclass
class Model:
    """What the meter should have measured: the GPUs the instance held, second by second. It holds
    from a deploy's success until a destroy succeeds, any run fails or the cluster drifts, and a
    deploy that succeeds while it holds switches to the size it deployed."""

    holding: int | None = None  # GPUs held, None: none
    deployed: int | None = None  # the size its last successful deploy applied
    gpu_us: int = 0

    def elapse(self, seconds: int) -> None:
        if self.holding is not None:
            self.gpu_us += self.holding * seconds * 1_000_000


EXAMPLES = itertools.count(1)
STEPS = st.sampled_from(
    [
        "deploy",
        "destroy",
        "succeed",
        "fail",
        "crash",  # the worker dies mid-run: its lease runs out, the reaper re-queues, another takes it
        "replay",  # a finished run's command delivered again, a late result of a dead worker
        "drift",
        "recover",
        "resize",
        "restart",  # the worker's process restarts: it forgets its run, whose lease runs on until it ends
    ]
)


@dataclass
class World:
    instance_id: uuid.UUID
    model: Model = field(default_factory=Model)
    worker: int = 0
    held_run: tuple[uuid.UUID, str] | None = None  # a run a worker holds
    gpus: int = 1


async def _step(world: World, step: str, clock: Clock) -> None:
    root = await platform_actor()
    instance = await ComputeInstance.get(id=world.instance_id)
    status = instance.status
    model = world.model
    if step == "deploy" and status in (
        DeploymentStatus.NOT_DEPLOYED,
        DeploymentStatus.SUCCESS,
        DeploymentStatus.FAILED,
    ):
        await compute.deploy(root, str(instance.id))
    elif step == "destroy" and status in (DeploymentStatus.SUCCESS, DeploymentStatus.FAILED):
        await compute.destroy(root, str(instance.id))
    elif step in ("succeed", "fail", "crash") and status in (
        DeploymentStatus.WAITING,
        DeploymentStatus.IN_PROGRESS,
        DeploymentStatus.DESTROYING,
    ):
        run = await current_run(instance.id)
        if world.held_run is None:
            world.worker += 1
            worker = f"w{world.worker}"
            if await runs.claim(COMPUTE, str(run.id), worker, LEASE) is None:
                return
            world.held_run = (run.id, worker)
        run_id, worker = world.held_run
        if step == "crash":
            clock.advance(LEASE.total_seconds() + 1)
            model.elapse(int(LEASE.total_seconds()) + 1)
            await runs.requeue_stale(COMPUTE, queued_for=timedelta(hours=1), max_attempts=3)
            world.held_run = None
            fresh = await DeploymentRun.get(id=run_id)
            if fresh.status == RunStatus.FAILED:  # too many attempts: the instance FAILED
                model.holding = None
            return
        succeeded = step == "succeed"
        action = (await DeploymentRun.get(id=run_id)).action.value
        assert await runs.finish(
            COMPUTE, run_id, worker, succeeded=succeeded, message=None if succeeded else "x"
        )
        world.held_run = None
        if not succeeded or action == "DESTROY":
            model.holding = None
        else:
            model.holding = model.deployed = world.gpus
    elif step == "replay":
        run = await current_run(instance.id)
        if run is not None and run.status in (RunStatus.SUCCEEDED, RunStatus.FAILED):
            assert await runs.claim(COMPUTE, str(run.id), "late", LEASE) is None
            assert not await runs.finish(COMPUTE, run.id, "late", succeeded=True, message=None)
    elif step == "drift" and status == DeploymentStatus.SUCCESS:
        await runs.report_drift(COMPUTE, str(instance.id), True, "pod died")
        model.holding = None
    elif step == "recover" and status == DeploymentStatus.FAILED and instance.drifted:
        await runs.report_drift(COMPUTE, str(instance.id), False, None)
        # it comes back as it was deployed: the size of its last successful deploy, even when
        # its snapshot was resized since (that size is applied by the next deploy)
        model.holding = model.deployed
    elif step == "restart":
        # nothing of the meter lives in memory; the run stays RUNNING under the old lease, and a
        # later step's worker takes it over once the lease has run out
        world.held_run = None
    elif step == "resize":
        world.gpus = world.gpus % 4 + 1
        await set_gpus(instance.id, world.gpus)


def check_intervals(rows: list[UsageInterval], until: datetime) -> int:
    """No two overlap, at most one is open (the last), none runs backwards; their GPU-microseconds."""
    total = 0
    ordered = sorted(rows, key=lambda r: (r.started_at, r.ended_at or until))
    assert sum(1 for r in rows if r.ended_at is None) <= 1
    for before, after in itertools.pairwise(ordered):
        assert before.ended_at is not None and before.ended_at <= after.started_at, (before, after)
    for row in rows:
        end = row.ended_at or until
        assert end >= row.started_at
        assert (row.open_subject is None) == (row.ended_at is not None)
        total += row.gpu_count * usage.micros(end - row.started_at)
    return total


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    steps=st.lists(st.tuples(STEPS, st.integers(min_value=0, max_value=7200)), min_size=1, max_size=30),
)
async def test_random_transitions_meter_what_the_model_says(
    db: object, clock: Clock, steps: list[Any]
) -> None:
    name = f"prop-{next(EXAMPLES)}"
    project = await make_project(name)
    instance = await make_instance(project, await make_profile(project))
    world = World(instance.id)
    for step, seconds in steps:
        clock.advance(seconds)
        world.model.elapse(seconds)
        await _step(world, step, clock)
    clock.advance(1)
    world.model.elapse(1)
    rows = await intervals(instance.id)
    assert check_intervals(rows, clock()) == world.model.gpu_us
    # and the report, cut into UTC days, adds up to the same
    start = T0.date() - timedelta(days=1)
    query = usage.UsageQuery(start=start, end=clock().date(), project=name)
    report = await usage.report(await platform_actor(), query, until=clock())
    assert sum(line.amount.gpu_us for line in report.days) == world.model.gpu_us
    assert report.total.amount.gpu_us == world.model.gpu_us
