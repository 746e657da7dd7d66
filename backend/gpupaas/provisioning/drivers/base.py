"""The driver protocol: what the workers ask of a cluster. Pure functions build the plan;
drivers only apply it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from gpupaas.provisioning.plan import Plan

Progress = Callable[[str], Awaitable[None]]


class Phase(str, Enum):
    ABSENT = "ABSENT"  # nothing of the plan exists
    PROGRESSING = "PROGRESSING"
    READY = "READY"
    FAILED = "FAILED"


@dataclass(frozen=True)
class Observed:
    phase: Phase
    message: str | None = None


class Driver(Protocol):
    async def apply(self, plan: Plan, progress: Progress | None = None) -> dict[str, str]:
        """Creates or updates everything in the plan and waits until it is ready; returns the
        outputs (every output of the plan, evaluated against the applied objects). Idempotent:
        applying the same plan twice leaves one set of objects. Raises DriverError."""
        ...

    async def destroy(self, plan: Plan, progress: Progress | None = None) -> None:
        """Deletes everything the plan applied and waits until it is gone. Idempotent."""
        ...

    async def observe(self, plan: Plan) -> Observed:
        """What the cluster holds of the plan now."""
        ...
