"""Drivers for the kubernetes driver's tests: over a fresh fake API server (tests/fake_kube, the
`fake_kube` fixture of tests/conftest.py), or over a real cluster when GPUPAAS_TEST_KUBECONFIG
names a kubeconfig file."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from gpupaas.provisioning.drivers.kubernetes.connection import ClusterConnection
from gpupaas.provisioning.drivers.kubernetes.driver import KubernetesDriver
from tests.fake_kube import FakeKube
from tests.provisioning.drivers.kubernetes.clusters import REAL_KUBECONFIG, new_driver


@pytest.fixture
def fake(fake_kube: FakeKube) -> FakeKube:
    """A fresh fake API server for the test (tests/fake_kube), started and stopped by fake_kube."""
    return fake_kube


@pytest.fixture
def kubeconfig(fake: FakeKube, tmp_path: Path) -> str:
    return fake.kubeconfig(tmp_path / "kubeconfig").read_text(encoding="utf-8")


@pytest.fixture
async def driver(kubeconfig: str) -> AsyncIterator[KubernetesDriver]:
    cluster = new_driver(kubeconfig)
    try:
        yield cluster
    finally:
        await cluster.close()


@pytest.fixture
def real_kubeconfig() -> str:
    assert REAL_KUBECONFIG is not None
    return Path(REAL_KUBECONFIG).read_text(encoding="utf-8")


@pytest.fixture
async def real_driver(real_kubeconfig: str) -> AsyncIterator[KubernetesDriver]:
    driver = KubernetesDriver(
        ClusterConnection(
            kubeconfig=real_kubeconfig, context=os.environ.get("GPUPAAS_TEST_KUBE_CONTEXT") or None
        ),
        readiness_timeout=180,
        poll_interval=1,
    )
    try:
        yield driver
    finally:
        await driver.close()
