"""When a schedule next runs (pure): a wall-clock time on chosen days of the week in an IANA time
zone, as an instant in UTC, correct across daylight saving time changes.

"20:00 Europe/Berlin" is 18:00 UTC in summer (CEST, +02:00) and 19:00 UTC in winter (CET, +01:00).
On the two days a year the clocks change, a time of day can fall into the gap (02:30 on the last
Sunday of March does not exist in Berlin) or occur twice (02:30 on the last Sunday of October):
a time in the gap runs once, at the moment the gap ends (03:00 CEST, 01:00 UTC); a time that
occurs twice runs once, at its first occurrence (02:30 CEST, 00:30 UTC).
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

DAYS = ("MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN")
_TIME = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")


def parse_time(text: str) -> time | None:
    """ "20:00" -> 20:00; None when it is not HH:MM (24-hour clock)."""
    match = _TIME.match(text.strip())
    return time(int(match.group(1)), int(match.group(2))) if match else None


# The longest IANA zone name is 32 characters ("America/Argentina/ComodRivadavia").
MAX_ZONE_NAME = 64


def zone(name: str) -> ZoneInfo | None:
    """The IANA time zone, or None when there is no such zone."""
    if not name or len(name) > MAX_ZONE_NAME or name != name.strip() or name.startswith("/") or ".." in name:
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):  # OSError: a name no file system takes
        return None


def zone_suggestion(name: str) -> str:
    """A hint for a time zone that does not exist: a known one with the same last part, if any."""
    tail = name.strip().split("/")[-1].replace(" ", "_").lower()
    matches = sorted(z for z in available_timezones() if z.split("/")[-1].lower() == tail)
    return f' (did you mean "{matches[0]}"?)' if matches else ""


def _instant(day: date, at: time, tz: ZoneInfo) -> datetime:
    """The UTC instant of wall-clock `at` on `day` in `tz`: the first occurrence of a time that
    occurs twice, the end of the gap for a time that does not exist."""
    wall = datetime.combine(day, at)
    first = wall.replace(tzinfo=tz, fold=0).astimezone(UTC)
    if first.astimezone(tz).replace(tzinfo=None) == wall:
        # Exists; for a time that occurs twice, fold=0 is the earlier of the two.
        return first
    # In the gap: the clocks jumped over it. The earliest instant whose wall time is at or past it.
    moment = wall.replace(tzinfo=tz, fold=1).astimezone(UTC)
    moment = min(moment, first)
    while moment.astimezone(tz).replace(tzinfo=None) < wall:
        moment += timedelta(minutes=1)
    return moment.replace(second=0, microsecond=0)


def next_run(days: list[str], at: time, tz: ZoneInfo, after: datetime) -> datetime:
    """The first instant strictly after `after` (aware) when the schedule runs."""
    wanted = {DAYS.index(d) for d in days}
    local_day = after.astimezone(tz).date() - timedelta(days=1)
    for offset in range(9):
        day = local_day + timedelta(days=offset)
        if day.weekday() not in wanted:
            continue
        moment = _instant(day, at, tz)
        if moment > after:
            return moment
    raise ValueError("a schedule needs at least one day of the week")
