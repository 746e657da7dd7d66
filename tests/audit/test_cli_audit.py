"""What the `gpupaas` commands change is recorded with the CLI as the actor."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.test_cli import gpupaas


def test_the_cli_is_the_actor_of_what_its_commands_change(tmp_path: Path) -> None:
    result = gpupaas(
        tmp_path, "create-user", "--username", "root", "--password-stdin", stdin="long password 1\n"
    )
    assert result.returncode == 0, result.stderr
    assert gpupaas(tmp_path, "create-project", "ml").returncode == 0
    with sqlite3.connect(tmp_path / "cli.db") as conn:
        rows = conn.execute(
            "SELECT actor_kind, actor_name, action, object_type, object_name, outcome, changes"
            " FROM audit_entries ORDER BY created_at"
        ).fetchall()
    assert [row[:6] for row in rows] == [
        ("CLI", "cli", "createUser", "User", "root", "SUCCESS"),
        ("CLI", "cli", "createProject", "Project", "ml", "SUCCESS"),
    ]
    assert '"password_hash":{"from":null,"to":"[redacted]"}' in rows[0][6]
    assert "long password" not in rows[0][6]
