"""Settings come from GPUPAAS_* variables only, and a bad value names the variable and the fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpupaas.settings import DEFAULT_SSH_IMAGE, Settings, SettingsError


def test_defaults_run_the_embedded_product(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = Settings.from_env({})
    assert settings.database_url == f"sqlite://{tmp_path / 'gpupaas.db'}"
    assert settings.graphiql and settings.introspection and not settings.secure_cookies
    assert settings.members_see_all_instances  # members read each other's instances (without secrets)
    # the generated key is kept beside the database and reused
    assert len(settings.secret_key) == 64
    assert Settings.from_env({}).secret_key == settings.secret_key
    assert (tmp_path / "gpupaas.db.secret").stat().st_mode & 0o777 == 0o600


def test_postgres_urls_and_required_secret() -> None:
    with pytest.raises(SettingsError, match="GPUPAAS_SECRET_KEY is required"):
        Settings.from_env({"GPUPAAS_DATABASE_URL": "postgres://u@h/db"})
    settings = Settings.from_env(
        {"GPUPAAS_DATABASE_URL": "postgresql://u@h/db", "GPUPAAS_SECRET_KEY": "x" * 32}
    )
    assert settings.database_url == "postgres://u@h/db" and not settings.is_sqlite


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"GPUPAAS_DATABASE_URL": "mysql://x"}, "GPUPAAS_DATABASE_URL='mysql://x': expected sqlite"),
        ({"GPUPAAS_SECRET_KEY": "short"}, "at least 32 characters"),
        ({"GPUPAAS_GRAPHIQL": "maybe"}, "GPUPAAS_GRAPHIQL='maybe': expected one of true/false"),
        ({"GPUPAAS_MAX_QUERY_DEPTH": "ten"}, "expected a whole number"),
        ({"GPUPAAS_MAX_QUERY_DEPTH": "1"}, "must be at least 3"),
        ({"GPUPAAS_ALLOWED_ORIGINS": "localhost:5173"}, "is not an origin"),
        ({"GPUPAAS_SIMULATED_PHASE_SECONDS": "-1"}, "must be at least 0"),
        ({"GPUPAAS_SIMULATED_PHASE_SECONDS": "nan"}, "must be at least 0"),
        ({"GPUPAAS_SIMULATED_INVENTORY": "/no/such/file.yaml"}, "no such file"),
        ({"GPUPAAS_DRIVER": "kubernetes-ish"}, "expected simulated"),
        ({"GPUPAAS_KAFKA_NAMESPACE": "a b"}, "letters, digits"),
        ({"GPUPAAS_RUN_LEASE_SECONDS": "0"}, "must be at least 0.1"),
        (
            {"GPUPAAS_STATUS_WATCHDOG_SECONDS": "soon"},
            "GPUPAAS_STATUS_WATCHDOG_SECONDS='soon': expected a number",
        ),
        (
            {"GPUPAAS_STATUS_WATCHDOG_SECONDS": "0"},
            "expected seconds from 0.5 to 86400",
        ),
        ({"GPUPAAS_STATUS_WATCHDOG_SECONDS": "90000"}, "how long an API process may receive no status event"),
    ],
)
def test_bad_values_say_what_to_do(env: dict[str, str], message: str, tmp_path: Path) -> None:
    env = {"GPUPAAS_DATABASE_URL": f"sqlite://{tmp_path}/x.db", **env}
    with pytest.raises(SettingsError, match=message.replace("(", r"\(").replace("?", r"\?")):
        Settings.from_env(env)


def test_the_status_watchdog_waits_30_seconds_unless_told(tmp_path: Path) -> None:
    base = {"GPUPAAS_DATABASE_URL": f"sqlite://{tmp_path}/x.db"}
    assert Settings.from_env(base).status_watchdog_seconds == 30.0
    assert (
        Settings.from_env({**base, "GPUPAAS_STATUS_WATCHDOG_SECONDS": "2.5"}).status_watchdog_seconds == 2.5
    )


def test_switches(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {
            "GPUPAAS_DATABASE_URL": f"sqlite://{tmp_path}/x.db",
            "GPUPAAS_GRAPHIQL": "off",
            "GPUPAAS_INTROSPECTION": "0",
            "GPUPAAS_SECURE_COOKIES": "yes",
            "GPUPAAS_ALLOWED_ORIGINS": "http://localhost:5173/, https://studio.example.com",
            "GPUPAAS_MEMBERS_SEE_ALL_INSTANCES": "false",
        }
    )
    assert not settings.graphiql and not settings.introspection and settings.secure_cookies
    assert not settings.members_see_all_instances
    assert settings.allowed_origins == ("http://localhost:5173", "https://studio.example.com")


def test_the_worker_runs_inside_serve_only_with_the_in_process_bus(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/x.db"
    assert Settings.from_env({"GPUPAAS_DATABASE_URL": url}).run_worker is True
    with_kafka = Settings.from_env({"GPUPAAS_DATABASE_URL": url, "GPUPAAS_KAFKA_BOOTSTRAP_SERVERS": "k:9092"})
    assert with_kafka.run_worker is False and with_kafka.kafka_bootstrap_servers == "k:9092"
    forced = Settings.from_env(
        {
            "GPUPAAS_DATABASE_URL": url,
            "GPUPAAS_KAFKA_BOOTSTRAP_SERVERS": "k:9092",
            "GPUPAAS_RUN_WORKER": "true",
        }
    )
    assert forced.run_worker is True


def test_the_kubernetes_drivers_graces(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path}/x.db"
    defaults = Settings.from_env({"GPUPAAS_DATABASE_URL": url})
    assert (
        defaults.kubernetes_crash_restarts,
        defaults.kubernetes_image_pull_grace_seconds,
        defaults.kubernetes_scheduling_grace_seconds,
    ) == (3, 120.0, 300.0)
    chosen = Settings.from_env(
        {
            "GPUPAAS_DATABASE_URL": url,
            "GPUPAAS_KUBERNETES_CRASH_RESTARTS": "0",
            "GPUPAAS_KUBERNETES_IMAGE_PULL_GRACE_SECONDS": "30",
            "GPUPAAS_KUBERNETES_SCHEDULING_GRACE_SECONDS": "900",
        }
    )
    assert (
        chosen.kubernetes_crash_restarts,
        chosen.kubernetes_image_pull_grace_seconds,
        chosen.kubernetes_scheduling_grace_seconds,
    ) == (0, 30.0, 900.0)
    with pytest.raises(SettingsError, match="GPUPAAS_KUBERNETES_CRASH_RESTARTS='-1': must be at least 0"):
        Settings.from_env({"GPUPAAS_DATABASE_URL": url, "GPUPAAS_KUBERNETES_CRASH_RESTARTS": "-1"})
    with pytest.raises(
        SettingsError, match="GPUPAAS_KUBERNETES_SCHEDULING_GRACE_SECONDS='soon': expected a number"
    ):
        Settings.from_env(
            {"GPUPAAS_DATABASE_URL": url, "GPUPAAS_KUBERNETES_SCHEDULING_GRACE_SECONDS": "soon"}
        )


def test_the_ssh_tools_image(tmp_path: Path) -> None:
    env = {"GPUPAAS_DATABASE_URL": f"sqlite://{tmp_path}/db.sqlite3"}
    assert Settings.from_env(env).ssh_image == DEFAULT_SSH_IMAGE
    mirrored = "registry.example.com/gpupaas/ssh-tools:2025.88-1"
    assert Settings.from_env({**env, "GPUPAAS_SSH_IMAGE": f" {mirrored} "}).ssh_image == mirrored
    with pytest.raises(SettingsError, match="GPUPAAS_SSH_IMAGE='https://x/y': expected an image reference"):
        Settings.from_env({**env, "GPUPAAS_SSH_IMAGE": "https://x/y"})
