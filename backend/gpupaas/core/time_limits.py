"""Time limits of what holds GPUs (pure): a compute profile's maximum lifetime and default
auto-stop, an instance's own within them, when a running instance is due to stop and why, and how
far its owner may extend that.

A limit is a number of minutes of running (None: no limit). When an instance starts running it is
*armed*: `stop_at` is the earlier of "auto-stop after N" and "maximum lifetime reached", and
`lifetime_ends_at` the latter's moment, past which no extension goes. The columns live on each
kind of instance (`LIMIT_COLUMNS`, `ARMED_COLUMNS`); the scheduler (workers/scheduler.py) acts on
them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

# Bounds a person can reason about: at least a quarter of an hour, at most a year.
MIN_MINUTES = 15
MAX_MINUTES = 366 * 24 * 60
# The most one extension adds.
MAX_EXTENSION_MINUTES = 7 * 24 * 60


def duration(minutes: int) -> str:
    """ "4h", "90m" -> "1h30m", "2d": as run messages and warnings say it."""
    days, rest = divmod(minutes, 24 * 60)
    hours, mins = divmod(rest, 60)
    parts = [f"{days}d" if days else "", f"{hours}h" if hours else "", f"{mins}m" if mins else ""]
    return "".join(parts) or "0m"


@dataclass(frozen=True)
class Limits:
    auto_stop_minutes: int | None
    max_lifetime_minutes: int | None


def check_minutes(value: int | None, what: str) -> str | None:
    """Why `value` is not a usable number of minutes, or None."""
    if value is None:
        return None
    if value < MIN_MINUTES or value > MAX_MINUTES:
        return (
            f"{what} must be between {MIN_MINUTES} minutes and {MAX_MINUTES // (24 * 60)} days "
            f"({MIN_MINUTES} to {MAX_MINUTES} minutes), not {value}; leave it empty for no limit"
        )
    return None


def check_limits(limits: Limits, bound: Limits | None, bound_name: str) -> list[tuple[str, str]]:
    """Problems as (field, message): each value in range, the auto-stop no later than the lifetime,
    and both within `bound` (the profile's, or the compute instance's, named `bound_name`)."""
    problems: list[tuple[str, str]] = []
    for field, value, what in (
        ("autoStopMinutes", limits.auto_stop_minutes, "the auto-stop"),
        ("maxLifetimeMinutes", limits.max_lifetime_minutes, "the maximum lifetime"),
    ):
        problem = check_minutes(value, what)
        if problem:
            problems.append((field, problem))
    if problems:
        return problems
    ceiling = bound.max_lifetime_minutes if bound is not None else None
    if ceiling is not None:
        if limits.max_lifetime_minutes is None:
            problems.append(
                (
                    "maxLifetimeMinutes",
                    f"{bound_name} limits the lifetime to {duration(ceiling)}: set {ceiling} minutes "
                    "or less (it cannot be removed)",
                )
            )
        elif limits.max_lifetime_minutes > ceiling:
            problems.append(
                (
                    "maxLifetimeMinutes",
                    f"{bound_name} limits the lifetime to {duration(ceiling)} ({ceiling} minutes): "
                    f"{limits.max_lifetime_minutes} is more",
                )
            )
    lifetime = limits.max_lifetime_minutes
    if lifetime is not None and limits.auto_stop_minutes is not None and limits.auto_stop_minutes > lifetime:
        problems.append(
            (
                "autoStopMinutes",
                f"the auto-stop ({duration(limits.auto_stop_minutes)}) comes after the maximum lifetime "
                f"({duration(lifetime)}): set {lifetime} minutes or less, or leave it empty",
            )
        )
    return problems


def auto_stop_reason(minutes: int) -> str:
    return f"auto-stop after {duration(minutes)}"


def lifetime_reason(minutes: int) -> str:
    return f"maximum lifetime {duration(minutes)} reached"


def arm(limits: Limits, since: datetime) -> dict[str, Any]:
    """The armed columns of an instance that started running at `since` (all None: no limit)."""
    lifetime_ends = (
        since + timedelta(minutes=limits.max_lifetime_minutes) if limits.max_lifetime_minutes else None
    )
    auto = since + timedelta(minutes=limits.auto_stop_minutes) if limits.auto_stop_minutes else None
    if auto is not None and (lifetime_ends is None or auto < lifetime_ends):
        stop_at, reason = auto, auto_stop_reason(limits.auto_stop_minutes or 0)
    elif lifetime_ends is not None:
        stop_at, reason = lifetime_ends, lifetime_reason(limits.max_lifetime_minutes or 0)
    else:
        stop_at, reason = None, None
    return {
        "running_since": since,
        "stop_at": stop_at,
        "stop_reason": reason,
        "lifetime_ends_at": lifetime_ends,
        "stop_warned_at": None,
        "stop_claimed_until": None,
        "stop_refused": None,
    }


def disarmed() -> dict[str, Any]:
    """The armed columns of an instance that no longer runs."""
    return {
        "running_since": None,
        "stop_at": None,
        "stop_reason": None,
        "lifetime_ends_at": None,
        "stop_warned_at": None,
        "stop_claimed_until": None,
    }


class CannotExtend(ValueError):
    """Why an auto-stop cannot be moved (a message for the person who asked)."""


def extended(
    stop_at: datetime | None,
    lifetime_ends_at: datetime | None,
    max_lifetime_minutes: int | None,
    minutes: int,
    now: datetime,
) -> tuple[datetime, str]:
    """The new due time and reason after extending by `minutes` (from the later of now and the
    current due time), capped at the end of the maximum lifetime."""
    if minutes < 1 or minutes > MAX_EXTENSION_MINUTES:
        raise CannotExtend(
            f"extend by 1 to {MAX_EXTENSION_MINUTES} minutes ({duration(MAX_EXTENSION_MINUTES)}), "
            f"not {minutes}"
        )
    if stop_at is None:
        raise CannotExtend("it has no auto-stop to extend: it is not running, or runs without a time limit")
    if lifetime_ends_at is not None and stop_at >= lifetime_ends_at:
        raise CannotExtend(
            f"it stops at the end of its maximum lifetime ({duration(max_lifetime_minutes or 0)}), "
            f"{lifetime_ends_at:%Y-%m-%d %H:%M} UTC: that cannot be extended (ask a project admin for a "
            "profile with a longer lifetime)"
        )
    wanted = max(stop_at, now) + timedelta(minutes=minutes)
    if lifetime_ends_at is not None and wanted >= lifetime_ends_at:
        return lifetime_ends_at, lifetime_reason(max_lifetime_minutes or 0)
    return wanted, f"auto-stop extended to {wanted:%Y-%m-%d %H:%M} UTC"


# The columns each kind of instance has for its limits, and those armed while it runs.
LIMIT_COLUMNS = ("auto_stop_minutes", "max_lifetime_minutes")
ARMED_COLUMNS = (
    "running_since",
    "stop_at",
    "stop_reason",
    "lifetime_ends_at",
    "stop_warned_at",
    "stop_claimed_until",
    "stop_refused",
)
