"""Whether an object, as the API server serves it, is ready: a Namespace Active, a claim Bound, a pod
Ready, a Deployment or StatefulSet rolled out, a LoadBalancer Service given an address, a Job not
failed; if not, what it waits for, or why it never will be without someone acting
(`Readiness.failed`). Other kinds are ready once they exist.

A controller's status is believed only once it has observed the object's latest generation
(`observed`): before that, its conditions (ProgressDeadlineExceeded, ReplicaFailure) and counts
describe the spec before, such as the broken image a re-apply is fixing. What usually passes by
itself (a quota that frees, a pod waiting for a node, an image pull retried, a restarted crash) is
waited for within its grace (pods.Graces, timed by pods.FirstSeen) and fails after it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpupaas.provisioning.drivers.k8s_manifests.objects import (
    condition_of,
    describe,
    int_or,
    mappings_in,
    metadata_of,
    spec_of,
    status_of,
)
from gpupaas.provisioning.drivers.k8s_manifests.pods import (
    FirstSeen,
    Graces,
    container_state,
    container_statuses,
    judge_pod,
    observed,
)

__all__ = ["WAITED_KINDS", "Readiness", "pod_readiness", "readiness"]


@dataclass(frozen=True)
class Readiness:
    """Whether an object is ready; if not, what it waits for (`message`), or, when `failed`, why it
    never will be without someone acting."""

    ready: bool
    message: str | None = None
    failed: bool = False


_READY = Readiness(True)


def _never_seen() -> FirstSeen:
    """A memory for a single look: every trouble is seen for the first time, none has lasted."""
    return FirstSeen(lambda: 0.0)


def _stale(obj: Mapping[str, Any]) -> Readiness | None:
    """Not ready while the controller has not seen the latest spec (its status would be stale)."""
    if not observed(obj):
        return Readiness(False, f"{describe(obj)}: waiting for its controller to observe the change")
    return None


def pod_readiness(
    pod: Mapping[str, Any], graces: Graces | None = None, seen: FirstSeen | None = None
) -> Readiness:
    """A pod's readiness: failed with its problem (pods.judge_pod), ready when Running and Ready
    (or Succeeded), else what it waits for: a trouble within its grace first, else its phase and
    the waiting reasons of its containers."""
    name = describe(pod)
    if metadata_of(pod).get("deletionTimestamp"):
        return Readiness(False, f"{name} is being deleted")
    failure, trouble = judge_pod(pod, graces or Graces(), seen or _never_seen())
    if failure is not None:
        return Readiness(False, failure, failed=True)
    phase = status_of(pod).get("phase") or "Pending"
    if phase == "Succeeded":
        return _READY
    ready = condition_of(pod, "Ready")
    if phase == "Running" and ready is not None and ready.get("status") == "True":
        return _READY
    if trouble is not None:
        return Readiness(False, trouble)
    waiting = [
        str(w["reason"])
        for c in container_statuses(pod)
        if (w := container_state(c, "waiting")) is not None and w.get("reason")
    ]
    if waiting:
        return Readiness(False, f"{name}: {phase} ({', '.join(dict.fromkeys(waiting))})")
    if phase == "Running":
        detail = ready.get("message") if ready is not None else None
        return Readiness(False, f"{name}: Running, not ready" + (f" ({detail})" if detail else ""))
    return Readiness(False, f"{name}: {phase}")


def _namespace_readiness(namespace: Mapping[str, Any]) -> Readiness:
    phase = status_of(namespace).get("phase")
    if phase == "Active":
        return _READY
    if phase == "Terminating":
        return Readiness(False, f"{describe(namespace)} is terminating")
    return Readiness(False, f"{describe(namespace)}: waiting for it to become Active")


def _pvc_readiness(claim: Mapping[str, Any], wait_for_first_consumer: bool) -> Readiness:
    phase = status_of(claim).get("phase") or "Pending"
    if phase == "Bound":
        return _READY
    if phase == "Lost":
        return Readiness(False, f"{describe(claim)}: Lost (its PersistentVolume is gone)", failed=True)
    if wait_for_first_consumer:
        # Its storage class binds only when a pod uses it: waiting for Bound would wait forever for
        # a claim no pod mounts yet, and the pods that mount it are waited for anyway.
        return _READY
    return Readiness(False, f"{describe(claim)}: {phase} (waiting for a volume)")


def _deployment_readiness(deployment: Mapping[str, Any], graces: Graces, seen: FirstSeen) -> Readiness:
    name = describe(deployment)
    stale = _stale(deployment)
    if stale is not None:
        return stale
    for condition in mappings_in(status_of(deployment).get("conditions")):
        if condition.get("type") == "Progressing" and condition.get("reason") == "ProgressDeadlineExceeded":
            detail = condition.get("message") or "progress deadline exceeded"
            return Readiness(False, f"{name}: {detail}", failed=True)
        if condition.get("type") == "ReplicaFailure" and condition.get("status") == "True":
            detail = str(condition.get("message") or condition.get("reason") or "cannot create pods")
            if "exceeded quota" not in detail:  # a webhook, a policy: no retry will pass it
                return Readiness(False, f"{name}: {detail}", failed=True)
            # The ReplicaSet tries again until the quota frees (other pods end, the quota grows).
            elapsed = seen.elapsed(f"{metadata_of(deployment).get('uid') or name}/quota")
            if elapsed >= graces.quota_grace:
                after = f" after {elapsed:.0f} s" if graces.quota_grace > 0 else ""
                return Readiness(False, f"{name}: cannot create its pods{after}: {detail}", failed=True)
            return Readiness(False, f"quota for {name}: {detail}")
    status = status_of(deployment)
    wanted = int_or(spec_of(deployment).get("replicas"), 1)
    updated = int_or(status.get("updatedReplicas"))
    total = int_or(status.get("replicas"))
    available = int_or(status.get("availableReplicas"))
    if updated < wanted:
        return Readiness(False, f"{name}: {updated} of {wanted} replicas updated")
    if total > updated:
        return Readiness(False, f"{name}: {total - updated} old replicas are being replaced")
    if available < updated:
        return Readiness(False, f"{name}: {available} of {updated} replicas available")
    return _READY


def _statefulset_readiness(statefulset: Mapping[str, Any]) -> Readiness:
    name = describe(statefulset)
    stale = _stale(statefulset)
    if stale is not None:
        return stale
    spec, status = spec_of(statefulset), status_of(statefulset)
    wanted = int_or(spec.get("replicas"), 1)
    ready = int_or(status.get("readyReplicas"))
    if ready < wanted:
        return Readiness(False, f"{name}: {ready} of {wanted} replicas ready")
    strategy = spec.get("updateStrategy")
    strategy = strategy if isinstance(strategy, Mapping) else {}
    if strategy.get("type", "RollingUpdate") == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        partition = int_or(rolling.get("partition")) if isinstance(rolling, Mapping) else 0
        updated = int_or(status.get("updatedReplicas"))
        if partition > 0 and updated < wanted - partition:
            return Readiness(False, f"{name}: {updated} of {wanted - partition} replicas updated")
        current, update = status.get("currentRevision"), status.get("updateRevision")
        if partition == 0 and current and update and current != update:
            return Readiness(
                False, f"{name}: rolling update to revision {update}: {updated} of {wanted} updated"
            )
    if "availableReplicas" in status and int_or(status.get("availableReplicas")) < wanted:
        return Readiness(
            False, f"{name}: {int_or(status.get('availableReplicas'))} of {wanted} replicas available"
        )
    return _READY


def _service_readiness(service: Mapping[str, Any]) -> Readiness:
    # Only a LoadBalancer waits: for the address its outputs may name (an IP, or a cloud's hostname).
    if spec_of(service).get("type") != "LoadBalancer":
        return _READY
    balancer = status_of(service).get("loadBalancer")
    ingress = mappings_in(balancer.get("ingress")) if isinstance(balancer, Mapping) else []
    if any(entry.get("ip") or entry.get("hostname") for entry in ingress):
        return _READY
    return Readiness(False, f"{describe(service)}: waiting for its load balancer's address")


def _job_readiness(job: Mapping[str, Any]) -> Readiness:
    # A Job is not waited for to complete (it may train for days); only a failed Job fails the run.
    failed = condition_of(job, "Failed")
    if failed is not None and failed.get("status") == "True":
        detail = ": ".join(str(p) for p in (failed.get("reason"), failed.get("message")) if p)
        return Readiness(False, f"{describe(job)} failed" + (f": {detail}" if detail else ""), failed=True)
    return _READY


WAITED_KINDS = frozenset(
    {"Namespace", "PersistentVolumeClaim", "Pod", "Deployment", "StatefulSet", "Job", "Service"}
)


def readiness(
    obj: Mapping[str, Any],
    *,
    wait_for_first_consumer: bool = False,
    graces: Graces | None = None,
    seen: FirstSeen | None = None,
) -> Readiness:
    """Whether an object as the API server serves it is ready. Kinds that have no readiness of
    their own (ConfigMap, ...; see WAITED_KINDS) are ready once they exist.
    `wait_for_first_consumer`: a PersistentVolumeClaim's storage class binds only when a pod uses
    it. `graces` (the defaults when None) and `seen` (when each trouble was first seen; None: this
    one look, so that no trouble has lasted) decide when what may pass has lasted too long.
    """
    graces = graces or Graces()
    seen = seen or _never_seen()
    kind = obj.get("kind")
    if kind == "Namespace":
        return _namespace_readiness(obj)
    if kind == "PersistentVolumeClaim":
        return _pvc_readiness(obj, wait_for_first_consumer)
    if kind == "Pod":
        return pod_readiness(obj, graces, seen)
    if kind == "Deployment":
        return _deployment_readiness(obj, graces, seen)
    if kind == "StatefulSet":
        return _statefulset_readiness(obj)
    if kind == "Service":
        return _service_readiness(obj)
    if kind == "Job":
        return _job_readiness(obj)
    return _READY
