"""All the controllers of the fake cluster, and the routing of the store's changes to them."""

from __future__ import annotations

import time

from tests.fake_kube.controllers.base import (
    DEPLOYMENT,
    EVENT,
    NAMESPACE,
    NODE,
    POD,
    PVC,
    QUOTA,
    REPLICASET,
    SERVICE,
    STATEFULSET,
)
from tests.fake_kube.controllers.daemonsets import DaemonSets
from tests.fake_kube.controllers.deployments import Deployments
from tests.fake_kube.controllers.garbage_collector import GarbageCollector
from tests.fake_kube.controllers.jobs import Jobs
from tests.fake_kube.controllers.kubelet import Kubelet
from tests.fake_kube.controllers.namespaces import Namespaces
from tests.fake_kube.controllers.pvcs_services_quotas import PvcServiceQuotaControllers
from tests.fake_kube.controllers.rbac_aggregation import ClusterRoleAggregation
from tests.fake_kube.controllers.scheduler import Scheduler
from tests.fake_kube.controllers.statefulsets import StatefulSets
from tests.fake_kube.controllers.tokens import ServiceAccountTokens
from tests.fake_kube.controllers.volumes import Volumes
from tests.fake_kube.resources import ResourceType
from tests.fake_kube.store import Store
from tests.fake_kube.util import Obj, get_path


class Controllers(
    Scheduler,
    Kubelet,
    Deployments,
    StatefulSets,
    PvcServiceQuotaControllers,
    Namespaces,
    GarbageCollector,
    ServiceAccountTokens,
    ClusterRoleAggregation,
    Jobs,
    DaemonSets,
    Volumes,
):
    """Every controller of the fake cluster; the store's changes reach their queues through here."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        store.listeners.append(self._on_change)

    def resume(self) -> None:
        self.enabled = True
        self._starting.clear()
        self._terminating.clear()
        self._deadlines.clear()
        for item in (DEPLOYMENT, REPLICASET, STATEFULSET, POD, PVC, NAMESPACE):
            for obj in self.store.items(item):
                self._on_change(item, "MODIFIED", obj, obj)
        if self.pvc_delay is not None:
            self.bind_pending_pvcs()
        if self.loop is not None and not self._scheduled:
            self._scheduled = True
            self.loop.call_soon(self._drain)

    def _on_change(self, rt: ResourceType, kind: str, obj: Obj, old: Obj | None) -> None:
        metadata = obj.get("metadata") or {}
        namespace, name = metadata.get("namespace") or "", metadata.get("name") or ""
        deleting = bool(metadata.get("deletionTimestamp"))
        if kind == "DELETED":
            self.enqueue("dependents", "", str(metadata.get("uid")))
            for ref in metadata.get("ownerReferences") or []:
                self.enqueue("owner", "", str(ref.get("uid")))
        elif deleting and any(
            f in (metadata.get("finalizers") or []) for f in ("foregroundDeletion", "orphan")
        ):
            self.enqueue("gc", rt.id, f"{namespace}/{name}")
        if rt.namespaced and namespace:
            if namespace in self._ns_terminating:
                self.enqueue("namespace", "", namespace)
            if rt is not EVENT and self.store.items(QUOTA, namespace):
                self.enqueue("quota", namespace)
        if rt is DEPLOYMENT and kind != "DELETED":
            self.enqueue("deployment", namespace, name)
        elif rt is REPLICASET:
            if kind != "DELETED":
                self.enqueue("replicaset", namespace, name)
            self._enqueue_owner(obj, "deployment")
        elif rt is STATEFULSET and kind != "DELETED":
            self.enqueue("statefulset", namespace, name)
        elif rt is POD:
            self._pod_changed(kind, obj, old)
        elif rt is PVC and kind == "ADDED":
            self.enqueue("pvc", namespace, name)
        elif rt is SERVICE and kind != "DELETED" and get_path(obj, "spec", "type") == "LoadBalancer":
            self.enqueue("loadbalancer", namespace, name)
        elif rt is NAMESPACE:
            if kind == "ADDED":
                self.enqueue("namespace_defaults", "", name)
            elif deleting and kind == "MODIFIED":
                self._ns_terminating.setdefault(name, time.monotonic())
                self.enqueue("namespace", "", name)
            elif kind == "DELETED":
                self._ns_terminating.pop(name, None)
        elif rt is NODE:
            self.enqueue("schedule_all")
        elif rt is QUOTA and kind != "DELETED":
            for item in (REPLICASET, STATEFULSET):
                for owner in self.store.items(item, namespace):
                    self.enqueue(item.singular, namespace, owner["metadata"]["name"])

    def _enqueue_owner(self, obj: Obj, kind: str) -> None:
        for ref in get_path(obj, "metadata", "ownerReferences") or []:
            if ref.get("controller"):
                self.enqueue(kind, get_path(obj, "metadata", "namespace") or "", ref.get("name", ""))

    def _pod_changed(self, kind: str, pod: Obj, old: Obj | None) -> None:
        metadata = pod["metadata"]
        namespace, name, uid = metadata.get("namespace", ""), metadata["name"], metadata["uid"]
        for ref in metadata.get("ownerReferences") or []:
            if ref.get("controller") and ref.get("kind") == "ReplicaSet":
                self.enqueue("replicaset", namespace, ref.get("name", ""))
            elif ref.get("controller") and ref.get("kind") == "StatefulSet":
                self.enqueue("statefulset", namespace, ref.get("name", ""))
        if kind == "DELETED":
            self._failed.pop(uid, None)
            self._pinned.pop(uid, None)
            self._starting.discard(uid)
            self._terminating.discard(uid)
            self.enqueue("schedule_all")
            for item in (REPLICASET, STATEFULSET):
                for owner in self.store.items(item, namespace):
                    self.enqueue(item.singular, namespace, owner["metadata"]["name"])
            # The Deployment controller watches pods as well: a Recreate rollout scales up its new
            # ReplicaSet once the old pods are gone, which changes no ReplicaSet's status.
            for ref in metadata.get("ownerReferences") or []:
                if ref.get("controller") and ref.get("kind") == "ReplicaSet":
                    replicaset = self.store.find(REPLICASET, namespace, ref.get("name", ""))
                    if replicaset is not None:
                        self._enqueue_owner(replicaset, "deployment")
            return
        spec = pod.get("spec") or {}
        if metadata.get("deletionTimestamp"):
            if metadata.get("deletionGracePeriodSeconds") and uid not in self._terminating:
                self._terminating.add(uid)
                self.later(self.termination_delay, lambda: self._terminate(namespace, name, uid))
            return
        if not spec.get("nodeName"):
            self.enqueue("schedule", namespace, name)
        elif (
            get_path(pod, "status", "phase") == "Pending"
            and uid not in self._starting
            and uid not in self._failed
        ):
            self._starting.add(uid)
            self.later(self.pod_delay, lambda: self._start(namespace, name, uid))
