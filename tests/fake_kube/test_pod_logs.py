"""pods/log and events as kube-apiserver serves them, read with the official client: tailLines,
timestamps, previous (400 when there is none), follow as a chunked stream that ends with the
container, and events selected by involvedObject.name in lists and watches."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.fake_kube import FakeKube
from tests.fake_kube.test_fake_kube import json_as, namespace, new_watch, status_of, wait_until


@pytest.fixture
def core(kube_client: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(kube_client)


@pytest.fixture
def pod(fake_kube: FakeKube, core: client.CoreV1Api) -> str:
    core.create_namespace(json_as(client.V1Namespace, namespace("logs")))
    fake_kube.create(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "trainer", "namespace": "logs"},
            "spec": {
                "containers": [{"name": "main", "image": "python:3.12", "command": ["python", "train.py"]}]
            },
        }
    )
    fake_kube.wait_for(lambda: fake_kube.ready_pods("logs"))
    return "trainer"


def test_the_log_its_tail_and_its_timestamps(fake_kube: FakeKube, core: client.CoreV1Api, pod: str) -> None:
    fake_kube.write_log("logs", pod, "main", "epoch 1\nepoch 2")
    assert core.read_namespaced_pod_log(pod, "logs") == (
        "fake container main: running python train.py\nepoch 1\nepoch 2\n"
    )
    assert core.read_namespaced_pod_log(pod, "logs", tail_lines=1) == "epoch 2\n"
    stamped = core.read_namespaced_pod_log(pod, "logs", tail_lines=1, timestamps=True)
    stamp, text = stamped.rstrip("\n").split(" ", 1)
    assert text == "epoch 2" and stamp.endswith("Z") and len(stamp.split(".")[1]) == 10  # nanoseconds


def test_what_there_is_no_log_of_is_a_400_worded_as_the_api_server(
    fake_kube: FakeKube, core: client.CoreV1Api, pod: str
) -> None:
    with pytest.raises(ApiException) as previous:
        core.read_namespaced_pod_log(pod, "logs", previous=True)
    assert previous.value.status == 400
    assert (
        status_of(previous.value)["message"]
        == f'previous terminated container "main" in pod "{pod}" not found'
    )
    with pytest.raises(ApiException) as other:
        core.read_namespaced_pod_log(pod, "logs", container="sidecar")
    assert other.value.status == 400
    assert status_of(other.value)["message"] == f"container sidecar is not valid for pod {pod}"
    with pytest.raises(ApiException) as missing:
        core.read_namespaced_pod_log("nobody", "logs")
    assert missing.value.status == 404


def test_the_previous_container_after_a_crash(fake_kube: FakeKube, core: client.CoreV1Api, pod: str) -> None:
    fake_kube.write_log("logs", pod, "main", "about to crash")
    fake_kube.crash_loop("logs", pod, crashes=1, exit_code=3)

    def restarted() -> bool:
        found: Any = core.read_namespaced_pod(pod, "logs")
        [status] = found.status.container_statuses or [None]
        return status is not None and status.restart_count == 1 and status.state.running is not None

    wait_until(restarted)
    previous = core.read_namespaced_pod_log(pod, "logs", previous=True)
    assert previous.endswith("about to crash\nfake container main: exited with code 3\n")
    assert "about to crash" not in core.read_namespaced_pod_log(pod, "logs")


def test_a_followed_log_is_a_stream_that_ends_with_the_pod(
    fake_kube: FakeKube, core: client.CoreV1Api, pod: str
) -> None:
    response: Any = core.read_namespaced_pod_log(pod, "logs", follow=True, _preload_content=False)
    assert response.headers.get("Transfer-Encoding") == "chunked"
    got: list[str] = []

    def read() -> None:
        for chunk in response.stream(1024):
            got.append(chunk.decode())

    reader = threading.Thread(target=read)
    reader.start()
    wait_until(lambda: "".join(got))
    fake_kube.write_log("logs", pod, "main", "epoch 3")
    wait_until(lambda: "epoch 3\n" in "".join(got))
    assert reader.is_alive()  # the container runs: the stream stays open
    core.delete_namespaced_pod(pod, "logs")
    reader.join(timeout=10)
    assert not reader.is_alive()
    assert "".join(got).endswith("fake container main: received SIGTERM\n")


def test_events_are_selected_by_their_involved_object(
    fake_kube: FakeKube, core: client.CoreV1Api, pod: str
) -> None:
    selector = f"involvedObject.name={pod},involvedObject.kind=Pod"
    reasons = {e.reason for e in core.list_namespaced_event("logs", field_selector=selector).items}
    assert {"Scheduled", "Pulled", "Created", "Started"} <= reasons
    assert core.list_namespaced_event("logs", field_selector="involvedObject.name=other").items == []
    listed: Any = core.list_namespaced_event("logs", field_selector=selector)
    seen: list[Any] = []

    def follow() -> None:
        for change in new_watch().stream(
            core.list_namespaced_event,
            "logs",
            field_selector=selector,
            resource_version=listed.metadata.resource_version,
            timeout_seconds=5,
        ):
            seen.append(change["object"])
            if change["object"].reason == "Killing":
                return

    watcher = threading.Thread(target=follow)
    watcher.start()
    time.sleep(0.2)  # the watch is open (the server keeps what happens after the list's version anyway)
    core.delete_namespaced_pod(pod, "logs")
    watcher.join(timeout=10)
    assert [e.message for e in seen if e.reason == "Killing"] == ["Stopping container main"]
