"""Failure injection on the simulated cluster, through the plan's annotations (a profile's
annotations), for tests and demos:

- `simulated.gpupaas.io/fail: "apply"`: every apply fails with a PermanentError after its objects
  are applied ("simulated failure: image pull back-off ...").
- `simulated.gpupaas.io/fail: "destroy"`: every destroy fails with a PermanentError, keeping the
  objects and the capacity.
- `simulated.gpupaas.io/fail-times: "N"`: the first N apply attempts of the instance fail with a
  TemporaryError after it was admitted; the count lives in its row, so it survives restarts, and
  starts again after a destroy.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpupaas.provisioning.plan import PermanentError, Plan

__all__ = ["FAIL_ANNOTATION", "FAIL_TIMES_ANNOTATION", "Failures"]


FAIL_ANNOTATION = "simulated.gpupaas.io/fail"
FAIL_TIMES_ANNOTATION = "simulated.gpupaas.io/fail-times"
_FAIL_VALUES = ("apply", "destroy")


@dataclass(frozen=True)
class Failures:
    """The failures a plan asks for: every apply (`apply`), or its first `times` attempts."""

    apply: bool
    times: int

    @classmethod
    def of(cls, plan: Plan) -> Failures:
        fail = plan.annotations.get(FAIL_ANNOTATION)
        if fail is not None and fail not in _FAIL_VALUES:
            raise PermanentError(
                f'annotation {FAIL_ANNOTATION}: "{fail}" is not one of: ' + ", ".join(_FAIL_VALUES)
            )
        raw_times = plan.annotations.get(FAIL_TIMES_ANNOTATION)
        times = 0
        if raw_times is not None:
            if re.fullmatch(r"\s*[0-9]{1,9}\s*", raw_times) is None:
                raise PermanentError(
                    f'annotation {FAIL_TIMES_ANNOTATION}: "{raw_times}" must be a whole number such as "2"'
                )
            times = int(raw_times)
        return cls(apply=fail == "apply", times=times)
