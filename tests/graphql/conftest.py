"""What the subscription fan-out tests share (test_fanout.py, test_groups.py): the app under uvicorn
with a runtime whose simulated deploys take no time, and a count of the executions of status
events' selections."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from typing import Any

import pytest

from gpupaas.app import create_app
from gpupaas.compute.graphql import ComputeInstanceStatusEvent
from gpupaas.graphql.executor import ExecutionContext
from gpupaas.graphql.groups import Group, groups_of
from gpupaas.provisioning.drivers.simulated.driver import SimulatedDriver
from gpupaas.provisioning.inventory import DEFAULT_INVENTORY
from gpupaas.runtime import Runtime
from gpupaas.settings import Settings
from tests import ws
from tests.conftest import serving


@dataclass
class Server:
    url: str
    runtime: Runtime

    async def subscribed(self, key: str, count: int, *, by: str = "project") -> None:
        """Until `count` subscriptions are registered with the broadcaster for a project or an
        instance (a subscription registers when its resolver starts, after the subscribe message;
        one parked in a fan-out group counts in its group)."""
        broadcaster = self.runtime.broadcaster
        assert broadcaster is not None
        index = broadcaster._by_project if by == "project" else broadcaster._by_instance
        await self.until(
            lambda: sum(s.subscribers() for s in index.get(key, ())) >= count,
            f"{count} subscriptions to {key} not registered",
        )

    def groups(self) -> list[Group]:
        assert self.runtime.broadcaster is not None
        return list(groups_of(self.runtime.broadcaster).groups.values())

    def parked(self) -> int:
        return sum(len(group.members) for group in self.groups())

    async def until(self, condition: Callable[[], bool], message: str) -> None:
        deadline = time.monotonic() + 15
        while not condition():
            assert time.monotonic() < deadline, message
            await asyncio.sleep(0.01)


Serve = Callable[..., contextlib.AbstractAsyncContextManager[Server]]


@pytest.fixture
def serve(settings: Settings) -> Serve:
    """`async with serve(**settings_changes) as server`."""

    @contextlib.asynccontextmanager
    async def serving_with(**changes: Any) -> AsyncIterator[Server]:
        fast = replace(settings, simulated_phase_seconds=0.0, run_retry_backoff_seconds=0.01, **changes)
        driver = SimulatedDriver(DEFAULT_INVENTORY, phase_seconds=0.0)
        runtime = Runtime(fast, run_worker=True, driver=driver)
        await runtime.start()
        try:
            async with serving(create_app(fast, migrate=False, runtime=runtime)) as url:
                yield Server(url, runtime)
        finally:
            await runtime.stop()

    return serving_with


@pytest.fixture
async def server(serve: Serve) -> AsyncIterator[Server]:
    async with serve() as running:
        yield running


@pytest.fixture
def executions(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The event objects of every execution of a status event's selection, as graphql-core runs it."""
    roots: list[Any] = []
    execute = ExecutionContext.execute_operation

    def counted(self: ExecutionContext, serially: bool | None = None) -> Any:
        if isinstance(self.root_value, ComputeInstanceStatusEvent):
            roots.append(self.root_value)
        return execute(self, serially)

    monkeypatch.setattr(ExecutionContext, "execute_operation", counted)
    return roots


async def receive(session: ws.Session, count: int) -> list[dict[str, Any]]:
    return [await session.receive(timeout=15) for _ in range(count)]
