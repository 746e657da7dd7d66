"""The deploy pipeline under test: a runtime (bus, relay, broadcaster, worker with the simulated
driver at zero delay) on the in-process bus and on a real Kafka-protocol broker (tansu)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest

from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.states import DeploymentStatus
from gpupaas.provisioning.drivers.simulated.driver import SimulatedDriver
from gpupaas.provisioning.inventory import DEFAULT_INVENTORY
from gpupaas.runtime import Runtime
from gpupaas.settings import Settings


@dataclass
class Pipeline:
    kind: str
    settings: Settings
    runtime: Runtime

    def driver(self) -> SimulatedDriver:
        driver = self.runtime.drivers.simulated
        assert isinstance(driver, SimulatedDriver)
        return driver


def fast(settings: Settings, **changes: Any) -> Settings:
    return replace(
        settings,
        simulated_phase_seconds=0.0,
        run_lease_seconds=1.0,
        run_requeue_after_seconds=2.0,
        run_retry_backoff_seconds=0.01,
        **changes,
    )


def on_kafka(settings: Settings, bootstrap: str) -> Settings:
    # A namespace per test: fresh topics and consumer group, so tests never see each other's messages.
    return replace(
        settings,
        kafka_bootstrap_servers=bootstrap,
        kafka_idempotence=False,  # tansu answers InitProducerId with an error
        kafka_partitions=2,
        kafka_namespace=f"t{uuid.uuid4().hex[:10]}",
        # tansu holds a join for half the session timeout: keep it short in tests
        kafka_session_timeout_ms=2000,
        kafka_heartbeat_interval_ms=200,
        kafka_metadata_max_age_ms=500,
    )


@pytest.fixture(params=["memory", "kafka"])
async def pipeline(request: pytest.FixtureRequest, settings: Settings) -> AsyncIterator[Pipeline]:
    chosen = fast(settings)
    if request.param == "kafka":
        chosen = on_kafka(chosen, request.getfixturevalue("kafka_broker").bootstrap)
    runtime = Runtime(chosen, run_worker=True, driver=SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=0.0))
    await runtime.start()
    try:
        yield Pipeline(request.param, chosen, runtime)
    finally:
        await runtime.stop()


async def eventually(
    check: Callable[[], Awaitable[bool]], *, timeout: float = 30.0, what: str = "condition"
) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.02)


async def status_of(instance_id: Any) -> DeploymentStatus | None:
    instance = await ComputeInstance.get_or_none(id=instance_id)
    return instance.status if instance else None


async def wait_status(
    instance_id: Any, *statuses: DeploymentStatus, timeout: float = 30.0
) -> ComputeInstance:
    async def reached() -> bool:
        return await status_of(instance_id) in statuses

    await eventually(
        reached, timeout=timeout, what=f"{instance_id} to be {'/'.join(s.value for s in statuses)}"
    )
    return await ComputeInstance.get(id=instance_id)
