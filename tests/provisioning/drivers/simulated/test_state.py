"""The state in the database: one allocation per instance, admission again, restarts, a worker that died."""

from __future__ import annotations

import asyncio

import pytest

from gpupaas.provisioning.drivers.base import Observed, Phase
from gpupaas.provisioning.models import SimulatedAllocation
from gpupaas.provisioning.plan import PermanentError
from tests.conftest import Database
from tests.provisioning.drivers.simulated.plans import driver, make_plan, ns, rows, usage


async def test_apply_twice_keeps_one_allocation_and_one_set_of_objects(db: Database) -> None:
    # given an applied plan
    cluster = driver()
    plan = make_plan(allocation="DEDICATED", gpus=8)
    await cluster.apply(plan)
    before = await SimulatedAllocation.get(instance_id=plan.instance_id)
    state = await cluster.cluster_state()

    # when the same plan is applied again (a redelivered command)
    outputs = (await cluster.apply(plan)).outputs

    # then there is still one allocation on the same node, with the same unchanged objects
    after = await SimulatedAllocation.get(instance_id=plan.instance_id)
    assert await rows() == 1
    assert outputs["namespace"] == ns("train-1")
    assert after.nodes == before.nodes == ["h100-0"]
    assert after.objects == before.objects  # same uids, same resourceVersions
    assert await cluster.cluster_state() == state


async def test_changed_resources_are_admitted_again(db: Database) -> None:
    # given a shared instance with 4 GPUs
    cluster = driver()
    await cluster.apply(make_plan(gpus=4))

    # when its profile now asks for 8, then for 12
    await cluster.apply(make_plan(gpus=8))
    grown = usage(await cluster.cluster_state())
    await cluster.apply(make_plan(gpus=12))

    # then it holds the new amounts, still in one allocation
    assert grown == {"h100-0": (8, 8000, 64)}
    assert usage(await cluster.cluster_state()) == {"h100-0": (8, 8000, 64), "h100-1": (4, 0, 0)}
    assert await rows() == 1


async def test_a_change_that_does_not_fit_keeps_the_old_allocation(db: Database) -> None:
    cluster = driver()
    await cluster.apply(make_plan(gpus=4))

    with pytest.raises(PermanentError, match=r"Insufficient nvidia\.com/gpu: 32 requested, 16 free"):
        await cluster.apply(make_plan(gpus=32))

    assert usage(await cluster.cluster_state()) == {"h100-0": (4, 8000, 64)}
    assert await cluster.observe(make_plan()) == Observed(Phase.READY)


async def test_the_state_survives_a_restart(db: Database) -> None:
    # given an instance applied by one driver
    plan = make_plan(allocation="DEDICATED", gpus=8)
    await driver().apply(plan)

    # when a new driver (a restarted process) looks and applies
    restarted = driver()
    observed = await restarted.observe(plan)
    state = await restarted.cluster_state()
    await restarted.apply(make_plan(name="next", allocation="DEDICATED", gpus=8))

    # then it sees what the first one did and does not hand out the same node again
    assert observed == Observed(Phase.READY)
    assert [n.reserved_for for n in state][:2] == [plan.instance_id, None]
    with pytest.raises(PermanentError, match="0 free on whole nodes"):
        await restarted.apply(make_plan(name="third", allocation="DEDICATED", gpus=8))


async def test_a_worker_that_died_mid_apply_runs_again_without_duplicates(db: Database) -> None:
    # given an apply interrupted after its objects were applied (the worker died)
    cluster = driver()
    plan = make_plan()

    async def dies(message: str) -> None:
        if message.startswith("Waiting"):
            raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await cluster.apply(plan, dies)
    mid_apply = await cluster.observe(plan)

    # when another worker applies the same plan
    outputs = (await driver().apply(plan)).outputs

    # then it was seen in progress, and it now is ready with one allocation and one set of objects
    assert mid_apply.phase == Phase.PROGRESSING
    assert outputs["namespace"] == ns("train-1")
    assert await rows() == 1
    assert len((await SimulatedAllocation.get()).objects) == 3
    assert usage(await cluster.cluster_state()) == {"h100-0": (4, 8000, 64)}
