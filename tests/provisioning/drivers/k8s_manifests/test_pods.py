"""What a pod says about its instance: why it failed or cannot be scheduled, what it waits for
within its grace and when that grace runs out, whether it counts, and which pods belong to the
current revision of their Deployment or StatefulSet."""

from __future__ import annotations

from typing import Any

from gpupaas.provisioning.drivers.k8s_manifests.pods import (
    IMMEDIATE,
    FirstSeen,
    Graces,
    counts,
    current_pods,
    judge_pod,
    unschedulable_message,
)
from gpupaas.provisioning.drivers.k8s_manifests.readiness import Readiness, readiness
from tests.provisioning.drivers.k8s_manifests.kube_objects import deployment, pod, waiting

GRACES = Graces(crash_restarts=3, image_pull_seconds=120, scheduling_seconds=300)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def memory() -> tuple[Clock, FirstSeen]:
    clock = Clock()
    return clock, FirstSeen(clock)


def unschedulable(message: str) -> dict[str, Any]:
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
    return pod(phase="Pending", ready=False, containers=[], conditions=[condition])


NO_GPU = (
    "0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: 0/4 nodes are available: "
    "4 No preemption victims found for incoming pod."
)


def test_an_unschedulable_gpu_pod_waits_for_gpu_nodes_for_the_scale_up_grace_then_fails() -> None:
    pending = unschedulable(NO_GPU)
    clock, seen = memory()

    assert unschedulable_message(pending) == NO_GPU
    assert judge_pod(pending, GRACES, seen) == (None, f"GPU nodes for pod nb-0: {NO_GPU}")
    assert readiness(pending, graces=GRACES, seen=seen) == Readiness(
        False, f"GPU nodes for pod nb-0: {NO_GPU}"
    )
    clock.now = 299
    assert judge_pod(pending, GRACES, seen) == (None, f"GPU nodes for pod nb-0: {NO_GPU}")
    clock.now = 300
    assert judge_pod(pending, GRACES, seen) == (f"pod nb-0 cannot be scheduled after 300 s: {NO_GPU}", None)
    # without a grace, at once, in the words of before
    assert judge_pod(pending, IMMEDIATE, memory()[1]) == (f"pod nb-0 cannot be scheduled: {NO_GPU}", None)
    assert unschedulable_message(pod()) is None


def test_a_pod_no_node_fits_for_another_reason_waits_for_a_node() -> None:
    message = "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint {gpu: dedicated}."

    assert judge_pod(unschedulable(message), GRACES, memory()[1]) == (None, f"a node for pod nb-0: {message}")


def test_a_trouble_that_passed_and_comes_back_gets_its_whole_grace_again() -> None:
    pending = unschedulable(NO_GPU)
    clock, seen = memory()
    judge_pod(pending, GRACES, seen)
    seen.sweep()
    clock.now = 200
    judge_pod(pod(), GRACES, seen)  # scheduled and running: nothing asks about the trouble
    seen.sweep()
    assert not seen.pending

    clock.now = 400  # 400 s after it was first seen, but only just seen again
    assert judge_pod(pending, GRACES, seen)[0] is None
    clock.now = 700
    assert judge_pod(pending, GRACES, seen)[0] == f"pod nb-0 cannot be scheduled after 300 s: {NO_GPU}"


def test_a_pod_waiting_for_its_claim_to_be_provisioned_is_not_unschedulable_for_good() -> None:
    waiting_for_claim = unschedulable(
        "0/3 nodes are available: 3 pod has unbound immediate PersistentVolumeClaims. "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )

    assert judge_pod(waiting_for_claim, IMMEDIATE, memory()[1]) == (None, None)
    assert readiness(waiting_for_claim) == Readiness(False, "pod nb-0: Pending")


def crash_looping(restarts: int, message: str | None = None) -> dict[str, Any]:
    last: dict[str, Any] = {"exitCode": 137, "reason": "OOMKilled", "finishedAt": "2026-01-01T00:01:00Z"}
    if message:
        last["message"] = message
    back_off = "back-off 40s restarting failed container=main pod=nb-0_team-a-nb(uid)"
    return pod(ready=False, containers=[waiting("CrashLoopBackOff", back_off, last=last, restarts=restarts)])


