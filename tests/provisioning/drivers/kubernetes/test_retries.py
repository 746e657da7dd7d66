"""Faults against the fake API server: transient errors are retried with backoff within a budget
and the run's deadline, Retry-After is honoured on writes, and a broken API group does not stop a
destroy."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest

from gpupaas.provisioning.drivers.kubernetes.driver import KubernetesDriver
from gpupaas.provisioning.plan import PermanentError, TemporaryError
from tests.fake_kube import FakeKube, RequestRecord
from tests.provisioning.drivers.kubernetes.clusters import (
    SETTINGS_ONLY,
    Recorder,
    make_plan,
    new_driver,
    notebook_plan,
    ns,
)


def matching(fake: FakeKube, method: str, fragment: str) -> list[RequestRecord]:
    return [r for r in fake.requests if r.method == method and fragment in r.path]


async def test_an_api_server_that_answers_503_for_longer_than_three_attempts_then_recovers_ends_ready(
    fake: FakeKube, kubeconfig: str
) -> None:
    # every request is answered 503 six times over, as while a control plane restarts
    rule = fake.inject_error("*", "", 503, times=6, message="the apiserver is restarting")
    cluster = new_driver(kubeconfig, retry_seconds=30)
    try:
        applied = await cluster.apply(notebook_plan())
    finally:
        await cluster.close()

    assert rule.hits == 6
    assert applied.outputs["port"].isdigit()
    assert fake.get("apps/v1", "Deployment", "jupyter", ns("nb")) is not None


async def test_the_pauses_between_attempts_grow(fake: FakeKube, kubeconfig: str) -> None:
    fake.inject_error("PATCH", r"/limitranges/", 503, times=5)
    cluster = new_driver(kubeconfig, retry_seconds=30, retry_first_pause=0.05)
    try:
        await cluster.apply(make_plan())
    finally:
        await cluster.close()

    times = [r.at for r in matching(fake, "PATCH", "/limitranges/")]
    pauses = [later - earlier for earlier, later in itertools.pairwise(times)]
    assert len(pauses) == 5
    # each pause is between half and all of 0.05 s, 0.1 s, 0.2 s, 0.4 s, 0.8 s (jitter)
    for attempt, pause in enumerate(pauses):
        assert pause >= 0.05 * 2**attempt / 2
    assert pauses[-1] > pauses[0]


async def test_a_write_answered_429_waits_as_long_as_retry_after_says(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    fake.inject_error("PATCH", r"/limitranges/", 429, retry_after=1, message="slow down")

    await driver.apply(make_plan())

    first, second = matching(fake, "PATCH", "/limitranges/")
    assert second.at - first.at >= 1.0


async def test_a_delete_answered_429_waits_as_long_as_retry_after_says(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    plan = notebook_plan()
    await driver.apply(plan)
    fake.inject_error("DELETE", r"/services/jupyter$", 429, retry_after=1, message="slow down")

    await driver.destroy(plan)

    first, second = matching(fake, "DELETE", "/services/jupyter")
    assert second.at - first.at >= 1.0
    assert fake.get("v1", "Namespace", ns("nb")) is None


async def test_the_budget_exhausted_fails_the_run_naming_the_last_error(
    fake: FakeKube, kubeconfig: str
) -> None:
    fake.inject_error("PATCH", r"/limitranges/", 503, times=None, message="etcdserver: leader changed")
    cluster = new_driver(kubeconfig, retry_seconds=0.5, retry_first_pause=0.05)
    started = time.monotonic()
    try:
        with pytest.raises(PermanentError) as error:
            await cluster.apply(make_plan())
    finally:
        await cluster.close()

    message = str(error.value)
    assert message.startswith("the API server kept failing for ")
    assert "the driver retries for 0.5 s" in message
    assert message.endswith(
        "the last error: applying limitrange container-defaults: the API server answered "
        "HTTP 503 Service Unavailable: etcdserver: leader changed"
    )
    attempts = matching(fake, "PATCH", "/limitranges/")
    assert len(attempts) > 3
    assert attempts[-1].at - attempts[0].at < 0.5 + 0.5  # the last attempt is at the budget's end
    assert time.monotonic() - started < 5


async def test_a_retry_after_longer_than_the_budget_fails_at_once(
    fake: FakeKube, driver: KubernetesDriver
) -> None:
    fake.inject_error("PATCH", r"/limitranges/", 429, retry_after=60, message="slow down")

    with pytest.raises(PermanentError, match="asked to wait 60 s before the next attempt") as error:
        await driver.apply(make_plan())

    assert "HTTP 429 Too Many Requests: slow down" in str(error.value)
    assert len(matching(fake, "PATCH", "/limitranges/")) == 1


async def test_retries_while_waiting_for_readiness_end_at_the_runs_deadline(
    fake: FakeKube, kubeconfig: str
) -> None:
    cluster = new_driver(kubeconfig, readiness_timeout=1.5, retry_seconds=60)
    fake.set_pod_delay(30)  # the pods stay ContainerCreating: the run waits
    broken = False

    async def progress(message: str) -> None:
        nonlocal broken
        if message.startswith("Waiting for") and not broken:  # applied: the API server breaks
            broken = True
            await asyncio.to_thread(fake.inject_error, "GET", "", 503, None)

    started = time.monotonic()
    try:
        with pytest.raises(PermanentError) as error:
            await cluster.apply(notebook_plan(), progress)
    finally:
        await cluster.close()
    elapsed = time.monotonic() - started

    assert broken
    assert str(error.value).startswith("the run's deadline (its readiness timeout, from its start) passed")
    assert "HTTP 503" in str(error.value)
    assert 1.5 <= elapsed < 1.5 + 3  # not 60 s of retries
    assert fake.requests[-1].at - started < 1.5 + 1


async def test_time_spent_retrying_is_not_added_to_the_readiness_deadline(
    fake: FakeKube, kubeconfig: str
) -> None:
    # the first write waits 2 s (Retry-After), then the pods never get ready within the deadline
    fake.inject_error("PATCH", r"/namespaces/", 429, retry_after=2, message="slow down")
    fake.set_pod_delay(30)
    cluster = new_driver(kubeconfig, readiness_timeout=3, retry_seconds=60)
    started = time.monotonic()
    try:
        with pytest.raises(PermanentError, match="not ready after 3 s"):
            await cluster.apply(notebook_plan())
    finally:
        await cluster.close()
    elapsed = time.monotonic() - started

    first, second = matching(fake, "PATCH", f"/namespaces/{ns('nb')}")[:2]
    assert second.at - first.at >= 2
    # 3 s from the start of the run, not 3 s from the end of the retries (5 s)
    assert 3 <= elapsed < 4.5


async def test_a_broken_api_group_does_not_stop_destroy(fake: FakeKube, driver: KubernetesDriver) -> None:
    # given an instance applied into a namespace it does not own, and an object an older version
    # of its template left there
    plan = make_plan(resources_text=SETTINGS_ONLY, outputs=())
    fake.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": plan.namespace}})
    # and an aggregated API whose backend is down: its discovery answers 503
    fake.add_unavailable_api("metrics.k8s.io", "v1beta1")
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
    fake.clear_requests()
    progress = Recorder()

    await driver.destroy(plan, progress)

    assert fake.get("v1", "ConfigMap", "settings", plan.namespace) is None
    assert fake.get("v1", "Secret", "old-token", plan.namespace) is None
    assert fake.get("v1", "Namespace", plan.namespace) is not None
    assert (
        "Could not look for leftovers of metrics.k8s.io/v1beta1 (discovering the kinds of metrics.k8s.io/v1beta1: "
        "the API server answered HTTP 503 Service Unavailable: service unavailable)"
    ) in progress.messages
    # tried once: a group that answers 503 is broken, not restarting
    assert len(matching(fake, "GET", "/apis/metrics.k8s.io/v1beta1")) == 1


async def test_destroy_still_fails_when_a_kind_it_needs_cannot_be_discovered(
    fake: FakeKube, kubeconfig: str
) -> None:
    first = new_driver(kubeconfig)
    plan = notebook_plan()
    try:
        await first.apply(plan)
    finally:
        await first.close()
    fake.inject_error("GET", r"^/apis/apps/v1$", 503, times=None, message="apps is broken")
    cluster = new_driver(kubeconfig, retry_seconds=0.3)
    try:
        with pytest.raises(PermanentError, match=r"discovering the kinds of apps/v1: .*apps is broken"):
            await cluster.destroy(plan)
    finally:
        await cluster.close()

    assert fake.get("apps/v1", "Deployment", "jupyter", ns("nb")) is not None


async def test_outside_a_run_a_fault_is_not_retried(fake: FakeKube, driver: KubernetesDriver) -> None:
    # the cluster check answers at once (a person is waiting for it), the worker's drift watch and
    # observe have their own loops
    fake.inject_error("GET", r"^/api/v1/nodes$", 503, times=None)

    with pytest.raises(TemporaryError, match="HTTP 503"):
        await driver.check()

    assert len(matching(fake, "GET", "/api/v1/nodes")) == 1
