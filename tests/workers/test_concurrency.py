"""A worker carries out several commands at once: one instance's commands (one key) still run one
after another in offset order, and a partition is committed only up to its first unfinished
command. Checked on the in-process bus with a worker whose handler is instrumented.

Everything here runs inside the test's event loop, so its tests run on a fake loop clock (looptime):
the clock moves only when nothing in the loop can run, so "after 0.1 s nothing else started" means
that every task had its chance, however slow or busy the machine is.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from gpupaas.events.bus import COMMANDS_TOPIC, WORKERS_GROUP, Message
from gpupaas.events.memory import InProcessBus
from gpupaas.provisioning.registry import DriverRegistry
from gpupaas.settings import Settings
from gpupaas.workers.worker import Worker, WorkerSettings


class GatedWorker(Worker):
    """Handles a command by waiting for its gate (opened by the test) and noting start and end."""

    def __init__(self, bus: InProcessBus, concurrency: int) -> None:
        # no reaper: it would query a database these tests do not have
        settings = WorkerSettings(concurrency=concurrency, reaper_interval_seconds=3600)
        super().__init__(bus, DriverRegistry.__new__(DriverRegistry), settings, name="w")
        self.gates: dict[str, asyncio.Event] = {}
        self.log: list[tuple[str, str]] = []
        self.running: set[str] = set()
        self.most_at_once = 0

    def gate(self, value: str) -> asyncio.Event:
        return self.gates.setdefault(value, asyncio.Event())

    async def handle_message(self, message: Message) -> None:
        value = message.value.decode()
        self.log.append(("start", value))
        self.running.add(value)
        self.most_at_once = max(self.most_at_once, len(self.running))
        try:
            await self.gate(value).wait()
        finally:
            self.running.discard(value)
            self.log.append(("end", value))


async def eventually(check: Callable[[], bool | Awaitable[bool]], what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while True:
        result = check()
        if result if isinstance(result, bool) else await result:
            return
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.01)


@pytest.fixture
async def bus() -> AsyncIterator[InProcessBus]:
    bus = InProcessBus(partitions=1)  # one partition: every command is in one offset order
    await bus.start()
    await bus.ensure_topics([COMMANDS_TOPIC])
    try:
        yield bus
    finally:
        await bus.stop()


def committed(bus: InProcessBus) -> int:
    return bus._groups[WORKERS_GROUP].committed.get((COMMANDS_TOPIC, 0), 0)


@pytest.mark.looptime
async def test_commands_of_different_keys_run_at_once_and_commits_wait_for_the_oldest(
    bus: InProcessBus,
) -> None:
    worker = GatedWorker(bus, concurrency=4)
    await worker.start()
    try:
        for value in ("a", "b", "c"):
            await bus.publish(COMMANDS_TOPIC, f"key-{value}", value.encode())
        await eventually(lambda: worker.running == {"a", "b", "c"}, "three commands running at once")

        worker.gate("b").set()
        worker.gate("c").set()
        await eventually(lambda: {("end", "b"), ("end", "c")} <= set(worker.log), "b and c to finish")
        await asyncio.sleep(0.1)  # the committer has seen them end (the fake clock waits for it)
        assert committed(bus) == 0  # offset 0 ("a") is not done: nothing may be committed

        worker.gate("a").set()
        await eventually(lambda: committed(bus) == 3, "all three committed")
    finally:
        await worker.stop()


@pytest.mark.looptime
async def test_one_keys_commands_run_one_after_another_in_order(bus: InProcessBus) -> None:
    worker = GatedWorker(bus, concurrency=8)
    await worker.start()
    try:
        for value in ("1", "2", "3"):
            await bus.publish(COMMANDS_TOPIC, "instance-x", value.encode())
        await bus.publish(COMMANDS_TOPIC, "instance-y", b"other")
        await eventually(lambda: {"1", "other"} <= worker.running, "the first of x and y running")
        await asyncio.sleep(0.1)  # every task that could start has started (fake clock)
        assert "2" not in worker.running and "3" not in worker.running

        worker.gate("3").set()  # opened early: 3 must still wait for 1 and 2
        worker.gate("1").set()
        await eventually(lambda: "2" in worker.running, "2 to start after 1")
        assert ("end", "3") not in worker.log
        worker.gate("2").set()
        worker.gate("other").set()
        await eventually(lambda: committed(bus) == 4, "everything committed")
        x_events = [event for event in worker.log if event[1] in ("1", "2", "3")]
        assert x_events == [
            ("start", "1"),
            ("end", "1"),
            ("start", "2"),
            ("end", "2"),
            ("start", "3"),
            ("end", "3"),
        ]
    finally:
        await worker.stop()


@pytest.mark.looptime
async def test_no_more_than_the_concurrency_run_at_once(bus: InProcessBus) -> None:
    worker = GatedWorker(bus, concurrency=3)
    await worker.start()
    try:
        values = [str(i) for i in range(10)]
        for value in values:
            await bus.publish(COMMANDS_TOPIC, f"key-{value}", value.encode())
        await eventually(lambda: len(worker.running) == 3, "three running")
        await asyncio.sleep(0.1)  # every task that could start has started (fake clock)
        assert len(worker.running) == 3
        for value in values:
            worker.gate(value).set()
        await eventually(lambda: committed(bus) == 10, "all ten committed")
        assert worker.most_at_once == 3
    finally:
        await worker.stop()


@pytest.mark.looptime
async def test_stopping_cancels_what_runs_and_commits_nothing_unfinished(bus: InProcessBus) -> None:
    worker = GatedWorker(bus, concurrency=4)
    await worker.start()
    await bus.publish(COMMANDS_TOPIC, "k", b"stuck")
    await eventually(lambda: "stuck" in worker.running, "the command running")
    await worker.stop()
    assert ("end", "stuck") in worker.log and committed(bus) == 0

    # The next worker of the group gets the command again.
    again = GatedWorker(bus, concurrency=4)
    again.gate("stuck").set()
    await again.start()
    try:
        await eventually(lambda: committed(bus) == 1, "the command done by the next worker")
        assert ("end", "stuck") in again.log
    finally:
        await again.stop()


def test_concurrency_comes_from_the_settings() -> None:
    from gpupaas.runtime import worker_settings

    settings = Settings.from_env({"GPUPAAS_DATABASE_URL": "postgres://x@h/d", "GPUPAAS_SECRET_KEY": "k" * 32})
    assert worker_settings(settings).concurrency == 16
    chosen = Settings.from_env(
        {
            "GPUPAAS_DATABASE_URL": "postgres://x@h/d",
            "GPUPAAS_SECRET_KEY": "k" * 32,
            "GPUPAAS_WORKER_CONCURRENCY": "4",
        }
    )
    assert worker_settings(chosen).concurrency == 4


@pytest.mark.looptime
async def test_progress_lines_are_written_at_most_once_per_interval_and_the_last_one_follows() -> None:
    from gpupaas.workers.worker import ProgressWriter

    loop = asyncio.get_running_loop()
    start = loop.time()
    written: list[tuple[float, str]] = []

    def texts() -> list[str]:
        return [text for _, text in written]

    async def write(text: str) -> None:
        written.append((round(loop.time() - start, 6), text))  # the fake clock counts in microseconds

    async def at(moment: float) -> None:
        """Until `moment` seconds after the start (the fake clock gets there at once)."""
        await asyncio.sleep(start + moment - loop.time())

    progress = ProgressWriter(write, interval=0.2)
    await progress("scheduling")
    await progress("creating namespace")
    assert written == [(0.0, "scheduling")]  # at once; the next ones within the interval wait
    await at(0.05)
    await progress("applying")
    await at(0.15)
    await progress("waiting")
    await at(0.199)
    assert texts() == ["scheduling"]
    await at(0.201)
    # when the interval is over, only the latest of those that waited
    assert written == [(0.0, "scheduling"), (0.2, "waiting")]

    await at(0.35)
    await progress("pulling the image")  # 0.15 s after the last write: it waits for the interval
    assert texts() == ["scheduling", "waiting"]
    await at(0.401)
    assert written[-1] == (0.4, "pulling the image")

    await at(0.65)
    await progress("ready")  # the interval is over: written at once
    assert written[-1] == (0.65, "ready")
    await progress("superseded")  # would be written at 0.85
    await progress.close()  # the run ended: its final message replaces what still waits
    await at(10)
    assert texts() == ["scheduling", "waiting", "pulling the image", "ready"]
