"""The status state machine of compute instances and their runs: the one place that says which
request is allowed in which status, and where each step of a run leads.

    NOT_DEPLOYED --deploy--> WAITING --run starts--> IN_PROGRESS --> SUCCESS | FAILED
    SUCCESS | FAILED --destroy--> DESTROYING --> NOT_DEPLOYED (or FAILED when the destroy fails)
    SUCCESS | FAILED --deploy--> WAITING (redeploy after "Edit Configuration")
    delete: NOT_DEPLOYED at once; SUCCESS | FAILED destroy first, then the instance is removed

While WAITING, IN_PROGRESS or DESTROYING a run is under way: deploy, destroy and delete are refused.
"""

from __future__ import annotations

from enum import Enum

from gpupaas.runs.states import RunAction


class DeploymentStatus(str, Enum):
    NOT_DEPLOYED = "NOT_DEPLOYED"
    WAITING = "WAITING"
    IN_PROGRESS = "IN_PROGRESS"
    SUCCESS = "SUCCESS"
    FAILED = "FAILED"
    DESTROYING = "DESTROYING"


class Request(str, Enum):
    DEPLOY = "deploy"
    DESTROY = "destroy"
    DELETE = "delete"
    UPDATE = "update"
    SHARE = "share"


S = DeploymentStatus
BUSY = frozenset({S.WAITING, S.IN_PROGRESS, S.DESTROYING})

_ALLOWED: dict[Request, frozenset[DeploymentStatus]] = {
    Request.DEPLOY: frozenset({S.NOT_DEPLOYED, S.SUCCESS, S.FAILED}),
    Request.DESTROY: frozenset({S.SUCCESS, S.FAILED}),
    Request.DELETE: frozenset({S.NOT_DEPLOYED, S.SUCCESS, S.FAILED}),
    # Saving changes and sharing never touch what runs; they are allowed in every status.
    Request.UPDATE: frozenset(S),
    Request.SHARE: frozenset(S),
}


class TransitionError(Exception):
    """A request the instance's status does not allow, with a message a person can act on."""


def check(request: Request, status: DeploymentStatus) -> None:
    if status in _ALLOWED[request]:
        return
    if status in BUSY:
        raise TransitionError(
            f"cannot {request.value} while the instance is {status.value}: "
            "wait until the current run finishes"
        )
    if request == Request.DESTROY:
        raise TransitionError(f"cannot destroy an instance that is {status.value}: nothing is deployed")
    raise TransitionError(f"cannot {request.value} an instance that is {status.value}")


def after_request(request: Request, status: DeploymentStatus) -> DeploymentStatus:
    """The status right after an accepted request (delete of a NOT_DEPLOYED instance removes it)."""
    check(request, status)
    if request == Request.DEPLOY:
        return S.WAITING
    if request in (Request.DESTROY, Request.DELETE):
        return S.DESTROYING if status != S.NOT_DEPLOYED else S.NOT_DEPLOYED
    return status


def run_started(action: RunAction) -> DeploymentStatus:
    return S.IN_PROGRESS if action == RunAction.DEPLOY else S.DESTROYING


def run_succeeded(action: RunAction) -> DeploymentStatus:
    return S.SUCCESS if action == RunAction.DEPLOY else S.NOT_DEPLOYED


def run_failed(action: RunAction) -> DeploymentStatus:
    return S.FAILED


def needs_destroy_before_delete(status: DeploymentStatus) -> bool:
    return status in (S.SUCCESS, S.FAILED)