def test_a_crash_loop_is_waited_for_until_the_restart_grace_then_fails_with_what_killed_it() -> None:
    seen = memory()[1]

    assert judge_pod(crash_looping(1), GRACES, seen) == (
        None,
        "pod nb-0: OOMKilled (container main exited with code 137; CrashLoopBackOff, restarted 1 of 3 times)",
    )
    assert judge_pod(crash_looping(2), GRACES, seen)[0] is None
    assert judge_pod(crash_looping(3), GRACES, seen) == (
        "pod nb-0: OOMKilled (container main exited with code 137; CrashLoopBackOff)",
        None,
    )
    assert readiness(crash_looping(3), graces=GRACES).failed
    assert not readiness(crash_looping(2), graces=GRACES).failed
    # its last words, the last line of a long termination message
    told = crash_looping(5, "loading weights\ntorch.OutOfMemoryError: CUDA out of memory\n")
    assert judge_pod(told, GRACES, seen)[0] == (
        "pod nb-0: OOMKilled (container main exited with code 137: torch.OutOfMemoryError: CUDA out of "
        "memory; CrashLoopBackOff)"
    )
    assert judge_pod(crash_looping(0), IMMEDIATE, seen)[0] is not None


def exited(code: int, *, restart_policy: str | None = None, restarts: int = 0) -> dict[str, Any]:
    crashed = pod(
        ready=False,
        containers=[
            {
                "name": "main",
                "ready": False,
                "restartCount": restarts,
                "state": {"terminated": {"exitCode": code, "reason": "Error" if code else "Completed"}},
            }
        ],
    )
    if restart_policy:
        crashed["spec"]["restartPolicy"] = restart_policy
    return crashed


def test_one_exit_with_an_error_is_final_only_when_the_pod_is_not_restarted() -> None:
    seen = memory()[1]

    assert judge_pod(exited(1), GRACES, seen) == (
        None,
        "pod nb-0: Error (container main exited with code 1, restarted 0 of 3 times)",
    )
    assert judge_pod(exited(1, restart_policy="OnFailure", restarts=3), GRACES, seen)[0] == (
        "pod nb-0: Error (container main exited with code 1)"
    )
    assert judge_pod(exited(1, restart_policy="Never"), GRACES, seen) == (
        "pod nb-0: Error (container main exited with code 1)",
        None,
    )
    assert judge_pod(exited(0, restart_policy="Never"), GRACES, seen) == (None, None)


def test_an_image_that_cannot_be_pulled_waits_for_the_pull_grace_then_fails() -> None:
    clock, seen = memory()
    back_off = pod(
        phase="Pending",
        ready=False,
        containers=[waiting("ImagePullBackOff", 'Back-off pulling image "nope/nope:1"')],
    )
    first_error = pod(phase="Pending", ready=False, containers=[waiting("ErrImagePull", "not found")])
    first_error["metadata"]["uid"] = back_off["metadata"]["uid"]  # the same pod, a moment before

    assert judge_pod(first_error, GRACES, seen) == (
        None,
        "pod nb-0: ErrImagePull (container main: not found)",
    )
    clock.now = 100  # the kubelet goes back and forth between the two: one trouble, one grace
    assert judge_pod(back_off, GRACES, seen)[0] is None
    assert readiness(back_off, graces=GRACES, seen=seen) == Readiness(
        False, 'pod nb-0: ImagePullBackOff (container main: Back-off pulling image "nope/nope:1")'
    )
    clock.now = 125
    assert judge_pod(back_off, GRACES, seen)[0] == (
        'pod nb-0: ImagePullBackOff for 125 s (container main: Back-off pulling image "nope/nope:1")'
    )
    assert judge_pod(back_off, IMMEDIATE, memory()[1])[0] == (
        'pod nb-0: ImagePullBackOff (container main: Back-off pulling image "nope/nope:1")'
    )


