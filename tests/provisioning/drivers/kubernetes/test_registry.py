"""The registry builds each KUBERNETES cluster's driver with the graces of the settings."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from gpupaas.core import crypto
from gpupaas.provisioning.drivers.k8s_manifests.pods import Graces
from gpupaas.provisioning.drivers.kubernetes.driver import KubernetesDriver
from gpupaas.provisioning.registry import ClusterDriver, ClusterTarget, DriverRegistry
from gpupaas.settings import Settings
from tests.provisioning.drivers.kubernetes.clusters import kubeconfig_for


async def test_a_clusters_driver_has_the_graces_of_the_settings() -> None:
    settings = Settings(
        database_url="sqlite://:memory:",
        secret_key="k" * 64,
        kubernetes_crash_restarts=5,
        kubernetes_image_pull_grace_seconds=45,
        kubernetes_scheduling_grace_seconds=900,
    )
    registry = DriverRegistry(settings)
    target = ClusterTarget(
        id=uuid.uuid4(),
        driver=ClusterDriver.KUBERNETES,
        updated_at=datetime.now(UTC),
        kubeconfig_encrypted=crypto.encrypt(settings.secret_key, kubeconfig_for("http://127.0.0.1:9")),
    )
    try:
        driver = registry.driver(target)
        assert isinstance(driver, KubernetesDriver)
        assert driver.graces == Graces(crash_restarts=5, image_pull_seconds=45, scheduling_seconds=900)
    finally:
        await registry.close()
