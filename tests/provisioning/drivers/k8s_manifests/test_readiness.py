"""The readiness of each kind the driver waits for, as the API server serves it."""

from __future__ import annotations

from typing import Any

from gpupaas.provisioning.drivers.k8s_manifests.pods import IMMEDIATE, FirstSeen, Graces
from gpupaas.provisioning.drivers.k8s_manifests.readiness import Readiness, readiness
from tests.provisioning.drivers.k8s_manifests.kube_objects import deployment, obj, pod, waiting


def test_namespace_readiness() -> None:
    assert readiness({**obj("Namespace", "ns"), "status": {"phase": "Active"}}) == Readiness(True)
    terminating = readiness({**obj("Namespace", "ns"), "status": {"phase": "Terminating"}})
    assert terminating == Readiness(False, "namespace ns is terminating")
    assert not readiness(obj("Namespace", "ns")).ready


def test_claim_readiness() -> None:
    claim = obj("PersistentVolumeClaim", "data", spec={"storageClassName": "local-path"})

    assert readiness({**claim, "status": {"phase": "Bound"}}).ready
    assert readiness({**claim, "status": {"phase": "Pending"}}) == Readiness(
        False, "persistentvolumeclaim data: Pending (waiting for a volume)"
    )
    assert readiness({**claim, "status": {"phase": "Pending"}}, wait_for_first_consumer=True).ready
    lost = readiness({**claim, "status": {"phase": "Lost"}})
    assert lost.failed
    assert not lost.ready


def test_a_running_ready_pod_is_ready_and_a_creating_one_waits() -> None:
    creating = pod(phase="Pending", ready=False, containers=[waiting("ContainerCreating")])

    assert readiness(pod()) == Readiness(True)
    assert readiness(creating) == Readiness(False, "pod nb-0: Pending (ContainerCreating)")
    assert readiness(pod(phase="Succeeded", ready=False)).ready
    not_ready = pod(ready=False)
    not_ready["status"]["conditions"][-1]["message"] = "containers with unready status: [main]"
    assert readiness(not_ready) == Readiness(
        False, "pod nb-0: Running, not ready (containers with unready status: [main])"
    )


def test_deployment_readiness_follows_the_rollout() -> None:
    assert readiness(deployment(observedGeneration=1)).message == (
        "deployment web: waiting for its controller to observe the change"
    )
    assert readiness(deployment(observedGeneration=2, replicas=2, updatedReplicas=1)) == Readiness(
        False, "deployment web: 1 of 2 replicas updated"
    )
    assert readiness(deployment(observedGeneration=2, replicas=3, updatedReplicas=2)).message == (
        "deployment web: 1 old replicas are being replaced"
    )
    assert readiness(
        deployment(observedGeneration=2, replicas=2, updatedReplicas=2, availableReplicas=1)
    ).message == ("deployment web: 1 of 2 replicas available")
    assert readiness(
        deployment(observedGeneration=2, replicas=2, updatedReplicas=2, readyReplicas=2, availableReplicas=2)
    ) == Readiness(True)


QUOTA_FAILURE = {
    "type": "ReplicaFailure",
    "status": "True",
    "reason": "FailedCreate",
    "message": 'pods "web-5d4f-x" is forbidden: exceeded quota: compute, requested: '
    "requests.nvidia.com/gpu=2, used: requests.nvidia.com/gpu=4, limited: requests.nvidia.com/gpu=4",
}
TIMED_OUT = {
    "type": "Progressing",
    "status": "False",
    "reason": "ProgressDeadlineExceeded",
    "message": 'ReplicaSet "web-5d4f" has timed out progressing.',
}


