"""Applying plans against the fake API server: server-side apply, readiness, failures, errors."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from gpupaas.provisioning.drivers.base import Observed, Phase
from gpupaas.provisioning.drivers.kubernetes.driver import KubernetesDriver
from gpupaas.provisioning.plan import PermanentError, TemporaryError
from tests.fake_kube import FakeKube, node
from tests.provisioning.drivers.kubernetes.clusters import (
    NOTEBOOK,
    SETTINGS_ONLY,
    Recorder,
    first_pod,
    make_plan,
    new_driver,
    notebook_plan,
    ns,
    versions,
)


async def test_a_gpu_namespace_plan_is_applied_with_its_labels_and_outputs(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    plan = make_plan()
    progress = Recorder()

    applied = await driver.apply(plan, progress)

    assert applied.outputs == {
        "namespace": ns("nb"),
        "quota": "cpu 8, memory 64Gi, storage 100Gi, nvidia.com/gpu 4",
        "gpuResource": "nvidia.com/gpu",
    }
    assert [(r.api_version, r.kind, r.name, r.namespace) for r in applied.objects] == [
        ("v1", "Namespace", ns("nb"), None),
        ("v1", "ResourceQuota", "compute", ns("nb")),
        ("v1", "LimitRange", "container-defaults", ns("nb")),
    ]
    namespace = fake.get("v1", "Namespace", ns("nb"))
    assert namespace is not None
    assert namespace["metadata"]["labels"] == {
        "team": "ml",
        "app.kubernetes.io/managed-by": "gpupaas",
        "gpupaas.io/instance": plan.instance_id,
        "gpupaas.io/profile": "h100",
        "kubernetes.io/metadata.name": ns("nb"),
        # a confined instance's namespace holds its pods to Pod Security "baseline"
        "pod-security.kubernetes.io/enforce": "baseline",
    }
    assert namespace["metadata"]["annotations"] == {"gpupaas.io/owner": "alice"}
    quota = fake.get("v1", "ResourceQuota", "compute", ns("nb"))
    assert quota is not None
    assert str(quota["spec"]["hard"]["requests.nvidia.com/gpu"]) == "4"
    assert progress.messages == ["Applying 3 objects", "Waiting for 3 objects to be ready"]
    assert await driver.observe(plan) == Observed(Phase.READY)


async def test_a_dedicated_plan_gives_its_namespace_the_reserved_nodes_selector(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    plan = make_plan(template="gpu-dedicated", allocation="DEDICATED", gpus=8)

    applied = await driver.apply(plan)

    assert applied.outputs["nodeSelector"] == f"gpupaas.io/reserved-for={ns('nb')}"
    namespace = fake.get("v1", "Namespace", ns("nb"))
    assert namespace is not None
    annotations = namespace["metadata"]["annotations"]
    assert annotations["scheduler.alpha.kubernetes.io/node-selector"] == f"gpupaas.io/reserved-for={ns('nb')}"
    assert f'"value": "{ns("nb")}"' in annotations["scheduler.alpha.kubernetes.io/defaultTolerations"]
    assert annotations["gpupaas.io/owner"] == "alice"


async def test_a_deployment_behind_a_node_port_service_reports_its_port(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    plan = notebook_plan()

    applied = await driver.apply(plan)

    service = fake.get("v1", "Service", "jupyter", ns("nb"))
    assert service is not None
    port = service["spec"]["ports"][0]["nodePort"]
    assert 30000 <= port <= 32767
    assert applied.outputs == {"port": str(port), "address": f"{service['spec']['clusterIP']}:8888"}
    assert [r.kind for r in applied.objects] == ["Namespace", "Deployment", "Service"]
    # the pods carry the instance's labels, so that drift and destroy find them
    pods = fake.pods(ns("nb"), f"gpupaas.io/instance={plan.instance_id}")
    assert len(pods) == 1
    assert pods[0]["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "gpupaas"
    assert await driver.observe(plan) == Observed(Phase.READY)


async def test_every_write_is_a_server_side_apply_by_gpupaas_with_force(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    await driver.apply(notebook_plan())

    writes = [r for r in fake.requests if r.method not in ("GET", "HEAD")]
    assert [w.path for w in writes] == [
        f"/api/v1/namespaces/{ns('nb')}",
        f"/apis/apps/v1/namespaces/{ns('nb')}/deployments/jupyter",
        f"/api/v1/namespaces/{ns('nb')}/services/jupyter",
    ]
    for write in writes:
        assert write.method == "PATCH"
        assert write.content_type == "application/apply-patch+yaml"
        assert write.query == {"fieldManager": "gpupaas", "force": "true"}


async def test_applying_an_unchanged_plan_again_changes_nothing(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    plan = notebook_plan()
    first = await driver.apply(plan)
    before = versions(fake, plan)

    again = await driver.apply(plan)

    assert again == first
    assert versions(fake, plan) == before
    assert len(before) == 5  # namespace, deployment, replicaset, pod, service


async def test_a_run_that_died_half_way_is_finished_by_the_next_without_duplicates(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    plan = make_plan()
    fake.inject_error("PATCH", r"/resourcequotas/", 500, times=None)

    with pytest.raises(PermanentError, match="HTTP 500"):
        await driver.apply(plan)
    fake.clear_errors()
    applied = await driver.apply(plan)

    assert applied.outputs["namespace"] == ns("nb")
    assert [
        n["metadata"]["name"] for n in fake.list("v1", "Namespace") if n["metadata"]["name"] == ns("nb")
    ] == [ns("nb")]
    assert len(fake.list("v1", "ResourceQuota", ns("nb"))) == 1
    assert len(fake.list("v1", "LimitRange", ns("nb"))) == 1


async def test_an_unschedulable_gpu_pod_fails_the_run_with_the_schedulers_reason(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    fake.set_nodes([node(f"gpu-{i}", gpus=4) for i in range(4)])

    with pytest.raises(PermanentError) as error:
        await driver.apply(notebook_plan(gpus=8))

    assert "cannot be scheduled: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu." in str(error.value)
    assert str(error.value).startswith("pod jupyter-")


async def test_a_pod_that_cannot_pull_its_image_fails_the_run(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    fake.set_pod_delay(30)
    run = asyncio.create_task(driver.apply(notebook_plan()))
    pod = await first_pod(fake, ns("nb"))

    fake.fail_pod(
        ns("nb"),
        pod,
        "ImagePullBackOff",
        'Back-off pulling image "quay.io/jupyter/base-notebook:2026-01-01"',
    )

    with pytest.raises(PermanentError) as error:
        await run
    assert str(error.value) == (
        f'pod {pod}: ImagePullBackOff (container main: Back-off pulling image "quay.io/jupyter/base-notebook:2026-01-01")'
    )


async def test_a_run_that_is_not_ready_in_time_fails_saying_what_it_waited_for(
    fake: FakeKube, kubeconfig: str
) -> None:
    fake.set_pod_delay(30)
    cluster = new_driver(kubeconfig, readiness_timeout=1)
    try:
        with pytest.raises(PermanentError) as error:
            await cluster.apply(notebook_plan())
    finally:
        await cluster.close()

    assert str(error.value).startswith("not ready after 1 s: ")
    assert "ContainerCreating" in str(error.value) or "replicas available" in str(error.value)


CLAIM = """
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests:
      storage: 10Gi
