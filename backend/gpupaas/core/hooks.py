"""Hooks: what a lower domain needs from a higher one, which it may not import.

Layers run one way (README, "Code map"), but some rules and fields of a lower domain belong to a
higher one: a compute instance cannot be destroyed while GPU service instances run in it, and
`ComputeInstance.services` lists them; a cluster cannot be deleted while profiles or instances use
it. The lower domain declares a `Hook` where it needs the answer; the application's wiring
(gpupaas/api/wiring.py), which knows every domain, binds it once. Using a hook that was never bound
is a bug and says so, rather than silently skipping a rule.
"""

from __future__ import annotations

from typing import Generic, TypeVar

T = TypeVar("T")


class HookNotBound(RuntimeError):
    """A hook was used before the application's wiring bound it."""


class Hook(Generic[T]):
    __slots__ = ("_value", "what")

    def __init__(self, what: str) -> None:
        self.what = what
        self._value: T | None = None

    def bind(self, value: T) -> None:
        self._value = value

    def __call__(self) -> T:
        if self._value is None:
            raise HookNotBound(f"{self.what}: not bound (gpupaas.api.wiring binds every hook)")
        return self._value
