"""The simulated cluster's container logs and events (drivers/simulated/journal.py): a service's
start command's lifecycle lines and the events a real cluster would record, read at once and
followed as they happen."""

from __future__ import annotations

import asyncio

import pytest

from gpupaas.provisioning.drivers.base import ClusterEvent, EventQuery, LogQuery, Owner
from gpupaas.provisioning.drivers.simulated.driver import SimulatedDriver
from gpupaas.provisioning.inventory import DEFAULT_INVENTORY
from gpupaas.provisioning.models import SimulatedEvent, SimulatedLogLine
from gpupaas.provisioning.plan import INSTANCE_LABEL, SERVICE_LABEL, PermanentError, Plan
from tests.conftest import Database
from tests.service_instances.test_service_simulated import COMPUTE, compute_plan, service_plan


@pytest.fixture
async def cluster(db: Database) -> SimulatedDriver:
    driver = SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=0, poll_seconds=0.02)
    await driver.apply(compute_plan())
    return driver


def logs_of(plan: Plan, **options: object) -> LogQuery:
    return LogQuery(namespace=plan.namespace, owner=Owner(SERVICE_LABEL, plan.instance_id), **options)  # type: ignore[arg-type]


def events_of(plan: Plan, *, follow: bool = False) -> EventQuery:
    return EventQuery(namespace=plan.namespace, owner=Owner(SERVICE_LABEL, plan.instance_id), follow=follow)


async def texts(driver: SimulatedDriver, query: LogQuery) -> list[str]:
    return [line.text async for line in driver.logs(query)]


async def reasons(driver: SimulatedDriver, query: EventQuery) -> list[tuple[str, str, str]]:
    return [(e.type, e.object_kind, e.reason) async for e in driver.events(query)]


async def test_a_started_service_logs_its_lifecycle_and_records_a_real_clusters_events(
    cluster: SimulatedDriver,
) -> None:
    plan = service_plan()
    await cluster.apply(plan)
    lines = await texts(cluster, logs_of(plan))
    assert lines[0].startswith('Pulling image "nvcr.io/nvidia/pytorch:')
    assert lines[1] == "Started container main"
    assert lines[2].startswith("$ ") and "jupyter lab" in lines[2]
    assert lines[3] == "Ready: listening on 8888/TCP (jupyter)"
    read = [line async for line in cluster.logs(logs_of(plan))]
    first = read[0]
    assert first.at is not None and first.pod.startswith("nb-") and first.container == "main"
    assert {line.containers for line in read} == {("main",)}
    assert await reasons(cluster, events_of(plan)) == [
        ("Normal", "Deployment", "ScalingReplicaSet"),
        ("Normal", "ReplicaSet", "SuccessfulCreate"),
        ("Normal", "Pod", "Scheduled"),
        ("Normal", "Pod", "Pulling"),
        ("Normal", "Pod", "Pulled"),
        ("Normal", "Pod", "Created"),
        ("Normal", "Pod", "Started"),
    ]
    (scheduled,) = [e async for e in cluster.events(events_of(plan)) if e.reason == "Scheduled"]
    assert scheduled.message.startswith(f"Successfully assigned {plan.namespace}/{first.pod} to ")
    # Applying the same plan again (a redelivered run) changes nothing.
    await cluster.apply(plan)
    assert await texts(cluster, logs_of(plan)) == lines
    # The compute instance's own events are not the service's.
    compute = EventQuery(namespace=plan.namespace, owner=Owner(INSTANCE_LABEL, COMPUTE))
    assert [e async for e in cluster.events(compute)] == []


async def test_tail_container_and_previous_are_read_as_kubectl_logs_reads_them(
    cluster: SimulatedDriver,
) -> None:
    plan = service_plan()
    await cluster.apply(plan)
    assert await texts(cluster, logs_of(plan, tail_lines=2)) == [
        (await texts(cluster, logs_of(plan)))[2],
        "Ready: listening on 8888/TCP (jupyter)",
    ]
    with pytest.raises(
        PermanentError, match=r"container sidecar is not valid for pod nb-\S+: its containers are main"
    ):
        await texts(cluster, logs_of(plan, container="sidecar"))
    with pytest.raises(
        PermanentError, match=r'previous terminated container "main" in pod "nb-\S+" not found'
    ):
        await texts(cluster, logs_of(plan, previous=True))
    with pytest.raises(PermanentError, match="it has no pod: it is not running"):
        await texts(cluster, logs_of(service_plan("never-started")))


