"""The deploy pipeline under test: a runtime (bus, relay, broadcaster, worker with the simulated
driver at zero delay) on the in-process bus and on a real Kafka-protocol broker (tansu)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
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


@asynccontextmanager
async def kubernetes_runtime(
    settings: Settings,
    kubeconfig: str,
    *,
    nodes: Sequence[dict[str, Any]],
    fake: Any,
    is_default: bool = False,
    **changes: Any,
) -> AsyncIterator[tuple[Runtime, Any]]:
    """A running runtime (in-process bus, worker, drift watch) whose KUBERNETES cluster "lab" is the
    fake API server `fake` (with `nodes`), registered through the service as a platform admin
    would, with `kubeconfig`; short driver timings unless `changes` says otherwise."""
    from gpupaas.accounts.service import actor_for
    from gpupaas.clusters import service as clusters
    from gpupaas.provisioning.registry import ClusterDriver
    from tests.factories import make_user

    fake.set_nodes(list(nodes))
    chosen = replace(
        fast(settings),
        **{
            "kubernetes_poll_seconds": 0.05,
            "kubernetes_readiness_timeout_seconds": 10,
            "kubernetes_request_timeout_seconds": 5,
            **changes,
        },
    )
    runtime = Runtime(chosen, run_worker=True)
    root = await make_user("root", platform_admin=True)
    cluster = await clusters.create_cluster(
        await actor_for(root.user),
        clusters.ClusterIn(
            name="lab",
            driver=ClusterDriver.KUBERNETES,
            kubeconfig=kubeconfig,
            access_address="gpu.example.com",
            is_default=is_default or None,
        ),
        secret_key=chosen.secret_key,
        checker=runtime.drivers,
    )
    await runtime.start()
    try:
        yield runtime, cluster
    finally:
        await runtime.stop()
