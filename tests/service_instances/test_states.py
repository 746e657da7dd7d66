"""The service instances' state machine, alone."""

from __future__ import annotations

import pytest

from gpupaas.runs.states import RunAction
from gpupaas.service_instances import states
from gpupaas.service_instances.states import Request, ServiceStatus

S = ServiceStatus
ALLOWED = {
    Request.START: {S.STOPPED, S.FAILED},
    Request.STOP: {S.RUNNING, S.FAILED},
    Request.RESTART: {S.RUNNING},
    Request.DELETE: set(S) - {S.DELETING},
}


@pytest.mark.parametrize("request_", list(Request))
@pytest.mark.parametrize("status", list(ServiceStatus))
def test_which_request_is_allowed_in_which_status(request_: Request, status: ServiceStatus) -> None:
    if status in ALLOWED[request_]:
        states.check(request_, status)
    else:
        with pytest.raises(states.TransitionError) as raised:
            states.check(request_, status)
        assert status.value in str(raised.value) and request_.value in str(raised.value)


def test_where_requests_lead() -> None:
    assert states.after_request(Request.START, S.STOPPED) == S.PENDING
    assert states.after_request(Request.RESTART, S.RUNNING) == S.PENDING
    assert states.after_request(Request.STOP, S.RUNNING) == S.STOPPING
    assert states.after_request(Request.DELETE, S.STARTING) == S.DELETING
    assert [states.action_of(r) for r in Request] == [
        RunAction.START,
        RunAction.STOP,
        RunAction.RESTART,
        RunAction.DESTROY,
    ]


def test_where_runs_lead() -> None:
    assert states.run_started(RunAction.START) == states.run_started(RunAction.RESTART) == S.STARTING
    assert states.run_started(RunAction.STOP) == S.STOPPING
    assert states.run_started(RunAction.DESTROY) == S.DELETING
    assert states.run_succeeded(RunAction.START) == states.run_succeeded(RunAction.RESTART) == S.RUNNING
    assert states.run_succeeded(RunAction.STOP) == S.STOPPED
    assert all(states.run_failed(a) == S.FAILED for a in RunAction)


def test_only_stopped_services_give_their_gpus_back() -> None:
    assert set(ServiceStatus) - states.HOLDS_GPUS == {S.STOPPED}
