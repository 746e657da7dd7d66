"""Kafka consumer lag (README, "Observe"): on the real broker, a group member's lag is what it has
not read yet, per partition; the worker exports its group's through /metrics, with its heartbeat.
The in-process bus measures none."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import replace

import httpx
import pytest

from gpupaas.api.metrics import metrics_app
from gpupaas.core.metrics import Metrics
from gpupaas.events.bus import COMMANDS_TOPIC, WORKERS_GROUP, Message
from gpupaas.events.memory import InProcessBus
from gpupaas.events.namespaced import NamespacedBus
from gpupaas.events.relay import TOPICS
from gpupaas.provisioning.registry import DriverRegistry
from gpupaas.settings import Settings
from gpupaas.workers.worker import Worker, WorkerSettings
from tests.conftest import Database
from tests.events.test_bus import collect
from tests.kafka_broker import TansuBroker, unique
from tests.test_metrics import AUTH, TOKEN, Samples, parse

N = 7


async def eventually(check: Callable[[], Awaitable[bool]], what: str, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not await check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {within}s waiting for {what}")
        await asyncio.sleep(0.05)


async def test_a_members_lag_is_what_it_has_not_read(kafka_broker: TansuBroker) -> None:
    bus = kafka_broker.bus()
    await bus.start()
    try:
        # given N messages on a topic before its group's member starts
        topic = unique("lag")
        await bus.ensure_topics([topic])
        for i in range(N):
            await bus.publish(topic, f"key-{i}", b"x")
        consumer = bus.consumer([topic], group=unique("lag-group"))
        await consumer.start()

        # when the member has fetched but not read them, its lag is N (its fetcher prefetches:
        # the high watermarks arrive without a read)
        async def all_waiting() -> bool:
            lag = await consumer.lag()
            return lag is not None and sum(lag.values()) == N

        await eventually(all_waiting, f"a lag of {N}")
        lag = await consumer.lag()
        assert lag is not None and set(lag) <= consumer.assignment()

        # then, once it has read them, 0 on every partition it fetched from
        await collect(consumer, N)
        lag = await consumer.lag()
        assert lag is not None and sum(lag.values()) == 0 and lag
    finally:
        await bus.stop()


async def test_the_in_process_bus_measures_no_lag() -> None:
    bus = InProcessBus()
    await bus.start()
    await bus.ensure_topics(["t"])
    consumer = bus.consumer(["t"], group="g")
    await consumer.start()
    assert await consumer.lag() is None
    await bus.stop()


async def scrape(settings: Settings, metrics: Metrics) -> Samples:
    app = metrics_app(metrics, replace(settings, metrics_token=TOKEN))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://w") as http:
        response = await http.get("/metrics", headers=AUTH)
        assert response.status_code == 200
        return parse(response.text)


def lag_of(samples: Samples) -> dict[tuple[tuple[str, str], ...], float]:
    return {labels: v for (name, labels), v in samples.items() if name == "gpupaas_kafka_consumer_lag"}


async def test_the_worker_exports_its_lag_and_heartbeat(
    db: Database, settings: Settings, kafka_broker: TansuBroker, monkeypatch: pytest.MonkeyPatch
) -> None:
    # given N commands waiting on the broker (in a namespace of this test's own)
    bus = NamespacedBus(kafka_broker.bus(partitions=2), f"t{uuid.uuid4().hex[:10]}")
    await bus.start()
    await bus.ensure_topics(TOPICS)
    for i in range(N):
        await bus.publish(COMMANDS_TOPIC, f"instance-{i}", json.dumps({"type": "run", "runId": "x"}).encode())
    metrics = Metrics()
    worker = Worker(
        bus,
        DriverRegistry(settings),
        WorkerSettings(concurrency=1, heartbeat_seconds=0.05),
        metrics=metrics,
    )
    # and a worker whose one slot is held by its first command until the test lets it go
    release = asyncio.Event()
    handled: list[Message] = []

    async def hold(message: Message) -> None:
        await release.wait()
        handled.append(message)

    monkeypatch.setattr(worker, "handle_message", hold)
    started = time.time()
    await worker.start()
    try:
        # when /metrics is scraped: the worker has taken two commands (one in its slot, one
        # waiting for it), so N - 2 wait on the broker, per partition of its group
        async def lag_is(total: int) -> bool:
            found = lag_of(await scrape(settings, metrics))
            return bool(found) and sum(found.values()) == total

        await eventually(lambda: lag_is(N - 2), f"a lag of {N - 2}")
        labels = lag_of(await scrape(settings, metrics))
        assert {dict(key)["group"] for key in labels} == {WORKERS_GROUP}
        assert {dict(key)["topic"] for key in labels} == {COMMANDS_TOPIC}
        assert {dict(key)["partition"] for key in labels} <= {"0", "1"}

        # and the heartbeat moves while the worker consumes
        beat = ("gpupaas_worker_heartbeat_timestamp_seconds", (("worker", worker.name),))
        first = (await scrape(settings, metrics))[beat]
        assert first >= started

        async def moved() -> bool:
            samples = await scrape(settings, metrics)
            return samples[beat] > first

        await eventually(moved, "the heartbeat to move")

        # then, once the commands are handled, the lag is 0
        release.set()

        async def all_handled() -> bool:
            return len(handled) == N

        await eventually(all_handled, "every command handled")
        await eventually(lambda: lag_is(0), "a lag of 0")
    finally:
        await worker.stop()
        await bus.stop()
    # and a stopped worker leaves no lag behind
    assert lag_of(await scrape(settings, metrics)) == {}


async def test_the_heartbeat_stops_when_the_worker_stops_consuming(db: Database, settings: Settings) -> None:
    metrics = Metrics()
    worker = Worker(
        InProcessBus(), DriverRegistry(settings), WorkerSettings(heartbeat_seconds=0.01), metrics=metrics
    )
    await worker.bus.start()
    await worker.bus.ensure_topics(TOPICS)
    # a process whose worker has not started says nothing (not "0: silent since 1970")
    assert not [k for k in await scrape(settings, metrics) if k[0].startswith("gpupaas_worker_heartbeat")]
    await worker.start()
    try:
        consuming, _, beating = worker._tasks

        async def beaten() -> bool:
            beats = [
                sample.value for family in metrics.worker_heartbeat.collect() for sample in family.samples
            ]
            return bool(beats) and beats[0] > 0

        async def stopped() -> bool:
            return beating.done()

        await eventually(beaten, "a first heartbeat")
        consuming.cancel()
        await eventually(stopped, "the heartbeat to stop")
        # the in-process bus measures no lag: nothing is exported
        assert lag_of(await scrape(settings, metrics)) == {}
    finally:
        await worker.stop()
        await worker.bus.stop()
