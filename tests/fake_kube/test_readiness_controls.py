"""What the kubernetes driver's readiness depends on, as the fake serves it through the official
client: Deployment revisions and a controller slow to observe a new generation, a ReplicaSet that
tries again when the quota refuses its pods, LoadBalancer addresses that come late, a GPU node pool
scaling up from zero (its device plugin later still), and crash loops whose restartCount grows."""

from __future__ import annotations

import time
from typing import Any

from kubernetes import client

from tests.fake_kube import FakeKube, node
from tests.fake_kube.test_fake_kube import (  # noqa: F401 - fixtures
    apps,
    core,
    deployment,
    json_as,
    meta,
    present,
    team_a,
    wait_until,
)

APPLY = "application/apply-patch+yaml"
REVISION = "deployment.kubernetes.io/revision"


def revisions(api: client.AppsV1Api, namespace: str) -> tuple[str, dict[str, str]]:
    """The Deployment's revision, and each of its ReplicaSets' by image."""
    web = api.read_namespaced_deployment("web", namespace)
    sets = api.list_namespaced_replica_set(namespace).items
    by_image: dict[str, str] = {}
    for rs in sets:
        template = present(present(rs.spec).template)
        by_image[present(present(template.spec).containers[0].image)] = present(meta(rs).annotations)[
            REVISION
        ]
    return present(meta(web).annotations)[REVISION], by_image


