"""Pruning against the fake API server: what a newer version of the template no longer renders is
deleted by the next deploy, and nothing else."""

from __future__ import annotations

from gpupaas.provisioning.drivers.kubernetes.driver import KubernetesDriver
from tests.fake_kube import FakeKube
from tests.provisioning.drivers.kubernetes.clusters import NOTEBOOK, Recorder, notebook_plan, ns, versions

SETTINGS = """
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: fast
"""

SCRATCH_NAMESPACE = """
---
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}-scratch"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: scratch
  namespace: "{{ instance.namespace }}-scratch"
data:
  empty: "yes"
"""


async def test_an_object_the_new_version_no_longer_has_is_deleted_and_the_rest_left_alone(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    # given version 1 of a template with a ConfigMap, applied
    v1 = notebook_plan(resources_text=NOTEBOOK + SETTINGS)
    await driver.apply(v1)
    assert fake.get("v1", "ConfigMap", "settings", ns("nb")) is not None
    kept = versions(fake, v1)
    pods = fake.pod_names(ns("nb"))
    # and a ConfigMap of the same name pattern that another instance owns in the same namespace
    fake.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "other-settings",
                "namespace": ns("nb"),
                "labels": {"app.kubernetes.io/managed-by": "gpupaas", "gpupaas.io/instance": "someone-else"},
            },
        }
    )
    v2 = notebook_plan(resources_text=NOTEBOOK)
    progress = Recorder()

    # when version 2, without the ConfigMap, is applied
    applied = await driver.apply(v2, progress)

    # then the ConfigMap is gone, and nothing else changed: not the namespace, Deployment, Service,
    # nor the pods and ReplicaSet the Deployment made (they carry the instance's label too)
    assert fake.get("v1", "ConfigMap", "settings", ns("nb")) is None
    assert versions(fake, v2) == kept
    assert fake.pod_names(ns("nb")) == pods
    assert fake.get("v1", "ConfigMap", "other-settings", ns("nb")) is not None
    assert [ref.kind for ref in applied.objects] == ["Namespace", "Deployment", "Service"]
    assert f"Deleting 1 object the template no longer has: configmap settings in namespace {ns('nb')}" in (
        progress.messages
    )


async def test_applying_the_same_version_again_deletes_nothing(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    plan = notebook_plan(resources_text=NOTEBOOK + SETTINGS)
    await driver.apply(plan)
    fake.clear_requests()

    await driver.apply(plan)

    assert [r for r in fake.requests if r.method == "DELETE"] == []


async def test_a_namespace_the_new_version_no_longer_has_is_deleted_with_what_is_in_it(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    # a second namespace: only a platform template on a trusting cluster may make one
    v1 = notebook_plan(resources_text=NOTEBOOK + SCRATCH_NAMESPACE, trusted=True)
    await driver.apply(v1)
    scratch = f"{ns('nb')}-scratch"
    assert fake.get("v1", "ConfigMap", "scratch", scratch) is not None

    await driver.apply(notebook_plan(resources_text=NOTEBOOK))

    gone = fake.wait_for(lambda: fake.get("v1", "Namespace", scratch) is None)
    assert gone
    assert fake.get("v1", "Namespace", ns("nb")) is not None


async def test_an_object_labelled_with_the_instance_that_gpupaas_did_not_apply_is_not_pruned(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    # pods, ReplicaSets and claims that controllers make carry the instance's labels: so may an
    # object someone made by hand; only what the driver applied itself is pruned
    plan = notebook_plan()
    await driver.apply(plan)
    fake.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "made-by-hand",
                "namespace": ns("nb"),
                "labels": {"gpupaas.io/instance": plan.instance_id},
            },
        }
    )

    await driver.apply(plan)

    assert fake.get("v1", "ConfigMap", "made-by-hand", ns("nb")) is not None


async def test_a_broken_api_group_does_not_stop_the_deploy_nor_the_pruning(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    # given an aggregated API whose backend is down (a broken metrics-server)
    fake.add_unavailable_api("metrics.k8s.io", "v1beta1")
    await driver.apply(notebook_plan(resources_text=NOTEBOOK + SETTINGS))
    progress = Recorder()

    await driver.apply(notebook_plan(resources_text=NOTEBOOK), progress)

    assert fake.get("v1", "ConfigMap", "settings", ns("nb")) is None
    skipped = [m for m in progress.messages if m.startswith("Could not look for objects")]
    assert len(skipped) == 1
    assert "metrics.k8s.io/v1beta1" in skipped[0] and "HTTP 503" in skipped[0]