async def test_a_follower_sees_the_stop_and_its_log_ends_with_the_pod(cluster: SimulatedDriver) -> None:
    plan = service_plan()
    await cluster.apply(plan)
    seen: list[str] = []

    async def follow() -> None:
        async for line in cluster.logs(logs_of(plan, follow=True)):
            seen.append(line.text)

    follower = asyncio.create_task(follow())
    await asyncio.sleep(0.1)
    assert seen[-1].startswith("Ready")
    await cluster.apply(service_plan(running=False))
    await asyncio.wait_for(follower, timeout=5)  # the container stopped: the log ends
    assert seen[-2:] == ["Received SIGTERM: stopping", "Exited with code 0"]
    assert ("Normal", "Deployment", "ScalingReplicaSet") in await reasons(cluster, events_of(plan))
    assert [e.message async for e in cluster.events(events_of(plan)) if e.reason == "Killing"] == [
        "Stopping container main"
    ]
    with pytest.raises(PermanentError, match="it has no pod"):
        await texts(cluster, logs_of(plan))


async def test_a_restart_is_a_new_pod_with_a_log_of_its_own(cluster: SimulatedDriver) -> None:
    plan = service_plan()
    await cluster.apply(plan)
    old = [line async for line in cluster.logs(logs_of(plan))]
    before = old[0].pod
    await cluster.apply(service_plan(restart="r1"))
    lines = [line async for line in cluster.logs(logs_of(plan))]
    assert lines[0].pod != before and lines[0].text.startswith("Pulling image")
    assert [e.object_name async for e in cluster.events(events_of(plan)) if e.reason == "Killing"] == [before]


async def test_an_event_follower_gets_new_events_and_repeats_with_their_count(
    cluster: SimulatedDriver,
) -> None:
    plan = service_plan("bad", annotations={"simulated.gpupaas.io/service-fail": "apply"})
    got: list[ClusterEvent] = []

    async def follow() -> None:
        async for event in cluster.events(events_of(plan, follow=True)):
            got.append(event)

    follower = asyncio.create_task(follow())
    try:
        with pytest.raises(PermanentError):
            await cluster.apply(plan)

        async def until(check: object) -> None:
            for _ in range(250):
                if callable(check) and check():
                    return
                await asyncio.sleep(0.02)
            raise AssertionError(got)

        await until(lambda: any(e.reason == "BackOff" for e in got))
        (failed,) = [e for e in got if e.reason == "Failed"]
        assert failed.type == "Warning" and "Failed to pull image" in failed.message
        with pytest.raises(PermanentError):
            await cluster.apply(plan)  # the kubelet retries the pull: the same events, counted
        await until(lambda: any(e.reason == "BackOff" and e.count == 2 for e in got))
        again = [e for e in got if e.reason == "BackOff"]
        assert again[0].name == again[-1].name and again[-1].first_at == again[0].first_at
    finally:
        follower.cancel()


async def test_refusals_are_the_events_a_quota_or_the_scheduler_records(cluster: SimulatedDriver) -> None:
    await cluster.apply(service_plan("a", gpus=2))
    plan = service_plan("b", gpus=1)
    with pytest.raises(PermanentError, match="exceeded quota"):
        await cluster.apply(plan)
    (event,) = [e async for e in cluster.events(events_of(plan))]
    assert (event.type, event.object_kind, event.reason) == ("Warning", "ReplicaSet", "FailedCreate")
    assert event.message.startswith('Error creating: pods "b" is forbidden: exceeded quota: compute')


async def test_destroying_takes_the_logs_and_events_along(cluster: SimulatedDriver) -> None:
    plan = service_plan()
    await cluster.apply(plan)
    await cluster.destroy(plan)
    assert not await SimulatedLogLine.filter(owner_id=plan.instance_id).exists()
    assert not await SimulatedEvent.filter(owner_id=plan.instance_id).exists()
    await cluster.apply(service_plan("other"))
    await cluster.destroy(compute_plan())
    assert not await SimulatedEvent.filter(namespace=plan.namespace).exists()


def test_poll_seconds_must_be_positive() -> None:
    with pytest.raises(ValueError, match="poll_seconds must be more than 0"):
        SimulatedDriver(DEFAULT_INVENTORY, poll_seconds=0)
