"""The benchmarks still run: each of bench/ at a tiny size, as `make bench` runs it at full size.

They assert nothing about speed (README, "Performance"); this only fails when a bench itself no
longer works against the code, as all four once did without anyone noticing: the service calls they
seed with had gained a required argument, and status subscriptions had started with a snapshot
that the fan-out client did not expect. Each bench fails (exit status 1) when a deploy or an event
went missing, so a run to the end also means the pipeline it drives delivered everything.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import _postgres_admin_url
from tests.required import POSTGRES, missing

BENCH = Path(__file__).resolve().parent.parent / "bench"


def run_bench(script: str, *args: str, timeout: float = 240) -> str:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"{script} {' '.join(args)} exited {done.returncode}:\n{output[-4000:]}"
    return output


def test_deploy_pipeline_runs() -> None:
    output = run_bench("deploy_pipeline.py", "--bus", "memory", "--deploys", "4", "--warmup", "2")
    assert "4 deploys in" in output and "all reached SUCCESS" in output, output[-2000:]
    assert "throughput (deploys/s)" in output


def test_fanout_runs() -> None:
    output = run_bench("fanout.py", "--subscribers", "3", "--events", "5", "--memory-events", "0")
    assert "missed events (total, max per subscriber)              0, 0" in output, output[-2000:]


def test_read_path_runs() -> None:
    output = run_bench(
        "read_path.py", "--profiles", "30", "--projects", "3", "--seconds", "0.2", "--warmup", "0"
    )
    assert "GraphQL / raw, requests per second" in output, output[-2000:]
    assert "errors 0" in output
    assert "goals (issue 19, P1, cached):" in output and "at the lowest," in output, output[-2000:]


def test_scale_runs() -> None:
    url = _postgres_admin_url()  # the bench makes a scratch database of its own there
    if url is None:
        missing(POSTGRES, "no server answers at 127.0.0.1:5432 (start one, or set GPUPAAS_TEST_POSTGRES_URL)")
    output = run_bench(
        "scale.py",
        "--instances",
        "2000",
        "--projects",
        "10",
        "--profiles",
        "20",
        "--requests",
        "3",
        "--warmup",
        "1",
        "--postgres",
        url,
    )
    assert "same plans at both sizes" in output, output[-2000:]
