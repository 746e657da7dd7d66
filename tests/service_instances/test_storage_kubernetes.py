"""Storage modes on the kubernetes driver, against the fake API server (which admits by ResourceQuota
and keeps status.used as a real one does): a KEEP volume outlives its service and another mounts
it, and a claim over the quota fails the run with the API server's message."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from gpupaas.instance_templates.builtins import builtin_instance_template
from gpupaas.instance_templates.spec import Resources, Storage
from gpupaas.provisioning.drivers.base import Observed, Phase
from gpupaas.provisioning.drivers.k8s_manifests.pods import Graces
from gpupaas.provisioning.drivers.kubernetes.driver import KubernetesDriver
from gpupaas.provisioning.plan import PermanentError, Plan
from gpupaas.provisioning.render.schema import validate_manifest
from gpupaas.service_instances.plan import build_service_plan
from tests.fake_kube import FakeKube
from tests.fake_kube.fixtures import fake_kube  # noqa: F401
from tests.provisioning.drivers.kubernetes.clusters import new_driver
from tests.service_instances.test_service_kubernetes import (
    COMPUTE_ID,
    COMPUTE_NAME,
    COMPUTE_RESOURCES,
    NAMESPACE,
    OTHER_SERVICE_ID,
    PROJECT,
    SERVICE_ID,
    TOKEN,
    compute_plan,
)


def plan_with(
    storage: Storage,
    *,
    service_id: str = SERVICE_ID,
    name: str = "notebook",
    resources: Resources | None = None,
) -> Plan:
    builtin = builtin_instance_template("jupyterlab-pytorch")
    assert builtin is not None
    spec = replace(builtin.spec, storage=storage)
    return build_service_plan(
        service_id=service_id,
        name=name,
        spec=spec if resources is None else replace(spec, resources=resources),
        generated={"generated_token": TOKEN},
        gpu_count=1,
        compute_id=COMPUTE_ID,
        compute_name=COMPUTE_NAME,
        project=PROJECT,
        compute_resources=COMPUTE_RESOURCES,
        profile_name="h100",
    )


@pytest.fixture
async def driver(fake_kube: FakeKube, tmp_path: Path) -> AsyncIterator[KubernetesDriver]:  # noqa: F811
    cluster = new_driver(fake_kube.kubeconfig(tmp_path / "kubeconfig").read_text(encoding="utf-8"))
    try:
        await cluster.apply(compute_plan())
        yield cluster
    finally:
        await cluster.close()


def test_every_storage_mode_makes_valid_manifests() -> None:
    for storage in (
        Storage(mode="EPHEMERAL", size="10Gi"),
        Storage(size="30Gi", reclaim="KEEP"),
        Storage(mode="EXISTING_CLAIM", claim_name="data"),
    ):
        for manifest in plan_with(storage).manifests:
            assert validate_manifest(manifest) == [], manifest


async def test_a_kept_volume_outlives_its_service_and_another_mounts_it(
    fake_kube: FakeKube,  # noqa: F811
    driver: KubernetesDriver,
) -> None:
    # given a service with a volume kept on delete, running
    kept = plan_with(Storage(size="30Gi", reclaim="KEEP"))
    await driver.apply(kept)
    (claim_used,) = (await driver.namespace_usage(NAMESPACE)).claims
    assert (claim_used.service_id, claim_used.keep, claim_used.phase) == (SERVICE_ID, True, "Bound")
    claim = fake_kube.get("v1", "PersistentVolumeClaim", "notebook-workspace", NAMESPACE)
    assert claim is not None
    uid = claim["metadata"]["uid"]
    # when it is deleted
    await driver.destroy(kept)
    # then its pod and Deployment are gone, its claim stays: the same object, without its label
    assert fake_kube.get("apps/v1", "Deployment", "notebook", NAMESPACE) is None
    claim = fake_kube.get("v1", "PersistentVolumeClaim", "notebook-workspace", NAMESPACE)
    assert claim is not None and claim["metadata"]["uid"] == uid
    assert "gpupaas.io/service" not in claim["metadata"]["labels"]
    assert claim["metadata"]["annotations"]["gpupaas.io/kept-from"] == "notebook"
    assert "gpupaas.io/reclaim" not in claim["metadata"]["annotations"]
    assert await driver.observe(kept) == Observed(Phase.ABSENT)
    # and the namespace's usage, as the API server has it, shows the claim kept and counted
    usage = await driver.namespace_usage(NAMESPACE)
    assert [(c.name, c.size, c.service_id, c.kept_from, c.keep) for c in usage.claims] == [
        ("notebook-workspace", "30Gi", None, "notebook", False)
    ]
    (quota,) = usage.quotas
    uses = {use.resource: (use.used, use.hard) for use in quota.uses}
    assert uses["requests.storage"] == ("30Gi", "100Gi") and uses["requests.cpu"][0] == "0"
    # and another service mounts it as an existing claim
    other = plan_with(
        Storage(mode="EXISTING_CLAIM", claim_name="notebook-workspace"),
        service_id=OTHER_SERVICE_ID,
        name="lab",
    )
    await driver.apply(other)
    assert await driver.observe(other) == Observed(Phase.READY)
    deployment = fake_kube.get("apps/v1", "Deployment", "lab", NAMESPACE)
    assert deployment is not None
    volumes = deployment["spec"]["template"]["spec"]["volumes"]
    assert {"name": "workspace", "persistentVolumeClaim": {"claimName": "notebook-workspace"}} in volumes
    # deleting that one leaves the claim, which it never owned
    await driver.destroy(other)
    assert fake_kube.get("v1", "PersistentVolumeClaim", "notebook-workspace", NAMESPACE) is not None


async def test_a_namespace_that_is_not_there_has_no_usage(driver: KubernetesDriver) -> None:
    usage = await driver.namespace_usage("ml-nowhere-00000000")
    assert (usage.quotas, usage.claims) == ((), ())


async def test_a_released_volume_goes_with_its_service(
    fake_kube: FakeKube,  # noqa: F811
    driver: KubernetesDriver,
) -> None:
    plan = plan_with(Storage(size="30Gi"))
    await driver.apply(plan)
    await driver.destroy(plan)
    assert fake_kube.get("v1", "PersistentVolumeClaim", "notebook-workspace", NAMESPACE) is None


async def test_a_claim_over_the_quota_fails_at_once_with_the_api_servers_words(
    fake_kube: FakeKube,  # noqa: F811
    driver: KubernetesDriver,
) -> None:
    # given the compute instance's quota of 100Gi of requests.storage, 60Gi of it claimed
    await driver.apply(plan_with(Storage(size="60Gi")))
    quota = fake_kube.get("v1", "ResourceQuota", "compute", NAMESPACE)
    assert quota is not None and quota["status"]["used"]["requests.storage"] == "60Gi"
    # when another service asks for 50Gi / then the run fails with the API server's refusal
    with pytest.raises(PermanentError, match=r"exceeded quota: compute, requested: requests.storage=50Gi"):
        await driver.apply(plan_with(Storage(size="50Gi"), service_id=OTHER_SERVICE_ID, name="lab"))


async def test_pods_over_the_quota_fail_the_service_at_once_with_the_api_servers_words(
    fake_kube: FakeKube,  # noqa: F811
    tmp_path: Path,
) -> None:
    # given a driver with the settings' patience (a compute instance's pods the quota refuses are
    # waited for 300 s), and a service whose CPU request the compute instance's quota (8) cannot hold
    patient = new_driver(
        fake_kube.kubeconfig(tmp_path / "kubeconfig").read_text(encoding="utf-8"),
        readiness_timeout=60.0,
        graces=Graces(),
    )
    try:
        await patient.apply(compute_plan())
        greedy = plan_with(Storage(size="10Gi"), resources=Resources(cpu_request="6", cpu_limit="12"))
        # when it is applied / then the run fails at once, with the API server's refusal of its pod
        started = time.monotonic()
        with pytest.raises(PermanentError) as failure:
            await patient.apply(greedy)
        assert time.monotonic() - started < 20
        message = str(failure.value)
        assert "is forbidden: exceeded quota: compute" in message, message
        assert "requested: limits.cpu=12" in message and "limited: limits.cpu=8" in message, message
    finally:
        await patient.close()
