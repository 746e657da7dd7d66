"""The DaemonSet controller (apps/v1): one pod on every node the DaemonSet's pods may run on.

A node qualifies when it matches the pod template's node selector and required node affinity and
every NoSchedule/NoExecute taint it has is tolerated, by the template's tolerations or by those the
controller adds to every daemon pod (not-ready, unreachable, disk-, memory- and pid-pressure,
unschedulable). Each pod (`<ds>-<suffix>`, labelled controller-revision-hash and
pod-template-generation) gets node affinity to its node's name (matchFields metadata.name) and is
bound to that node at once (the fake binds it where kube-scheduler would, without its resource
check). Pods on nodes that no longer qualify, or that are gone, are deleted; a failed pod is
replaced. A changed template rolls out one node at a time (RollingUpdate, maxUnavailable 1) once
every pod is ready; OnDelete waits for pods to be deleted. status: desired, current, misscheduled,
ready, available, unavailable and updated numbers, observedGeneration.
"""

from __future__ import annotations

from tests.fake_kube import selectors
from tests.fake_kube.controllers.base import (
    CONTROLLER_MANAGER,
    NODE,
    POD,
    ControllerBase,
    _is_ready,
    _owner_ref,
)
from tests.fake_kube.errors import ApiError
from tests.fake_kube.resources import ResourceType, resource_for
from tests.fake_kube.store import Store
from tests.fake_kube.util import Obj, deep, get_path, short_hash

DAEMONSET = resource_for("apps/v1", "DaemonSet")
DAEMONSET_CONTROLLER = "daemonset-controller"
# What the DaemonSet controller adds to every daemon pod (util.AddOrUpdateDaemonPodTolerations).
DAEMON_TOLERATIONS: tuple[Obj, ...] = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)


def _tolerates(toleration: Obj, taint: Obj) -> bool:
    if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
        return False
    if not toleration.get("key"):
        return toleration.get("operator") == "Exists"
    if toleration.get("key") != taint.get("key"):
        return False
    if toleration.get("operator") == "Exists":
        return True
    return str(toleration.get("value") or "") == str(taint.get("value") or "")


def _node_qualifies(pod_spec: Obj, node: Obj) -> bool:
    labels = get_path(node, "metadata", "labels") or {}
    if any(labels.get(k) != v for k, v in (pod_spec.get("nodeSelector") or {}).items()):
        return False
    terms = get_path(
        pod_spec,
        "affinity",
        "nodeAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
        "nodeSelectorTerms",
    )
    if terms:
        matched = False
        for term in terms:
            try:
                requirements = selectors.from_label_selector(
                    {"matchExpressions": term.get("matchExpressions") or []}
                )
            except selectors.SelectorError:
                continue
            if requirements is not None and selectors.matches(requirements, labels):
                matched = True
                break
        if not matched:
            return False
    tolerations = [*(pod_spec.get("tolerations") or []), *DAEMON_TOLERATIONS]
    return all(
        any(_tolerates(t, taint) for t in tolerations)
        for taint in get_path(node, "spec", "taints") or []
        if taint.get("effect") in ("NoSchedule", "NoExecute")
    )


def _node_of(pod: Obj) -> str:
    return str(get_path(pod, "spec", "nodeName") or "")


