"""The fake serves OpenAPI v3 as kube-apiserver does, so that kubectl validates through it: `kubectl
apply --server-side` works without --validate=false (kubectl learns from the documents that the
server validates fields, and sends fieldValidation=Strict). kubectl sends no bearer token to a
plain-HTTP server, so against the fake it is always the admin; `kubectl auth can-i` and `kubectl
create` send protobuf, which the fake does not read.

The kubectl tests use /usr/bin/kubectl (1.27 or later); where it is missing they are skipped
locally and fail in CI (tests/required.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fake_kube import FakeKube
from tests.fake_kube.openapi import discovery
from tests.required import KUBECTL, missing


def _refs(value: Any) -> set[str]:
    if isinstance(value, dict):
        found = {str(value["$ref"])} if "$ref" in value else set()
        return found.union(*(_refs(v) for v in value.values())) if value else found
    if isinstance(value, list):
        return set().union(*(_refs(v) for v in value)) if value else set()
    return set()


def test_every_group_version_has_a_document_whose_patch_operations_take_field_validation(
    fake_kube: FakeKube,
) -> None:
    root = httpx.get(f"{fake_kube.url}/openapi/v3").json()

    assert root == discovery()
    assert {"api/v1", "apis/apps/v1", "apis/batch/v1", "apis/rbac.authorization.k8s.io/v1"} <= set(
        root["paths"]
    )
    for path, entry in root["paths"].items():
        url = entry["serverRelativeURL"]
        assert url.startswith(f"/openapi/v3/{path}?hash=")
        document = httpx.get(fake_kube.url + url).json()
        assert document["openapi"] == "3.0.0"
        schemas = document["components"]["schemas"]
        assert {ref.removeprefix("#/components/schemas/") for ref in _refs(document)} <= set(schemas), path
        patches = [item["patch"] for item in document["paths"].values() if "patch" in item]
        for patch in patches:  # (authorization.k8s.io's reviews are only created)
            assert "fieldValidation" in [p["name"] for p in patch["parameters"] if p["in"] == "query"]
    v1 = httpx.get(fake_kube.url + root["paths"]["api/v1"]["serverRelativeURL"]).json()
    configmap = v1["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"]
    assert configmap["x-kubernetes-group-version-kind"] == {"group": "", "version": "v1", "kind": "ConfigMap"}
    assert v1["components"]["schemas"]["io.k8s.api.core.v1.ConfigMap"]["x-kubernetes-group-version-kind"] == [
        {"group": "", "kind": "ConfigMap", "version": "v1"}
    ]
    assert httpx.get(f"{fake_kube.url}/openapi/v3/apis/example.com/v1").status_code == 404


@pytest.fixture
def kubectl(fake_kube: FakeKube, tmp_path: Path) -> Any:
    """Runs /usr/bin/kubectl against the fake (its own HOME: no cache from elsewhere)."""
    binary = shutil.which("kubectl", path="/usr/bin")
    if binary is None:
        missing(KUBECTL, "/usr/bin/kubectl is not installed (the machine image has it; apt's is too old)")
    assert binary is not None
    config = fake_kube.kubeconfig(tmp_path / "kubeconfig")
    env = {"HOME": str(tmp_path), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "KUBECONFIG": str(config)}

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [binary, *args], input=stdin, capture_output=True, text=True, env=env, timeout=60, check=False
        )

    return run


MANIFESTS = """
apiVersion: v1
kind: Namespace
metadata:
  name: team
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: team
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: main
          image: nginx:1.27
          resources: {limits: {memory: 1024Mi}}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: once
  namespace: team
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox:1.36}]
"""


def test_kubectl_apply_server_side_validates_through_the_served_documents(
    fake_kube: FakeKube, kubectl: Any
) -> None:
    applied = kubectl("apply", "--server-side", "-f", "-", stdin=MANIFESTS)

    assert applied.returncode == 0, applied.stderr
    assert applied.stdout.split("\n")[:3] == [
        "namespace/team serverside-applied",
        "deployment.apps/web serverside-applied",
        "job.batch/once serverside-applied",
    ]
    patches = [r for r in fake_kube.requests if r.method == "PATCH"]
    assert [r.query.get("fieldValidation") for r in patches] == ["Strict"] * 3
    memory = kubectl(
        "get",
        "deployment",
        "web",
        "-n",
        "team",
        "-o",
        "jsonpath={.spec.template.spec.containers[0].resources.limits.memory}",
    )
    assert (memory.returncode, memory.stdout) == (0, "1Gi")
    fake_kube.wait_for(lambda: fake_kube.ready_pods("team", "app=web"))
