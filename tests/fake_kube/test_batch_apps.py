"""Jobs (batch/v1) and DaemonSets (apps/v1) in the fake cluster, seen through the official client:
a Job's pods, its succeeded/failed counts, backoffLimit and Complete/Failed conditions; a
DaemonSet's pod on each node that qualifies, following nodes as they come and go."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.fake_kube import FakeKube, node


def job(
    name: str, *, completions: int = 1, parallelism: int = 1, backoff_limit: int = 6, restart: str = "Never"
) -> Any:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "completions": completions,
            "parallelism": parallelism,
            "backoffLimit": backoff_limit,
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"restartPolicy": restart, "containers": [{"name": "main", "image": "busybox:1.36"}]},
            },
        },
    }


def running_pods(fake: FakeKube, selector: str, count: int) -> list[str]:
    def running() -> list[str]:
        names = [
            p["metadata"]["name"]
            for p in fake.pods("default", selector)
            if p.get("status", {}).get("phase") == "Running" and not p["metadata"].get("deletionTimestamp")
        ]
        return names if len(names) == count else []

    found: list[str] = fake.wait_for(running)
    return found


def job_status(batch: client.BatchV1Api, name: str) -> client.V1JobStatus:
    status = batch.read_namespaced_job_status(name, "default").status
    assert status is not None
    return status


def conditions(status: client.V1JobStatus) -> dict[str, tuple[str, str | None]]:
    return {c.type: (c.status, c.reason) for c in status.conditions or []}


def test_a_job_runs_its_pods_until_its_completions_succeed(
    fake_kube: FakeKube, kube_client: client.ApiClient
) -> None:
    batch = client.BatchV1Api(kube_client)
    created = batch.create_namespaced_job("default", job("train", completions=3, parallelism=2))

    assert created.spec is not None and created.spec.selector is not None
    uid = created.metadata.uid if created.metadata else None
    assert created.spec.selector.match_labels == {"batch.kubernetes.io/controller-uid": uid}
    first = running_pods(fake_kube, "job-name=train", 2)
    assert all(name.startswith("train-") for name in first)
    fake_kube.wait_for(lambda: job_status(batch, "train").active == 2)

    for name in first:
        fake_kube.complete_pod("default", name)
    [last] = running_pods(fake_kube, "job-name=train", 1)
    fake_kube.complete_pod("default", last)

    fake_kube.wait_for(lambda: "Complete" in conditions(job_status(batch, "train")))
    status = job_status(batch, "train")
    assert (status.succeeded, status.active, status.failed) == (3, None, None)
    assert conditions(status)["Complete"] == ("True", None)
    assert conditions(status)["SuccessCriteriaMet"] == ("True", "CompletionsReached")
    assert status.completion_time is not None and status.start_time is not None
    pods = fake_kube.pods("default", "job-name=train")
    assert sorted(p["status"]["phase"] for p in pods) == ["Succeeded"] * 3
    assert pods[0]["status"]["containerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"


def test_failed_pods_are_replaced_until_the_backoff_limit_then_the_job_fails(
    fake_kube: FakeKube, kube_client: client.ApiClient
) -> None:
    batch = client.BatchV1Api(kube_client)
    batch.create_namespaced_job("default", job("flaky", backoff_limit=1))

    [first] = running_pods(fake_kube, "job-name=flaky", 1)
    fake_kube.complete_pod("default", first, exit_code=1)
    fake_kube.wait_for(lambda: job_status(batch, "flaky").failed == 1)
    [second] = running_pods(fake_kube, "job-name=flaky", 1)
    assert second != first
    assert "Failed" not in conditions(job_status(batch, "flaky"))
    fake_kube.fail_pod("default", second, "OOMKilled", exit_code=137, phase="Failed")

    fake_kube.wait_for(lambda: "Failed" in conditions(job_status(batch, "flaky")))
    status = job_status(batch, "flaky")
    assert status.failed == 2 and not status.active
    assert conditions(status)["Failed"] == ("True", "BackoffLimitExceeded")
    assert [c.message for c in status.conditions or [] if c.type == "Failed"] == [
        "Job has reached the specified backoff limit"
    ]
    assert sorted(p["status"]["phase"] for p in fake_kube.pods("default", "job-name=flaky")) == [
        "Failed",
        "Failed",
    ]


def test_restarts_count_against_the_backoff_limit_with_restart_policy_on_failure(
    fake_kube: FakeKube, kube_client: client.ApiClient
) -> None:
    batch = client.BatchV1Api(kube_client)
    batch.create_namespaced_job("default", job("retry", backoff_limit=2, restart="OnFailure"))

    [pod] = running_pods(fake_kube, "job-name=retry", 1)
    fake_kube.complete_pod("default", pod, exit_code=2)
    assert "Failed" not in conditions(job_status(batch, "retry"))
    fake_kube.complete_pod("default", pod, exit_code=2)

    fake_kube.wait_for(lambda: "Failed" in conditions(job_status(batch, "retry")))
    assert conditions(job_status(batch, "retry"))["Failed"] == ("True", "BackoffLimitExceeded")


def test_job_pods_may_succeed_by_themselves_after_a_set_time(
    fake_kube: FakeKube, kube_client: client.ApiClient
) -> None:
    fake_kube.set_job_pod_seconds(0.05)
    batch = client.BatchV1Api(kube_client)
    batch.create_namespaced_job("default", job("quick", completions=2))

    fake_kube.wait_for(lambda: "Complete" in conditions(job_status(batch, "quick")))
    assert job_status(batch, "quick").succeeded == 2


def test_a_job_whose_pods_would_restart_always_is_invalid(kube_client: client.ApiClient) -> None:
    with pytest.raises(ApiException) as error:
        client.BatchV1Api(kube_client).create_namespaced_job("default", job("bad", restart="Always"))

    assert error.value.status == 422
    message = json.loads(error.value.body or "{}")["message"]
    assert message == (
        'Job.batch "bad" is invalid: spec.template.spec.restartPolicy: Unsupported value: "Always": supported '
        'values: "OnFailure", "Never"'
    )


# DaemonSets ------------------------------------------------------------------------------------


def daemonset(
    name: str, node_selector: dict[str, str] | None = None, image: str = "nvidia/dcgm-exporter:4.2"
) -> Any:
    pod_spec: dict[str, Any] = {"containers": [{"name": "main", "image": image}]}
    if node_selector:
        pod_spec["nodeSelector"] = node_selector
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": pod_spec},
        },
    }


def nodes_of(fake: FakeKube, selector: str) -> list[str]:
    return sorted(
        p["spec"]["nodeName"]
        for p in fake.pods("default", selector)
        if not p["metadata"].get("deletionTimestamp")
    )


def test_a_daemonset_runs_a_pod_on_each_node_it_may_run_on(
    fake_kube: FakeKube, kube_client: client.ApiClient
) -> None:
    gpu = {"nvidia.com/gpu.present": "true"}
    fake_kube.set_nodes(
        [
            node("gpu-0", gpus=8, labels=gpu),
            node(
                "gpu-1",
                gpus=8,
                labels=gpu,
                taints=[{"key": "dedicated", "value": "a", "effect": "NoSchedule"}],
            ),
            node("gpu-2", gpus=8, labels=gpu, unschedulable=True),
            node("cpu-0"),
        ]
    )
    apps = client.AppsV1Api(kube_client)
    apps.create_namespaced_daemon_set("default", daemonset("dcgm", gpu))

    fake_kube.wait_for(lambda: len(fake_kube.ready_pods("default", "app=dcgm")) == 2)
    # gpu-1's taint is not tolerated; cordoned gpu-2 still runs daemons (they tolerate unschedulable)
    assert nodes_of(fake_kube, "app=dcgm") == ["gpu-0", "gpu-2"]
    [pod] = [p for p in fake_kube.pods("default", "app=dcgm") if p["spec"]["nodeName"] == "gpu-0"]
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"] == [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-0"]}]}
    ]
    assert {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"} in pod[
        "spec"
    ]["tolerations"]

    def status() -> client.V1DaemonSetStatus:
        found = apps.read_namespaced_daemon_set_status("dcgm", "default").status
        assert found is not None
        return found

    fake_kube.wait_for(lambda: status().number_ready == 2)
    assert (
        status().desired_number_scheduled,
        status().current_number_scheduled,
        status().number_available,
    ) == (2, 2, 2)

    fake_kube.set_nodes([node("gpu-0", gpus=8, labels=gpu), node("gpu-3", gpus=8, labels=gpu), node("cpu-0")])
    fake_kube.wait_for(lambda: nodes_of(fake_kube, "app=dcgm") == ["gpu-0", "gpu-3"])


def test_a_changed_daemonset_template_rolls_out_node_by_node(
    fake_kube: FakeKube, kube_client: client.ApiClient
) -> None:
    fake_kube.set_nodes([node("a"), node("b")])
    apps = client.AppsV1Api(kube_client)
    apps.create_namespaced_daemon_set("default", daemonset("agent", image="agent:1"))
    fake_kube.wait_for(lambda: len(fake_kube.ready_pods("default", "app=agent")) == 2)

    apps.patch_namespaced_daemon_set(
        "agent",
        "default",
        {"spec": {"template": {"spec": {"containers": [{"name": "main", "image": "agent:2"}]}}}},
    )

    def images() -> list[str]:
        return sorted(
            p["spec"]["containers"][0]["image"]
            for p in fake_kube.ready_pods("default", "app=agent")
            if not p["metadata"].get("deletionTimestamp")
        )

    fake_kube.wait_for(lambda: images() == ["agent:2", "agent:2"])
    status = apps.read_namespaced_daemon_set_status("agent", "default").status
    assert status is not None and status.updated_number_scheduled == 2
