"""The manifests shipped in infra/ are valid Kubernetes objects (what `kubectl apply` would accept)."""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import pytest
import yaml

INFRA = Path(__file__).resolve().parent.parent / "infra"
# Plain manifests; infra/kubernetes (Kustomize: bases, overlays and patches) is rendered and then
# validated by tests/test_install.py, and a kustomization.yaml is not an object for the API server;
# infra/observability holds Prometheus's rule files, checked by tests/test_observability_infra.py;
# infra/simulated holds the simulated cluster's inventory, loaded by tests/core/test_gpu_resources.py.
NOT_OBJECTS = (INFRA / "kubernetes", INFRA / "observability", INFRA / "simulated")
MANIFESTS = sorted(
    p
    for p in INFRA.rglob("*.yaml")
    if p.name != "kustomization.yaml" and not any(d in p.parents for d in NOT_OBJECTS)
)


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: str(p.relative_to(INFRA)))
def test_every_object_validates(path: Path) -> None:
    documents = [d for d in yaml.safe_load_all(path.read_text()) if d]
    assert documents
    for document in documents:
        kubernetes_validate.validate(document, "1.37.0", strict=True)


def test_the_worker_may_do_what_the_driver_does() -> None:
    rbac = {
        d["kind"]: d for d in yaml.safe_load_all((INFRA / "rbac" / "gpupaas-worker.yaml").read_text()) if d
    }
    rules = rbac["ClusterRole"]["rules"]

    def allowed(group: str, resource: str, verb: str) -> bool:
        return any(
            group in r["apiGroups"] and resource in r["resources"] and verb in r["verbs"] for r in rules
        )

    # server-side apply is a patch; destroy deletes; readiness and drift read and watch
    for group, resource in [
        ("", "namespaces"),
        ("", "resourcequotas"),
        ("", "limitranges"),
        ("", "services"),
        ("apps", "deployments"),
        ("", "persistentvolumeclaims"),
    ]:
        for verb in ("get", "patch", "delete"):
            assert allowed(group, resource, verb), (resource, verb)
    assert allowed("", "pods", "watch") and allowed("", "nodes", "list")
