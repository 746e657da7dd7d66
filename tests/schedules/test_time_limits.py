"""Time limits (pure): checks with messages a person can act on, arming, extending; the settings;
and which processes run the scheduler."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from gpupaas.core import time_limits
from gpupaas.core.time_limits import CannotExtend, Limits, arm, check_limits, duration, extended
from gpupaas.runtime import Runtime
from gpupaas.settings import Settings, SettingsError

T0 = datetime(2031, 6, 2, 8, tzinfo=UTC)


def test_durations_read_as_people_say_them() -> None:
    assert [duration(m) for m in (15, 60, 90, 240, 1440, 1530, 0)] == [
        "15m",
        "1h",
        "1h30m",
        "4h",
        "1d",
        "1d1h30m",
        "0m",
    ]


def test_limits_are_checked_against_each_other_and_the_bound() -> None:
    assert check_limits(Limits(None, None), None, "p") == []
    assert check_limits(Limits(60, 120), Limits(None, 120), "p") == []
    [(field, message)] = check_limits(Limits(10, None), None, "p")
    assert field == "autoStopMinutes"
    assert message == (
        "the auto-stop must be between 15 minutes and 366 days (15 to 527040 minutes), not 10; "
        "leave it empty for no limit"
    )
    assert check_limits(Limits(None, 600), Limits(None, 480), 'compute profile "a100"') == [
        ("maxLifetimeMinutes", 'compute profile "a100" limits the lifetime to 8h (480 minutes): 600 is more')
    ]
    assert check_limits(Limits(60, None), Limits(None, 480), 'compute profile "a100"') == [
        (
            "maxLifetimeMinutes",
            'compute profile "a100" limits the lifetime to 8h: set 480 minutes or less (it cannot be removed)',
        )
    ]


def test_arming_takes_the_earlier_of_the_two_limits() -> None:
    armed = arm(Limits(240, 1440), T0)
    assert (armed["stop_at"], armed["stop_reason"]) == (T0 + timedelta(hours=4), "auto-stop after 4h")
    assert armed["lifetime_ends_at"] == T0 + timedelta(days=1)
    armed = arm(Limits(None, 120), T0)
    assert (armed["stop_at"], armed["stop_reason"]) == (
        T0 + timedelta(hours=2),
        "maximum lifetime 2h reached",
    )
    armed = arm(Limits(None, None), T0)
    assert (armed["stop_at"], armed["lifetime_ends_at"], armed["running_since"]) == (None, None, T0)
    assert set(armed) == set(time_limits.ARMED_COLUMNS)


def test_extending_moves_on_from_the_later_of_now_and_the_due_time_never_past_the_lifetime() -> None:
    due, ends = T0 + timedelta(hours=4), T0 + timedelta(hours=6)
    assert extended(due, ends, 360, 60, T0)[0] == T0 + timedelta(hours=5)
    assert extended(due, None, None, 60, due + timedelta(minutes=30))[0] == due + timedelta(minutes=90)
    assert extended(due, ends, 360, 600, T0) == (ends, "maximum lifetime 6h reached")
    with pytest.raises(CannotExtend, match="cannot be extended"):
        extended(ends, ends, 360, 60, T0)
    with pytest.raises(CannotExtend, match="no auto-stop to extend"):
        extended(None, None, None, 60, T0)
    with pytest.raises(CannotExtend, match="extend by 1 to 10080 minutes"):
        extended(due, ends, 360, 0, T0)


def test_the_settings() -> None:
    settings = Settings.from_env(
        {"GPUPAAS_DATABASE_URL": "sqlite:///tmp/x.db", "GPUPAAS_SECRET_KEY": "k" * 40}
    )
    assert (settings.auto_stop_warning_minutes, settings.scheduler_interval_seconds) == (15, 30.0)
    env = {
        "GPUPAAS_DATABASE_URL": "sqlite:///tmp/x.db",
        "GPUPAAS_SECRET_KEY": "k" * 40,
        "GPUPAAS_AUTO_STOP_WARNING_MINUTES": "5",
        "GPUPAAS_SCHEDULER_INTERVAL_SECONDS": "2.5",
    }
    settings = Settings.from_env(env)
    assert (settings.auto_stop_warning_minutes, settings.scheduler_interval_seconds) == (5, 2.5)
    with pytest.raises(
        SettingsError, match="GPUPAAS_AUTO_STOP_WARNING_MINUTES='soon': expected a whole number"
    ):
        Settings.from_env({**env, "GPUPAAS_AUTO_STOP_WARNING_MINUTES": "soon"})


def test_the_scheduler_runs_where_a_worker_runs() -> None:
    settings = Settings(database_url="sqlite://:memory:", secret_key="k" * 40, auto_stop_warning_minutes=7)
    with_worker = Runtime(settings, run_worker=True)
    assert with_worker.scheduler is not None
    assert with_worker.scheduler.warning == timedelta(minutes=7)
    assert Runtime(settings, run_worker=False).scheduler is None
