"""What a pod says about its instance: why it failed ("pod nb-0: OOMKilled ..."), what it waits for
that usually passes by itself (a node pool scaling up, an image pull retried, a crash the kubelet
restarts) and for how long that is forgiven (`Graces`, measured by `FirstSeen`), whether it counts
at all (not a finished pod a controller replaces), and which pods belong to the current revision of
their Deployment or StatefulSet.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from gpupaas.provisioning.drivers.base import KNOWN_GPU_RESOURCES
from gpupaas.provisioning.drivers.k8s_manifests.objects import (
    condition_of,
    describe,
    int_or,
    mappings_in,
    metadata_of,
    spec_of,
    status_of,
)

__all__ = [
    "IMMEDIATE",
    "REVISION_ANNOTATION",
    "FirstSeen",
    "Graces",
    "container_state",
    "container_statuses",
    "counts",
    "current_pods",
    "judge_pod",
    "observed",
    "unschedulable_message",
]


# --------------------------------------------------------------------------------- graces


@dataclass(frozen=True)
class Graces:
    """How long the driver forgives what usually passes by itself before it fails a run (or the
    drift watch reports an instance FAILED):

    - `crash_restarts`: a container that crashes (CrashLoopBackOff, or exited with an error in a
      pod that restarts it) fails once the kubelet has restarted it this many times; 0: at once.
    - `image_pull_seconds`: a container the kubelet cannot pull (ErrImagePull, ImagePullBackOff)
      or create (CreateContainerConfigError, CreateContainerError, RunContainerError, a failed
      lifecycle hook): the kubelet keeps retrying, and a registry or a Secret may come back.
    - `scheduling_seconds`: capacity that may come: a pod no node fits (a GPU node pool scaling
      up from zero, a device plugin still starting, a drained node) or a controller whose pods
      the namespace's quota refuses (until other pods end).
    - `quota_seconds`: a controller whose pods the namespace's quota refuses; None: as
      `scheduling_seconds`. A service instance's runs give 0 (the driver's apply): its quota is
      its compute instance's, which only its owners free (stopping another service instance).
    """

    crash_restarts: int = 3
    image_pull_seconds: float = 120.0
    scheduling_seconds: float = 300.0
    quota_seconds: float | None = None

    @property
    def quota_grace(self) -> float:
        return self.scheduling_seconds if self.quota_seconds is None else self.quota_seconds


# No grace at all: every trouble fails at first sight.
IMMEDIATE = Graces(crash_restarts=0, image_pull_seconds=0.0, scheduling_seconds=0.0)


class FirstSeen:
    """When each trouble was first seen, on `clock` (seconds): what the time graces are measured
    by. `elapsed(key)` starts a trouble's count the first time it is asked for; `sweep()`, after
    a look at everything, forgets the troubles not asked for since the last sweep (they passed),
    so that one that comes back later is given its whole grace again."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._since: dict[str, float] = {}
        self._asked: set[str] = set()

    def elapsed(self, key: str) -> float:
        now = self._clock()
        self._asked.add(key)
        return now - self._since.setdefault(key, now)

    def sweep(self) -> None:
        for key in set(self._since) - self._asked:
            del self._since[key]
        self._asked.clear()

    @property
    def pending(self) -> bool:
        """Whether a trouble is being timed: looking again later may give another answer."""
        return bool(self._since)


# --------------------------------------------------------------------------------- containers