"""


async def test_a_claim_that_is_never_bound_times_out_naming_it(fake: FakeKube, kubeconfig: str) -> None:
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns("nb")}})
    fake.set_pvc_delay(None)
    cluster = new_driver(kubeconfig, readiness_timeout=0.5)
    try:
        with pytest.raises(PermanentError) as error:
            await cluster.apply(make_plan(resources_text=CLAIM, outputs=()))
    finally:
        await cluster.close()

    assert (
        str(error.value)
        == "not ready after 0.5 s: persistentvolumeclaim data: Pending (waiting for a volume)"
    )


async def test_a_kind_the_cluster_does_not_serve_is_refused_before_anything_is_applied(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    certificate = (
        NOTEBOOK + "---\napiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata:\n  name: tls\n"
    )

    # A platform template on a cluster that trusts them: a project's own would be refused the kind
    # by the tenant confinement first.
    plan = make_plan(resources_text=certificate, outputs=(), gpus=1, trusted=True)
    with pytest.raises(PermanentError) as error:
        await driver.apply(plan)

    assert str(error.value) == (
        "certificate tls: the cluster does not serve kind Certificate of cert-manager.io/v1 "
        "(is its CustomResourceDefinition installed?)"
    )
    assert not [r for r in fake.requests if r.method == "PATCH"]


async def test_a_template_s_own_identity_labels_lose_to_the_instance_s(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    # A template that claims another instance's objects: build_plan's labels win.
    stolen = NOTEBOOK.replace(
        "  name: jupyter\n",
        "  name: jupyter\n  labels:\n    app.kubernetes.io/managed-by: helm\n    gpupaas.io/instance: someone-else\n",
        1,
    )
    assert "gpupaas.io/instance: someone-else" in stolen
    plan = notebook_plan(resources_text=stolen)

    await driver.apply(plan)

    service = fake.get("v1", "Service", "jupyter", ns("nb"))
    assert service is not None
    labels = service["metadata"]["labels"]
    assert (labels["app.kubernetes.io/managed-by"], labels["gpupaas.io/instance"]) == (
        "gpupaas",
        plan.instance_id,
    )


async def test_a_plan_whose_objects_lack_the_identity_labels_is_refused(driver: KubernetesDriver) -> None:
    # Not one build_plan made (it always labels): the driver still refuses to apply it.
    plan = make_plan(resources_text=SETTINGS_ONLY, outputs=())
    stolen = dict(
        plan.manifests[0], metadata={"name": "settings", "labels": {"app.kubernetes.io/managed-by": "helm"}}
    )

    with pytest.raises(PermanentError, match=r'label app\.kubernetes\.io/managed-by is "helm"'):
        await driver.apply(replace(plan, manifests=(stolen,)))


async def test_an_invalid_object_fails_with_the_cause(driver: KubernetesDriver) -> None:
    plan = notebook_plan(resources_text=NOTEBOOK.replace("replicas: 1", "replicas: -1"))

    with pytest.raises(PermanentError) as error:
        await driver.apply(plan)

    assert "applying deployment jupyter: " in str(error.value)
    assert "spec.replicas: Invalid value: -1: must be greater than or equal to 0" in str(error.value)
    assert "HTTP 422" in str(error.value)


@pytest.mark.parametrize("status", [500, 503, 429])
async def test_a_server_error_is_retried(fake: FakeKube, driver: KubernetesDriver, status: int) -> None:
    fake.inject_error("PATCH", r"/limitranges/", status, message="injected for the test")

    applied = await driver.apply(make_plan())

    assert applied.outputs["namespace"] == ns("nb")
    patches = [r for r in fake.requests if r.method == "PATCH" and "/limitranges/" in r.path]
    assert len(patches) == 2


@pytest.mark.parametrize("status", [400, 403, 404, 409])
async def test_a_client_error_fails_at_once(fake: FakeKube, driver: KubernetesDriver, status: int) -> None:
    fake.inject_error("PATCH", r"/limitranges/", status, message="injected for the test")

    with pytest.raises(PermanentError) as error:
        await driver.apply(make_plan())

    assert "applying limitrange container-defaults: " in str(error.value)
    assert "injected for the test" in str(error.value)
    assert len([r for r in fake.requests if r.method == "PATCH" and "/limitranges/" in r.path]) == 1


async def test_a_slow_api_server_is_retried_then_fails_naming_the_timeout(
    fake: FakeKube, kubeconfig: str
) -> None:
    fake.set_latency(3, method="PATCH")
    cluster = new_driver(kubeconfig, request_timeout=0.3, retry_seconds=0.5)
    try:
        with pytest.raises(PermanentError, match="cannot reach the Kubernetes API server") as error:
            await cluster.apply(make_plan())
    finally:
        await cluster.close()

    assert "the API server kept failing for" in str(error.value)
    assert "applying namespace " in str(error.value)


async def test_applying_into_a_namespace_still_terminating_is_temporary(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    plan = make_plan()
    await driver.apply(plan)
    fake.set_namespace_deletion_delay(30)
    fake.delete("v1", "Namespace", ns("nb"))

    with pytest.raises(TemporaryError, match="terminating"):
        await driver.apply(plan)
