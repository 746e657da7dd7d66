"""infra/observability (README, "Observe"): the Grafana dashboard is a dashboard model and the
alert rules a rules file; every metric either names is one that /metrics exports (read from a real
scrape of the app and of a worker's registry); their PromQL is balanced, and promtool checks the
rules, runs their unit tests and parses every query of the dashboard."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from gpupaas.api.metrics import metrics_app
from gpupaas.app import create_app
from gpupaas.core.metrics import Metrics
from gpupaas.settings import Settings
from tests.required import PROMTOOL, missing
from tests.test_metrics import AUTH, TOKEN

ROOT = Path(__file__).resolve().parent.parent
INFRA = ROOT / "infra" / "observability"
DASHBOARD = INFRA / "grafana-dashboard.json"
RULES = INFRA / "prometheus-rules.yaml"
RULE_TESTS = INFRA / "prometheus-rules.test.yaml"

METRIC = re.compile(r"\bgpupaas_[a-z_]+\b")
# The sample names of each type of family in the Prometheus text format (0.0.4) that /metrics
# answers: a counter's TYPE line already names it with _total (its _created is a family of its own).
SUFFIXES = {
    "counter": ("",),
    "histogram": ("_bucket", "_count", "_sum"),
    "summary": ("", "_count", "_sum"),
    "gauge": ("",),
    "untyped": ("",),
}


def sample_names(text: str) -> set[str]:
    """The sample names a scrape's families export, from their `# TYPE` lines (a labelled
    histogram nobody observed yet has no sample, but its family is there)."""
    names: set[str] = set()
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split()
            names.update(name + suffix for suffix in SUFFIXES[kind])
    return names


async def _scrape(app: Any) -> str:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://scrape") as http:
        response = await http.get("/metrics", headers=AUTH)
        assert response.status_code == 200, response.text
        return response.text


@pytest.fixture
async def exported(settings: Settings) -> set[str]:
    metered = replace(settings, metrics_token=TOKEN)
    names = sample_names(await _scrape(create_app(metered, migrate=False)))
    names |= sample_names(await _scrape(metrics_app(Metrics(), metered)))
    assert "gpupaas_graphql_errors_total" in names and "gpupaas_kafka_consumer_lag" in names
    return names


def metrics_in(expr: str) -> set[str]:
    return set(METRIC.findall(_unquoted(expr)))


def _unquoted(expr: str) -> str:
    """The expression without its string literals (label values such as "gpupaas_x" are not metrics)."""
    return re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)


def balanced(expr: str) -> bool:
    pairs = {")": "(", "]": "[", "}": "{"}
    stack: list[str] = []
    for char in _unquoted(expr):
        if char in "([{":
            stack.append(char)
        elif char in pairs and (not stack or stack.pop() != pairs[char]):
            return False
    return not stack


def test_the_expression_checks_catch_what_they_are_for() -> None:
    assert balanced('sum by (a) (rate(x{b="("}[5m]))')
    assert not balanced("sum(rate(x[5m])")
    assert not balanced("sum(rate(x[5m)])")
    assert metrics_in('max(gpupaas_a_b{x="gpupaas_not_me"}) / gpupaas_c_total') == {
        "gpupaas_a_b",
        "gpupaas_c_total",
    }
    assert sample_names("# TYPE gpupaas_x histogram\n# TYPE gpupaas_y_total counter\n") == {
        "gpupaas_x_bucket",
        "gpupaas_x_count",
        "gpupaas_x_sum",
        "gpupaas_y_total",
    }


# ------------------------------------------------------------------ the dashboard


def dashboard() -> dict[str, Any]:
    model: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return model


def graph_panels(model: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for p in model["panels"] if p["type"] != "row"]


def dashboard_exprs(model: dict[str, Any]) -> list[str]:
    return [target["expr"] for panel in graph_panels(model) for target in panel["targets"]]


def test_the_dashboard_is_a_grafana_dashboard_model_with_a_datasource_variable() -> None:
    model = dashboard()
    assert model["title"] and model["uid"] and isinstance(model["schemaVersion"], int)
    assert "id" not in model or model["id"] is None  # importable into any Grafana
    (variable,) = [v for v in model["templating"]["list"] if v["type"] == "datasource"]
    assert (variable["name"], variable["query"]) == ("datasource", "prometheus")
    ids = [p["id"] for p in model["panels"]]
    assert len(ids) == len(set(ids))
    cells: set[tuple[int, int]] = set()
    for panel in model["panels"]:
        grid = panel["gridPos"]
        assert all(isinstance(grid[k], int) for k in ("h", "w", "x", "y")) and grid["x"] + grid["w"] <= 24
        area = {
            (x, y)
            for x in range(grid["x"], grid["x"] + grid["w"])
            for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not area & cells, f"panel {panel['title']!r} overlaps another"
        cells |= area
    for panel in graph_panels(model):
        assert panel["type"] in ("timeseries", "table", "stat", "gauge") and panel["title"]
        assert panel["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        assert panel["targets"], panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs))
        for target in panel["targets"]:
            assert target["datasource"] == panel["datasource"]
            assert balanced(target["expr"]), target["expr"]


def test_the_dashboard_shows_what_the_issue_asks_and_only_exported_metrics(exported: set[str]) -> None:
    used = set().union(*(metrics_in(expr) for expr in dashboard_exprs(dashboard())))
    assert used <= exported, used - exported
    wanted = {
        "gpupaas_http_request_seconds_bucket",  # request latency p50/p95
        "gpupaas_graphql_operation_seconds_bucket",
        "gpupaas_graphql_errors_total",  # errors by code
        "gpupaas_run_duration_seconds_count",  # runs by outcome
        "gpupaas_run_duration_seconds_bucket",  # run duration
        "gpupaas_outbox_backlog",
        "gpupaas_outbox_oldest_age_seconds",
        "gpupaas_kafka_consumer_lag",
        "gpupaas_websocket_connections",
        "gpupaas_status_subscriptions",
        "gpupaas_instances",
        "gpupaas_gpus_allocated",
        "gpupaas_gpus_free",
        "gpupaas_worker_heartbeat_timestamp_seconds",
    }
    assert wanted <= used, wanted - used


# ------------------------------------------------------------------ the alert rules


def rules() -> list[dict[str, Any]]:
    document = yaml.safe_load(RULES.read_text())
    return [rule for group in document["groups"] for rule in group["rules"]]


def test_the_alert_rules_are_a_rules_file_of_the_alerts_asked_for(exported: set[str]) -> None:
    document = yaml.safe_load(RULES.read_text())
    assert [group["name"] for group in document["groups"]] == ["gpupaas"]
    found = rules()
    names = [rule["alert"] for rule in found]
    assert len(names) == len(set(names))
    assert {
        "GpupaasApiDown",
        "GpupaasTargetDown",
        "GpupaasNoWorker",
        "GpupaasWorkerNotHeartbeating",
        "GpupaasOutboxStalled",
        "GpupaasOutboxBacklogGrowing",
        "GpupaasRunsFailing",
        "GpupaasKafkaLagHigh",
    } == set(names)
    for rule in found:
        assert rule["labels"]["severity"] in ("critical", "warning"), rule["alert"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule["alert"]
        assert re.fullmatch(r"\d+[smh]", rule["for"]), rule["alert"]
        assert balanced(rule["expr"]), rule["alert"]
        assert metrics_in(rule["expr"]) <= exported, (rule["alert"], metrics_in(rule["expr"]) - exported)
        assert metrics_in(rule["expr"]) or "up{" in rule["expr"], rule["alert"]


def promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        missing(PROMTOOL, "promtool is not on PATH (apt-get install prometheus)")
    return found


def _run(*args: str) -> str:
    result = subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=INFRA)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_promtool_checks_the_rules_and_runs_their_unit_tests() -> None:
    tool = promtool()
    assert f"SUCCESS: {len(rules())} rules found" in _run(tool, "check", "rules", RULES.name)
    assert "SUCCESS" in _run(tool, "test", "rules", RULE_TESTS.name)


def test_promtool_parses_every_query_of_the_dashboard(tmp_path: Path) -> None:
    """Each panel query as a recording rule (Grafana's $__rate_interval as 5m): promtool parses
    them as it parses the rules, and a typo fails here."""
    tool = promtool()
    exprs = [expr.replace("$__rate_interval", "5m") for expr in dashboard_exprs(dashboard())]
    recording = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [{"record": f"dashboard:query_{i}", "expr": e} for i, e in enumerate(exprs)],
            }
        ]
    }
    path = tmp_path / "dashboard-queries.yaml"
    path.write_text(yaml.safe_dump(recording))
    assert f"SUCCESS: {len(exprs)} rules found" in _run(tool, "check", "rules", str(path))
    broken = tmp_path / "broken.yaml"
    broken.write_text(
        yaml.safe_dump({"groups": [{"name": "b", "rules": [{"record": "b:x", "expr": "sum(rate(x[5m])"}]}]})
    )
    result = subprocess.run([tool, "check", "rules", str(broken)], capture_output=True, text=True, timeout=60)
    assert result.returncode != 0


async def test_the_readme_lists_every_metric_exported(settings: Settings) -> None:
    """README, "Observe": its table names each family /metrics exports (app and worker), no more."""
    metered = replace(settings, metrics_token=TOKEN)
    texts = [
        await _scrape(create_app(metered, migrate=False)),
        await _scrape(metrics_app(Metrics(), metered)),
    ]
    families = {
        line.split()[2]
        for text in texts
        for line in text.splitlines()
        if line.startswith("# TYPE ") and not line.split()[2].endswith("_created")
    }
    section = (ROOT / "README.md").read_text().split("## Observe", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1] for line in section.splitlines() if line.startswith("| `gpupaas_")]
    documented = {name for row in rows for name in re.findall(r"`(gpupaas_[a-z_]+)`", row)}
    assert documented == families, (documented - families, families - documented)
