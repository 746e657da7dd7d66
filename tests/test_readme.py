"""The README's "First steps", run as written: a real `gpupaas serve` and the README's shell blocks."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def first_steps_blocks() -> str:
    text = (ROOT / "README.md").read_text()
    section = text.split("## First steps", 1)[1].split("\n## ", 1)[0]
    return "\n".join(re.findall(r"```sh\n(.*?)```", section, flags=re.S))


@pytest.mark.filterwarnings("ignore::ResourceWarning")
def test_first_steps_work_as_written(tmp_path: Path) -> None:
    port = _free_port()
    env = {
        **os.environ,
        "GPUPAAS_DATABASE_URL": f"sqlite://{tmp_path}/readme.db",
        "GPUPAAS_URL": f"http://127.0.0.1:{port}",
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "gpupaas.cli", "serve", "--port", str(port), "--log-level", "warning"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=1) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.2)
        script = 'set -euo pipefail\nexport PATH="' + str(Path(sys.executable).parent) + ':$PATH"\n'
        script += (
            first_steps_blocks()
            .replace(".venv/bin/python ", f"{sys.executable} ")
            .replace(".venv/bin/gpupaas", f"{sys.executable} -m gpupaas.cli")
        )
        result = subprocess.run(
            ["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )
        assert result.returncode == 0, result.stderr + result.stdout
        answers = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
        assert all("errors" not in a for a in answers), answers
        assert all(
            not v.get("userErrors") for a in answers for v in a["data"].values() if isinstance(v, dict)
        )

        def answer(field: str, nth: int = 0) -> Any:
            return [a["data"][field] for a in answers if field in a["data"]][nth]

        shared = answer("setComputeProfileSharing")["computeProfile"]["sharing"]
        assert shared == {"mode": "SELECTED_PROJECTS", "projects": [{"name": "research"}]}
        catalog = answer("catalog")
        assert [p["name"] for p in catalog] == ["h100-small"]
        assert "<strong>H100</strong>" in catalog[0]["readmeHtml"]
        # the watchers printed the statuses as they came: the instance's, then the service's
        statuses = [
            line.split()[0] for line in result.stdout.splitlines() if line and not line.startswith("{")
        ]
        assert "IN_PROGRESS" in statuses and "SUCCESS" in statuses, result.stdout
        settled = [s for s in statuses if s in ("SUCCESS", "FAILED", "RUNNING", "STOPPED")]
        assert settled == ["SUCCESS", "RUNNING", "STOPPED", "RUNNING"], result.stdout
        instance = answer("computeInstance")
        assert instance["status"] == "SUCCESS"
        namespace = {o["key"]: o["value"] for o in instance["outputs"]}["namespace"]
        assert namespace.startswith("research-notebook-1-")
        assert instance["runs"] == [{"action": "DEPLOY", "status": "SUCCEEDED"}]
        # JupyterLab's Connect link logs in with ?token=, and stop/start keeps it
        first, last = answer("serviceInstance", 0), answer("serviceInstance", 1)
        assert first["status"] == last["status"] == "RUNNING"
        (link,) = first["connect"]
        assert link["port"] == "jupyter"
        assert re.fullmatch(r"http://127\.0\.0\.1:3\d{4}/\?token=[0-9a-f]{32}", link["url"]), link
        assert last["connect"] == first["connect"]
        assert "You are signed in" in result.stdout  # the link answers (the simulated endpoint)
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_the_code_map_names_every_package_and_the_layers_contract_does_too() -> None:
    import tomllib

    text = (ROOT / "README.md").read_text()
    section = text.split("## Code map", 1)[1].split("\n## ", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("| ") and "`" in line]
    column = [line.split("|")[2] for line in table]  # | layer | package | what it holds |
    named = {name.rstrip("/") for cell in column for name in re.findall(r"`([a-z_]+(?:\.py|/))`", cell)}
    backend = ROOT / "backend" / "gpupaas"
    packages = {p.name for p in backend.iterdir() if (p / "__init__.py").exists()} - {"migrations"}
    modules = {p.name for p in backend.glob("*.py")} - {"__init__.py"}
    assert named - packages - modules == set(), "the code map names what does not exist"
    assert packages - named == set(), "a package is missing from the code map"
    layers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"][0]
    in_contract = {m.strip().removeprefix("gpupaas.") for layer in layers["layers"] for m in layer.split("|")}
    assert packages - in_contract == set(), "a package is missing from the layers contract"
