"""The cluster behind the API: scheduler, kubelet and controllers, controllable from tests.

- Scheduler: binds a pod to the first node (by name) where it fits: unschedulable nodes, node
  selectors and required node affinity, NoSchedule/NoExecute taints, and resources (allocatable
  minus the requests of the pods already on the node, including `pods`). When nothing fits, the
  pod stays Pending with PodScheduled=False, reason Unschedulable and the scheduler's message
  ("0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: ..."), and a
  FailedScheduling Event. Pending pods are retried when nodes or pods change.
- Kubelet: a bound pod is ContainerCreating, then Running and Ready after `pod_delay` seconds;
  a deleted pod on a node terminates after `termination_delay` seconds. `fail_pod` makes a
  container fail the way a kubelet reports it (CrashLoopBackOff with lastState terminated for
  restartPolicy Always, phase Failed for Never; ImagePullBackOff and similar as waiting states).
- Deployment -> ReplicaSet -> Pods (pod-template-hash, owner references, rollout of a changed
  template, Available/Progressing/ReplicaFailure conditions, progressDeadlineSeconds);
  StatefulSet -> Pods <name>-<ordinal> (OrderedReady or Parallel) and PVCs from its
  volumeClaimTemplates; PVCs become Bound; Services of type LoadBalancer get an ingress IP.
- Namespaces: a new one gets the "default" ServiceAccount and the kube-root-ca.crt ConfigMap; a
  deleted one is Terminating for `namespace_deletion_delay` seconds, then its content is deleted,
  and it disappears once nothing is left in it.
- Garbage collection by ownerReferences: background (dependents deleted after the owner),
  foreground (the owner keeps deletionTimestamp and the foregroundDeletion finalizer until its
  dependents are gone) and orphan (owner references removed).
- ResourceQuota status (hard and used).

Work is queued and done on the event loop soon after the change that caused it, so API answers
show the state before the controllers react, as with a real cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import time
from collections.abc import Callable
from decimal import Decimal

from tests.fake_kube import admission, selectors
from tests.fake_kube.errors import ApiError
from tests.fake_kube.resources import BY_ID, ResourceType, resource_for
from tests.fake_kube.store import Store
from tests.fake_kube.util import Obj, deep, get_path, now, parse_quantity, random_hex, short_hash

CONTROLLER_MANAGER = "kube-controller-manager"
SCHEDULER = "kube-scheduler"
KUBELET = "kubelet"

POD = resource_for("v1", "Pod")
NODE = resource_for("v1", "Node")
NAMESPACE = resource_for("v1", "Namespace")
PVC = resource_for("v1", "PersistentVolumeClaim")
EVENT = resource_for("v1", "Event")
QUOTA = resource_for("v1", "ResourceQuota")
SERVICE = resource_for("v1", "Service")
CONFIGMAP = resource_for("v1", "ConfigMap")
SERVICE_ACCOUNT = resource_for("v1", "ServiceAccount")
DEPLOYMENT = resource_for("apps/v1", "Deployment")
REPLICASET = resource_for("apps/v1", "ReplicaSet")
STATEFULSET = resource_for("apps/v1", "StatefulSet")

WAITING_REASONS = (
    "ContainerCreating",
    "CrashLoopBackOff",
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
)
FAKE_CA = "-----BEGIN CERTIFICATE-----\nZmFrZS1rdWJlLWNh\n-----END CERTIFICATE-----\n"


def node(
    name: str,
    *,
    cpu: str = "32",
    memory: str = "256Gi",
    gpus: int = 0,
    gpu_resource: str = "nvidia.com/gpu",
    pods: int = 110,
    ephemeral_storage: str = "500Gi",
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
    ready: bool = True,
    extra: dict[str, str] | None = None,
) -> Obj:
    """A Node object for `set_nodes`: capacity = allocatable = the given resources."""
    resources = {"cpu": cpu, "memory": memory, "pods": str(pods), "ephemeral-storage": ephemeral_storage}
    if gpus:
        resources[gpu_resource] = str(gpus)
    resources.update(extra or {})
    spec: Obj = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                **(labels or {}),
            },
        },
        "spec": spec,
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "KubeletReady" if ready else "KubeletNotReady",
                    "message": "kubelet is posting ready status" if ready else "container runtime is down",
                    "lastHeartbeatTime": now(),
                    "lastTransitionTime": now(),
                }
            ],
            "addresses": [{"type": "Hostname", "address": name}],
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": "",
                "containerRuntimeVersion": "containerd://2.1.0",
                "kernelVersion": "6.8.0",
                "kubeProxyVersion": "",
                "kubeletVersion": "v1.37.0",
                "machineID": "",
                "operatingSystem": "linux",
                "osImage": "Fake Linux",
                "systemUUID": "",
            },
        },
    }


DEFAULT_NODES = (node("fake-node-1", cpu="64", memory="512Gi", gpus=8),)


def _condition(kind: str, status: str, reason: str | None = None, message: str | None = None) -> Obj:
    condition: Obj = {"type": kind, "status": status, "lastTransitionTime": now()}
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    return condition


def _set_condition(conditions: list[Obj], new: Obj, *, update_time: bool = False) -> list[Obj]:
    """Sets a condition, keeping its transition time when the status did not change."""
    result = []
    found = False
    for old in conditions:
        if old.get("type") != new["type"]:
            result.append(old)
            continue
        found = True
        merged = dict(new)
        if old.get("status") == new["status"]:
            merged["lastTransitionTime"] = old.get("lastTransitionTime", new["lastTransitionTime"])
            if (
                update_time
                and old.get("reason") == new.get("reason")
                and old.get("message") == new.get("message")
            ):
                merged["lastUpdateTime"] = old.get("lastUpdateTime", new.get("lastUpdateTime"))
        result.append(merged)
    if not found:
        result.append(new)
    return result


def _owner_ref(owner_rt: ResourceType, owner: Obj) -> Obj:
    return {
        "apiVersion": owner_rt.api_version,
        "kind": owner_rt.kind,
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _controller_uid(obj: Obj) -> str | None:
    for ref in get_path(obj, "metadata", "ownerReferences") or []:
        if ref.get("controller"):
            return str(ref.get("uid"))
    return None


def _is_ready(pod: Obj) -> bool:
    if get_path(pod, "status", "phase") != "Running":
        return False
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in get_path(pod, "status", "conditions") or []
    )


def _max_unavailable(deployment: Obj, desired: int) -> int:
    strategy = get_path(deployment, "spec", "strategy") or {}
    if strategy.get("type") == "Recreate":
        return 0
    value = get_path(strategy, "rollingUpdate", "maxUnavailable", default="25%")
    if isinstance(value, str) and value.endswith("%"):
        return int(desired * int(value[:-1]) // 100)
    return int(value)


class Controllers:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.loop: asyncio.AbstractEventLoop | None = None
        self.enabled = True
        self.pod_delay = 0.0
        self.termination_delay = 0.0
        self.namespace_deletion_delay = 0.2
        self.pvc_delay: float | None = 0.0
        self.pod_logs: dict[tuple[str, str], str] = {}
        self._queue: dict[tuple[str, str, str], None] = {}
        self._scheduled = False
        self._timers: set[asyncio.TimerHandle] = set()
        self._failed: dict[str, Obj] = {}  # pod uid -> the failure status kept until recover_pod
        self._pinned: dict[str, str | None] = {}  # pod uid -> unschedulable message
        self._starting: set[str] = set()
        self._terminating: set[str] = set()
        self._ns_terminating: dict[str, float] = {}
        self._progress: dict[str, float] = {}  # deployment uid -> when its rollout started
        self._deadlines: set[str] = set()  # deployments with a progress-deadline timer
        self._events: dict[tuple[str, str, str], tuple[str, str]] = {}
        self._ip = 0
        self.errors: list[str] = []  # ApiErrors the controllers met (the last 100)
        store.listeners.append(self._on_change)

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    def close(self) -> None:
        for timer in self._timers:
            timer.cancel()
        self._timers.clear()

    # Queue -----------------------------------------------------------------------------------

    def enqueue(self, kind: str, namespace: str = "", name: str = "") -> None:
        self._queue[(kind, namespace, name)] = None
        if not self._scheduled and self.loop is not None:
            self._scheduled = True
            self.loop.call_soon(self._drain)

    def later(self, delay: float, callback: Callable[[], None]) -> None:
        if self.loop is None:
            return

        def run() -> None:
            self._timers.discard(handle)
            if self.enabled:
                callback()

        handle = self.loop.call_later(max(delay, 0.0), run)
        self._timers.add(handle)

    def _drain(self) -> None:
        self._scheduled = False
        if not self.enabled:
            return
        for _ in range(500):
            if not self._queue:
                return
            key = next(iter(self._queue))
            del self._queue[key]
            handler = getattr(self, f"_reconcile_{key[0]}")
            try:
                handler(key[1], key[2])
            except ApiError as error:
                # The object changed under the controller; a later event retries. Kept for debugging.
                self.errors.append(f"{key}: {error.code} {error.message}")
                del self.errors[:-100]
        if self._queue and self.loop is not None:  # more work: let the requests in first
            self._scheduled = True
            self.loop.call_soon(self._drain)

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
                    owner = self.store.find(REPLICASET, namespace, ref.get("name", ""))
                    if owner is not None:
                        self._enqueue_owner(owner, "deployment")
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

    # Events ----------------------------------------------------------------------------------

    def event(self, rt: ResourceType, obj: Obj, kind: str, reason: str, message: str, component: str) -> None:
        metadata = obj["metadata"]
        namespace = metadata.get("namespace") or "default"
        key = (str(metadata.get("uid")), reason, message)
        existing = self._events.get(key)
        if existing is not None:
            found = self.store.find(EVENT, existing[0], existing[1])
            if found is not None:

                def bump(new: Obj) -> None:
                    new["count"] = int(new.get("count", 1)) + 1
                    new["lastTimestamp"] = now()

                self.store.internal_update(EVENT, found, bump, manager=component)
                return
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{metadata['name']}.{random_hex(16)}", "namespace": namespace},
            "involvedObject": {
                "apiVersion": rt.api_version,
                "kind": rt.kind,
                "name": metadata["name"],
                "namespace": metadata.get("namespace"),
                "uid": metadata.get("uid"),
                "resourceVersion": metadata.get("resourceVersion"),
            },
            "reason": reason,
            "message": message,
            "type": kind,
            "source": {"component": component},
            "reportingComponent": component,
            "reportingInstance": component,
            "firstTimestamp": now(),
            "lastTimestamp": now(),
            "count": 1,
        }
        try:
            created = self.store.create(EVENT, namespace, body, manager=component)
        except ApiError:
            return  # e.g. the namespace is terminating; real components drop the event too
        self._events[key] = (namespace, created["metadata"]["name"])

    # Scheduler -------------------------------------------------------------------------------

    def _reconcile_schedule_all(self, _namespace: str, _name: str) -> None:
        for pod in self.store.items(POD):
            if not get_path(pod, "spec", "nodeName") and not get_path(pod, "metadata", "deletionTimestamp"):
                self.enqueue("schedule", pod["metadata"]["namespace"], pod["metadata"]["name"])

    def _node_used(self, node_name: str) -> dict[str, Decimal]:
        used: dict[str, Decimal] = {"pods": Decimal(0)}
        for pod in self.store.items(POD):
            if get_path(pod, "spec", "nodeName") != node_name or admission.is_terminal(pod):
                continue
            used["pods"] += 1
            for resource, value in admission.pod_resources(pod.get("spec") or {}, "requests").items():
                used[resource] = used.get(resource, Decimal(0)) + value
        return used

    def _fit(self, pod: Obj, node_obj: Obj, requests: dict[str, Decimal]) -> tuple[list[str], bool]:
        """Why the pod does not fit the node (empty when it fits), and whether the reasons are
        only resources (preemption could help)."""
        spec = pod.get("spec") or {}
        if get_path(node_obj, "spec", "unschedulable"):
            tolerated = any(
                t.get("key") == "node.kubernetes.io/unschedulable" for t in spec.get("tolerations") or []
            )
            if not tolerated:
                return ["node(s) were unschedulable"], False
        labels = get_path(node_obj, "metadata", "labels") or {}
        if not self._selector_matches(spec, labels):
            return ["node(s) didn't match Pod's node affinity/selector"], False
        taints = list(get_path(node_obj, "spec", "taints") or [])
        ready = next(
            (c for c in get_path(node_obj, "status", "conditions") or [] if c.get("type") == "Ready"),
            {"status": "True"},
        )
        if ready.get("status") != "True":
            taints.append({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"})
        for taint in taints:
            if taint.get("effect") not in ("NoSchedule", "NoExecute"):
                continue
            if not any(self._tolerates(t, taint) for t in spec.get("tolerations") or []):
                value = taint.get("value", "")
                return [f"node(s) had untolerated taint {{{taint.get('key')}: {value}}}"], False
        allocatable = get_path(node_obj, "status", "allocatable") or {}
        used = self._node_used(node_obj["metadata"]["name"])
        reasons = []
        for resource, amount in sorted({**requests, "pods": Decimal(1)}.items()):
            if amount <= 0:
                continue
            try:
                total = parse_quantity(allocatable.get(resource, "0"))
            except ValueError:
                total = Decimal(0)
            if used.get(resource, Decimal(0)) + amount > total:
                reasons.append("Too many pods" if resource == "pods" else f"Insufficient {resource}")
        return reasons, True

    @staticmethod
    def _tolerates(toleration: Obj, taint: Obj) -> bool:
        if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
            return False
        if toleration.get("operator") == "Exists":
            return not toleration.get("key") or toleration.get("key") == taint.get("key")
        return toleration.get("key") == taint.get("key") and toleration.get("value", "") == taint.get(
            "value", ""
        )

    @staticmethod
    def _selector_matches(spec: Obj, labels: dict[str, str]) -> bool:
        for key, value in (spec.get("nodeSelector") or {}).items():
            if labels.get(key) != value:
                return False
        terms = get_path(
            spec,
            "affinity",
            "nodeAffinity",
            "requiredDuringSchedulingIgnoredDuringExecution",
            "nodeSelectorTerms",
        )
        if not terms:
            return True
        for term in terms:
            try:
                requirements = selectors.from_label_selector(
                    {"matchExpressions": term.get("matchExpressions") or []}
                )
            except selectors.SelectorError:
                continue
            if requirements is not None and selectors.matches(requirements, labels):
                return True
        return False

    def _reconcile_schedule(self, namespace: str, name: str) -> None:
        pod = self.store.find(POD, namespace, name)
        if pod is None or get_path(pod, "spec", "nodeName") or get_path(pod, "metadata", "deletionTimestamp"):
            return
        if admission.is_terminal(pod):
            return
        uid = pod["metadata"]["uid"]
        nodes = self.store.items(NODE)
        requests = admission.pod_resources(pod.get("spec") or {}, "requests")
        chosen = None
        counts: dict[str, int] = {}
        preemption: dict[str, int] = {}
        if uid not in self._pinned:
            for node_obj in nodes:
                reasons, resources_only = self._fit(pod, node_obj, requests)
                if not reasons:
                    chosen = node_obj
                    break
                for reason in reasons:
                    counts[reason] = counts.get(reason, 0) + 1
                key = (
                    "No preemption victims found for incoming pod"
                    if resources_only
                    else ("Preemption is not helpful for scheduling")
                )
                preemption[key] = preemption.get(key, 0) + 1
        if chosen is not None:
            self._bind(pod, chosen)
            return
        message = self._pinned.get(uid)
        if message is None:
            if not nodes:
                message = "no nodes available to schedule pods"
            else:
                total = len(nodes)
                reasons_text = ", ".join(sorted(f"{count} {reason}" for reason, count in counts.items()))
                preempt_text = ", ".join(sorted(f"{count} {reason}" for reason, count in preemption.items()))
                message = (
                    f"0/{total} nodes are available: {reasons_text}. preemption: 0/{total} nodes are "
                    f"available: {preempt_text}."
                )
        current = next(
            (c for c in get_path(pod, "status", "conditions") or [] if c.get("type") == "PodScheduled"), None
        )
        if current is not None and current.get("message") == message and current.get("status") == "False":
            return

        def unschedulable(new: Obj) -> None:
            status = new.setdefault("status", {})
            status["phase"] = "Pending"
            condition = _condition("PodScheduled", "False", "Unschedulable", message)
            status["conditions"] = _set_condition(status.get("conditions") or [], condition)

        updated = self.store.internal_update(POD, pod, unschedulable, manager=SCHEDULER, subresource="status")
        if updated is not None:
            self.event(POD, updated, "Warning", "FailedScheduling", message or "", "default-scheduler")

    def _bind(self, pod: Obj, node_obj: Obj) -> None:
        node_name = node_obj["metadata"]["name"]
        host_ip = f"192.168.0.{(sum(node_name.encode()) % 250) + 2}"

        def bind(new: Obj) -> None:
            new["spec"]["nodeName"] = node_name

        bound = self.store.internal_update(POD, pod, bind, manager=SCHEDULER, subresource="binding")
        if bound is None:
            return
        namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        self.event(
            POD,
            bound,
            "Normal",
            "Scheduled",
            f"Successfully assigned {namespace}/{name} to {node_name}",
            "default-scheduler",
        )

        def creating(new: Obj) -> None:
            status = new.setdefault("status", {})
            spec = new.get("spec") or {}
            status["phase"] = "Pending"
            status["hostIP"] = host_ip
            status["hostIPs"] = [{"ip": host_ip}]
            status["startTime"] = now()
            names = [c["name"] for c in spec.get("containers") or []]
            unready = f"containers with unready status: [{' '.join(names)}]"
            conditions = status.get("conditions") or []
            for condition in (
                _condition("PodReadyToStartContainers", "False"),
                _condition("Initialized", "True"),
                _condition("Ready", "False", "ContainersNotReady", unready),
                _condition("ContainersReady", "False", "ContainersNotReady", unready),
                _condition("PodScheduled", "True"),
            ):
                conditions = _set_condition(conditions, condition)
            status["conditions"] = conditions
            status["containerStatuses"] = [
                self._container_status(c, {"waiting": {"reason": "ContainerCreating"}}, ready=False)
                for c in spec.get("containers") or []
            ]

        self.store.internal_update(POD, bound, creating, manager=KUBELET, subresource="status")

    # Kubelet ---------------------------------------------------------------------------------

    @staticmethod
    def _container_status(
        container: Obj, state: Obj, *, ready: bool, restarts: int = 0, last: Obj | None = None
    ) -> Obj:
        image = str(container.get("image", ""))
        digest = hashlib.sha256(image.encode()).hexdigest()
        status: Obj = {
            "name": container["name"],
            "image": image,
            "imageID": f"{image.split(':')[0]}@sha256:{digest}" if "running" in state or last else "",
            "ready": ready,
            "started": "running" in state,
            "restartCount": restarts,
            "state": state,
            "lastState": last or {},
        }
        if "running" in state or last:
            status["containerID"] = (
                f"containerd://{hashlib.sha256((image + container['name']).encode()).hexdigest()}"
            )
        return status

    def _start(self, namespace: str, name: str, uid: str) -> None:
        self._starting.discard(uid)
        pod = self.store.find(POD, namespace, name)
        if pod is None or pod["metadata"]["uid"] != uid or uid in self._failed:
            return
        if get_path(pod, "metadata", "deletionTimestamp") or get_path(pod, "status", "phase") != "Pending":
            return
        self._run(pod)

    def _run(self, pod: Obj, restarts: dict[str, int] | None = None) -> Obj | None:
        self._ip += 1
        pod_ip = f"10.244.{self._ip // 250}.{self._ip % 250 + 2}"

        def running(new: Obj) -> None:
            status = new.setdefault("status", {})
            spec = new.get("spec") or {}
            started = now()
            status["phase"] = "Running"
            status.setdefault("podIP", pod_ip)
            status.setdefault("podIPs", [{"ip": status["podIP"]}])
            status.pop("reason", None)
            status.pop("message", None)
            conditions = status.get("conditions") or []
            for kind in (
                "PodReadyToStartContainers",
                "Initialized",
                "Ready",
                "ContainersReady",
                "PodScheduled",
            ):
                conditions = _set_condition(conditions, _condition(kind, "True"))
            status["conditions"] = conditions
            previous = {c["name"]: c for c in status.get("containerStatuses") or []}
            status["containerStatuses"] = [
                self._container_status(
                    c,
                    {"running": {"startedAt": started}},
                    ready=True,
                    restarts=int(previous.get(c["name"], {}).get("restartCount", 0)),
                    last=previous.get(c["name"], {}).get("lastState") or None,
                )
                for c in spec.get("containers") or []
            ]
            if spec.get("initContainers"):
                status["initContainerStatuses"] = [
                    self._container_status(
                        c,
                        {
                            "terminated": {
                                "exitCode": 0,
                                "reason": "Completed",
                                "startedAt": started,
                                "finishedAt": started,
                            }
                        },
                        ready=True,
                    )
                    for c in spec["initContainers"]
                ]
            if get_path(new, "metadata", "generation"):
                status["observedGeneration"] = new["metadata"]["generation"]

        updated = self.store.internal_update(POD, pod, running, manager=KUBELET, subresource="status")
        if updated is not None:
            for container in get_path(updated, "spec", "containers") or []:
                self.event(
                    POD, updated, "Normal", "Started", f"Started container {container['name']}", "kubelet"
                )
        return updated

    def _terminate(self, namespace: str, name: str, uid: str) -> None:
        pod = self.store.find(POD, namespace, name)
        if pod is None or pod["metadata"]["uid"] != uid:
            return

        def terminated(new: Obj) -> None:
            new["metadata"]["deletionGracePeriodSeconds"] = 0

        self.store.internal_update(POD, pod, terminated, manager=KUBELET)

    def fail_pod(
        self,
        namespace: str,
        name: str,
        reason: str = "Error",
        message: str = "",
        *,
        exit_code: int | None = None,
        phase: str | None = None,
        container: str | None = None,
    ) -> Obj:
        pod = self.store.find(POD, namespace, name)
        if pod is None:
            raise KeyError(f"no pod {namespace}/{name}")
        uid = pod["metadata"]["uid"]
        code = exit_code if exit_code is not None else (137 if reason == "OOMKilled" else 1)
        spec = pod.get("spec") or {}
        names = [c["name"] for c in spec.get("containers") or []]
        failing = [container] if container else names
        restart = spec.get("restartPolicy", "Always")
        moment = now()

        def fail(new: Obj) -> None:
            status = new.setdefault("status", {})
            was_running = status.get("phase") == "Running"
            previous = {c["name"]: c for c in status.get("containerStatuses") or []}
            terminated = {"exitCode": code, "reason": reason, "startedAt": moment, "finishedAt": moment}
            if message:
                terminated["message"] = message
            statuses = []
            failed_phase = (
                phase == "Failed"
                or reason == "Evicted"
                or (restart == "Never" and reason not in WAITING_REASONS)
            )
            for c in spec.get("containers") or []:
                old = previous.get(c["name"], {})
                restarts = int(old.get("restartCount", 0))
                if c["name"] not in failing:
                    statuses.append(
                        old or self._container_status(c, {"running": {"startedAt": moment}}, ready=True)
                    )
                    continue
                if reason in WAITING_REASONS:
                    waiting = {"reason": reason, "message": message} if message else {"reason": reason}
                    statuses.append(
                        self._container_status(
                            c, {"waiting": waiting}, ready=False, restarts=restarts, last=old.get("lastState")
                        )
                    )
                elif failed_phase:
                    statuses.append(
                        self._container_status(c, {"terminated": terminated}, ready=False, restarts=restarts)
                    )
                else:
                    back_off = {
                        "reason": "CrashLoopBackOff",
                        "message": f"back-off 10s restarting failed container={c['name']} pod={name}_{namespace}({uid})",
                    }
                    statuses.append(
                        self._container_status(
                            c,
                            {"waiting": back_off},
                            ready=False,
                            restarts=restarts + 1,
                            last={"terminated": terminated},
                        )
                    )
            status["containerStatuses"] = statuses
            if failed_phase:
                status["phase"] = phase or "Failed"
                if reason == "Evicted":
                    status["reason"] = "Evicted"
                    status["message"] = message
            elif reason in WAITING_REASONS:
                status["phase"] = "Running" if was_running else "Pending"
            else:
                status["phase"] = "Running"  # restartPolicy Always/OnFailure: the container restarts
            unready = f"containers with unready status: [{' '.join(failing)}]"
            not_ready_reason = "PodFailed" if failed_phase else "ContainersNotReady"
            conditions = status.get("conditions") or []
            conditions = _set_condition(conditions, _condition("Ready", "False", not_ready_reason, unready))
            conditions = _set_condition(
                conditions, _condition("ContainersReady", "False", not_ready_reason, unready)
            )
            status["conditions"] = conditions

        self._starting.discard(uid)
        updated = self.store.internal_update(POD, pod, fail, manager=KUBELET, subresource="status")
        assert updated is not None
        self._failed[uid] = updated["status"]
        pull = "Pull" in reason or reason in (
            "InvalidImageName",
            "CreateContainerConfigError",
            "CreateContainerError",
        )
        kind = "Failed" if pull else "BackOff"
        text = message or f"Back-off restarting failed container {failing[0] if failing else ''}"
        self.event(POD, updated, "Warning", kind, text, "kubelet")
        return deep(updated)

    def recover_pod(self, namespace: str, name: str) -> Obj | None:
        pod = self.store.find(POD, namespace, name)
        if pod is None:
            raise KeyError(f"no pod {namespace}/{name}")
        uid = pod["metadata"]["uid"]
        self._failed.pop(uid, None)
        if self._pinned.pop(uid, "unset") != "unset":
            self.enqueue("schedule", namespace, name)
            return deep(pod)
        if not get_path(pod, "spec", "nodeName"):
            self.enqueue("schedule", namespace, name)
            return deep(pod)
        updated = self._run(pod)
        return deep(updated) if updated is not None else None

    def make_unschedulable(self, namespace: str, name: str, message: str | None = None) -> Obj:
        pod = self.store.find(POD, namespace, name)
        if pod is None:
            raise KeyError(f"no pod {namespace}/{name}")
        uid = pod["metadata"]["uid"]
        total = len(self.store.items(NODE))
        self._pinned[uid] = message or (
            f"0/{total} nodes are available: {total} node(s) didn't match Pod's node affinity/selector. "
            f"preemption: 0/{total} nodes are available: {total} Preemption is not helpful for scheduling."
        )
        self._failed.pop(uid, None)
        if get_path(pod, "spec", "nodeName"):
            # Rebinding is not possible; the fake unbinds the pod as if it had been rescheduled.
            def unbind(new: Obj) -> None:
                new["spec"].pop("nodeName", None)
                new["status"] = {
                    "phase": "Pending",
                    "qosClass": get_path(new, "status", "qosClass", default="BestEffort"),
                }

            pod = self.store.internal_update(POD, pod, unbind, manager=SCHEDULER) or pod
        self._reconcile_schedule(namespace, name)
        return deep(self.store.find(POD, namespace, name) or pod)

    def set_nodes(self, nodes: list[Obj]) -> None:
        wanted = {n["metadata"]["name"] for n in nodes}
        for existing in self.store.items(NODE):
            if existing["metadata"]["name"] not in wanted:
                self.store.remove_internal(NODE, existing)
        for item in nodes:
            self.store.put_internal(NODE, item, manager=KUBELET)
        self.enqueue("schedule_all")

    # ReplicaSets and Deployments -------------------------------------------------------------

    def _owned(self, rt: ResourceType, namespace: str, owner_uid: str) -> list[Obj]:
        return [obj for obj in self.store.items(rt, namespace) if _controller_uid(obj) == owner_uid]

    def _reconcile_replicaset(self, namespace: str, name: str) -> None:
        rs = self.store.find(REPLICASET, namespace, name)
        if rs is None or get_path(rs, "metadata", "deletionTimestamp"):
            return
        uid = rs["metadata"]["uid"]
        pods = self._owned(POD, namespace, uid)
        active = [
            p
            for p in pods
            if not get_path(p, "metadata", "deletionTimestamp") and not admission.is_terminal(p)
        ]
        wanted = int(get_path(rs, "spec", "replicas", default=1))
        failure: str | None = None
        if len(active) < wanted:
            template = get_path(rs, "spec", "template") or {}
            for _ in range(wanted - len(active)):
                body = {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "generateName": f"{name}-",
                        "namespace": namespace,
                        "labels": dict(get_path(template, "metadata", "labels") or {}),
                        "annotations": dict(get_path(template, "metadata", "annotations") or {}),
                        "ownerReferences": [_owner_ref(REPLICASET, rs)],
                    },
                    "spec": deep(template.get("spec") or {}),
                }
                if not body["metadata"]["annotations"]:
                    del body["metadata"]["annotations"]
                try:
                    created = self.store.create(POD, namespace, body, manager=CONTROLLER_MANAGER)
                except ApiError as error:
                    failure = error.message
                    self.event(
                        REPLICASET,
                        rs,
                        "Warning",
                        "FailedCreate",
                        f"Error creating: {error.message}",
                        "replicaset-controller",
                    )
                    break
                active.append(created)
                self.event(
                    REPLICASET,
                    rs,
                    "Normal",
                    "SuccessfulCreate",
                    f"Created pod: {created['metadata']['name']}",
                    "replicaset-controller",
                )
        elif len(active) > wanted:
            surplus = sorted(active, key=lambda p: (_is_ready(p), p["metadata"]["creationTimestamp"]))[
                : len(active) - wanted
            ]
            for pod in surplus:
                self.store.delete_object(POD, pod)
                active.remove(pod)
                self.event(
                    REPLICASET,
                    rs,
                    "Normal",
                    "SuccessfulDelete",
                    f"Deleted pod: {pod['metadata']['name']}",
                    "replicaset-controller",
                )
        ready = sum(1 for p in active if _is_ready(p))
        labels = get_path(rs, "spec", "template", "metadata", "labels") or {}
        labeled = sum(
            1
            for p in active
            if all((get_path(p, "metadata", "labels") or {}).get(k) == v for k, v in labels.items())
        )

        def status(new: Obj) -> None:
            current = new.get("status") or {}
            result: Obj = {"replicas": len(active)}
            if labeled:
                result["fullyLabeledReplicas"] = labeled
            if ready:
                result["readyReplicas"] = ready
                result["availableReplicas"] = ready
            result["observedGeneration"] = new["metadata"].get("generation", 1)
            conditions = list(current.get("conditions") or [])
            if failure:
                failed = _condition("ReplicaFailure", "True", "FailedCreate", failure)
                conditions = _set_condition(conditions, failed)
            elif len(active) >= wanted:
                conditions = [c for c in conditions if c.get("type") != "ReplicaFailure"]
            if conditions:
                result["conditions"] = conditions
            new["status"] = result

        self.store.internal_update(REPLICASET, rs, status, manager=CONTROLLER_MANAGER, subresource="status")
        if failure is None and len(active) < wanted:
            self.enqueue("replicaset", namespace, name)

    def _reconcile_deployment(self, namespace: str, name: str) -> None:
        deployment = self.store.find(DEPLOYMENT, namespace, name)
        if deployment is None or get_path(deployment, "metadata", "deletionTimestamp"):
            return
        uid = deployment["metadata"]["uid"]
        spec = deployment.get("spec") or {}
        desired = int(spec.get("replicas", 1))
        template = deep(spec.get("template") or {})
        template_hash = short_hash(template)
        owned = self._owned(REPLICASET, namespace, uid)
        new_rs = next(
            (rs for rs in owned if get_path(rs, "metadata", "labels", "pod-template-hash") == template_hash),
            None,
        )
        old_sets = [rs for rs in owned if rs is not new_rs]
        revisions = [
            int(get_path(rs, "metadata", "annotations", "deployment.kubernetes.io/revision") or 0)
            for rs in owned
        ]
        created_now = False
        if new_rs is None and not spec.get("paused"):
            labels = {**(get_path(template, "metadata", "labels") or {}), "pod-template-hash": template_hash}
            template.setdefault("metadata", {})["labels"] = labels
            selector = deep(spec.get("selector") or {})
            selector.setdefault("matchLabels", {})["pod-template-hash"] = template_hash
            recreate = get_path(spec, "strategy", "type") == "Recreate"
            old_pods = any(self._owned(POD, namespace, rs["metadata"]["uid"]) for rs in old_sets)
            body = {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {
                    "name": f"{name}-{template_hash}",
                    "namespace": namespace,
                    "labels": labels,
                    "annotations": {
                        "deployment.kubernetes.io/revision": str(max(revisions, default=0) + 1),
                        "deployment.kubernetes.io/desired-replicas": str(desired),
                        "deployment.kubernetes.io/max-replicas": str(desired + 1),
                    },
                    "ownerReferences": [_owner_ref(DEPLOYMENT, deployment)],
                },
                "spec": {
                    "replicas": 0 if recreate and old_pods else desired,
                    "minReadySeconds": spec.get("minReadySeconds", 0),
                    "selector": selector,
                    "template": template,
                },
            }
            new_rs = self.store.create(REPLICASET, namespace, body, manager=CONTROLLER_MANAGER)
            created_now = True
            self._progress[uid] = time.monotonic()
            self.event(
                DEPLOYMENT,
                deployment,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled up replica set {new_rs['metadata']['name']} from 0 to {desired}",
                "deployment-controller",
            )
        if new_rs is None:
            return
        new_available = int(get_path(new_rs, "status", "availableReplicas", default=0))
        recreate = get_path(spec, "strategy", "type") == "Recreate"
        if not spec.get("paused"):
            if recreate:
                old_wanted = 0
                old_pods = any(self._owned(POD, namespace, rs["metadata"]["uid"]) for rs in old_sets)
                new_wanted = 0 if old_pods else desired
            else:
                old_wanted = max(0, desired - new_available)
                new_wanted = desired
            for index, rs in enumerate(
                sorted(old_sets, key=lambda r: r["metadata"]["creationTimestamp"], reverse=True)
            ):
                target = old_wanted if index == 0 else 0
                target = min(target, int(get_path(rs, "spec", "replicas", default=0)))
                self._scale_rs(rs, target)
            self._scale_rs(new_rs, new_wanted)
        owned = self._owned(REPLICASET, namespace, uid)
        new_rs = next((rs for rs in owned if rs["metadata"]["uid"] == new_rs["metadata"]["uid"]), new_rs)
        replicas = sum(int(get_path(rs, "status", "replicas", default=0)) for rs in owned)
        ready = sum(int(get_path(rs, "status", "readyReplicas", default=0)) for rs in owned)
        available = sum(int(get_path(rs, "status", "availableReplicas", default=0)) for rs in owned)
        updated = int(get_path(new_rs, "status", "replicas", default=0))
        new_rs_name = new_rs["metadata"]["name"]
        complete = (
            updated == desired
            and replicas == desired
            and available >= desired
            and int(get_path(new_rs, "status", "availableReplicas", default=0)) >= desired
        )
        started = self._progress.setdefault(uid, time.monotonic())
        deadline = int(spec.get("progressDeadlineSeconds", 600))
        failure = next(
            (c for c in get_path(new_rs, "status", "conditions") or [] if c.get("type") == "ReplicaFailure"),
            None,
        )

        def status(new: Obj) -> None:
            current = new.get("status") or {}
            result: Obj = {"observedGeneration": new["metadata"].get("generation", 1)}
            for key, value in (
                ("replicas", replicas),
                ("updatedReplicas", updated),
                ("readyReplicas", ready),
                ("availableReplicas", available),
                ("unavailableReplicas", max(0, desired - available)),
            ):
                if value:
                    result[key] = value
            conditions = list(current.get("conditions") or [])
            minimum = desired - _max_unavailable(new, desired)
            if available >= minimum:
                available_condition = _condition(
                    "Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability."
                )
            else:
                available_condition = _condition(
                    "Available",
                    "False",
                    "MinimumReplicasUnavailable",
                    "Deployment does not have minimum availability.",
                )
            available_condition["lastUpdateTime"] = now()
            conditions = _set_condition(conditions, available_condition, update_time=True)
            kept = next((c for c in conditions if c.get("type") == "Progressing"), None)
            settled = (
                kept is not None
                and kept.get("reason") == "NewReplicaSetAvailable"
                and not created_now
                and updated >= desired
                and f'"{new_rs_name}"' in str(kept.get("message"))
            )
            if settled and not complete:
                # A finished rollout stays finished when pods fail later (no deadline applies).
                progressing = dict(kept)
            elif complete:
                self._progress[uid] = time.monotonic()
                progressing = _condition(
                    "Progressing",
                    "True",
                    "NewReplicaSetAvailable",
                    f'ReplicaSet "{new_rs_name}" has successfully progressed.',
                )
            elif time.monotonic() - started > deadline:
                progressing = _condition(
                    "Progressing",
                    "False",
                    "ProgressDeadlineExceeded",
                    f'ReplicaSet "{new_rs_name}" has timed out progressing.',
                )
            elif created_now:
                progressing = _condition(
                    "Progressing", "True", "NewReplicaSetCreated", f'Created new replica set "{new_rs_name}"'
                )
            else:
                progressing = _condition(
                    "Progressing", "True", "ReplicaSetUpdated", f'ReplicaSet "{new_rs_name}" is progressing.'
                )
            progressing["lastUpdateTime"] = now()
            conditions = _set_condition(conditions, progressing, update_time=True)
            conditions = [c for c in conditions if c.get("type") != "ReplicaFailure"]
            if failure is not None:
                conditions.append(dict(failure))
            order = {"Available": 0, "Progressing": 1, "ReplicaFailure": 2}
            result["conditions"] = sorted(conditions, key=lambda c: order.get(c.get("type", ""), 3))
            new["status"] = result

        self.store.internal_update(
            DEPLOYMENT, deployment, status, manager=CONTROLLER_MANAGER, subresource="status"
        )
        if not complete and uid not in self._deadlines:
            remaining = deadline - (time.monotonic() - started)
            if remaining > -1:
                self._deadlines.add(uid)

                def check() -> None:
                    self._deadlines.discard(uid)
                    self.enqueue("deployment", namespace, name)

                self.later(max(remaining, 0) + 0.05, check)

    def _scale_rs(self, rs: Obj, replicas: int) -> None:
        if int(get_path(rs, "spec", "replicas", default=0)) == replicas:
            return

        def scale(new: Obj) -> None:
            new["spec"]["replicas"] = replicas
            new["metadata"].setdefault("annotations", {})["deployment.kubernetes.io/desired-replicas"] = str(
                replicas
            )

        self.store.internal_update(REPLICASET, rs, scale, manager=CONTROLLER_MANAGER)

    # StatefulSets ----------------------------------------------------------------------------

    def _reconcile_statefulset(self, namespace: str, name: str) -> None:
        sts = self.store.find(STATEFULSET, namespace, name)
        if sts is None or get_path(sts, "metadata", "deletionTimestamp"):
            return
        spec = sts.get("spec") or {}
        uid = sts["metadata"]["uid"]
        replicas = int(spec.get("replicas", 1))
        start = int(get_path(spec, "ordinals", "start", default=0))
        revision = f"{name}-{short_hash(spec.get('template') or {})}"
        parallel = spec.get("podManagementPolicy") == "Parallel"
        pods = {p["metadata"]["name"]: p for p in self._owned(POD, namespace, uid)}
        failure = None
        for ordinal in range(start, start + replicas):
            pod_name = f"{name}-{ordinal}"
            pod = pods.get(pod_name)
            if (
                pod is not None
                and admission.is_terminal(pod)
                and not get_path(pod, "metadata", "deletionTimestamp")
            ):
                self.store.delete_object(POD, pod, grace=0)
                pod = None
            if pod is None:
                if not parallel and not all(
                    _is_ready(pods[f"{name}-{i}"]) for i in range(start, ordinal) if f"{name}-{i}" in pods
                ):
                    break
                if not parallel and any(f"{name}-{i}" not in pods for i in range(start, ordinal)):
                    break
                try:
                    pods[pod_name] = self._create_sts_pod(sts, ordinal, revision)
                except ApiError as error:
                    failure = error.message
                    self.event(
                        STATEFULSET,
                        sts,
                        "Warning",
                        "FailedCreate",
                        f"create Pod {pod_name} in StatefulSet {name} failed error: {error.message}",
                        "statefulset-controller",
                    )
                    break
                if not parallel:
                    break
        for pod_name, pod in sorted(pods.items(), key=lambda item: -int(item[0].rsplit("-", 1)[1])):
            ordinal = int(pod_name.rsplit("-", 1)[1])
            if not start <= ordinal < start + replicas and not get_path(pod, "metadata", "deletionTimestamp"):
                self.store.delete_object(POD, pod)
                if not parallel:
                    break
        update_type = get_path(spec, "updateStrategy", "type", default="RollingUpdate")
        partition = int(get_path(spec, "updateStrategy", "rollingUpdate", "partition", default=0))
        live = [p for p in pods.values() if not get_path(p, "metadata", "deletionTimestamp")]
        if update_type == "RollingUpdate" and all(_is_ready(p) for p in live):
            outdated = [
                p
                for p in live
                if get_path(p, "metadata", "labels", "controller-revision-hash") != revision
                and int(p["metadata"]["name"].rsplit("-", 1)[1]) >= partition
            ]
            if outdated:
                newest = max(outdated, key=lambda p: int(p["metadata"]["name"].rsplit("-", 1)[1]))
                self.store.delete_object(POD, newest)
        current = [
            p for p in self._owned(POD, namespace, uid) if not get_path(p, "metadata", "deletionTimestamp")
        ]
        ready = sum(1 for p in current if _is_ready(p))
        updated = sum(
            1 for p in current if get_path(p, "metadata", "labels", "controller-revision-hash") == revision
        )

        def status(new: Obj) -> None:
            old = new.get("status") or {}
            result: Obj = {
                "observedGeneration": new["metadata"].get("generation", 1),
                "replicas": len(current),
                "updateRevision": revision,
                "currentRevision": revision
                if updated == len(current)
                else old.get("currentRevision", revision),
                "collisionCount": 0,
            }
            for key, value in (
                ("readyReplicas", ready),
                ("availableReplicas", ready),
                ("currentReplicas", updated),
                ("updatedReplicas", updated),
            ):
                if value:
                    result[key] = value
            if failure:
                result["conditions"] = [_condition("ReplicaFailure", "True", "FailedCreate", failure)]
            new["status"] = result

        self.store.internal_update(STATEFULSET, sts, status, manager=CONTROLLER_MANAGER, subresource="status")

    def _create_sts_pod(self, sts: Obj, ordinal: int, revision: str) -> Obj:
        metadata = sts["metadata"]
        name, namespace = metadata["name"], metadata["namespace"]
        spec = sts.get("spec") or {}
        template = deep(spec.get("template") or {})
        pod_name = f"{name}-{ordinal}"
        pod_spec = template.get("spec") or {}
        volumes = pod_spec.setdefault("volumes", [])
        retention = get_path(spec, "persistentVolumeClaimRetentionPolicy", "whenDeleted", default="Retain")
        for claim in spec.get("volumeClaimTemplates") or []:
            claim_name = f"{claim['metadata']['name']}-{pod_name}"
            if self.store.find(PVC, namespace, claim_name) is None:
                claim_body = {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": {
                        "name": claim_name,
                        "namespace": namespace,
                        "labels": {
                            **(get_path(spec, "selector", "matchLabels") or {}),
                            **(get_path(claim, "metadata", "labels") or {}),
                        },
                    },
                    "spec": deep(claim.get("spec") or {}),
                }
                if retention == "Delete":
                    claim_body["metadata"]["ownerReferences"] = [
                        _owner_ref(STATEFULSET, sts) | {"controller": True}
                    ]
                self.store.create(PVC, namespace, claim_body, manager=CONTROLLER_MANAGER)
            if not any(v.get("name") == claim["metadata"]["name"] for v in volumes):
                volumes.append(
                    {"name": claim["metadata"]["name"], "persistentVolumeClaim": {"claimName": claim_name}}
                )
        if not volumes:
            pod_spec.pop("volumes")
        pod_spec["hostname"] = pod_name
        if spec.get("serviceName"):
            pod_spec["subdomain"] = spec["serviceName"]
        labels = {
            **(get_path(template, "metadata", "labels") or {}),
            "controller-revision-hash": revision,
            "statefulset.kubernetes.io/pod-name": pod_name,
            "apps.kubernetes.io/pod-index": str(ordinal),
        }
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": pod_name,
                "namespace": namespace,
                "labels": labels,
                "ownerReferences": [_owner_ref(STATEFULSET, sts)],
            },
            "spec": pod_spec,
        }
        if get_path(template, "metadata", "annotations"):
            body["metadata"]["annotations"] = deep(template["metadata"]["annotations"])
        created = self.store.create(POD, namespace, body, manager=CONTROLLER_MANAGER)
        self.event(
            STATEFULSET,
            sts,
            "Normal",
            "SuccessfulCreate",
            f"create Pod {pod_name} in StatefulSet {name} successful",
            "statefulset-controller",
        )
        return created

    # PVCs, Services, quotas ------------------------------------------------------------------

    def _reconcile_pvc(self, namespace: str, name: str) -> None:
        if self.pvc_delay is None:
            return
        self.later(self.pvc_delay, lambda: self._bind_pvc(namespace, name))

    def _bind_pvc(self, namespace: str, name: str) -> None:
        pvc = self.store.find(PVC, namespace, name)
        if pvc is None or get_path(pvc, "status", "phase") == "Bound":
            return

        def bind(new: Obj) -> None:
            new["spec"]["volumeName"] = f"pvc-{new['metadata']['uid']}"
            annotations = new["metadata"].setdefault("annotations", {})
            annotations["pv.kubernetes.io/bind-completed"] = "yes"
            annotations["pv.kubernetes.io/bound-by-controller"] = "yes"

        bound = self.store.internal_update(PVC, pvc, bind, manager=CONTROLLER_MANAGER)
        if bound is None:
            return

        def status(new: Obj) -> None:
            spec = new.get("spec") or {}
            new["status"] = {
                "phase": "Bound",
                "accessModes": list(spec.get("accessModes") or []),
                "capacity": {"storage": get_path(spec, "resources", "requests", "storage", default="0")},
            }

        self.store.internal_update(PVC, bound, status, manager=CONTROLLER_MANAGER, subresource="status")

    def bind_pending_pvcs(self) -> None:
        for pvc in self.store.items(PVC):
            if get_path(pvc, "status", "phase") != "Bound":
                self._bind_pvc(pvc["metadata"]["namespace"], pvc["metadata"]["name"])

    def _reconcile_loadbalancer(self, namespace: str, name: str) -> None:
        service = self.store.find(SERVICE, namespace, name)
        if service is None or get_path(service, "status", "loadBalancer", "ingress"):
            return
        self._ip += 1
        address = f"203.0.113.{self._ip % 250 + 2}"

        def ingress(new: Obj) -> None:
            new["status"] = {"loadBalancer": {"ingress": [{"ip": address, "ipMode": "VIP"}]}}

        self.store.internal_update(
            SERVICE, service, ingress, manager=CONTROLLER_MANAGER, subresource="status"
        )

    def _reconcile_quota(self, namespace: str, _name: str) -> None:
        used = self.store.namespace_usage(namespace)
        for quota in self.store.items(QUOTA, namespace):
            wanted = admission.quota_status(quota, used)

            def status(new: Obj, wanted: Obj = wanted) -> None:
                new["status"] = wanted

            self.store.internal_update(QUOTA, quota, status, manager=CONTROLLER_MANAGER, subresource="status")

    # Namespaces ------------------------------------------------------------------------------

    def _reconcile_namespace_defaults(self, _namespace: str, name: str) -> None:
        ns = self.store.find(NAMESPACE, None, name)
        if ns is None or get_path(ns, "metadata", "deletionTimestamp"):
            return
        defaults: list[tuple[ResourceType, Obj]] = [
            (
                SERVICE_ACCOUNT,
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}},
            ),
            (
                CONFIGMAP,
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "kube-root-ca.crt"},
                    "data": {"ca.crt": FAKE_CA},
                },
            ),
        ]
        for item, body in defaults:
            if self.store.find(item, name, body["metadata"]["name"]) is None:
                with contextlib.suppress(ApiError):
                    self.store.create(item, name, body, manager=CONTROLLER_MANAGER)

    def _reconcile_namespace(self, _namespace: str, name: str) -> None:
        ns = self.store.find(NAMESPACE, None, name)
        if ns is None or not get_path(ns, "metadata", "deletionTimestamp"):
            self._ns_terminating.pop(name, None)
            return
        started = self._ns_terminating.setdefault(name, time.monotonic())
        waited = time.monotonic() - started
        if waited < self.namespace_deletion_delay:
            self.later(
                self.namespace_deletion_delay - waited + 0.001, lambda: self.enqueue("namespace", "", name)
            )
            return
        for item, obj in self.store.namespace_objects(name):
            if not get_path(obj, "metadata", "deletionTimestamp"):
                self.store.delete_object(item, obj)
        remaining = self.store.namespace_objects(name)
        if remaining:
            counts: dict[str, int] = {}
            finalizers: dict[str, int] = {}
            for item, obj in remaining:
                counts[item.qualified] = counts.get(item.qualified, 0) + 1
                for finalizer in get_path(obj, "metadata", "finalizers") or []:
                    finalizers[finalizer] = finalizers.get(finalizer, 0) + 1
            content = ", ".join(f"{k} has {v} resource instances" for k, v in sorted(counts.items()))

            def terminating(new: Obj) -> None:
                conditions = get_path(new, "status", "conditions") or []
                conditions = _set_condition(
                    conditions,
                    _condition(
                        "NamespaceContentRemaining",
                        "True",
                        "SomeResourcesRemain",
                        f"Some resources are remaining: {content}",
                    ),
                )
                if finalizers:
                    text = ", ".join(f"{k} in {v} resource instances" for k, v in sorted(finalizers.items()))
                    conditions = _set_condition(
                        conditions,
                        _condition(
                            "NamespaceFinalizersRemaining",
                            "True",
                            "SomeFinalizersRemain",
                            f"Some content in the namespace has finalizers remaining: {text}",
                        ),
                    )
                new["status"]["conditions"] = conditions

            self.store.internal_update(
                NAMESPACE, ns, terminating, manager=CONTROLLER_MANAGER, subresource="status"
            )
            self.later(0.05, lambda: self.enqueue("namespace", "", name))
            return

        def finalize(new: Obj) -> None:
            kept = [f for f in new["metadata"].get("finalizers") or [] if f != "foregroundDeletion"]
            if kept:
                new["metadata"]["finalizers"] = kept
            else:
                new["metadata"].pop("finalizers", None)
            spec = new.setdefault("spec", {})
            spec["finalizers"] = [f for f in spec.get("finalizers") or [] if f != "kubernetes"]
            if not spec["finalizers"]:
                spec.pop("finalizers")

        self.store.internal_update(
            NAMESPACE, ns, finalize, manager=CONTROLLER_MANAGER, subresource="finalize"
        )

    # Garbage collection ----------------------------------------------------------------------

    def _find_by_id(self, rt_id: str, key: str) -> tuple[ResourceType, Obj] | None:
        item = BY_ID[rt_id]
        namespace, _, name = key.partition("/")
        obj = self.store.find(item, namespace or None, name)
        return (item, obj) if obj is not None else None

    def _reconcile_gc(self, rt_id: str, key: str) -> None:
        found = self._find_by_id(rt_id, key)
        if found is None:
            return
        item, obj = found
        if not get_path(obj, "metadata", "deletionTimestamp"):
            return
        uid = obj["metadata"]["uid"]
        finalizers = list(get_path(obj, "metadata", "finalizers") or [])
        if "orphan" in finalizers:
            for dep_rt, dep in self.store.dependents(uid):
                self.store.internal_update(
                    dep_rt, dep, lambda new: self._drop_ref(new, uid), manager="garbage-collector"
                )
            self._drop_finalizer(item, obj, "orphan")
            return
        if "foregroundDeletion" in finalizers:
            if item is NAMESPACE and self.store.namespace_objects(obj["metadata"]["name"]):
                return  # a namespace's dependents are everything in it; the namespace controller deletes them
            dependents = self.store.dependents(uid)
            for dep_rt, dep in dependents:
                if get_path(dep, "metadata", "deletionTimestamp"):
                    continue
                blocking = any(
                    ref.get("uid") == uid and ref.get("blockOwnerDeletion")
                    for ref in dep["metadata"].get("ownerReferences") or []
                )
                self.store.delete_object(dep_rt, dep, "Foreground" if blocking else "Background")
            if not self.store.dependents(uid):
                current = self.store.find(item, obj["metadata"].get("namespace"), obj["metadata"]["name"])
                if current is not None:
                    self._drop_finalizer(item, current, "foregroundDeletion")

    @staticmethod
    def _drop_ref(new: Obj, uid: str) -> None:
        refs = [ref for ref in new["metadata"].get("ownerReferences") or [] if ref.get("uid") != uid]
        if refs:
            new["metadata"]["ownerReferences"] = refs
        else:
            new["metadata"].pop("ownerReferences", None)

    def _drop_finalizer(self, item: ResourceType, obj: Obj, finalizer: str) -> None:
        def drop(new: Obj) -> None:
            kept = [f for f in new["metadata"].get("finalizers") or [] if f != finalizer]
            if kept:
                new["metadata"]["finalizers"] = kept
            else:
                new["metadata"].pop("finalizers", None)

        self.store.internal_update(item, obj, drop, manager="garbage-collector")

    def _reconcile_dependents(self, _namespace: str, uid: str) -> None:
        """An owner is gone: delete its dependents that have no other owner left."""
        for dep_rt, dep in self.store.dependents(uid):
            refs = dep["metadata"].get("ownerReferences") or []
            if any(ref.get("uid") != uid and self.store.uid_exists(str(ref.get("uid"))) for ref in refs):
                self.store.internal_update(
                    dep_rt, dep, lambda new: self._drop_ref(new, uid), manager="garbage-collector"
                )
            elif not get_path(dep, "metadata", "deletionTimestamp"):
                self.store.delete_object(dep_rt, dep)

    def _reconcile_owner(self, _namespace: str, uid: str) -> None:
        """A dependent is gone: an owner waiting in foreground deletion may be done."""
        for item_id, objects in self.store.objects.items():
            for obj in list(objects.values()):
                if get_path(obj, "metadata", "uid") == uid:
                    namespace = get_path(obj, "metadata", "namespace") or ""
                    self._reconcile_gc(item_id, f"{namespace}/{obj['metadata']['name']}")
                    return

    # Pod logs --------------------------------------------------------------------------------

    def log_of(self, namespace: str, name: str, container: str | None = None) -> str:
        pod = self.store.find(POD, namespace, name)
        if pod is None:
            raise KeyError(name)
        text = self.pod_logs.get((namespace, name))
        if text is not None:
            return text
        names = [c["name"] for c in get_path(pod, "spec", "containers") or []]
        return f"fake log of {namespace}/{name} container {container or (names[0] if names else '')}\n"
