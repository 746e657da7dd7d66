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


@dataclass(frozen=True)
class ObjectRef:
    """One object a run applied, as `kubectl get` would name it."""

    api_version: str
    kind: str
    name: str
    namespace: str | None = None

    def to_json(self) -> dict[str, str | None]:
        return {
            "apiVersion": self.api_version,
            "kind": self.kind,
            "name": self.name,
            "namespace": self.namespace,
        }


@dataclass(frozen=True)
class Applied:
    """What an apply left: the outputs (every output of the plan, evaluated against the applied
    objects) and the objects it applied, in the order it applied them."""

    outputs: dict[str, str]
    objects: tuple[ObjectRef, ...] = ()


class Driver(Protocol):
    async def apply(self, plan: Plan, progress: Progress | None = None) -> Applied:
        """Creates or updates everything in the plan and waits until it is ready. Idempotent:
        applying the same plan twice leaves one set of objects. Raises DriverError."""
        ...

    async def destroy(self, plan: Plan, progress: Progress | None = None) -> None:
        """Deletes everything the plan applied and waits until it is gone. Idempotent."""
        ...

    async def observe(self, plan: Plan) -> Observed:
        """What the cluster holds of the plan now."""
        ...