def test_the_deployment_names_its_current_revision_and_observes_a_change_late(
    fake_kube: FakeKube,
    apps: client.AppsV1Api,  # noqa: F811
    team_a: str,  # noqa: F811
) -> None:
    apps.create_namespaced_deployment(team_a, json_as(client.V1Deployment, deployment(replicas=1)))
    wait_until(lambda: fake_kube.ready_pods(team_a, "app=web"))
    assert revisions(apps, team_a) == ("1", {"nginx:1.27": "1"})

    fake_kube.set_observe_delay(0.3)
    changed = time.monotonic()
    apps.patch_namespaced_deployment(
        "web",
        team_a,
        {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.28"}]}}}},
    )
    observed = wait_until(
        lambda: (
            (s := present(apps.read_namespaced_deployment("web", team_a).status)).observed_generation == 2
            and s
        )
    )
    assert time.monotonic() - changed >= 0.3
    wait_until(lambda: revisions(apps, team_a)[0] == "2")
    assert revisions(apps, team_a) == ("2", {"nginx:1.27": "1", "nginx:1.28": "2"})
    assert observed.observed_generation == 2

    # back to the first template: its ReplicaSet becomes the newest revision again
    fake_kube.set_observe_delay(0)
    apps.patch_namespaced_deployment(
        "web",
        team_a,
        {"spec": {"template": {"spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}}},
    )
    wait_until(lambda: revisions(apps, team_a)[0] == "3")
    assert revisions(apps, team_a) == ("3", {"nginx:1.27": "3", "nginx:1.28": "2"})


def test_a_replicaset_the_quota_refuses_tries_again_and_makes_its_pods_once_it_frees(
    fake_kube: FakeKube,
    apps: client.AppsV1Api,  # noqa: F811
    core: client.CoreV1Api,  # noqa: F811
    team_a: str,  # noqa: F811
) -> None:
    core.create_namespaced_resource_quota(
        team_a,
        json_as(
            client.V1ResourceQuota,
            {"metadata": {"name": "gpus"}, "spec": {"hard": {"requests.nvidia.com/gpu": "1"}}},
        ),
    )
    wait_until(lambda: present(core.read_namespaced_resource_quota("gpus", team_a).status).hard)
    holder = {
        "metadata": {"name": "holder"},
        "spec": {
            "containers": [{"name": "c", "image": "x:1", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]
        },
    }
    core.create_namespaced_pod(team_a, json_as(client.V1Pod, holder))
    apps.create_namespaced_deployment(team_a, json_as(client.V1Deployment, deployment(replicas=1, gpus=1)))

    def failed_creates() -> int:
        events = core.list_namespaced_event(team_a).items
        return sum(present(e.count) for e in events if e.reason == "FailedCreate")

    # it keeps trying (with a backoff) while nothing else changes
    wait_until(lambda: failed_creates() >= 3)
    assert not fake_kube.pods(team_a, "app=web")

    core.delete_namespaced_pod("holder", team_a)
    wait_until(lambda: fake_kube.ready_pods(team_a, "app=web"))

    def replica_failure() -> Any:
        conditions = present(apps.read_namespaced_deployment("web", team_a).status).conditions or []
        return next((c for c in conditions if c.type == "ReplicaFailure"), None)

    wait_until(lambda: replica_failure() is None)


def test_a_load_balancer_gets_its_address_when_the_cloud_has_made_it(
    fake_kube: FakeKube,
    core: client.CoreV1Api,  # noqa: F811
    team_a: str,  # noqa: F811
) -> None:
    fake_kube.set_loadbalancer_delay(None)
    service = {
        "metadata": {"name": "api"},
        "spec": {"type": "LoadBalancer", "selector": {"app": "api"}, "ports": [{"port": 80}]},
    }
    core.create_namespaced_service(team_a, json_as(client.V1Service, service))
    assert not present(present(core.read_namespaced_service("api", team_a).status).load_balancer).ingress

    started = time.monotonic()
    fake_kube.set_loadbalancer_delay(0.2)
    ingress = wait_until(
        lambda: present(present(core.read_namespaced_service("api", team_a).status).load_balancer).ingress
    )
    assert time.monotonic() - started >= 0.2
    assert present(ingress[0].ip).startswith("203.0.113.")


def test_a_gpu_node_pool_scaling_up_from_zero_takes_the_pending_pod(
    fake_kube: FakeKube,
    core: client.CoreV1Api,  # noqa: F811
    team_a: str,  # noqa: F811
) -> None:
    fake_kube.set_nodes([node("cpu-0")])
    pod = {
        "metadata": {"name": "train"},
        "spec": {
            "containers": [{"name": "c", "image": "x:1", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]
        },
    }
    core.create_namespaced_pod(team_a, json_as(client.V1Pod, pod))

    def scheduled() -> Any:
        conditions = present(core.read_namespaced_pod("train", team_a).status).conditions or []
        return next((c for c in conditions if c.type == "PodScheduled"), None)

    pending = wait_until(lambda: (c := scheduled()) is not None and c.status == "False" and c)
    assert pending.message.startswith("0/1 nodes are available: 1 Insufficient nvidia.com/gpu.")

    started = time.monotonic()
    fake_kube.add_nodes([node("gpu-0", gpus=8)], after=0.1, device_plugin_delay=0.2)
    joined = wait_until(lambda: [n for n in core.list_node().items if meta(n).name == "gpu-0"])
    # it joins without its GPUs: the pod still waits, with the new count of nodes
    assert "nvidia.com/gpu" not in present(present(joined[0].status).allocatable)
    wait_until(
        lambda: "0/2 nodes are available: 2 Insufficient nvidia.com/gpu." in (scheduled().message or "")
    )
    wait_until(lambda: present(core.read_namespaced_pod("train", team_a).spec).node_name == "gpu-0")
    assert time.monotonic() - started >= 0.3
    assert present(present(core.read_node("gpu-0").status).allocatable)["nvidia.com/gpu"] == "8"


def test_a_crash_loop_restarts_the_container_with_a_growing_count(
    fake_kube: FakeKube,
    apps: client.AppsV1Api,  # noqa: F811
    core: client.CoreV1Api,  # noqa: F811
    team_a: str,  # noqa: F811
) -> None:
    apps.create_namespaced_deployment(team_a, json_as(client.V1Deployment, deployment(replicas=1)))
    name = wait_until(lambda: fake_kube.ready_pods(team_a, "app=web"))[0]["metadata"]["name"]

    crashed = fake_kube.crash_loop(
        team_a, name, crashes=3, exit_code=3, message="CUDA out of memory", back_off=0.02
    )
    status = crashed["status"]["containerStatuses"][0]
    assert status["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert status["lastState"]["terminated"] == {
        **status["lastState"]["terminated"],
        "exitCode": 3,
        "reason": "Error",
        "message": "CUDA out of memory",
    }
    assert status["restartCount"] == 1

    def container() -> client.V1ContainerStatus:
        return present(present(core.read_namespaced_pod(name, team_a).status).container_statuses)[0]

    # three crashes, then it runs and is ready
    wait_until(lambda: container().restart_count == 3 and container().ready, timeout=10)
    assert present(present(container().last_state).terminated).exit_code == 3

    # a loop for ever keeps counting, until the pod recovers
    fake_kube.crash_loop(team_a, name, back_off=0.01, runs_for=0.01)
    wait_until(lambda: container().restart_count >= 6)
    fake_kube.recover_pod(team_a, name)
    wait_until(lambda: container().ready)
    count = container().restart_count
    assert present(container().state).running is not None
    assert count >= 6
