"""StatusBroadcaster.once: what every subscriber of an event reads is read once per event."""

from __future__ import annotations

import asyncio

import pytest

from gpupaas.events.broadcast import StatusBroadcaster
from gpupaas.events.memory import InProcessBus


async def test_concurrent_and_later_readers_of_a_key_share_one_read() -> None:
    broadcaster = StatusBroadcaster(InProcessBus())
    reads = 0

    async def load() -> str:
        nonlocal reads
        reads += 1
        await asyncio.sleep(0.01)
        return "row"

    results = await asyncio.gather(*(broadcaster.once(("i", 1), load) for _ in range(1000)))
    assert results == ["row"] * 1000 and reads == 1
    assert await broadcaster.once(("i", 1), load) == "row" and reads == 1  # kept for later ones
    assert await broadcaster.once(("i", 2), load) == "row" and reads == 2  # a new version: read


async def test_a_failed_read_is_not_kept_and_old_keys_go() -> None:
    broadcaster = StatusBroadcaster(InProcessBus())
    attempts = 0

    async def flaky() -> int:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise ConnectionError("database restarting")
        return attempts

    with pytest.raises(ConnectionError):
        await broadcaster.once("k", flaky)
    assert await broadcaster.once("k", flaky) == 2

    async def value() -> int:
        return 0

    for key in range(StatusBroadcaster.SHARED_READS + 10):
        await broadcaster.once(key, value)
    assert len(broadcaster._shared) == StatusBroadcaster.SHARED_READS
