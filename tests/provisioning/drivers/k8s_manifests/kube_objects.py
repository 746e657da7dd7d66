"""Kubernetes objects shaped as the API serves them (see the API reference), and a plan's manifests,
for the tests of the pure functions behind the kubernetes driver."""

from __future__ import annotations

import uuid
from typing import Any

from gpupaas.provisioning.builtins import builtin_template
from gpupaas.provisioning.plan import INSTANCE_LABEL, MANAGED_BY, build_plan

INSTANCE = "6f1d2c3b-0000-4000-8000-000000000001"


LABELS = {MANAGED_BY: "gpupaas", INSTANCE_LABEL: INSTANCE}


def obj(kind: str, name: str, api_version: str = "v1", **fields: Any) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, **fields}


def pod(
    name: str = "nb-0",
    *,
    phase: str = "Running",
    ready: bool = True,
    containers: list[dict[str, Any]] | None = None,
    init_containers: list[dict[str, Any]] | None = None,
    conditions: list[dict[str, Any]] | None = None,
    owner: str | None = None,
    reason: str | None = None,
    message: str | None = None,
) -> dict[str, Any]:
    """A pod as GET /api/v1/namespaces/<ns>/pods/<name> serves it."""
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": "team-a-nb",
        "uid": str(uuid.uuid4()),
        "resourceVersion": "1234",
        "labels": dict(LABELS),
    }
    if owner:
        metadata["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": owner, "name": "web-5d4f", "uid": "u", "controller": True}
        ]
    if conditions is None:
        conditions = [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
            {"type": "Initialized", "status": "True"},
            {"type": "ContainersReady", "status": "True" if ready else "False"},
            {"type": "Ready", "status": "True" if ready else "False"},
        ]
    status: dict[str, Any] = {"phase": phase, "conditions": conditions}
    if containers is None:
        containers = [
            {
                "name": "main",
                "image": "jupyter/base-notebook:latest",
                "ready": ready,
                "restartCount": 0,
                "state": {"running": {"startedAt": "2026-01-01T00:00:05Z"}},
            }
        ]
    status["containerStatuses"] = containers
    if init_containers is not None:
        status["initContainerStatuses"] = init_containers
    if reason:
        status["reason"] = reason
    if message:
        status["message"] = message
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [{"name": "main", "image": "jupyter/base-notebook:latest"}]},
        "status": status,
    }


def waiting(
    reason: str,
    message: str | None = None,
    last: dict[str, Any] | None = None,
    *,
    restarts: int | None = None,
) -> dict[str, Any]:
    """A container status waiting for `reason`; `last`: how it last terminated (restarted 3 times
    unless `restarts` says otherwise)."""
    state: dict[str, Any] = {"reason": reason}
    if message:
        state["message"] = message
    return {
        "name": "main",
        "ready": False,
        "restartCount": restarts if restarts is not None else (3 if last else 0),
        "state": {"waiting": state},
        "lastState": {"terminated": last} if last else {},
    }


def plan_manifests() -> list[dict[str, Any]]:
    builtin = builtin_template("gpu-namespace")
    assert builtin is not None
    plan = build_plan(
        instance_id=INSTANCE,
        instance_name="nb",
        project="team-a",
        profile_name="h100",
        allocation="SHARED",
        resources={
            "cpu": "8",
            "memory": "64Gi",
            "storage": "100Gi",
            "gpuCount": 4,
            "gpuVendor": "NVIDIA",
            "gpuModel": "H100",
        },
        template_resources=builtin.resources,
        input_definitions=builtin.inputs,
        input_values={d.name: d.default for d in builtin.inputs if d.default is not None},
        outputs=builtin.outputs,
        labels={"team": "ml"},
        annotations={},
    )
    return list(plan.manifests)


def deployment(**status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns", "generation": 2},
        "spec": {"replicas": 2},
        "status": status,
    }
