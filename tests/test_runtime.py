"""A process told to stop always stops: Runtime.stop() gives each part `stop_timeout` seconds, logs
one that does not stop in time by name, and stops the parts after it all the same."""

from __future__ import annotations

import asyncio
import logging

import pytest

from gpupaas.provisioning.drivers.simulated.driver import SimulatedDriver
from gpupaas.provisioning.inventory import DEFAULT_INVENTORY
from gpupaas.runtime import Runtime
from gpupaas.settings import Settings


async def test_a_part_that_hangs_on_stop_is_named_and_left_behind(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = Runtime(settings, run_worker=True, driver=SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=0.0))
    await runtime.start()
    assert runtime.worker is not None
    hung = asyncio.Event()
    worker_stop = runtime.worker.stop

    async def hangs() -> None:
        await worker_stop()
        hung.set()
        await asyncio.Event().wait()  # never set, as a stop stuck on a dead connection

    runtime.worker.stop = hangs  # type: ignore[method-assign]
    runtime.stop_timeout = 0.2
    bus_stopped = asyncio.Event()
    bus_stop = runtime.bus.stop

    async def bus_stops() -> None:
        await bus_stop()
        bus_stopped.set()

    runtime.bus.stop = bus_stops  # type: ignore[method-assign]

    with caplog.at_level(logging.ERROR, logger="gpupaas.runtime"):
        await asyncio.wait_for(runtime.stop(), 10)

    assert hung.is_set()
    assert bus_stopped.is_set(), "the parts after the one that hung were not stopped"
    assert [r.getMessage() for r in caplog.records if r.name == "gpupaas.runtime"] == [
        "stopping the worker took over 0.2 s; going on without it"
    ]
    await runtime.stop()  # stopped once: again is a no-op


async def test_parts_that_stop_in_time_log_nothing(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    runtime = Runtime(settings, run_worker=True, driver=SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=0.0))
    await runtime.start()
    with caplog.at_level(logging.ERROR, logger="gpupaas.runtime"):
        await runtime.stop()
    assert [r for r in caplog.records if r.name == "gpupaas.runtime"] == []
