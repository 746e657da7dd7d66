"""Pytest fixtures for the fake Kubernetes API server.

Import them where they are used (`from tests.fake_kube.fixtures import fake_kube  # noqa: F401`,
or in a conftest.py):

- `fake_kube`: a fresh server per test (its own port and state), served from a daemon thread;
  works for sync tests and for async tests that call the sync client through a thread.
- `fake_kube_async`: the same, served as a task of the test's event loop (async tests only).
- `kube_client`: a `kubernetes.client.ApiClient` for `fake_kube`.
- `kubeconfig_path`: a kubeconfig file for `fake_kube` in the test's tmp_path.

At teardown the fixtures fail the test if the fake itself crashed on a request (a 500 with
"fake kube internal error"), so bugs of the fake do not pass for driver behaviour.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from kubernetes import client

from tests.fake_kube.server import FakeKube, run_fake_kube, run_fake_kube_async


def _check(kube: FakeKube) -> None:
    if kube.internal_errors:
        pytest.fail("the fake kube server crashed:\n" + "\n".join(kube.internal_errors), pytrace=False)


@pytest.fixture
def fake_kube() -> Iterator[FakeKube]:
    with run_fake_kube() as kube:
        yield kube
    _check(kube)


@pytest.fixture
async def fake_kube_async() -> AsyncIterator[FakeKube]:
    async with run_fake_kube_async() as kube:
        yield kube
    _check(kube)


@pytest.fixture
def kube_client(fake_kube: FakeKube) -> Iterator[client.ApiClient]:
    with contextlib.closing(fake_kube.api_client()) as api_client:
        yield api_client


@pytest.fixture
def kubeconfig_path(fake_kube: FakeKube, tmp_path: Path) -> Path:
    return fake_kube.kubeconfig(tmp_path / "kubeconfig")
