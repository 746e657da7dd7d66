"""Failure injection through a plan's annotations."""

from __future__ import annotations

import pytest

from gpupaas.provisioning.drivers.base import Observed, Phase
from gpupaas.provisioning.drivers.simulated.failures import FAIL_ANNOTATION, FAIL_TIMES_ANNOTATION
from gpupaas.provisioning.plan import PermanentError, TemporaryError
from tests.conftest import Database
from tests.provisioning.drivers.simulated.plans import driver, make_plan, ns, rows, usage


async def test_an_injected_apply_failure_is_permanent_and_keeps_what_was_applied(db: Database) -> None:
    cluster = driver()
    plan = make_plan(annotations={FAIL_ANNOTATION: "apply"})

    with pytest.raises(PermanentError) as error:
        await cluster.apply(plan)

    assert str(error.value) == (
        "simulated failure: image pull back-off: the container image could not be pulled "
        '(annotation simulated.gpupaas.io/fail: "apply")'
    )
    assert await cluster.observe(plan) == Observed(Phase.FAILED, str(error.value))
    assert usage(await cluster.cluster_state()) == {"h100-0": (4, 8000, 64)}
    await cluster.destroy(plan)
    assert usage(await cluster.cluster_state()) == {}


async def test_an_injected_destroy_failure_keeps_the_instance(db: Database) -> None:
    cluster = driver()
    failing = make_plan(annotations={FAIL_ANNOTATION: "destroy"})
    await cluster.apply(failing)

    with pytest.raises(PermanentError, match=f"namespace {ns('train-1')} is stuck terminating") as error:
        await cluster.destroy(failing)

    assert await cluster.observe(failing) == Observed(Phase.FAILED, str(error.value))
    assert await rows() == 1
    await cluster.destroy(make_plan())
    assert await rows() == 0


async def test_fail_times_fails_temporarily_then_succeeds_across_restarts(db: Database) -> None:
    # given a plan whose first two attempts fail
    plan = make_plan(annotations={FAIL_TIMES_ANNOTATION: "2"})

    # when it is applied three times, by a new driver each time (restarts)
    errors: list[Exception] = []
    for _ in range(2):
        with pytest.raises(TemporaryError) as error:
            await driver().apply(plan)
        errors.append(error.value)
    outputs = (await driver().apply(plan)).outputs

    # then the first two are temporary failures and the third succeeds, all on one allocation
    assert [str(e) for e in errors] == [
        f"simulated temporary failure {n} of 2: the API server did not answer in time "
        '(annotation simulated.gpupaas.io/fail-times: "2")'
        for n in (1, 2)
    ]
    assert not errors[0].permanent  # type: ignore[attr-defined]
    assert outputs["namespace"] == ns("train-1")
    assert await rows() == 1


@pytest.mark.parametrize(
    ("annotations", "message"),
    [
        (
            {FAIL_ANNOTATION: "sometimes"},
            'simulated.gpupaas.io/fail: "sometimes" is not one of: apply, destroy',
        ),
        ({FAIL_TIMES_ANNOTATION: "two"}, 'simulated.gpupaas.io/fail-times: "two" must be a whole number'),
    ],
)
async def test_a_bad_failure_annotation_is_named(
    db: Database, annotations: dict[str, str], message: str
) -> None:
    with pytest.raises(PermanentError, match=message):
        await driver().apply(make_plan(annotations=annotations))
    assert await rows() == 0