class DaemonSets(ControllerBase):
    """The DaemonSet controller (see the module's docstring)."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        store.listeners.append(self._daemonset_objects_changed)

    def _daemonset_objects_changed(self, rt: ResourceType, kind: str, obj: Obj, old: Obj | None) -> None:
        if rt is DAEMONSET and kind != "DELETED":
            self.enqueue("daemonset", str(obj["metadata"]["namespace"]), str(obj["metadata"]["name"]))
        elif rt is NODE:
            for daemonset in self.store.items(DAEMONSET):
                self.enqueue("daemonset", daemonset["metadata"]["namespace"], daemonset["metadata"]["name"])
        elif rt is POD:
            for ref in get_path(obj, "metadata", "ownerReferences") or []:
                if ref.get("controller") and ref.get("kind") == "DaemonSet":
                    self.enqueue(
                        "daemonset", str(obj["metadata"].get("namespace") or ""), str(ref.get("name"))
                    )

    def _reconcile_daemonset(self, namespace: str, name: str) -> None:
        daemonset = self.store.find(DAEMONSET, namespace, name)
        if daemonset is None or get_path(daemonset, "metadata", "deletionTimestamp"):
            return
        spec = daemonset.get("spec") or {}
        template = spec.get("template") or {}
        revision = short_hash(template)
        wanted = {
            node["metadata"]["name"]
            for node in self.store.items(NODE)
            if _node_qualifies(template.get("spec") or {}, node)
        }
        pods = [
            p
            for p in self._owned(POD, namespace, daemonset["metadata"]["uid"])
            if not get_path(p, "metadata", "deletionTimestamp")
        ]
        kept: dict[str, Obj] = {}
        for pod in sorted(pods, key=lambda p: str(p["metadata"]["name"])):
            node = _node_of(pod)
            if node not in wanted or node in kept or get_path(pod, "status", "phase") == "Failed":
                self.store.delete_object(POD, pod)
            else:
                kept[node] = pod
        for node in sorted(wanted - set(kept)):
            try:
                kept[node] = self._create_daemon_pod(daemonset, node, revision)
            except ApiError as error:
                self.event(
                    DAEMONSET,
                    daemonset,
                    "Warning",
                    "FailedCreate",
                    f"Error creating: {error.message}",
                    DAEMONSET_CONTROLLER,
                )
        rolling = get_path(spec, "updateStrategy", "type", default="RollingUpdate") == "RollingUpdate"
        outdated = [
            p
            for p in kept.values()
            if get_path(p, "metadata", "labels", "controller-revision-hash") != revision
        ]
        if rolling and outdated and all(_is_ready(p) for p in kept.values()):
            self.store.delete_object(POD, outdated[0])
        current = list(kept.values())
        ready = sum(1 for p in current if _is_ready(p))
        updated = sum(
            1 for p in current if get_path(p, "metadata", "labels", "controller-revision-hash") == revision
        )

        def status(new: Obj) -> None:
            result: Obj = {
                "currentNumberScheduled": len(current),
                "desiredNumberScheduled": len(wanted),
                "numberMisscheduled": 0,
                "numberReady": ready,
                "observedGeneration": new["metadata"].get("generation", 1),
            }
            for key, value in (
                ("numberAvailable", ready),
                ("numberUnavailable", len(wanted) - ready),
                ("updatedNumberScheduled", updated),
            ):
                if value:
                    result[key] = value
            new["status"] = result

        self.store.internal_update(
            DAEMONSET, daemonset, status, manager=CONTROLLER_MANAGER, subresource="status"
        )

    def _create_daemon_pod(self, daemonset: Obj, node: str, revision: str) -> Obj:
        metadata = daemonset["metadata"]
        template = deep(get_path(daemonset, "spec", "template") or {})
        pod_spec = template.get("spec") or {}
        pod_spec["affinity"] = {
            **(pod_spec.get("affinity") or {}),
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}
                    ]
                }
            },
        }
        tolerations = list(pod_spec.get("tolerations") or [])
        tolerations += [t for t in DAEMON_TOLERATIONS if t not in tolerations]
        pod_spec["tolerations"] = tolerations
        pod_spec["nodeName"] = node
        body: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "generateName": f"{metadata['name']}-",
                "namespace": metadata["namespace"],
                "labels": {
                    **(get_path(template, "metadata", "labels") or {}),
                    "controller-revision-hash": revision,
                    "pod-template-generation": str(metadata.get("generation", 1)),
                },
                "ownerReferences": [_owner_ref(DAEMONSET, daemonset)],
            },
            "spec": pod_spec,
        }
        if get_path(template, "metadata", "annotations"):
            body["metadata"]["annotations"] = dict(template["metadata"]["annotations"])
        created = self.store.create(POD, metadata["namespace"], body, manager=CONTROLLER_MANAGER)
        self.event(
            DAEMONSET,
            daemonset,
            "Normal",
            "SuccessfulCreate",
            f"Created pod: {created['metadata']['name']}",
            DAEMONSET_CONTROLLER,
        )
        return created