def test_an_image_name_that_waiting_cannot_cure_fails_at_once() -> None:
    invalid = pod(phase="Pending", ready=False, containers=[waiting("InvalidImageName", 'invalid "Nope:"')])

    assert judge_pod(invalid, GRACES, memory()[1]) == (
        'pod nb-0: InvalidImageName (container main: invalid "Nope:")',
        None,
    )


def test_a_failed_pod_says_why() -> None:
    evicted = pod(
        phase="Failed",
        ready=False,
        containers=[],
        reason="Evicted",
        message="The node was low on resource: memory.",
    )
    oom = pod(
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

    assert (
        judge_pod(evicted, GRACES, memory()[1])[0]
        == "pod nb-0: Evicted (The node was low on resource: memory.)"
    )
    assert (
        judge_pod(oom, GRACES, memory()[1])[0] == "pod nb-0: OOMKilled (container main exited with code 137)"
    )


def test_an_init_container_that_exited_with_an_error_is_a_crash_and_a_clean_exit_is_not() -> None:
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

    assert (
        judge_pod(crashed_init, IMMEDIATE, memory()[1])[0]
        == "pod nb-0: Error (container fetch exited with code 2)"
    )
    assert judge_pod(crashed_init, GRACES, memory()[1])[0] is None
    assert judge_pod(done_init, IMMEDIATE, memory()[1]) == (None, None)
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


def replicaset(name: str, revision: str | None) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "controller": True}
        ],
    }
    if revision is not None:
        metadata["annotations"] = {"deployment.kubernetes.io/revision": revision}
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": metadata}


def owned(
    name: str, owner: str, kind: str = "ReplicaSet", labels: dict[str, str] | None = None
) -> dict[str, Any]:
    owned_pod = pod(name)
    owned_pod["metadata"]["namespace"] = "ns"
    owned_pod["metadata"]["labels"].update(labels or {})
    owned_pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": kind, "name": owner, "controller": True}
    ]
    return owned_pod


def names(pods: list[Any]) -> list[str]:
    return [p["metadata"]["name"] for p in pods]


def test_only_the_pods_of_a_deployments_current_revision_are_judged() -> None:
    web = deployment(observedGeneration=2)
    web["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "2"}
    old, new, bare = owned("web-old-a", "web-old"), owned("web-new-a", "web-new"), pod("nb-0")
    bare["metadata"]["namespace"] = "ns"
    stranger = owned("x-a", "unknown-rs")
    sets = [replicaset("web-old", "1"), replicaset("web-new", "2")]

    assert names(current_pods([old, new, bare, stranger], sets, [web])) == ["web-new-a", "nb-0", "x-a"]

    # Before the controller has observed the new generation, its revision is the one before: none
    # of its pods is judged (the old ones would fail the re-apply that fixes them).
    lagging = deployment(observedGeneration=1)
    lagging["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "1"}
    assert names(current_pods([old, new, bare], sets, [lagging])) == ["nb-0"]

    # A Deployment without the annotation: its newest ReplicaSet is the current one.
    unannotated = deployment(observedGeneration=2)
    assert names(current_pods([old, new], sets, [unannotated])) == ["web-new-a"]


def test_only_the_pods_of_a_statefulsets_update_revision_are_judged() -> None:
    def statefulset(observed: int, update: str) -> dict[str, Any]:
        return {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": "db", "namespace": "ns", "generation": 2},
            "status": {"observedGeneration": observed, "updateRevision": update, "currentRevision": "db-1"},
        }

    old = owned("db-1", "db", "StatefulSet", {"controller-revision-hash": "db-1"})
    new = owned("db-0", "db", "StatefulSet", {"controller-revision-hash": "db-2"})

    assert names(current_pods([old, new], [], [statefulset(2, "db-2")])) == ["db-0"]
    assert names(current_pods([old, new], [], [statefulset(1, "db-1")])) == []
    assert names(current_pods([old, new], [], [])) == ["db-1", "db-0"]
