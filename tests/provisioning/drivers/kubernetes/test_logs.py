"""Container logs and events through the kubernetes driver (drivers/kubernetes/logs.py), against
the fake API server with the worker's rights of infra/rbac: pods/log with tailLines, previous and
follow (a chunked stream that ends with the container), and the events of what an instance owns,
listed and watched."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from gpupaas.provisioning.drivers.base import ClusterEvent, EventQuery, LogLine, LogQuery, Owner
from gpupaas.provisioning.drivers.kubernetes.driver import KubernetesDriver
from gpupaas.provisioning.plan import SERVICE_LABEL, PermanentError, Plan
from tests.fake_kube import FakeKube
from tests.provisioning.drivers.kubernetes.clusters import new_driver
from tests.provisioning.drivers.kubernetes.test_rbac import NODES, reduced_role, worker_token
from tests.service_instances.test_service_kubernetes import (
    NAMESPACE,
    OTHER_SERVICE_ID,
    SERVICE_ID,
    compute_plan,
    service_plan,
)

OWNER = Owner(SERVICE_LABEL, SERVICE_ID)


@pytest.fixture
async def worker(fake: FakeKube, tmp_path: Path) -> AsyncIterator[KubernetesDriver]:
    """The kubernetes driver with the worker's service-account token (infra/rbac)."""
    fake.set_nodes(NODES)
    kubeconfig = fake.kubeconfig(tmp_path / "worker.kubeconfig", token=worker_token(fake))
    driver = new_driver(kubeconfig.read_text(encoding="utf-8"))
    try:
        yield driver
    finally:
        await driver.close()


@pytest.fixture
async def running(worker: KubernetesDriver) -> Plan:
    await worker.apply(compute_plan())
    plan = service_plan()
    await worker.apply(plan)
    return plan


def pod_of(fake: FakeKube, service_id: str = SERVICE_ID) -> str:
    [pod] = fake.pods(NAMESPACE, f"{SERVICE_LABEL}={service_id}")
    return str(pod["metadata"]["name"])


async def lines_of(driver: KubernetesDriver, **options: object) -> list[LogLine]:
    return [line async for line in driver.logs(LogQuery(NAMESPACE, OWNER, **options))]  # type: ignore[arg-type]


async def until(check: Callable[[], bool], what: object) -> None:
    for _ in range(2000):  # 20 s: a loaded machine is slow to restart a container
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(what)


async def test_a_containers_log_is_read_with_its_timestamps_and_its_tail(
    fake: FakeKube,
    worker: KubernetesDriver,
    running: Plan,
) -> None:
    pod = pod_of(fake)
    fake.write_log(NAMESPACE, pod, "main", "first line\nsecond line")
    lines = await lines_of(worker)
    assert [line.text for line in lines][-2:] == ["first line", "second line"]
    assert lines[0].text.startswith("fake container main: running ")
    assert all(line.at is not None and line.pod == pod and line.container == "main" for line in lines)
    # Each line names the pod's containers (the ones a reader may choose from).
    assert {line.containers for line in lines} == {("main",)}
    assert [line.text for line in await lines_of(worker, tail_lines=1)] == ["second line"]
    assert fake.denials == [] or all(d.attributes.resource == "secrets" for d in fake.denials)


async def test_no_pod_no_container_and_no_previous_are_the_api_server_s_errors(
    fake: FakeKube,
    worker: KubernetesDriver,
    running: Plan,
) -> None:
    pod = pod_of(fake)
    with pytest.raises(
        PermanentError, match=f'previous terminated container "main" in pod "{pod}" not found'
    ):
        await lines_of(worker, previous=True)
    with pytest.raises(PermanentError, match=f"container sidecar is not valid for pod {pod}"):
        await lines_of(worker, container="sidecar")
    nobody = LogQuery(NAMESPACE, Owner(SERVICE_LABEL, OTHER_SERVICE_ID))
    with pytest.raises(PermanentError, match="it has no pod: it is not running"):
        [line async for line in worker.logs(nobody)]


