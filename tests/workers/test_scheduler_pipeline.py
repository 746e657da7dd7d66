"""Auto-stop through the whole pipeline: a deploy that succeeds arms the instance's time limits
(the worker writes the due time), the warning reaches a live subscriber over a real websocket, and
the scheduler's destroy runs through the outbox, bus, worker and simulated cluster as a person's
would, with its reason. The scheduler's clock is a test's; the worker's is real."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime, timedelta

import pytest

from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.core.time_limits import Limits
from gpupaas.runs.models import DeploymentRun
from gpupaas.runs.states import RunAction, RunStatus
from gpupaas.workers.scheduler import Scheduler
from tests import ws
from tests.conftest import serving
from tests.factories import make_instance, make_profile, make_project, make_user
from tests.workers.conftest import Pipeline, wait_status

STATUS = "subscription($id: ID!) { computeInstanceStatus(id: $id) { status message } }"


@pytest.fixture
async def server(pipeline: Pipeline) -> AsyncIterator[str]:
    from gpupaas.app import create_app

    async with serving(create_app(pipeline.settings, migrate=False, runtime=pipeline.runtime)) as url:
        yield url


@pytest.mark.parametrize("pipeline", ["memory"], indirect=True)
async def test_a_deploy_arms_the_auto_stop_and_the_scheduler_destroys_it_with_a_warning_first(
    db: object, server: str
) -> None:
    alice = await make_user("alice")
    ml = await make_project("ml", alice=Role.MEMBER)
    profile = await make_profile(ml, time_limits=Limits(60, 24 * 60))
    launched = await make_instance(ml, profile, "nb", deploy=True, by=alice)
    assert (launched.auto_stop_minutes, launched.max_lifetime_minutes) == (60, 24 * 60)  # copied at launch
    box = await wait_status(launched.id, DeploymentStatus.SUCCESS)
    # armed by the worker when the deploy succeeded
    assert box.running_since is not None
    assert box.stop_at == box.running_since + timedelta(minutes=60)
    assert box.lifetime_ends_at == box.running_since + timedelta(days=1)
    assert box.stop_reason == "auto-stop after 1h"
    due = box.stop_at

    class Clock:
        at = due - timedelta(minutes=10)

        def __call__(self) -> datetime:
            return self.at

    clock = Clock()
    scheduler = Scheduler(warning_minutes=15, interval_seconds=1.0, clock=clock)
    async with ws.connect(server, token=alice.token) as session:
        await session.subscribe(STATUS, {"id": str(box.id)})
        assert (await session.next_data())["computeInstanceStatus"] == {"status": "SUCCESS", "message": None}
        assert (await scheduler.tick()).warned == 1
        warning = (await session.next_data())["computeInstanceStatus"]
        assert warning["status"] == "SUCCESS"
        assert warning["message"].startswith("this instance stops in 10m (")
        assert warning["message"].endswith(", auto-stop after 1h): its owner can extend it")
        clock.at = due
        assert (await scheduler.tick()).stopped == 1
        seen = [(await session.next_data())["computeInstanceStatus"] for _ in range(2)]
        assert seen == [
            {"status": "DESTROYING", "message": "auto-stop after 1h"},
            {"status": "NOT_DEPLOYED", "message": None},
        ]
    run = await DeploymentRun.get(instance_id=box.id, action=RunAction.DESTROY)
    assert (run.status, run.reason) == (RunStatus.SUCCEEDED, "auto-stop after 1h")
    # no longer running: nothing is due
    done = await ComputeInstance.get(id=box.id)
    assert (done.running_since, done.stop_at, done.lifetime_ends_at) == (None, None, None)
    assert (await scheduler.tick()).stopped == 0
