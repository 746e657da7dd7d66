"""GraphQL types of time limits (core/time_limits.py), shared by profiles, compute instances and
service instances: read from any model with the time-limit columns."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import strawberry

from gpupaas.core import time_limits


@strawberry.type(description="Minutes of running; null: no limit.")
class TimeLimitSettings:
    auto_stop_minutes: int | None = strawberry.field(
        description="Stop (a compute instance: destroy) after this many minutes of running; the owner "
        "can extend it."
    )
    max_lifetime_minutes: int | None = strawberry.field(
        description="Never run longer than this: no extension goes past it."
    )


@strawberry.type(description="An instance's own time limits and, while it runs, when it stops.")
class TimeLimits:
    auto_stop_minutes: int | None
    max_lifetime_minutes: int | None
    running_since: datetime | None
    stops_at: datetime | None = strawberry.field(
        description="When it will be stopped; null: not running, or no limit."
    )
    stop_reason: str | None = strawberry.field(
        description='Why: "auto-stop after 4h", "maximum lifetime 1d reached".'
    )
    lifetime_ends_at: datetime | None = strawberry.field(description="No extension goes past this.")
    warned: bool = strawberry.field(description="The warning before the stop went out.")
    refusal: str | None = strawberry.field(
        description="Why the last auto-stop was not carried out (a compute instance running service "
        "instances)."
    )


@strawberry.input(description="Minutes of running; null or left out: no limit.")
class TimeLimitsInput:
    auto_stop_minutes: int | None = None
    max_lifetime_minutes: int | None = None

    def to_service(self) -> time_limits.Limits:
        return time_limits.Limits(self.auto_stop_minutes, self.max_lifetime_minutes)


def settings_of(model: Any) -> TimeLimitSettings:
    return TimeLimitSettings(
        auto_stop_minutes=model.auto_stop_minutes, max_lifetime_minutes=model.max_lifetime_minutes
    )


def time_limits_of(model: Any) -> TimeLimits:
    return TimeLimits(
        auto_stop_minutes=model.auto_stop_minutes,
        max_lifetime_minutes=model.max_lifetime_minutes,
        running_since=model.running_since,
        stops_at=model.stop_at,
        stop_reason=model.stop_reason,
        lifetime_ends_at=model.lifetime_ends_at,
        warned=model.stop_warned_at is not None,
        refusal=model.stop_refused,
    )
