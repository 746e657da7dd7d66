"""Ownership against the fake API server: the driver never takes over an object it did not create
for the instance, and destroy deletes only what carries the instance's label."""

from __future__ import annotations

import uuid

import pytest

from gpupaas.provisioning.drivers.kubernetes.driver import KubernetesDriver
from gpupaas.provisioning.plan import PermanentError
from tests.fake_kube import FakeKube
from tests.provisioning.drivers.kubernetes.clusters import (
    SETTINGS_ONLY,
    Recorder,
    make_plan,
    notebook_plan,
    ns,
)


def someones_namespace(fake: FakeKube, name: str) -> None:
    """A namespace and a ConfigMap in it that someone made with kubectl before gpupaas came."""
    fake.create(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {"team": "a"}}}
    )
    fake.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "their-data", "namespace": name},
            "data": {"keep": "me"},
        }
    )


async def test_a_namespace_made_by_someone_else_is_neither_adopted_nor_deleted(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    # given a namespace with the instance's name that someone else made, with a ConfigMap in it
    plan = notebook_plan()
    someones_namespace(fake, ns("nb"))
    before = fake.get("v1", "Namespace", ns("nb"))
    assert before is not None
    fake.clear_requests()

    # when the plan, which has that namespace, is applied
    with pytest.raises(PermanentError) as error:
        await driver.apply(plan)

    # then the run fails saying so, and nothing was written: no gpupaas labels on the namespace
    assert f"namespace {ns('nb')} exists and is not managed by gpupaas" in str(error.value)
    assert "does not take over objects it did not create" in str(error.value)
    assert [r for r in fake.requests if r.method != "GET"] == []
    after = fake.get("v1", "Namespace", ns("nb"))
    assert after is not None
    assert after["metadata"]["labels"] == before["metadata"]["labels"]
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert fake.get("apps/v1", "Deployment", "jupyter", ns("nb")) is None

    # and destroy deletes neither the namespace nor its ConfigMap, and says why
    progress = Recorder()
    await driver.destroy(plan, progress)

    assert fake.get("v1", "Namespace", ns("nb")) is not None
    assert fake.get("v1", "ConfigMap", "their-data", ns("nb")) is not None
    assert [r for r in fake.requests if r.method == "DELETE"] == []
    assert progress.messages[0] == (
        f"Leaving alone what gpupaas did not create for this instance: namespace {ns('nb')}"
    )


async def test_another_instances_object_is_not_taken_over_and_the_message_names_its_owner(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    # given an instance whose ConfigMap "settings" is applied in its namespace
    first = make_plan(name="nb", resources_text=SETTINGS_ONLY, outputs=())
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": first.namespace}})
    await driver.apply(first)
    theirs = fake.get("v1", "ConfigMap", "settings", first.namespace)
    assert theirs is not None
    # and a template of another instance that names the same ConfigMap in that namespace
    other = make_plan(
        name="other",
        resources_text=SETTINGS_ONLY.replace(
            "name: settings", f"name: settings\n  namespace: {first.namespace}"
        ),
        outputs=(),
        trusted=True,  # a platform template on a trusting cluster: confinement would refuse it first
    )

    with pytest.raises(PermanentError) as error:
        await driver.apply(other)

    assert (
        f"configmap settings in namespace {first.namespace} exists and belongs to another gpupaas instance "
        f"(gpupaas.io/instance={first.instance_id})"
    ) in str(error.value)
    after = fake.get("v1", "ConfigMap", "settings", first.namespace)
    assert after is not None and after["metadata"]["resourceVersion"] == theirs["metadata"]["resourceVersion"]

    await driver.destroy(other)

    assert fake.get("v1", "ConfigMap", "settings", first.namespace) is not None


async def test_every_object_that_would_be_taken_over_is_named_at_once(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    plan = notebook_plan()
    someones_namespace(fake, ns("nb"))
    fake.create(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "jupyter", "namespace": ns("nb")},
            "spec": {"selector": {"app": "x"}, "ports": [{"port": 80}]},
        }
    )

    with pytest.raises(PermanentError) as error:
        await driver.apply(plan)

    assert f"namespace {ns('nb')} exists and is not managed by gpupaas" in str(error.value)
    assert f"service jupyter in namespace {ns('nb')} exists and is not managed by gpupaas" in str(error.value)


async def test_destroy_deletes_an_object_of_the_plan_only_while_it_carries_the_instances_label(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    # given a plan applied into a namespace it does not own
    plan = make_plan(resources_text=SETTINGS_ONLY, outputs=())
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": plan.namespace}})
    await driver.apply(plan)
    # when someone replaces its ConfigMap by one of their own under the same name
    fake.delete("v1", "ConfigMap", "settings", plan.namespace)
    fake.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "settings", "namespace": plan.namespace, "labels": {"team": "b"}},
            "data": {"mode": "theirs"},
        }
    )

    await driver.destroy(plan)

    kept = fake.get("v1", "ConfigMap", "settings", plan.namespace)
    assert kept is not None and kept["data"] == {"mode": "theirs"}


async def test_an_object_of_the_instance_is_applied_again_without_complaint(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    plan = notebook_plan()
    await driver.apply(plan)

    again = await driver.apply(plan)

    assert [ref.kind for ref in again.objects] == ["Namespace", "Deployment", "Service"]


async def test_an_object_gpupaas_manages_for_something_else_is_refused(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    # a ConfigMap that gpupaas applied for a GPU service instance (its own owner label), met by a
    # compute instance's plan
    plan = make_plan(resources_text=SETTINGS_ONLY, outputs=())
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": plan.namespace}})
    service_id = str(uuid.uuid4())
    fake.create(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": "settings",
                "namespace": plan.namespace,
                "labels": {"app.kubernetes.io/managed-by": "gpupaas", "gpupaas.io/service": service_id},
            },
        }
    )

    with pytest.raises(PermanentError) as error:
        await driver.apply(plan)

    assert (
        f"configmap settings in namespace {plan.namespace} exists and is managed by gpupaas for something "
        "else (it has no label gpupaas.io/instance)"
    ) in str(error.value)
