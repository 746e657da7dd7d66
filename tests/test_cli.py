"""The `gpupaas` command, run as a user would run it: a real process against a fresh SQLite file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def gpupaas(tmp_path: Path, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GPUPAAS_DATABASE_URL": f"sqlite://{tmp_path}/cli.db"}
    return subprocess.run(
        [sys.executable, "-m", "gpupaas.cli", *args],
        input=stdin,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_a_new_installation_from_the_command_line(tmp_path: Path) -> None:
    made = gpupaas(
        tmp_path,
        "create-user",
        "--username",
        "admin",
        "--platform-admin",
        "--password-stdin",
        stdin="a long password\n",
    )
    assert made.returncode == 0, made.stderr
    assert made.stdout.strip() == "created platform admin admin"

    token = gpupaas(tmp_path, "create-token", "--username", "admin", "--name", "laptop")
    assert token.returncode == 0, token.stderr
    assert token.stdout.startswith("gpp_") and len(token.stdout.strip().splitlines()) == 1

    assert gpupaas(tmp_path, "create-project", "ml").stdout.strip() == "created project ml"
    gpupaas(tmp_path, "create-user", "--username", "bob", "--password-stdin", stdin="another password\n")
    added = gpupaas(tmp_path, "add-member", "ml", "bob", "member")
    assert added.returncode == 0 and added.stdout.strip() == "bob is MEMBER of ml"


def test_bad_input_is_a_clear_error_and_a_non_zero_exit(tmp_path: Path) -> None:
    cases = [
        (
            ("create-user", "--username", "x", "--password-stdin"),
            "short\n",
            "password: must be at least 8 characters",
        ),
        (("create-user", "--username", "x"), "", "--password-stdin"),
        (("create-token", "--username", "ghost", "--name", "n"), "", 'no user named "ghost"'),
        (("create-project", "Not Valid"), "", "name: must be a DNS-1123 label"),
        (("add-member", "nope", "bob", "ADMIN"), "", 'project "nope" not found'),
        (("add-member", "nope", "bob", "OWNER"), "", "role must be ADMIN or MEMBER"),
        (("worker",), "", "gpupaas worker needs GPUPAAS_KAFKA_BOOTSTRAP_SERVERS"),
    ]
    for args, stdin, message in cases:
        result = gpupaas(tmp_path, *args, stdin=stdin)
        assert result.returncode != 0, args
        assert message in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr


def test_bad_settings_are_reported_without_a_traceback(tmp_path: Path) -> None:
    env = {**os.environ, "GPUPAAS_DATABASE_URL": "mysql://nope"}
    result = subprocess.run(
        [sys.executable, "-m", "gpupaas.cli", "migrate"], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    assert "GPUPAAS_DATABASE_URL='mysql://nope'" in result.stderr and "Traceback" not in result.stderr


def test_export_schema_prints_the_sdl(tmp_path: Path) -> None:
    result = gpupaas(tmp_path, "export-schema")
    assert result.returncode == 0
    assert (Path(__file__).parent.parent / "schema.graphql").read_text() == result.stdout


def test_an_unreachable_database_is_reported_without_a_traceback(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "GPUPAAS_DATABASE_URL": "postgres://postgres@127.0.0.1:9/nope",
        "GPUPAAS_SECRET_KEY": "k" * 32,
    }
    result = subprocess.run(
        [sys.executable, "-m", "gpupaas.cli", "migrate"], env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    assert "the database cannot be used" in result.stderr and "Traceback" not in result.stderr


def test_templates_in_gpustacks_format_from_the_command_line(tmp_path: Path) -> None:
    catalog = tmp_path / "catalog.yaml"
    catalog.write_text(
        "items:\n"
        "  - name: ubuntu-shell\n"
        "    manufacturer: cpu\n"
        "    spec:\n"
        "      image: ubuntu:24.04\n"
        "      ports: [{name: SSH, port: 22}]\n"
        "  - name: broken\n"
        "    spec: {image: ubuntu, imagePullSecret: {name: registry}}\n"
    )
    assert gpupaas(tmp_path, "create-project", "ml").returncode == 0
    # one template refused: the others are imported, the exit says so
    imported = gpupaas(tmp_path, "import-templates", str(catalog), "--project", "ml")
    assert imported.returncode == 2
    assert imported.stdout.splitlines() == [
        "CREATED   ubuntu-shell",
        "REFUSED   broken",
        '          items[1].spec.imagePullSecret.name: project "ml" has no image pull secret "registry" '
        "(imagePullSecrets lists them; its admins create them)",
        "1 of 2 templates imported (project ml)",
    ]
    assert "1 of 2 templates were refused" in imported.stderr

    exported = gpupaas(tmp_path, "export-templates", "--project", "ml")
    assert exported.returncode == 0, exported.stderr
    assert "name: SSH" in exported.stdout and "manufacturer: cpu" in exported.stdout
    # what was exported imports unchanged, from standard input
    again = gpupaas(tmp_path, "import-templates", "-", "--project", "ml", stdin=exported.stdout)
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[0] == "UNCHANGED ubuntu-shell"

    assert "not valid YAML" in gpupaas(tmp_path, "import-templates", "-", stdin="items: [").stderr
    missing = gpupaas(tmp_path, "import-templates", str(tmp_path / "nope.yaml"))
    assert missing.returncode == 2 and "cannot be read" in missing.stderr
    unknown = gpupaas(tmp_path, "export-templates", "nope")
    assert unknown.returncode == 2 and "no instance template named 'nope'" in unknown.stderr
