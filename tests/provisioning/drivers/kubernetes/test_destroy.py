"""Destroying against the fake API server: everything goes, and only what the instance owns."""

from __future__ import annotations

from gpupaas.provisioning.drivers.base import Observed, Phase
from gpupaas.provisioning.drivers.kubernetes.driver import KubernetesDriver
from tests.fake_kube import FakeKube
from tests.provisioning.drivers.kubernetes.clusters import (
    SETTINGS_ONLY,
    Recorder,
    make_plan,
    notebook_plan,
    ns,
    versions,
)


async def test_destroy_deletes_everything_and_waits_until_the_namespace_is_gone(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    plan = notebook_plan()
    await driver.apply(plan)
    fake.set_namespace_deletion_delay(0.3)
    fake.clear_requests()
    progress = Recorder()

    await driver.destroy(plan, progress)

    assert fake.get("v1", "Namespace", ns("nb")) is None
    assert versions(fake, plan) == {}
    assert progress.messages == ["Deleting 3 objects", f"Waiting for namespace {ns('nb')} to terminate"]
    deletes = [r for r in fake.requests if r.method == "DELETE"]
    assert deletes[0].path == f"/api/v1/namespaces/{ns('nb')}/services/jupyter"
    assert deletes[-1].path == f"/api/v1/namespaces/{ns('nb')}"
    assert await driver.observe(plan) == Observed(Phase.ABSENT)
    await driver.destroy(plan)  # idempotent
    assert await driver.observe(plan) == Observed(Phase.ABSENT)


async def test_destroy_also_deletes_what_the_plan_no_longer_names_and_keeps_a_namespace_it_does_not_own(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    # given a plan that applies into an existing namespace, and an object of the instance that an
    # older version of its template left there
    plan = make_plan(resources_text=SETTINGS_ONLY, outputs=())
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": plan.namespace}})
    await driver.apply(plan)
    fake.create(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": "old-token",
                "namespace": plan.namespace,
                "labels": {"gpupaas.io/instance": plan.instance_id},
            },
            "stringData": {"token": "x"},
        }
    )

    await driver.destroy(plan)

    assert fake.get("v1", "ConfigMap", "settings", plan.namespace) is None
    assert fake.get("v1", "Secret", "old-token", plan.namespace) is None
    assert fake.get("v1", "Namespace", plan.namespace) is not None
