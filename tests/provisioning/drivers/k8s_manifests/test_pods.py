"""What a pod says about its instance: why it failed or cannot be scheduled, whether it counts, and
which pods belong to a Deployment's current rollout."""

from __future__ import annotations

from typing import Any

from gpupaas.provisioning.drivers.k8s_manifests.pods import (
    counts,
    current_pods,
    pod_failure,
    pod_problem,
    unschedulable_message,
)
from gpupaas.provisioning.drivers.k8s_manifests.readiness import Readiness, readiness
from tests.provisioning.drivers.k8s_manifests.kube_objects import deployment, pod, waiting


def test_an_unschedulable_gpu_pod_fails_with_the_schedulers_message() -> None:
    pending = pod(
        phase="Pending",
        ready=False,
        containers=[],
        conditions=[
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: 0/4 nodes "
                "are available: 4 No preemption victims found for incoming pod.",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
    )

    message = unschedulable_message(pending)
    assert message is not None
    assert message.startswith("0/4 nodes are available: 4 Insufficient nvidia.com/gpu.")
    result = readiness(pending)
    assert result.failed
    assert result.message is not None
    assert result.message.startswith(
        "pod nb-0 cannot be scheduled: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
    )
    assert unschedulable_message(pod()) is None


def test_a_pod_waiting_for_its_claim_to_be_provisioned_is_not_unschedulable_for_good() -> None:
    waiting_for_claim = pod(
        phase="Pending",
        ready=False,
        containers=[],
        conditions=[
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/3 nodes are available: 3 pod has unbound immediate PersistentVolumeClaims. "
                "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
            }
        ],
    )

    assert pod_problem(waiting_for_claim) is None
    assert readiness(waiting_for_claim) == Readiness(False, "pod nb-0: Pending")


def test_a_crash_looping_container_fails_with_what_killed_it() -> None:
    looping = pod(
        ready=False,
        containers=[
            waiting(
                "CrashLoopBackOff",
                "back-off 40s restarting failed container=main pod=nb-0_team-a-nb(uid)",
                last={"exitCode": 137, "reason": "OOMKilled", "finishedAt": "2026-01-01T00:01:00Z"},
            )
        ],
    )

    assert (
        pod_failure(looping) == "pod nb-0: OOMKilled (container main exited with code 137; CrashLoopBackOff)"
    )
    assert readiness(looping).failed


def test_an_image_that_cannot_be_pulled_fails_but_a_first_pull_error_waits() -> None:
    back_off = pod(
        phase="Pending",
        ready=False,
        containers=[waiting("ImagePullBackOff", 'Back-off pulling image "nope/nope:1"')],
    )
    first_error = pod(phase="Pending", ready=False, containers=[waiting("ErrImagePull", "not found")])

    assert pod_failure(back_off) == (
        'pod nb-0: ImagePullBackOff (container main: Back-off pulling image "nope/nope:1")'
    )
    assert pod_failure(first_error) is None
    assert not readiness(first_error).failed


def test_a_failed_pod_says_why() -> None:
    evicted = pod(
        phase="Failed",
        ready=False,
        containers=[],
        reason="Evicted",
        message="The node was low on resource: memory.",
    )
    exited = pod(
        phase="Failed",
        ready=False,
        containers=[
            {
                "name": "main",
                "ready": False,
                "restartCount": 0,
                "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
            }
        ],
    )

    assert pod_failure(evicted) == "pod nb-0: Evicted (The node was low on resource: memory.)"
    assert pod_failure(exited) == "pod nb-0: OOMKilled (container main exited with code 137)"


def test_a_container_that_terminated_with_an_error_fails_the_pod_and_a_clean_exit_does_not() -> None:
    crashed_init = pod(
        phase="Pending",
        ready=False,
        containers=[waiting("PodInitializing")],
        init_containers=[
            {"name": "fetch", "ready": False, "state": {"terminated": {"exitCode": 2, "reason": "Error"}}}
        ],
    )
    done_init = pod(
        init_containers=[
            {"name": "fetch", "ready": True, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
        ],
    )

    assert pod_failure(crashed_init) == "pod nb-0: Error (container fetch exited with code 2)"
    assert pod_failure(done_init) is None
    assert readiness(done_init).ready


def test_finished_pods_of_a_controller_and_pods_being_deleted_do_not_count() -> None:
    evicted = pod("web-5d4f-a", phase="Failed", ready=False, owner="ReplicaSet", reason="Evicted")
    bare_failed = pod("nb-0", phase="Failed", ready=False, reason="Evicted")
    deleting = pod("nb-1")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"

    assert not counts(evicted)
    assert counts(bare_failed)
    assert not counts(deleting)
    assert counts(pod(owner="ReplicaSet"))


def test_the_pods_of_an_older_replicaset_do_not_fail_a_rollout() -> None:
    web = deployment(observedGeneration=2)
    web["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "2"}

    def replicaset(name: str, revision: str) -> dict[str, Any]:
        return {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "namespace": "ns",
                "annotations": {"deployment.kubernetes.io/revision": revision},
                "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "controller": True}
                ],
            },
        }

    def owned(name: str, replicaset_name: str) -> dict[str, Any]:
        owned_pod = pod(name)
        owned_pod["metadata"]["namespace"] = "ns"
        owned_pod["metadata"]["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": replicaset_name, "controller": True}
        ]
        return owned_pod

    old, new, bare = owned("web-old-a", "web-old"), owned("web-new-a", "web-new"), pod("nb-0")
    bare["metadata"]["namespace"] = "ns"
    stranger = owned("x-a", "unknown-rs")

    kept = current_pods(
        [old, new, bare, stranger], [replicaset("web-old", "1"), replicaset("web-new", "2")], [web]
    )

    assert [p["metadata"]["name"] for p in kept] == ["web-new-a", "nb-0", "x-a"]
