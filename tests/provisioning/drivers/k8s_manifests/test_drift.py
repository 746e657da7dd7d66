"""An instance's health from its pods, and the changes the drift watch reports."""

from __future__ import annotations

from typing import Any

from gpupaas.provisioning.drivers.base import Observed, Owner, Phase
from gpupaas.provisioning.drivers.k8s_manifests.drift import DriftTracker, instance_health
from gpupaas.provisioning.drivers.k8s_manifests.pods import Graces
from gpupaas.provisioning.plan import INSTANCE_LABEL
from tests.provisioning.drivers.k8s_manifests.kube_objects import INSTANCE, pod, waiting


def test_instance_health_from_its_pods() -> None:
    oom = pod(
        "nb-0",
        ready=False,
        containers=[waiting("CrashLoopBackOff", last={"exitCode": 137, "reason": "OOMKilled"})],
    )
    evicted_and_replaced = [
        pod("web-5d4f-a", phase="Failed", ready=False, owner="ReplicaSet", reason="Evicted"),
        pod("web-5d4f-b", owner="ReplicaSet"),
    ]

    assert instance_health([]) is None
    assert instance_health([pod("a"), pod("b")]) == Observed(Phase.READY)
    assert instance_health([pod("a"), oom]) == Observed(
        Phase.FAILED, "pod nb-0: OOMKilled (container main exited with code 137; CrashLoopBackOff)"
    )
    assert instance_health([pod("a", phase="Pending", ready=False, containers=[])]) == Observed(
        Phase.PROGRESSING, "pod a: Pending"
    )
    assert instance_health(evicted_and_replaced) == Observed(Phase.READY)


def test_many_failing_pods_are_summed_up() -> None:
    pods = [pod(f"p-{i}", phase="Failed", ready=False, containers=[], reason="Evicted") for i in range(5)]

    health = instance_health(pods)

    assert health == Observed(
        Phase.FAILED, "pod p-0: Evicted; pod p-1: Evicted; pod p-2: Evicted; and 2 more"
    )


# ------------------------------------------------------------------------------------------- drift


def failing(name: str, instance: str = INSTANCE) -> dict[str, Any]:
    failed = pod(
        name,
        ready=False,
        containers=[waiting("CrashLoopBackOff", last={"exitCode": 137, "reason": "OOMKilled"})],
    )
    failed["metadata"]["labels"][INSTANCE_LABEL] = instance
    return failed


def healthy(name: str, instance: str = INSTANCE) -> dict[str, Any]:
    ready = pod(name)
    ready["metadata"]["labels"][INSTANCE_LABEL] = instance
    return ready


OWNER = Owner(INSTANCE_LABEL, INSTANCE)


def deliver(tracker: DriftTracker, changes: list[tuple[Owner, Observed]]) -> list[tuple[Owner, Phase]]:
    """Marks the changes reported, as watch_drift does once on_change took them."""
    for owner, observed in changes:
        tracker.reported[owner] = observed.phase
    return [(owner, observed.phase) for owner, observed in changes]


def test_drift_reports_a_failure_once_and_the_recovery() -> None:
    tracker = DriftTracker()

    assert deliver(tracker, tracker.reset([healthy("nb-0"), healthy("other-0", "other")])) == []
    assert deliver(tracker, tracker.event("MODIFIED", failing("nb-0"))) == [(OWNER, Phase.FAILED)]
    assert deliver(tracker, tracker.event("MODIFIED", failing("nb-0"))) == []
    assert deliver(tracker, tracker.event("MODIFIED", healthy("nb-0"))) == [(OWNER, Phase.READY)]
    assert deliver(tracker, tracker.event("MODIFIED", healthy("nb-0"))) == []


