"""The status state machine on its own: which request is allowed in which status, and where runs lead."""

from __future__ import annotations

import pytest

from gpupaas.compute import states
from gpupaas.compute.states import DeploymentStatus as S
from gpupaas.compute.states import Request
from gpupaas.runs.states import RunAction

ALLOWED = {
    Request.DEPLOY: {S.NOT_DEPLOYED, S.SUCCESS, S.FAILED},
    Request.DESTROY: {S.SUCCESS, S.FAILED},
    Request.DELETE: {S.NOT_DEPLOYED, S.SUCCESS, S.FAILED},
    Request.UPDATE: set(S),
    Request.SHARE: set(S),
}


@pytest.mark.parametrize("request_", list(Request))
@pytest.mark.parametrize("status", list(S))
def test_every_request_in_every_status(request_: Request, status: S) -> None:
    if status in ALLOWED[request_]:
        states.check(request_, status)
    else:
        with pytest.raises(states.TransitionError) as refused:
            states.check(request_, status)
        assert status.value in str(refused.value)


@pytest.mark.parametrize("status", [S.WAITING, S.IN_PROGRESS, S.DESTROYING])
def test_busy_instances_say_to_wait(status: S) -> None:
    for request_ in (Request.DEPLOY, Request.DESTROY, Request.DELETE):
        with pytest.raises(states.TransitionError, match="wait until the current run finishes"):
            states.check(request_, status)


def test_where_requests_lead() -> None:
    assert states.after_request(Request.DEPLOY, S.NOT_DEPLOYED) == S.WAITING
    assert states.after_request(Request.DEPLOY, S.FAILED) == S.WAITING
    assert states.after_request(Request.DESTROY, S.SUCCESS) == S.DESTROYING
    assert states.after_request(Request.DELETE, S.SUCCESS) == S.DESTROYING
    assert states.after_request(Request.DELETE, S.NOT_DEPLOYED) == S.NOT_DEPLOYED
    assert states.after_request(Request.UPDATE, S.IN_PROGRESS) == S.IN_PROGRESS


def test_where_runs_lead() -> None:
    assert states.run_started(RunAction.DEPLOY) == S.IN_PROGRESS
    assert states.run_succeeded(RunAction.DEPLOY) == S.SUCCESS
    assert states.run_failed(RunAction.DEPLOY) == S.FAILED
    assert states.run_started(RunAction.DESTROY) == S.DESTROYING
    assert states.run_succeeded(RunAction.DESTROY) == S.NOT_DEPLOYED
    assert states.run_failed(RunAction.DESTROY) == S.FAILED


def test_destroy_of_nothing_says_so() -> None:
    with pytest.raises(states.TransitionError, match="nothing is deployed"):
        states.check(Request.DESTROY, S.NOT_DEPLOYED)
