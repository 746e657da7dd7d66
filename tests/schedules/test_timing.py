"""When a schedule runs: wall-clock time in an IANA time zone, across daylight saving time changes
in both directions, including a time that does not exist, or exists twice, that day."""

from __future__ import annotations

from datetime import UTC, datetime, time, timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from gpupaas.schedules.timing import DAYS, next_run, parse_time, zone, zone_suggestion

BERLIN = zone("Europe/Berlin")
WEEKDAYS = list(DAYS[:5])


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def test_20_00_berlin_is_19_00_utc_in_winter_and_18_00_utc_in_summer() -> None:
    assert BERLIN is not None
    # spring forward (Sunday 2026-03-29): Friday before is CET, Monday after is CEST
    friday = next_run(WEEKDAYS, time(20), BERLIN, utc(2026, 3, 27, 12))
    monday = next_run(WEEKDAYS, time(20), BERLIN, friday)
    assert (friday, monday) == (utc(2026, 3, 27, 19), utc(2026, 3, 30, 18))
    # fall back (Sunday 2026-10-25): Friday before is CEST, Monday after is CET
    friday = next_run(WEEKDAYS, time(20), BERLIN, utc(2026, 10, 23, 12))
    monday = next_run(WEEKDAYS, time(20), BERLIN, friday)
    assert (friday, monday) == (utc(2026, 10, 23, 18), utc(2026, 10, 26, 19))


def test_a_time_the_clocks_skip_runs_once_when_the_gap_ends() -> None:
    assert BERLIN is not None
    # 02:30 does not exist in Berlin on 2026-03-29: the clocks go from 02:00 CET to 03:00 CEST
    first = next_run(["SUN"], time(2, 30), BERLIN, utc(2026, 3, 28))
    assert first == utc(2026, 3, 29, 1)  # 03:00 CEST, the end of the gap
    assert first.astimezone(BERLIN).strftime("%H:%M %Z") == "03:00 CEST"
    # and once only: the next run is a week later, at 02:30 CEST
    assert next_run(["SUN"], time(2, 30), BERLIN, first) == utc(2026, 4, 5, 0, 30)


def test_a_time_that_occurs_twice_runs_once_at_its_first_occurrence() -> None:
    assert BERLIN is not None
    # 02:30 occurs twice in Berlin on 2026-10-25 (CEST, then CET)
    first = next_run(["SUN"], time(2, 30), BERLIN, utc(2026, 10, 24))
    assert first == utc(2026, 10, 25, 0, 30)
    assert first.astimezone(BERLIN).strftime("%H:%M %Z") == "02:30 CEST"
    # not again an hour later at 02:30 CET: the next run is a week later
    assert next_run(["SUN"], time(2, 30), BERLIN, first) == utc(2026, 11, 1, 1, 30)
    # asked between the two occurrences (02:45 CEST): the second one is not a run either
    assert next_run(["SUN"], time(2, 30), BERLIN, utc(2026, 10, 25, 0, 45)) == utc(2026, 11, 1, 1, 30)


def test_the_run_itself_is_not_its_own_next_run() -> None:
    assert BERLIN is not None
    at = utc(2026, 6, 1, 18)  # Monday 20:00 CEST
    assert next_run(WEEKDAYS, time(20), BERLIN, at - timedelta(seconds=1)) == at
    assert next_run(WEEKDAYS, time(20), BERLIN, at) == utc(2026, 6, 2, 18)


def test_weekends_are_skipped() -> None:
    assert BERLIN is not None
    assert next_run(WEEKDAYS, time(20), BERLIN, utc(2026, 6, 5, 19)) == utc(2026, 6, 8, 18)


def test_parsing_times_and_zones() -> None:
    assert parse_time("20:00") == time(20)
    assert parse_time("07:05") == time(7, 5)
    for bad in ("24:00", "8pm", "7:5", "20:60", ""):
        assert parse_time(bad) is None
    assert zone("UTC") is not None
    for bad in ("Mars/Base", "", "../etc/passwd", "/etc/localtime", " Europe/Berlin"):
        assert zone(bad) is None
    assert zone_suggestion("Berlin") == ' (did you mean "Europe/Berlin"?)'
    assert zone_suggestion("Nowhere") == ""


ZONES = ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Asia/Kolkata", "UTC"]


@settings(max_examples=300, deadline=None)
@given(
    zone_name=st.sampled_from(ZONES),
    days=st.sets(st.sampled_from(DAYS), min_size=1),
    hour=st.integers(0, 23),
    minute=st.sampled_from([0, 1, 15, 30, 45, 59]),
    after=st.datetimes(min_value=datetime(2026, 1, 1), max_value=datetime(2028, 12, 31)),
)
def test_next_run_is_the_first_matching_moment(
    zone_name: str, days: set[str], hour: int, minute: int, after: datetime
) -> None:
    tz = zone(zone_name)
    assert tz is not None
    start = after.replace(tzinfo=UTC)
    at = time(hour, minute)
    found = next_run(sorted(days), at, tz, start)
    assert found > start
    local = found.astimezone(tz)
    # on a chosen day, at the time (or, when the clocks skipped it, the first minute after the gap)
    assert DAYS[local.weekday()] in days
    assert local.time() >= at
    assert found - start <= timedelta(days=8)
    # no moment between `after` and it matches: walking minute by minute from `after`, the first
    # minute whose wall time is at or past `at` on a chosen day, having been before it, is `found`
    previous = start.replace(second=0, microsecond=0)
    step = previous
    while step < found:
        step += timedelta(minutes=1)
        before, now = previous.astimezone(tz), step.astimezone(tz)
        # a wall time that occurs twice counts at its first occurrence only (fold 0)
        crossed = (
            DAYS[now.weekday()] in days
            and now.time() >= at
            and now.fold == 0
            and (before.date() != now.date() or before.time() < at)
        )
        if crossed and step > start:
            break
        previous = step
    assert step == found


def test_names_no_zone_can_have_are_no_zone_rather_than_an_error() -> None:
    # found by tests/graphql/test_fuzz.py: a 5,000-character name made ZoneInfo raise OSError
    for name in ("x" * 5000, "Europe/" + "x" * 300, "a\x00b", "a/../b", "/etc/passwd", " Europe/Berlin"):
        assert zone(name) is None, name
    assert zone("America/Argentina/ComodRivadavia") is not None