def test_a_deployment_past_its_progress_deadline_or_refused_by_a_webhook_fails() -> None:
    refused = dict(
        QUOTA_FAILURE, message='admission webhook "policy.example.com" denied the request: no GPUs'
    )

    assert readiness(deployment(observedGeneration=2, conditions=[TIMED_OUT])) == Readiness(
        False, 'deployment web: ReplicaSet "web-5d4f" has timed out progressing.', failed=True
    )
    assert readiness(deployment(observedGeneration=2, conditions=[refused])) == Readiness(
        False,
        'deployment web: admission webhook "policy.example.com" denied the request: no GPUs',
        failed=True,
    )


def test_the_conditions_of_a_generation_the_controller_has_not_observed_are_not_believed() -> None:
    # generation 2 (a fixed image) is applied; the status still speaks of generation 1
    for conditions in ([TIMED_OUT], [QUOTA_FAILURE]):
        assert readiness(deployment(observedGeneration=1, conditions=conditions)) == Readiness(
            False, "deployment web: waiting for its controller to observe the change"
        )


def test_pods_the_quota_refuses_are_waited_for_within_the_scale_up_grace() -> None:
    clock = [0.0]
    seen = FirstSeen(lambda: clock[0])
    graces = Graces(scheduling_seconds=60)
    refused = deployment(observedGeneration=2, conditions=[QUOTA_FAILURE])
    refused["metadata"]["uid"] = "d-1"

    waiting_for_quota = readiness(refused, graces=graces, seen=seen)
    assert waiting_for_quota == Readiness(False, f"quota for deployment web: {QUOTA_FAILURE['message']}")
    clock[0] = 61
    failed = readiness(refused, graces=graces, seen=seen)
    assert failed == Readiness(
        False, f"deployment web: cannot create its pods after 61 s: {QUOTA_FAILURE['message']}", failed=True
    )
    assert readiness(refused, graces=IMMEDIATE).failed


def statefulset(**status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "ns", "generation": 1},
        "spec": {"replicas": 2, "updateStrategy": {"type": "RollingUpdate"}},
        "status": {"observedGeneration": 1, **status},
    }


def test_statefulset_readiness() -> None:
    assert (
        readiness(statefulset(replicas=2, readyReplicas=1)).message == "statefulset db: 1 of 2 replicas ready"
    )
    rolling = statefulset(
        replicas=2, readyReplicas=2, updatedReplicas=1, currentRevision="db-1", updateRevision="db-2"
    )
    assert readiness(rolling).message == "statefulset db: rolling update to revision db-2: 1 of 2 updated"
    assert readiness(
        statefulset(
            replicas=2,
            readyReplicas=2,
            availableReplicas=2,
            updatedReplicas=2,
            currentRevision="db-2",
            updateRevision="db-2",
        )
    ).ready


def test_a_job_is_not_waited_for_but_a_failed_one_fails() -> None:
    job = obj("Job", "warmup", "batch/v1", status={"active": 1})
    failed = obj(
        "Job",
        "warmup",
        "batch/v1",
        status={
            "failed": 7,
            "conditions": [
                {
                    "type": "Failed",
                    "status": "True",
                    "reason": "BackoffLimitExceeded",
                    "message": "Job has reached the specified backoff limit",
                }
            ],
        },
    )

    assert readiness(job).ready
    assert readiness(failed) == Readiness(
        False,
        "job warmup failed: BackoffLimitExceeded: Job has reached the specified backoff limit",
        failed=True,
    )


def test_a_load_balancer_service_waits_for_its_address() -> None:
    balancer = obj("Service", "web", spec={"type": "LoadBalancer"}, status={"loadBalancer": {}})

    assert readiness(balancer) == Readiness(False, "service web: waiting for its load balancer's address")
    assert readiness({**balancer, "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}}).ready
    assert readiness(
        {**balancer, "status": {"loadBalancer": {"ingress": [{"hostname": "a1.elb.example"}]}}}
    ).ready


def test_kinds_without_readiness_are_ready_once_they_exist() -> None:
    assert readiness(obj("ConfigMap", "settings")).ready
    assert readiness(obj("Service", "web", spec={"type": "NodePort"})).ready
