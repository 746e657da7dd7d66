"""What a run does and where it is: the actions of every kind of run and the statuses of a run."""

from __future__ import annotations

from enum import Enum


class RunAction(str, Enum):
    # compute instances (compute/states.py)
    DEPLOY = "DEPLOY"
    DESTROY = "DESTROY"
    # GPU service instances (service_instances/states.py); their delete is a DESTROY.
    START = "START"
    STOP = "STOP"
    RESTART = "RESTART"
    # Applies a running service's objects again with its new SSH keys (no new pod).
    APPLY_SSH_KEYS = "APPLY_SSH_KEYS"


class RunStatus(str, Enum):
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"


FINISHED_RUNS = frozenset({RunStatus.SUCCEEDED, RunStatus.FAILED, RunStatus.CANCELED})
