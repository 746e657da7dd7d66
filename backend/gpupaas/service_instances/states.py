"""The status state machine of GPU service instances: the one place that says which request is
allowed in which status, and where each step of a run leads.

    create (start) -> PENDING --run starts--> STARTING --> RUNNING | FAILED
    create (start: false) -> STOPPED
    start:   STOPPED | FAILED -> PENDING -> STARTING -> RUNNING
    stop:    RUNNING | FAILED -> STOPPING -> STOPPED (the pod removed; spec, token, workspace kept)
    restart: RUNNING -> PENDING -> STARTING -> RUNNING (a new pod)
    SSH keys changed: RUNNING stays RUNNING (an APPLY_SSH_KEYS run: the same pod, its new keys)
    delete:  any status -> DELETING -> gone; DELETING again is a no-op (idempotent)

While PENDING, STARTING or STOPPING a run is under way: start, stop and restart wait for it
(INVALID_STATE); delete does not wait: it is queued at once and runs when the current run ends.
"""

from __future__ import annotations

from enum import Enum

from gpupaas.runs.states import RunAction


class ServiceStatus(str, Enum):
    PENDING = "PENDING"
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    STOPPING = "STOPPING"
    STOPPED = "STOPPED"
    FAILED = "FAILED"
    DELETING = "DELETING"


class Request(str, Enum):
    START = "start"
    STOP = "stop"
    RESTART = "restart"
    DELETE = "delete"


S = ServiceStatus
BUSY = frozenset({S.PENDING, S.STARTING, S.STOPPING})
# Statuses in which the service holds (or is about to hold) its GPUs: everything but STOPPED.
HOLDS_GPUS = frozenset(S) - {S.STOPPED}
# Statuses in which no pod of it runs or is meant to: it has no Connect links then.
NO_POD = frozenset({S.STOPPING, S.STOPPED, S.DELETING})
# Statuses in which its spec may be edited (updateServiceInstance): applied at the next start.
EDITABLE = frozenset({S.STOPPED, S.FAILED})

_ALLOWED: dict[Request, frozenset[ServiceStatus]] = {
    Request.START: frozenset({S.STOPPED, S.FAILED}),
    Request.STOP: frozenset({S.RUNNING, S.FAILED}),
    Request.RESTART: frozenset({S.RUNNING}),
    Request.DELETE: frozenset(S) - {S.DELETING},
}

_ACTIONS: dict[Request, RunAction] = {
    Request.START: RunAction.START,
    Request.STOP: RunAction.STOP,
    Request.RESTART: RunAction.RESTART,
    Request.DELETE: RunAction.DESTROY,
}


class TransitionError(Exception):
    """A request the service's status does not allow, with a message a person can act on."""


def check(request: Request, status: ServiceStatus) -> None:
    if status in _ALLOWED[request]:
        return
    if status == S.DELETING:
        raise TransitionError(
            f"cannot {request.value} a service instance that is DELETING: it is being deleted"
        )
    if status in BUSY:
        raise TransitionError(
            f"cannot {request.value} while the service instance is {status.value}: "
            "wait until the current step finishes"
        )
    if request == Request.START:
        raise TransitionError(
            f"cannot start a service instance that is {status.value}: it is already running"
        )
    if request == Request.STOP:
        raise TransitionError(f"cannot stop a service instance that is {status.value}: it is not running")
    raise TransitionError(
        f"cannot restart a service instance that is {status.value}: only a RUNNING one can be "
        "restarted (start it instead)"
    )


def after_request(request: Request, status: ServiceStatus) -> ServiceStatus:
    """The status right after an accepted request."""
    check(request, status)
    if request == Request.STOP:
        return S.STOPPING
    if request == Request.DELETE:
        return S.DELETING
    return S.PENDING


def action_of(request: Request) -> RunAction:
    return _ACTIONS[request]


def run_started(action: RunAction) -> ServiceStatus:
    if action == RunAction.APPLY_SSH_KEYS:
        return S.RUNNING
    if action in (RunAction.START, RunAction.RESTART):
        return S.STARTING
    if action == RunAction.STOP:
        return S.STOPPING
    return S.DELETING


def run_succeeded(action: RunAction) -> ServiceStatus:
    return S.STOPPED if action == RunAction.STOP else S.RUNNING


def run_failed(action: RunAction) -> ServiceStatus:
    return S.FAILED
