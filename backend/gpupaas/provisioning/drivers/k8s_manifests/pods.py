"""What a pod says about its instance: why it failed ("pod nb-0: OOMKilled ..."), why no node fits
it (the scheduler's reason), whether it counts at all (not a finished pod a controller replaces),
and which pods belong to a Deployment's current rollout.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpupaas.provisioning.drivers.k8s_manifests.objects import (
    condition_of,
    describe,
    int_or,
    mappings_in,
    metadata_of,
    status_of,
)

__all__ = [
    "FAILING_WAITING_REASONS",
    "REVISION_ANNOTATION",
    "container_state",
    "container_statuses",
    "counts",
    "current_pods",
    "pod_failure",
    "pod_problem",
    "unschedulable_message",
]


# Container waiting reasons that do not get better by waiting. ErrImagePull is left out: it turns
# into ImagePullBackOff within seconds when the image really cannot be pulled.
FAILING_WAITING_REASONS = frozenset(
    {
        "CrashLoopBackOff",
        "ImagePullBackOff",
        "InvalidImageName",
        "ErrImageNeverPull",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
        "PreStartHookError",
        "PostStartHookError",
    }
)


def container_statuses(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The statuses of the pod's init containers, then of its containers."""
    status = status_of(pod)
    return mappings_in(status.get("initContainerStatuses")) + mappings_in(status.get("containerStatuses"))


def container_state(container: Mapping[str, Any], key: str, which: str = "state") -> Mapping[str, Any] | None:
    """A container status's `which` ("state" or "lastState") if it is `key` ("waiting", "terminated")."""
    state = container.get(which)
    value = state.get(key) if isinstance(state, Mapping) else None
    return value if isinstance(value, Mapping) else None


# ---------------------------------------------------------------------------------- problems


def pod_failure(pod: Mapping[str, Any]) -> str | None:
    """Why the pod failed ("pod nb-0: OOMKilled (container main exited with code 137)"), or None.

    A pod fails when its phase is Failed (evicted, or a container of a pod that is not restarted
    exited with an error), when a container is stuck in a waiting reason that waiting does not cure
    (CrashLoopBackOff, ImagePullBackOff, ...; a crash loop reports what killed it last), or when a
    container has terminated with a non-zero exit code.
    """
    name = describe(pod)
    status = status_of(pod)
    containers = container_statuses(pod)
    terminated = [
        (c, t)
        for c in containers
        if (t := container_state(c, "terminated")) is not None and int_or(t.get("exitCode"))
    ]
    if status.get("phase") == "Failed":
        reason = status.get("reason") or (terminated[0][1].get("reason") if terminated else None) or "Failed"
        detail = status.get("message")
        if not detail and terminated:
            container, state = terminated[0]
            detail = f"container {container.get('name')} exited with code {state.get('exitCode')}"
        return f"{name}: {reason}" + (f" ({detail})" if detail else "")
    for container in containers:
        waiting = container_state(container, "waiting")
        if waiting is not None and waiting.get("reason") in FAILING_WAITING_REASONS:
            reason = waiting["reason"]
            last = container_state(container, "terminated", "lastState")
            if reason == "CrashLoopBackOff" and last is not None:
                return (
                    f"{name}: {last.get('reason') or 'Error'} (container {container.get('name')} exited "
                    f"with code {last.get('exitCode')}; {reason})"
                )
            message = waiting.get("message")
            return f"{name}: {reason} (container {container.get('name')}" + (
                f": {message})" if message else ")"
            )
    for container, state in terminated:
        return (
            f"{name}: {state.get('reason') or 'Error'} (container {container.get('name')} exited with "
            f"code {state.get('exitCode')})"
        )
    return None


def unschedulable_message(pod: Mapping[str, Any]) -> str | None:
    """The scheduler's reason a pending pod fits no node ("0/4 nodes are available: 4 Insufficient
    nvidia.com/gpu."), from its PodScheduled condition, or None."""
    condition = condition_of(pod, "PodScheduled")
    if condition is None or condition.get("status") != "False" or condition.get("reason") != "Unschedulable":
        return None
    return str(condition.get("message") or "Unschedulable")


# The scheduler says these while a claim is still being provisioned: they pass by themselves.
_PASSING_UNSCHEDULABLE = ("unbound immediate PersistentVolumeClaims",)


def pod_problem(pod: Mapping[str, Any]) -> str | None:
    """Why the pod will not become ready without someone acting: a failure, or no node fits it.
    (A cluster autoscaler that would add a node cannot be told apart: the pod fails all the same.)"""
    failure = pod_failure(pod)
    if failure is not None:
        return failure
    unschedulable = unschedulable_message(pod)
    if unschedulable is None or any(text in unschedulable for text in _PASSING_UNSCHEDULABLE):
        return None
    return f"{describe(pod)} cannot be scheduled: {unschedulable}"


# ------------------------------------------------------------------------------------ counts


_CONTROLLERS_THAT_REPLACE = frozenset(
    {"ReplicaSet", "StatefulSet", "DaemonSet", "Job", "ReplicationController"}
)


def counts(pod: Mapping[str, Any]) -> bool:
    """Whether a pod says something about its instance's health. Not a pod being deleted, nor a
    finished (Failed or Succeeded) pod of a controller: the controller replaces it (an evicted pod
    of a Deployment stays Failed until garbage-collected while its replacement runs), and a Job
    reports its own failure."""
    if metadata_of(pod).get("deletionTimestamp"):
        return False
    if status_of(pod).get("phase") in ("Failed", "Succeeded"):
        owners = mappings_in(metadata_of(pod).get("ownerReferences"))
        return not any(o.get("controller") and o.get("kind") in _CONTROLLERS_THAT_REPLACE for o in owners)
    return True


# ---------------------------------------------------------------------------------- rollouts


REVISION_ANNOTATION = "deployment.kubernetes.io/revision"


def _controller(obj: Mapping[str, Any], kind: str) -> str | None:
    owners = mappings_in(metadata_of(obj).get("ownerReferences"))
    owner = next((o for o in owners if o.get("controller") and o.get("kind") == kind), None)
    return str(owner.get("name")) if owner is not None else None


def _revision(obj: Mapping[str, Any]) -> str | None:
    annotations = metadata_of(obj).get("annotations")
    value = annotations.get(REVISION_ANNOTATION) if isinstance(annotations, Mapping) else None
    return str(value) if value else None


def current_pods(
    pods: Iterable[Mapping[str, Any]],
    replicasets: Iterable[Mapping[str, Any]],
    deployments: Iterable[Mapping[str, Any]],
) -> list[Mapping[str, Any]]:
    """The pods without those of a Deployment's older ReplicaSets: while a fixed Deployment rolls
    out, the crash-looping pods of the broken revision stay until their replacements are ready, and
    they must not fail the apply that fixes them. A pod whose lineage is unknown is kept."""
    wanted = {
        (str(metadata_of(d).get("namespace") or ""), str(metadata_of(d).get("name") or "")): _revision(d)
        for d in deployments
    }
    stale: set[tuple[str, str]] = set()
    for replicaset in replicasets:
        namespace = str(metadata_of(replicaset).get("namespace") or "")
        owner = _controller(replicaset, "Deployment")
        want, have = wanted.get((namespace, owner or "")), _revision(replicaset)
        if owner is not None and want and have and want != have:
            stale.add((namespace, str(metadata_of(replicaset).get("name") or "")))
    return [
        pod
        for pod in pods
        if (str(metadata_of(pod).get("namespace") or ""), _controller(pod, "ReplicaSet") or "") not in stale
    ]
