"""The status watchdog (events/watchdog.py): an API process whose status consumer hears nothing of
what the outbox publishes reports itself not ready on /readyz (reason under `statusEvents`),
reconnects the consumer, tells its subscribers to catch up, counts it; and is ready again once it
hears events. A process that hears everything, or to which nothing was published, stays ready."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from gpupaas.app import create_app
from gpupaas.compute.states import DeploymentStatus
from gpupaas.events.broadcast import Resync
from gpupaas.events.bus import (
    STATUS_TOPIC,
    Assignment,
    Bus,
    Consumer,
    Message,
    RebalanceCallback,
    ResetCallback,
)
from gpupaas.events.models import OutboxMessage
from gpupaas.events.namespaced import NamespacedBus
from gpupaas.events.watchdog import StatusWatchdog
from gpupaas.provisioning.drivers.simulated.driver import SimulatedDriver
from gpupaas.provisioning.inventory import DEFAULT_INVENTORY
from gpupaas.runtime import Runtime
from gpupaas.settings import Settings
from tests.factories import make_instance, make_profile, make_project
from tests.kafka_broker import TansuBroker
from tests.workers.conftest import eventually, fast, on_kafka, wait_status

S = DeploymentStatus


class DeafConsumer:
    """A status consumer that reads from the broker and hears nothing: what a consumer stuck on a
    position the broker will never fill looks like from above."""

    def __init__(self, inner: Consumer) -> None:
        self.inner = inner

    async def start(self) -> None:
        await self.inner.start()

    async def stop(self) -> None:
        await self.inner.stop()

    async def getmany(self, timeout: float, max_records: int = 100) -> list[Message]:
        await self.inner.getmany(timeout, max_records)
        return []

    async def commit(self, messages: Sequence[Message]) -> None:
        await self.inner.commit(messages)

    def assignment(self) -> Assignment:
        return self.inner.assignment()

    async def lag(self) -> dict[tuple[str, int], int] | None:
        return await self.inner.lag()


class FirstStatusConsumerDeaf:
    """The bus as it is, except that the first status consumer it makes is deaf."""

    def __init__(self, inner: Bus) -> None:
        self.inner = inner
        self.deafened = 0

    async def start(self) -> None:
        await self.inner.start()

    async def stop(self) -> None:
        await self.inner.stop()

    async def ensure_topics(self, topics: Sequence[str]) -> None:
        await self.inner.ensure_topics(topics)

    async def publish(
        self, topic: str, key: str | None, value: bytes, headers: Sequence[tuple[str, bytes]] = ()
    ) -> None:
        await self.inner.publish(topic, key, value, headers)

    def consumer(
        self,
        topics: Sequence[str],
        *,
        group: str | None,
        on_assigned: RebalanceCallback | None = None,
        on_revoked: RebalanceCallback | None = None,
        on_reset: ResetCallback | None = None,
    ) -> Consumer:
        inner = self.inner.consumer(
            topics, group=group, on_assigned=on_assigned, on_revoked=on_revoked, on_reset=on_reset
        )
        if list(topics) == [STATUS_TOPIC] and group is None and not self.deafened:
            self.deafened += 1
            return DeafConsumer(inner)
        return inner


@pytest.fixture
async def deaf(settings: Settings, kafka_broker: TansuBroker) -> AsyncIterator[Runtime]:
    chosen = replace(on_kafka(fast(settings), kafka_broker.bootstrap), status_watchdog_seconds=1.0)
    bus = FirstStatusConsumerDeaf(NamespacedBus(kafka_broker.bus(), chosen.kafka_namespace))
    runtime = Runtime(
        chosen, run_worker=True, bus=bus, driver=SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=0.0)
    )
    await runtime.start()
    try:
        yield runtime
    finally:
        await runtime.stop()


async def test_a_deaf_status_consumer_makes_the_process_not_ready_and_is_reconnected(
    db: object, deaf: Runtime, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="gpupaas.watchdog")
    app = create_app(deaf.settings, migrate=False, runtime=deaf)
    broadcaster, watchdog = deaf.broadcaster, deaf.watchdog
    assert broadcaster is not None and watchdog is not None
    project = await make_project("ml")
    profile = await make_profile(project)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://a") as http:
        ready = await http.get("/readyz")
        assert ready.status_code == 200 and ready.json()["statusEvents"] == "ok"
        first = await make_instance(project, profile, deploy=True)
        async with broadcaster.instance(str(first.id)) as subscription:
            # given the outbox publishes the deploy's status events that the consumer does not hear
            assert (await wait_status(first.id, S.SUCCESS, S.FAILED)).status == S.SUCCESS
            seen: list[dict[str, object]] = []

            # then, within the watchdog's seconds, /readyz says so
            async def not_ready() -> bool:
                answer = await http.get("/readyz")
                if answer.status_code == 503:
                    seen.append(answer.json())
                return answer.status_code == 503

            await eventually(not_ready, timeout=15, what="/readyz to say 503")
            body = seen[-1]
            assert body["status"] == "unavailable" and body["database"] == "ok"
            assert "no status event received for 1s" in str(body["statusEvents"])
            assert str(project.id) in str(body["statusEvents"])
            # and the consumer was reconnected, counted, and the subscriber told to catch up
            assert deaf.metrics.registry.get_sample_value("gpupaas_status_consumer_reconnects_total") == 1
            queued: list[object] = []

            async def told() -> bool:
                while not subscription.queue.empty():
                    queued.append(subscription.queue.get_nowait())
                return any(isinstance(item, Resync) for item in queued)

            await eventually(told, what="the subscriber to be told to catch up")
            assert broadcaster.listening
            assert any("status consumer is deaf" in r.getMessage() for r in caplog.records)
        # when the new consumer hears the next events
        second = await make_instance(project, profile, deploy=True)
        assert (await wait_status(second.id, S.SUCCESS, S.FAILED)).status == S.SUCCESS

        async def ready_again() -> bool:
            return (await http.get("/readyz")).status_code == 200

        await eventually(ready_again, timeout=15, what="/readyz to say 200 again")
        assert broadcaster.heard[str(project.id)] >= 4  # the second deploy's events, heard
        assert deaf.metrics.registry.get_sample_value("gpupaas_status_consumer_reconnects_total") == 1


async def test_a_process_that_hears_everything_or_nothing_published_stays_ready(
    db: object, settings: Settings
) -> None:
    runtime = Runtime(
        fast(settings), run_worker=True, driver=SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=0.0)
    )
    await runtime.start()
    try:
        assert runtime.broadcaster is not None
        later = datetime.now(UTC) + timedelta(seconds=60)
        watchdog = StatusWatchdog(runtime.broadcaster, 1.0, clock=lambda: later)
        # nothing published yet: ready a minute later
        await watchdog.check()
        assert watchdog.problem is None
        # (what is published within its grace after the consumer started does not count)
        since = runtime.broadcaster.listening_since
        assert since is not None

        async def past_the_grace() -> bool:
            return datetime.now(UTC) > since + timedelta(seconds=0.5)

        await eventually(past_the_grace, what="the watchdog's grace to pass")
        project = await make_project("ml")
        instance = await make_instance(project, await make_profile(project), deploy=True)
        assert (await wait_status(instance.id, S.SUCCESS, S.FAILED)).status == S.SUCCESS

        async def heard() -> bool:
            return runtime.broadcaster is not None and runtime.broadcaster.heard.get(str(project.id), 0) >= 3

        await eventually(heard, what="the broadcaster to hear the deploy")
        # (the relay marks what it published sent a moment later, several batches at once)
        await eventually(_all_marked_sent, what="the relay to mark the events sent")
        await watchdog.check()
        assert watchdog.problem is None
        # had it heard only the first event, the newest (published over 1 s before "later") says so
        runtime.broadcaster.heard[str(project.id)] = 1
        assert "cursor 3" in (await watchdog.missed() or "")
    finally:
        await runtime.stop()


async def _all_marked_sent() -> bool:
    return not await OutboxMessage.exists(sent_at=None)
