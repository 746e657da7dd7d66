"""The health of an instance from its pods, and the drift watch's memory of it: `DriftTracker` turns
a list of pods and the watch events after it into the changes to report (FAILED when an owner's
pods fail, READY when they are all ready again).

What usually passes by itself is forgiven for its grace (pods.Graces), as during a run: a pod
left Pending by a node drain waits for a node for the scale-up grace before its instance is
FAILED, a restarted crash counts against the restart grace. The tracker times those troubles
on its clock; nothing changes on the server while a pod waits for a node, so the watch calls
`tick` now and then while `waiting` to see a grace run out.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from gpupaas.provisioning.drivers.base import Observed, Owner, Phase
from gpupaas.provisioning.drivers.k8s_manifests.objects import metadata_of
from gpupaas.provisioning.drivers.k8s_manifests.pods import FirstSeen, Graces, counts
from gpupaas.provisioning.drivers.k8s_manifests.readiness import pod_readiness
from gpupaas.provisioning.plan import INSTANCE_LABEL, SERVICE_LABEL

__all__ = ["DriftTracker", "instance_health"]


# Problems a FAILED message names; the rest are counted ("; and 2 more").
_MAX_REPORTED = 3


def instance_health(
    pods: Iterable[Mapping[str, Any]], graces: Graces | None = None, seen: FirstSeen | None = None
) -> Observed | None:
    """The health of an instance from its pods: FAILED with the problems (the first few, by pod
    name), READY when every pod is ready, PROGRESSING otherwise (with what the first waits for);
    None when no pod counts. `graces` and `seen` as for readiness.readiness."""
    counted = sorted(
        (pod for pod in pods if counts(pod)),
        key=lambda p: (str(metadata_of(p).get("namespace") or ""), str(metadata_of(p).get("name") or "")),
    )
    if not counted:
        return None
    states = [pod_readiness(pod, graces, seen) for pod in counted]
    problems = [str(state.message) for state in states if state.failed]
    if problems:
        more = len(problems) - _MAX_REPORTED
        return Observed(
            Phase.FAILED, "; ".join(problems[:_MAX_REPORTED]) + (f"; and {more} more" if more > 0 else "")
        )
    waiting = [state.message for state in states if not state.ready]
    if waiting:
        return Observed(Phase.PROGRESSING, waiting[0])
    return Observed(Phase.READY)


class DriftTracker:
    """The pods of every owner (a compute instance, a GPU service instance: `Owner`), as a watch on
    pods sees them, and what was last reported of each. `reset` (after a list) and `event` (a
    watch event) give the changes to report: FAILED when an owner turns failed, READY when a failed
    one is all ready again. The caller marks a change reported (`reported[owner] = phase`) once it
    was delivered, so that one that could not be is given again at the owner's next change."""

    def __init__(self, graces: Graces | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.pods: dict[Owner, dict[tuple[str, str], Mapping[str, Any]]] = {}
        self.reported: dict[Owner, Phase] = {}
        self.graces = graces or Graces()
        self._clock = clock
        self._seen: dict[Owner, FirstSeen] = {}  # the troubles being timed, per owner

    @property
    def waiting(self) -> bool:
        """Whether a trouble is within its grace: `tick` later may report it."""
        return bool(self._seen)

    def tick(self) -> list[tuple[Owner, Observed]]:
        """The changes of owners whose troubles are being timed, now that time has passed."""
        return self._changes(set(self._seen))

    @staticmethod
    def _identity(pod: Mapping[str, Any]) -> tuple[Owner | None, tuple[str, str]]:
        metadata = pod.get("metadata") or {}
        labels = metadata.get("labels") or {}
        key = (str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))
        # A compute instance's pod, or a GPU service instance's (which carries its compute
        # instance in another label, not INSTANCE_LABEL).
        for label in (INSTANCE_LABEL, SERVICE_LABEL):
            if labels.get(label):
                return Owner(label, str(labels[label])), key
        return None, key

    def reset(self, pods: Iterable[Mapping[str, Any]]) -> list[tuple[Owner, Observed]]:
        """After a (re-)list: the list is the truth; compares it with what was reported."""
        before = set(self.pods) | set(self.reported)
        self.pods = {}
        for pod in pods:
            instance, key = self._identity(pod)
            if instance is not None:
                self.pods.setdefault(instance, {})[key] = pod
        return self._changes(before | set(self.pods))

    def event(self, kind: str, pod: Mapping[str, Any]) -> list[tuple[Owner, Observed]]:
        instance, key = self._identity(pod)
        if instance is None:
            return []
        if kind == "DELETED":
            self.pods.get(instance, {}).pop(key, None)
        else:
            self.pods.setdefault(instance, {})[key] = pod
        return self._changes({instance})

    def _changes(self, instances: Iterable[Owner]) -> list[tuple[Owner, Observed]]:
        """What to report: FAILED when an instance turns failed, READY when a failed one is ready
        again. PROGRESSING is not news."""
        changes: list[tuple[Owner, Observed]] = []
        for instance in sorted(instances):
            seen = self._seen.setdefault(instance, FirstSeen(self._clock))
            health = instance_health(self.pods.get(instance, {}).values(), self.graces, seen)
            seen.sweep()
            if not seen.pending:
                del self._seen[instance]
            if health is None:
                self.pods.pop(instance, None)
                # A failure is remembered: a failed pod that is deleted before its replacement
                # appears must still be followed by READY when the replacement is ready.
                if self.reported.get(instance) != Phase.FAILED:
                    self.reported.pop(instance, None)
                continue
            last = self.reported.get(instance)
            if health.phase == Phase.FAILED and last != Phase.FAILED:
                changes.append((instance, health))  # marked reported once on_change took it
            elif health.phase == Phase.READY:
                if last == Phase.FAILED:
                    changes.append((instance, health))
                else:  # ready from the start is not news, but a later failure is
                    self.reported[instance] = Phase.READY
        return changes
