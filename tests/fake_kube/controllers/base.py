"""What the controllers share: the resource types and managers they write as, the conditions
and owner references they build, and their work queue, timers and Events."""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable

from tests.fake_kube.errors import ApiError
from tests.fake_kube.resources import ResourceType, resource_for
from tests.fake_kube.store import Store
from tests.fake_kube.util import Obj, get_path, now, random_hex

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


class ControllerBase:
    """The state of all the controllers, their work queue, timers and Events."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.loop: asyncio.AbstractEventLoop | None = None
        self.enabled = True
        self.pod_delay = 0.0
        self.termination_delay = 0.0
        self.namespace_deletion_delay = 0.2
        self.pvc_delay: float | None = 0.0
        # (namespace, pod, container) -> per container instance (restartCount): (timestamp, line)
        self.container_logs: dict[tuple[str, str, str], dict[int, list[tuple[str, str]]]] = {}
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
        # How long the Deployment and StatefulSet controllers take to observe a new generation
        # (None: until told); see `_lagging`.
        self.observe_delay: float | None = 0.0
        self._observe_due: dict[str, float] = {}  # object uid -> when its new generation is observed

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

    # Shared by the controllers ---------------------------------------------------------------

    def _lagging(self, kind: str, obj: Obj) -> bool:
        """Whether the controller has not got round to a new generation of `obj` yet (a busy
        controller-manager): until `observe_delay` has passed since it was first noticed, its
        status (observedGeneration, conditions) stays that of the generation before. Reconciled
        again (`kind`) when the delay is over; held while `observe_delay` is None."""
        uid = str(obj["metadata"]["uid"])
        generation = int(get_path(obj, "metadata", "generation") or 1)
        if generation <= int(get_path(obj, "status", "observedGeneration") or 0) or self.observe_delay == 0:
            self._observe_due.pop(uid, None)
            return False
        if self.observe_delay is None:
            return True
        due = self._observe_due.setdefault(uid, time.monotonic() + self.observe_delay)
        remaining = due - time.monotonic()
        if remaining <= 0:
            self._observe_due.pop(uid, None)
            return False
        namespace, name = obj["metadata"].get("namespace") or "", obj["metadata"]["name"]
        self.later(remaining, lambda: self.enqueue(kind, namespace, name))
        return True

    def _owned(self, rt: ResourceType, namespace: str, owner_uid: str) -> list[Obj]:
        return [obj for obj in self.store.items(rt, namespace) if _controller_uid(obj) == owner_uid]

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