async def test_the_previous_container_is_the_one_before_the_last_crash(
    fake: FakeKube,
    worker: KubernetesDriver,
    running: Plan,
) -> None:
    pod = pod_of(fake)
    fake.write_log(NAMESPACE, pod, "main", "out of memory soon")
    fake.crash_loop(NAMESPACE, pod, crashes=1, exit_code=137, back_off=0.05, runs_for=0.05)

    def restarted() -> bool:
        statuses = fake.pods(NAMESPACE)[0]["status"].get("containerStatuses", [])
        return any(c.get("restartCount") == 1 and "running" in c.get("state", {}) for c in statuses)

    await until(restarted, "no restart")

    previous = [line.text for line in await lines_of(worker, previous=True)]
    assert previous[-2:] == ["out of memory soon", "fake container main: exited with code 137"]
    current = [line.text for line in await lines_of(worker)]
    assert "out of memory soon" not in current


async def test_a_followed_log_streams_new_lines_and_ends_when_the_pod_goes(
    fake: FakeKube,
    worker: KubernetesDriver,
    running: Plan,
) -> None:
    pod = pod_of(fake)
    seen: list[str] = []

    async def follow() -> None:
        async for line in worker.logs(LogQuery(NAMESPACE, OWNER, follow=True)):
            seen.append(line.text)

    follower = asyncio.create_task(follow())
    await until(lambda: bool(seen), "no first line")
    fake.write_log(NAMESPACE, pod, "main", "epoch 1 done")
    await until(lambda: "epoch 1 done" in seen, seen)
    await worker.apply(service_plan(running=False))  # stopped: the pod goes, the stream ends
    await asyncio.wait_for(follower, timeout=30)
    assert seen[-1] == "fake container main: received SIGTERM"


async def test_stopping_a_follower_closes_its_stream(
    fake: FakeKube,
    worker: KubernetesDriver,
    running: Plan,
) -> None:
    lines = worker.logs(LogQuery(NAMESPACE, OWNER, follow=True))
    assert isinstance(lines, AsyncIterator)
    await anext(lines)
    await lines.aclose()  # type: ignore[attr-defined]
    # The driver's threads are free again: another follower gets its lines at once.
    more = worker.logs(LogQuery(NAMESPACE, OWNER, follow=True))
    assert (await asyncio.wait_for(anext(more), timeout=5)).text.startswith("fake container main")
    await more.aclose()  # type: ignore[attr-defined]


async def test_events_of_the_owner_are_listed_and_followed(
    fake: FakeKube,
    worker: KubernetesDriver,
    running: Plan,
) -> None:
    query = EventQuery(NAMESPACE, OWNER)
    listed = [event async for event in worker.events(query)]
    reasons = {(e.object_kind, e.reason) for e in listed}
    assert {("Pod", "Scheduled"), ("Pod", "Started"), ("Deployment", "ScalingReplicaSet")} <= reasons
    # Another service's events in the same namespace are not this one's.
    await worker.apply(service_plan(service_id=OTHER_SERVICE_ID, name="other", gpu_count=0))
    other = pod_of(fake, OTHER_SERVICE_ID)
    assert other not in {e.object_name async for e in worker.events(query)}

    got: list[ClusterEvent] = []

    async def follow() -> None:
        async for event in worker.events(EventQuery(NAMESPACE, OWNER, follow=True)):
            got.append(event)

    follower = asyncio.create_task(follow())
    try:
        await until(lambda: len(got) >= len(listed), got)
        pod = pod_of(fake)
        fake.fail_pod(NAMESPACE, pod, "Error", "the trainer crashed", exit_code=2)
        await until(lambda: any(e.type == "Warning" and e.object_name == pod for e in got), got)
        assert all(e.object_name != other for e in got)
    finally:
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower


async def test_without_pods_log_in_the_role_the_log_is_refused_with_the_permission_named(
    fake: FakeKube, running: Plan, tmp_path: Path
) -> None:
    role = reduced_role(tmp_path, ("pods/log", "get"))
    fake.load_rbac(role)
    token = fake.service_account_token("gpupaas-system", "gpupaas-worker")
    driver = new_driver(fake.kubeconfig(tmp_path / "reduced", token=token).read_text(encoding="utf-8"))
    try:
        with pytest.raises(PermanentError, match=r"(?s)forbidden.*pods/log|get on pods/log"):
            await lines_of(driver)
    finally:
        await driver.close()
