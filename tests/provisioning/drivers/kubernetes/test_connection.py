"""Reaching a cluster, without an API server at all: settings, credentials, nobody answering."""

from __future__ import annotations

import socket

import pytest

from gpupaas.provisioning.drivers.base import Driver
from gpupaas.provisioning.drivers.kubernetes.connection import ClusterConnection
from gpupaas.provisioning.drivers.kubernetes.driver import KubernetesDriver
from gpupaas.provisioning.plan import PermanentError, TemporaryError
from tests.provisioning.drivers.kubernetes.clusters import kubeconfig_for, make_plan


def test_the_driver_implements_the_protocol() -> None:
    implementation: Driver = KubernetesDriver(
        ClusterConnection(kubeconfig=kubeconfig_for("http://127.0.0.1:1"))
    )
    assert callable(implementation.apply)


def test_the_connection_keeps_its_credentials_out_of_repr() -> None:
    connection = ClusterConnection(kubeconfig=kubeconfig_for("http://127.0.0.1:1", token="s3cret"))

    assert "s3cret" not in repr(connection)


def test_nonsense_settings_are_refused() -> None:
    connection = ClusterConnection(kubeconfig=kubeconfig_for("http://127.0.0.1:1"))

    with pytest.raises(ValueError, match="readiness_timeout"):
        KubernetesDriver(connection, readiness_timeout=0)
    with pytest.raises(ValueError, match="poll_interval"):
        KubernetesDriver(connection, poll_interval=-1)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def test_an_unreachable_api_server_fails_a_run_after_its_retries_and_a_check_at_once() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    driver = KubernetesDriver(
        ClusterConnection(kubeconfig=kubeconfig_for(url)),
        request_timeout=2,
        retry_seconds=0.3,
        retry_first_pause=0.05,
    )
    try:
        with pytest.raises(PermanentError, match=f"cannot reach the Kubernetes API server at {url}"):
            await driver.apply(make_plan())
        with pytest.raises(TemporaryError, match="cannot reach"):
            await driver.check()
    finally:
        await driver.close()


@pytest.mark.parametrize(
    ("kubeconfig", "context", "message"),
    [
        ("- not\n- a mapping\n", None, "the kubeconfig cannot be used: it is not a kubeconfig"),
        (kubeconfig_for("http://127.0.0.1:1"), "nope", "the kubeconfig cannot be used: .*nope"),
        ("", None, "neither a kubeconfig nor in-cluster configuration"),
    ],
)
async def test_a_kubeconfig_that_cannot_be_used_fails_every_call_permanently(
    kubeconfig: str, context: str | None, message: str
) -> None:
    driver = KubernetesDriver(ClusterConnection(kubeconfig=kubeconfig, context=context))
    try:
        with pytest.raises(PermanentError, match=message):
            await driver.check()
        with pytest.raises(PermanentError, match=message):
            await driver.observe(make_plan())
    finally:
        await driver.close()


async def test_in_cluster_configuration_outside_a_cluster_says_so() -> None:
    driver = KubernetesDriver(ClusterConnection(kubeconfig=None, in_cluster=True))
    try:
        with pytest.raises(PermanentError, match="the in-cluster configuration cannot be used"):
            await driver.check()
    finally:
        await driver.close()
