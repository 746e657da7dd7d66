"""The workers' consumers heal (events/bus.py, "Healing"), on the real broker: deploys in flight
when the broker comes back empty all finish, each run once; and a worker whose group's offsets lie
beyond what the partitions hold goes back to their earliest offset at once, says so once per
partition, and counts it (gpupaas_kafka_consumer_resets_total), instead of waiting there."""

from __future__ import annotations

import logging
from dataclasses import replace

import pytest

from gpupaas.accounts.models import Project
from gpupaas.catalog.models import ComputeProfile
from gpupaas.catalog.service.profiles import ResourcesIn
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.gpus import Vendor
from gpupaas.events.bus import BEYOND_HIGH_WATERMARK, COMMANDS_TOPIC, WORKERS_GROUP, Message
from gpupaas.events.models import OutboxMessage
from gpupaas.events.namespaced import NamespacedBus
from gpupaas.provisioning.drivers.simulated.driver import SimulatedDriver
from gpupaas.provisioning.inventory import DEFAULT_INVENTORY
from gpupaas.provisioning.models import SimulatedAllocation
from gpupaas.runs.models import DeploymentRun
from gpupaas.runs.states import RunStatus
from gpupaas.runtime import Runtime, worker_settings
from gpupaas.settings import Settings
from gpupaas.workers.worker import Worker
from tests.factories import make_instance, make_profile, make_project
from tests.kafka_broker import TansuBroker
from tests.workers.conftest import eventually, fast, on_kafka, status_of, wait_status

S = DeploymentStatus
PARTITIONS = 4  # tansu creates a topic it does not know with 4: the same count either way


async def cpu_profile(project: Project) -> ComputeProfile:
    resources = ResourcesIn(cpu="1", memory="1Gi", storage="1Gi", gpu_count=0, gpu_vendor=Vendor.CPU)
    profile: ComputeProfile = await make_profile(project, resources=resources)
    return profile


def reset_count(runtime: Runtime, **labels: str) -> float:
    value = runtime.metrics.registry.get_sample_value("gpupaas_kafka_consumer_resets_total", labels)
    return value or 0.0


async def test_deploys_in_flight_when_the_broker_comes_back_empty_all_finish_once(
    db: object, settings: Settings, own_broker: TansuBroker
) -> None:
    chosen = replace(
        on_kafka(fast(settings), own_broker.bootstrap),
        kafka_partitions=PARTITIONS,
        run_requeue_after_seconds=2.0,
    )
    bus = NamespacedBus(
        own_broker.bus(partitions=PARTITIONS, metadata_max_age_ms=500), chosen.kafka_namespace
    )
    runtime = Runtime(
        chosen, run_worker=True, bus=bus, driver=SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=0.2)
    )
    await runtime.start()
    try:
        project = await make_project("ml")
        profile = await cpu_profile(project)
        instances = [await make_instance(project, profile, deploy=True) for _ in range(12)]

        async def some_running() -> bool:
            return any([await status_of(i.id) in (S.IN_PROGRESS, S.SUCCESS) for i in instances])

        await eventually(some_running, what="the first deploys to start")
        # when the broker restarts empty while deploys are in flight
        own_broker.restart()
        # then every one of them finishes, each run once
        for instance in instances:
            done = await wait_status(instance.id, S.SUCCESS, S.FAILED, timeout=60)
            assert done.status == S.SUCCESS, done.status_message
            run = await DeploymentRun.get(instance_id=instance.id)
            assert run.status == RunStatus.SUCCEEDED
            assert await SimulatedAllocation.filter(instance_id=instance.id).count() == 1
    finally:
        await runtime.stop()


async def test_a_worker_beyond_the_high_watermark_runs_the_waiting_commands_at_once(
    db: object, settings: Settings, kafka_broker: TansuBroker, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="gpupaas.events.kafka")
    # the reaper would publish lost commands again after 120 s: what runs them here is the worker
    chosen = replace(on_kafka(fast(settings), kafka_broker.bootstrap), run_requeue_after_seconds=120.0)
    bus = NamespacedBus(kafka_broker.bus(partitions=chosen.kafka_partitions), chosen.kafka_namespace)
    api = Runtime(
        chosen, run_worker=False, bus=bus, driver=SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=0.0)
    )
    await api.start()
    worker: Worker | None = None
    try:
        # given deploys whose commands wait on the broker
        project = await make_project("ml")
        profile = await cpu_profile(project)
        instances = [await make_instance(project, profile, deploy=True) for _ in range(4)]

        async def published() -> bool:
            return not await OutboxMessage.filter(topic=COMMANDS_TOPIC, sent_at=None).exists()

        await eventually(published, what="the commands to be published")
        # and the workers' group committed offsets far beyond them (as a worker that committed what
        # it had read before its broker lost its messages)
        stale = bus.consumer([COMMANDS_TOPIC], group=WORKERS_GROUP)
        await stale.start()
        await stale.commit(
            [Message(COMMANDS_TOPIC, p, 99, None, b"") for p in range(chosen.kafka_partitions)]
        )
        await stale.stop()
        # when a worker joins the group
        worker = Worker(bus, api.drivers, worker_settings(chosen), metrics=api.metrics)
        await worker.start()
        # then it runs them, from the partitions' earliest offsets, without waiting for the reaper
        for instance in instances:
            done = await wait_status(instance.id, S.SUCCESS, S.FAILED, timeout=30)
            assert done.status == S.SUCCESS, done.status_message
        for partition in range(chosen.kafka_partitions):
            labels = {"topic": COMMANDS_TOPIC, "partition": str(partition), "reason": BEYOND_HIGH_WATERMARK}
            assert reset_count(api, **labels) == 1
        lines = [
            r.getMessage()
            for r in caplog.records
            if r.name == "gpupaas.events.kafka"
            and f"{chosen.kafka_namespace}.{COMMANDS_TOPIC}" in r.getMessage()
        ]
        assert len(lines) == chosen.kafka_partitions
        assert all(
            "position 100 on partition" in line and "moved to the earliest offset" in line for line in lines
        )
    finally:
        if worker is not None:
            await worker.stop()
        await api.stop()
