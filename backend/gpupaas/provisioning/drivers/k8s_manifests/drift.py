"""The health of an instance from its pods, and the drift watch's memory of it: `DriftTracker` turns
a list of pods and the watch events after it into the changes to report (FAILED when an owner's
pods fail, READY when they are all ready again).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gpupaas.provisioning.drivers.base import Observed, Owner, Phase
from gpupaas.provisioning.drivers.k8s_manifests.objects import metadata_of
from gpupaas.provisioning.drivers.k8s_manifests.pods import counts, pod_problem
from gpupaas.provisioning.drivers.k8s_manifests.readiness import pod_readiness
from gpupaas.provisioning.plan import INSTANCE_LABEL, SERVICE_LABEL

__all__ = ["DriftTracker", "instance_health"]


# Problems a FAILED message names; the rest are counted ("; and 2 more").
_MAX_REPORTED = 3


def instance_health(pods: Iterable[Mapping[str, Any]]) -> Observed | None:
    """The health of an instance from its pods: FAILED with the problems (the first few, by pod
    name), READY when every pod is ready, PROGRESSING otherwise; None when no pod counts."""
    counted = sorted(
        (pod for pod in pods if counts(pod)),
        key=lambda p: (str(metadata_of(p).get("namespace") or ""), str(metadata_of(p).get("name") or "")),
    )
    if not counted:
        return None
    problems = [problem for pod in counted if (problem := pod_problem(pod)) is not None]
    if problems:
        more = len(problems) - _MAX_REPORTED
        return Observed(
            Phase.FAILED, "; ".join(problems[:_MAX_REPORTED]) + (f"; and {more} more" if more > 0 else "")
        )
    waiting = [r.message for pod in counted if not (r := pod_readiness(pod)).ready]
    if waiting:
        return Observed(Phase.PROGRESSING, waiting[0])
    return Observed(Phase.READY)


class DriftTracker:
    """The pods of every owner (a compute instance, a GPU service instance: `Owner`), as a watch on
    pods sees them, and what was last reported of each. `reset` (after a list) and `event` (a
    watch event) give the changes to report: FAILED when an owner turns failed, READY when a failed
    one is all ready again. The caller marks a change reported (`reported[owner] = phase`) once it
    was delivered, so that one that could not be is given again at the owner's next change."""

    def __init__(self) -> None:
        self.pods: dict[Owner, dict[tuple[str, str], Mapping[str, Any]]] = {}
        self.reported: dict[Owner, Phase] = {}

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
            health = instance_health(self.pods.get(instance, {}).values())
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