def container_statuses(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The statuses of the pod's init containers, then of its containers."""
    status = status_of(pod)
    return mappings_in(status.get("initContainerStatuses")) + mappings_in(status.get("containerStatuses"))


def container_state(container: Mapping[str, Any], key: str, which: str = "state") -> Mapping[str, Any] | None:
    """A container status's `which` ("state" or "lastState") if it is `key` ("waiting", "terminated")."""
    state = container.get(which)
    value = state.get(key) if isinstance(state, Mapping) else None
    return value if isinstance(value, Mapping) else None


# Waiting reasons that waiting never cures: the name itself is wrong, or pulling is forbidden.
_NEVER_CURED = frozenset({"InvalidImageName", "ErrImageNeverPull"})
# Waiting reasons of a container the kubelet cannot pull or create, and retries with a back-off.
_RETRIED = frozenset(
    {
        "ErrImagePull",
        "ImagePullBackOff",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
        "PreStartHookError",
        "PostStartHookError",
    }
)
# A container's termination message can be a whole log tail; the reason quotes its last line.
_MESSAGE_CHARS = 200


def _last_line(message: object) -> str:
    lines = [line.strip() for line in str(message or "").splitlines() if line.strip()]
    text = lines[-1] if lines else ""
    return text if len(text) <= _MESSAGE_CHARS else text[: _MESSAGE_CHARS - 3] + "..."


def _exited(container: Mapping[str, Any], state: Mapping[str, Any]) -> str:
    """'container main exited with code 137' and its last message, if it left one."""
    text = f"container {container.get('name')} exited with code {state.get('exitCode')}"
    message = _last_line(state.get("message"))
    return f"{text}: {message}" if message else text


def _key(pod: Mapping[str, Any], *parts: object) -> str:
    metadata = metadata_of(pod)
    identity = metadata.get("uid") or f"{metadata.get('namespace')}/{metadata.get('name')}"
    return "/".join(str(p) for p in (identity, *parts))


# ---------------------------------------------------------------------------------- the verdict


def unschedulable_message(pod: Mapping[str, Any]) -> str | None:
    """The scheduler's reason a pending pod fits no node ("0/4 nodes are available: 4 Insufficient
    nvidia.com/gpu."), from its PodScheduled condition, or None."""
    condition = condition_of(pod, "PodScheduled")
    if condition is None or condition.get("status") != "False" or condition.get("reason") != "Unschedulable":
        return None
    return str(condition.get("message") or "Unschedulable")


# The scheduler says these while a claim is still being provisioned: they pass by themselves, and
# the claim is waited for anyway.
_PASSING_UNSCHEDULABLE = ("unbound immediate PersistentVolumeClaims",)


_INSUFFICIENT = re.compile(r"Insufficient ([A-Za-z0-9][\w./-]*[A-Za-z0-9])")


def _waiting_for_nodes(message: str) -> str:
    """What an unschedulable pod waits for, in a person's words: GPU nodes when a GPU resource is
    what no node has enough of ("4 Insufficient nvidia.com/gpu"), else a node."""
    short = _INSUFFICIENT.findall(message)
    gpus = any(name in KNOWN_GPU_RESOURCES or "gpu" in name.lower() for name in short)
    return "GPU nodes" if gpus else "a node"


def judge_pod(pod: Mapping[str, Any], graces: Graces, seen: FirstSeen) -> tuple[str | None, str | None]:
    """(failure, trouble): why the pod will not become ready without someone acting, or else
    what it waits for that is still within its grace (None, None: nothing is wrong with it).

    Fails at once: phase Failed (evicted; a container of a pod that is not restarted exited with
    an error), an image name that waiting cannot cure, a container that exited with an error in
    a pod with restartPolicy Never. Fails after its grace: a crash loop (restarts), a pull or
    create error the kubelet retries (time), a pod no node fits (time). The messages name the
    pod, the container, the reason and its last message or exit code.
    """
    name = describe(pod)
    status = status_of(pod)
    containers = container_statuses(pod)
    if status.get("phase") == "Failed":
        exits = [
            (c, t)
            for c in containers
            if (t := container_state(c, "terminated")) is not None and int_or(t.get("exitCode"))
        ]
        reason = status.get("reason") or (exits[0][1].get("reason") if exits else None) or "Failed"
        detail = status.get("message") or (_exited(*exits[0]) if exits else None)
        return f"{name}: {reason}" + (f" ({detail})" if detail else ""), None
    restarted = (spec_of(pod).get("restartPolicy") or "Always") != "Never"
    trouble: str | None = None
    for container in containers:
        cname = container.get("name")
        waiting = container_state(container, "waiting")
        reason = str(waiting.get("reason") or "") if waiting is not None else ""
        if reason in _NEVER_CURED or reason in _RETRIED:
            assert waiting is not None
            message = waiting.get("message")
            text = f"{name}: {reason} (container {cname}" + (f": {message})" if message else ")")
            if reason in _NEVER_CURED:
                return text, None
            elapsed = seen.elapsed(_key(pod, cname, "start"))
            if elapsed >= graces.image_pull_seconds:
                if graces.image_pull_seconds > 0:
                    text = f"{name}: {reason} for {elapsed:.0f} s (container {cname}" + (
                        f": {message})" if message else ")"
                    )
                return text, None
            trouble = trouble or text
            continue
        restarts = int_or(container.get("restartCount"))
        terminated = container_state(container, "terminated")
        if reason == "CrashLoopBackOff":
            last = container_state(container, "terminated", "lastState") or terminated
            if last is not None:
                text = (
                    f"{name}: {last.get('reason') or 'Error'} ({_exited(container, last)}; CrashLoopBackOff)"
                )
            else:
                message = waiting.get("message") if waiting is not None else None
                text = f"{name}: CrashLoopBackOff (container {cname}" + (f": {message})" if message else ")")
        elif terminated is not None and int_or(terminated.get("exitCode")):
            text = f"{name}: {terminated.get('reason') or 'Error'} ({_exited(container, terminated)})"
            if not restarted:
                return text, None
        else:
            continue
        if restarts >= graces.crash_restarts:
            return text, None
        trouble = trouble or f"{text[:-1]}, restarted {restarts} of {graces.crash_restarts} times)"
    unschedulable = unschedulable_message(pod)
    if unschedulable is not None and not any(text in unschedulable for text in _PASSING_UNSCHEDULABLE):
        elapsed = seen.elapsed(_key(pod, "unschedulable"))
        if elapsed >= graces.scheduling_seconds:
            after = f" after {elapsed:.0f} s" if graces.scheduling_seconds > 0 else ""
            return f"{name} cannot be scheduled{after}: {unschedulable}", None
        return None, f"{_waiting_for_nodes(unschedulable)} for {name}: {unschedulable}"
    return None, trouble


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
_STATEFULSET_REVISION_LABEL = "controller-revision-hash"


def observed(obj: Mapping[str, Any]) -> bool:
    """Whether the object's controller has seen its latest spec: `status.observedGeneration >=
    metadata.generation`. Until then its status, conditions and revision describe the spec
    before, and are not believed."""
    generation = int_or(metadata_of(obj).get("generation"))
    seen = status_of(obj).get("observedGeneration")
    return isinstance(seen, int) and seen >= generation


def _controller(obj: Mapping[str, Any], kind: str) -> str | None:
    owners = mappings_in(metadata_of(obj).get("ownerReferences"))
    owner = next((o for o in owners if o.get("controller") and o.get("kind") == kind), None)
    return str(owner.get("name")) if owner is not None else None


def _revision(obj: Mapping[str, Any]) -> int | None:
    annotations = metadata_of(obj).get("annotations")
    value = annotations.get(REVISION_ANNOTATION) if isinstance(annotations, Mapping) else None
    try:
        return int(str(value)) if value is not None else None
    except ValueError:
        return None


def _where(obj: Mapping[str, Any], name: str | None = None) -> tuple[str, str]:
    metadata = metadata_of(obj)
    return str(metadata.get("namespace") or ""), str(name if name is not None else metadata.get("name") or "")


def current_pods(
    pods: Iterable[Mapping[str, Any]],
    replicasets: Iterable[Mapping[str, Any]],
    controllers: Iterable[Mapping[str, Any]],
) -> list[Mapping[str, Any]]:
    """The pods of the current revision of their Deployment or StatefulSet (`controllers`, as the
    server serves them), and the pods of no such controller.

    A Deployment's current ReplicaSet is the one whose `deployment.kubernetes.io/revision` is the
    Deployment's own (the highest of its ReplicaSets when the Deployment has none); a
    StatefulSet's current pods carry its `status.updateRevision` as `controller-revision-hash`.
    Nothing of a controller that has not observed its latest generation is current: its revision
    is still the one before. So while a fixed Deployment rolls out, the crash-looping or unpulled
    pods of the broken revision, which stay until their replacements are ready, do not fail the
    apply that fixes them."""
    replicasets = list(replicasets)
    deployments: dict[tuple[str, str], Mapping[str, Any]] = {}
    statefulsets: dict[tuple[str, str], Mapping[str, Any]] = {}
    for controller in controllers:
        kind = controller.get("kind")
        if kind == "Deployment":
            deployments[_where(controller)] = controller
        elif kind == "StatefulSet":
            statefulsets[_where(controller)] = controller
    newest: dict[tuple[str, str], int] = {}
    for replicaset in replicasets:
        owner = _controller(replicaset, "Deployment")
        revision = _revision(replicaset)
        if owner is not None and revision is not None:
            key = _where(replicaset, owner)
            newest[key] = max(newest.get(key, revision), revision)
    stale: set[tuple[str, str]] = set()
    for replicaset in replicasets:
        owner = _controller(replicaset, "Deployment")
        deployment = deployments.get(_where(replicaset, owner)) if owner is not None else None
        if deployment is None:
            continue  # not a Deployment of the plan: its lineage is unknown, its pods are kept
        wanted = _revision(deployment) or newest.get(_where(replicaset, owner))
        if not observed(deployment) or _revision(replicaset) != wanted:
            stale.add(_where(replicaset))
    kept: list[Mapping[str, Any]] = []
    for pod in pods:
        made_by = _controller(pod, "ReplicaSet")
        if made_by is not None and _where(pod, made_by) in stale:
            continue
        owner = _controller(pod, "StatefulSet")
        statefulset = statefulsets.get(_where(pod, owner)) if owner is not None else None
        if statefulset is not None:
            update = status_of(statefulset).get("updateRevision")
            labels = metadata_of(pod).get("labels")
            revision = labels.get(_STATEFULSET_REVISION_LABEL) if isinstance(labels, Mapping) else None
            if not observed(statefulset) or (update and revision != update):
                continue
        kept.append(pod)
    return kept