def test_drift_reports_what_changed_while_the_watch_was_down() -> None:
    tracker = DriftTracker()
    deliver(tracker, tracker.reset([healthy("nb-0"), healthy("other-0", "other")]))

    changes = tracker.reset([failing("nb-0"), healthy("other-0", "other")])

    assert [(i, o.phase, o.message) for i, o in changes] == [
        (
            OWNER,
            Phase.FAILED,
            "pod nb-0: OOMKilled (container main exited with code 137; CrashLoopBackOff)",
        )
    ]


def test_a_failure_that_was_not_delivered_is_given_again() -> None:
    tracker = DriftTracker()
    tracker.reset([healthy("nb-0")])

    assert tracker.event("MODIFIED", failing("nb-0"))  # not delivered: on_change raised
    assert deliver(tracker, tracker.event("MODIFIED", failing("nb-0"))) == [(OWNER, Phase.FAILED)]


def test_a_failed_pod_replaced_by_a_ready_one_is_a_recovery() -> None:
    tracker = DriftTracker()
    deliver(tracker, tracker.reset([failing("nb-0")]))

    assert deliver(tracker, tracker.event("DELETED", failing("nb-0"))) == []
    assert deliver(tracker, tracker.event("ADDED", healthy("nb-1"))) == [(OWNER, Phase.READY)]


def test_pods_without_an_instance_label_are_ignored() -> None:
    tracker = DriftTracker()
    stray = failing("stray")
    del stray["metadata"]["labels"][INSTANCE_LABEL]

    assert tracker.event("ADDED", stray) == []
    assert tracker.reset([stray]) == []


# ------------------------------------------------------------------------------------------ graces


def pending(name: str, message: str) -> dict[str, Any]:
    condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}
    unscheduled = pod(name, phase="Pending", ready=False, containers=[], conditions=[condition])
    unscheduled["metadata"]["uid"] = f"uid-{name}"
    return unscheduled


def test_a_pod_left_pending_by_a_node_drain_turns_its_instance_failed_only_after_the_grace() -> None:
    now = [0.0]
    tracker = DriftTracker(Graces(scheduling_seconds=300), lambda: now[0])
    drained = "0/2 nodes are available: 2 node(s) were unschedulable."
    deliver(tracker, tracker.reset([healthy("nb-0")]))

    # the drain evicts nb-0; its replacement finds no node
    assert deliver(tracker, tracker.event("DELETED", healthy("nb-0"))) == []
    assert deliver(tracker, tracker.event("ADDED", pending("nb-1", drained))) == []
    assert tracker.waiting
    now[0] = 299
    assert deliver(tracker, tracker.tick()) == []

    now[0] = 300
    changes = tracker.tick()
    assert [(o, h.phase, h.message) for o, h in changes] == [
        (OWNER, Phase.FAILED, f"pod nb-1 cannot be scheduled after 300 s: {drained}")
    ]
    deliver(tracker, changes)
    # the node comes back: nb-1 runs, the instance is READY and nothing is timed any more
    running = healthy("nb-1")
    running["metadata"]["uid"] = "uid-nb-1"
    assert deliver(tracker, tracker.event("MODIFIED", running)) == [(OWNER, Phase.READY)]
    assert not tracker.waiting


def test_a_restarted_crash_turns_its_instance_failed_only_at_the_restart_grace() -> None:
    tracker = DriftTracker(Graces(crash_restarts=3))
    deliver(tracker, tracker.reset([healthy("nb-0")]))

    def crashed(restarts: int) -> dict[str, Any]:
        looping = failing("nb-0")
        looping["status"]["containerStatuses"] = [
            waiting("CrashLoopBackOff", last={"exitCode": 1, "reason": "Error"}, restarts=restarts)
        ]
        return looping

    assert deliver(tracker, tracker.event("MODIFIED", crashed(1))) == []
    assert deliver(tracker, tracker.event("MODIFIED", crashed(2))) == []
    assert deliver(tracker, tracker.event("MODIFIED", crashed(3))) == [(OWNER, Phase.FAILED)]
