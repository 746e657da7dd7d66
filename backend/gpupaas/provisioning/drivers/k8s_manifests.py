"""Pure functions behind the `kubernetes` driver (drivers/kubernetes.py).

No network and no `kubernetes` import here: everything the driver decides is a function of plain
dicts (objects as the API serves them), so it can be tested by building objects and asserting.

- Objects: their identity, the order they are applied in, the namespace they default to, the
  labels they must carry, pod templates stamped with the instance's labels.
- Discovery: an APIResourceList -> `ApiResource` (kind -> plural, namespaced, verbs) and URL paths.
- Requests: server-side apply, get, delete, list and watch as plain `Request`s (method, path,
  query, content type, body) that the driver sends.
- Readiness of a Namespace, PersistentVolumeClaim, Pod, Deployment, StatefulSet and Job; why a pod
  failed; why it cannot be scheduled; which pods belong to a Deployment's current rollout.
- Drift: the health of an instance from its pods, and `DriftTracker`, which turns a list and the
  watch events after it into the changes to report (FAILED, then READY again).
- Errors: a Kubernetes Status -> PermanentError or TemporaryError with a message a person can act on.
- Nodes: allocatable CPU and memory, GPUs per extended resource, the GPU model from node labels.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import ROUND_FLOOR
from typing import Any
from urllib.parse import quote

from gpupaas.core.quantities import parse_quantity
from gpupaas.provisioning.drivers.base import (
    KNOWN_GPU_RESOURCES,
    ClusterInfo,
    NodeInfo,
    Observed,
    Owner,
    Phase,
)
from gpupaas.provisioning.plan import (
    INSTANCE_LABEL,
    MANAGED_BY,
    SERVICE_LABEL,
    DriverError,
    PermanentError,
    TemporaryError,
)

__all__ = [
    "APPLY_CONTENT_TYPE",
    "GPU_MODEL_LABELS",
    "ApiResource",
    "ClusterInfo",
    "DriftTracker",
    "NodeInfo",
    "Readiness",
    "Request",
    "api_error",
    "apply_order",
    "apply_request",
    "counts",
    "current_pods",
    "delete_request",
    "describe",
    "get_request",
    "gpu_resources",
    "identity_labels",
    "instance_health",
    "is_gpu_resource",
    "kind_rank",
    "label_problem",
    "list_request",
    "node_info",
    "object_key",
    "parse_resource_list",
    "pod_failure",
    "pod_problem",
    "preferred_group_versions",
    "readiness",
    "stamp_pod_templates",
    "status_text",
    "unreachable",
    "unschedulable_message",
    "watch_request",
    "with_namespace",
]

APPLY_CONTENT_TYPE = "application/apply-patch+yaml"
MANAGER_VALUE = "gpupaas"

# ------------------------------------------------------------------------------ identity and order

# Dependencies first: the namespace, what limits it, who may act in it, what pods mount, the pods'
# controllers, then Services (they only select pods). Roles come before their bindings: the API
# server checks a binding against the rules of the role it names (RBAC escalation check).
_RANKS: dict[str, int] = {
    "Namespace": 0,
    "ResourceQuota": 1,
    "LimitRange": 1,
    "ServiceAccount": 2,
    "Role": 3,
    "ClusterRole": 3,
    "RoleBinding": 4,
    "ClusterRoleBinding": 4,
    "ConfigMap": 5,
    "Secret": 5,
    "PersistentVolumeClaim": 6,
    "Deployment": 7,
    "StatefulSet": 7,
    "DaemonSet": 7,
    "ReplicaSet": 7,
    "Pod": 7,
    "Job": 7,
    "CronJob": 7,
    "Service": 8,
}
_OTHERS = 9

# Where each workload kind keeps the pod template its controller stamps pods from.
_POD_TEMPLATES: dict[str, tuple[tuple[str, ...], ...]] = {
    "Deployment": (("spec", "template"),),
    "StatefulSet": (("spec", "template"),),
    "DaemonSet": (("spec", "template"),),
    "ReplicaSet": (("spec", "template"),),
    "Job": (("spec", "template"),),
    "CronJob": (("spec", "jobTemplate"), ("spec", "jobTemplate", "spec", "template")),
}

# Fields the API server owns: sent back in an apply they would be preconditions or errors.
_SERVER_METADATA = (
    "resourceVersion",
    "uid",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = obj.get("metadata")
    return metadata if isinstance(metadata, Mapping) else {}


def _status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    status = obj.get("status")
    return status if isinstance(status, Mapping) else {}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = obj.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _list(value: object) -> list[Mapping[str, Any]]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def group_of(api_version: str) -> str:
    """ "apps/v1" -> "apps"; "v1" -> "" (the core group)."""
    return api_version.rpartition("/")[0]


def object_key(obj: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """Identifies an object as the API server does: group, kind, namespace, name."""
    metadata = _metadata(obj)
    return (
        group_of(str(obj.get("apiVersion", ""))),
        str(obj.get("kind", "")),
        str(metadata.get("namespace") or ""),
        str(metadata.get("name") or ""),
    )


def describe(obj: Mapping[str, Any]) -> str:
    """An object as people name it in messages: "pod nb-0", "deployment web"."""
    return f"{str(obj.get('kind') or 'object').lower()} {_metadata(obj).get('name') or '(unnamed)'}"


def kind_rank(kind: str) -> int:
    return _RANKS.get(kind, _OTHERS)


def apply_order(manifests: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The manifests in the order they are applied: by kind (see _RANKS), the template's order kept
    within a kind. An object named twice is applied once, where it first appears, as it last reads
    (as `kubectl apply` of the same stream would leave it)."""
    objects: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for manifest in manifests:
        objects[object_key(manifest)] = copy.deepcopy(dict(manifest))
    return sorted(objects.values(), key=lambda obj: kind_rank(str(obj.get("kind", ""))))


def with_namespace(manifest: Mapping[str, Any], namespace: str, namespaced: bool) -> dict[str, Any]:
    """A copy of the manifest with its namespace settled: a namespaced object without one goes into
    `namespace`; a cluster-scoped object loses one it was given (it has none)."""
    obj = copy.deepcopy(dict(manifest))
    metadata = obj.setdefault("metadata", {})
    if namespaced:
        if not metadata.get("namespace"):
            metadata["namespace"] = namespace
    else:
        metadata.pop("namespace", None)
    return obj


def identity_labels(instance_id: str, owner_label: str = INSTANCE_LABEL) -> dict[str, str]:
    """The labels by which the driver finds an instance's objects and pods."""
    return {MANAGED_BY: MANAGER_VALUE, owner_label: instance_id}


def label_problem(
    manifest: Mapping[str, Any], instance_id: str, owner_label: str = INSTANCE_LABEL
) -> str | None:
    """What is wrong with the object's identity labels (build_plan adds them; a template may have
    overridden them), or None."""
    labels = _metadata(manifest).get("labels")
    labels = labels if isinstance(labels, Mapping) else {}
    for key, wanted in identity_labels(instance_id, owner_label).items():
        value = labels.get(key)
        if value != wanted:
            found = "is missing" if value is None else f'is "{value}"'
            return (
                f'{describe(manifest)}: label {key} {found}, it must be "{wanted}": the driver finds the '
                "objects of an instance by it (remove it from the template)"
            )
    return None


def stamp_pod_templates(
    manifest: Mapping[str, Any], instance_id: str, owner_label: str = INSTANCE_LABEL
) -> dict[str, Any]:
    """A copy of the manifest whose pod templates (and a StatefulSet's volume claim templates) carry
    the identity labels, so that the pods and volumes a controller makes can be found and watched.
    The selector is left alone: extra labels on a template never stop it matching."""
    obj = copy.deepcopy(dict(manifest))
    labels = identity_labels(instance_id, owner_label)
    templates: list[Any] = []
    for path in _POD_TEMPLATES.get(str(obj.get("kind")), ()):
        node: Any = obj
        for part in path:
            node = node.get(part) if isinstance(node, dict) else None
        templates.append(node)
    if obj.get("kind") == "StatefulSet" and isinstance(obj.get("spec"), dict):
        claims = obj["spec"].get("volumeClaimTemplates")
        templates.extend(claims if isinstance(claims, list) else [])
    for template in templates:
        if not isinstance(template, dict):
            continue
        metadata = template.setdefault("metadata", {})
        if isinstance(metadata, dict):
            existing = metadata.get("labels")
            metadata["labels"] = {**(existing if isinstance(existing, dict) else {}), **labels}
    return obj


# -------------------------------------------------------------------------------------- discovery


@dataclass(frozen=True)
class ApiResource:
    """One kind the API server serves, from discovery (an APIResourceList)."""

    group_version: str  # "v1", "apps/v1"
    kind: str
    plural: str  # the URL segment: "deployments"
    namespaced: bool
    verbs: frozenset[str] = frozenset()

    @property
    def group(self) -> str:
        return group_of(self.group_version)

    def path(self, name: str | None = None, namespace: str | None = None) -> str:
        """The URL path of the collection (name None) or of one object; a namespaced collection
        without a namespace is the one across all namespaces."""
        prefix = (
            f"/api/{self.group_version}" if "/" not in self.group_version else f"/apis/{self.group_version}"
        )
        parts = [prefix]
        if self.namespaced and namespace:
            parts.append(f"namespaces/{quote(namespace, safe='')}")
        parts.append(self.plural)
        if name is not None:
            parts.append(quote(name, safe=""))
        return "/".join(parts)


def parse_resource_list(body: Mapping[str, Any]) -> tuple[ApiResource, ...]:
    """The kinds of an APIResourceList (GET /api/v1, /apis/<group>/<version>); subresources
    ("pods/status") are left out."""
    group_version = str(body.get("groupVersion") or "")
    resources: list[ApiResource] = []
    for item in _list(body.get("resources")):
        name = str(item.get("name") or "")
        if not name or "/" in name or not item.get("kind"):
            continue
        verbs = item.get("verbs")
        resources.append(
            ApiResource(
                group_version=group_version,
                kind=str(item["kind"]),
                plural=name,
                namespaced=bool(item.get("namespaced")),
                verbs=frozenset(str(verb) for verb in verbs) if isinstance(verbs, list) else frozenset(),
            )
        )
    return tuple(resources)


def preferred_group_versions(group_list: Mapping[str, Any]) -> list[str]:
    """The preferred version of every group of an APIGroupList (GET /apis): "apps/v1", ..."""
    versions: list[str] = []
    for group in _list(group_list.get("groups")):
        preferred = group.get("preferredVersion")
        if isinstance(preferred, Mapping) and preferred.get("groupVersion"):
            versions.append(str(preferred["groupVersion"]))
            continue
        listed = _list(group.get("versions"))
        if listed and listed[0].get("groupVersion"):
            versions.append(str(listed[0]["groupVersion"]))
    return versions


# --------------------------------------------------------------------------------------- requests


@dataclass(frozen=True)
class Request:
    """One HTTP request to the API server, before it is sent: the driver adds the host, the
    credentials and the timeout."""

    method: str
    path: str
    query: tuple[tuple[str, str], ...] = ()
    content_type: str | None = None
    body: Mapping[str, Any] | None = None


def _applied_body(manifest: Mapping[str, Any]) -> dict[str, Any]:
    body = copy.deepcopy(dict(manifest))
    body.pop("status", None)  # the status subresource's, never the author's
    metadata = body.get("metadata")
    if isinstance(metadata, dict):
        for key in _SERVER_METADATA:
            metadata.pop(key, None)
    return body


def apply_request(
    manifest: Mapping[str, Any], resource: ApiResource, *, field_manager: str, force: bool = True
) -> Request:
    """Server-side apply of one object: PATCH of its own URL, content type
    application/apply-patch+yaml (JSON is YAML), fieldManager and force (the driver owns every field
    it sets, even if someone else set it since). Raises ValueError when a namespaced object has no
    namespace (call with_namespace first)."""
    metadata = _metadata(manifest)
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{describe(manifest)}: metadata.name is required")
    namespace = metadata.get("namespace") if resource.namespaced else None
    if resource.namespaced and not namespace:
        raise ValueError(f"{describe(manifest)}: a namespaced object needs metadata.namespace")
    query = [("fieldManager", field_manager)]
    if force:
        query.append(("force", "true"))
    return Request(
        method="PATCH",
        path=resource.path(name, str(namespace) if namespace else None),
        query=tuple(query),
        content_type=APPLY_CONTENT_TYPE,
        body=_applied_body(manifest),
    )


def get_request(resource: ApiResource, name: str, namespace: str | None) -> Request:
    return Request(method="GET", path=resource.path(name, namespace))


def delete_request(
    resource: ApiResource, name: str, namespace: str | None, *, propagation: str = "Foreground"
) -> Request:
    """DELETE with DeleteOptions: Foreground waits for the dependents (a Deployment's ReplicaSets and
    pods) before the object itself goes, so "gone" means everything under it is gone too."""
    return Request(
        method="DELETE",
        path=resource.path(name, namespace),
        content_type="application/json",
        body={"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": propagation},
    )


def list_request(
    resource: ApiResource,
    namespace: str | None = None,
    *,
    label_selector: str | None = None,
    limit: int | None = None,
    continue_token: str | None = None,
) -> Request:
    query: list[tuple[str, str]] = []
    if label_selector:
        query.append(("labelSelector", label_selector))
    if limit:
        query.append(("limit", str(limit)))
    if continue_token:
        query.append(("continue", continue_token))
    return Request(method="GET", path=resource.path(None, namespace), query=tuple(query))


def watch_request(
    resource: ApiResource,
    namespace: str | None = None,
    *,
    label_selector: str | None = None,
    resource_version: str | None = None,
    timeout_seconds: int = 300,
) -> Request:
    """A watch from `resource_version` (the list's, so that nothing between the list and the watch
    is missed), with bookmarks (so that the resourceVersion to resume from stays recent)."""
    query: list[tuple[str, str]] = [("watch", "true"), ("allowWatchBookmarks", "true")]
    if label_selector:
        query.append(("labelSelector", label_selector))
    if resource_version:
        query.append(("resourceVersion", resource_version))
    query.append(("timeoutSeconds", str(timeout_seconds)))
    return Request(method="GET", path=resource.path(None, namespace), query=tuple(query))


# -------------------------------------------------------------------------------------- readiness


@dataclass(frozen=True)
class Readiness:
    """Whether an object is ready; if not, what it waits for (`message`), or, when `failed`, why it
    never will be without someone acting."""

    ready: bool
    message: str | None = None
    failed: bool = False


_READY = Readiness(True)

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


def _condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    return next((c for c in _list(_status(obj).get("conditions")) if c.get("type") == kind), None)


def _int(value: object, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _observed(obj: Mapping[str, Any]) -> Readiness | None:
    """Not ready while the controller has not seen the latest spec (its status would be stale)."""
    generation = _int(_metadata(obj).get("generation"))
    observed = _status(obj).get("observedGeneration")
    if not isinstance(observed, int) or observed < generation:
        return Readiness(False, f"{describe(obj)}: waiting for its controller to observe the change")
    return None


def _container_statuses(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    status = _status(pod)
    return _list(status.get("initContainerStatuses")) + _list(status.get("containerStatuses"))


def _state(container: Mapping[str, Any], key: str, which: str = "state") -> Mapping[str, Any] | None:
    state = container.get(which)
    value = state.get(key) if isinstance(state, Mapping) else None
    return value if isinstance(value, Mapping) else None


def pod_failure(pod: Mapping[str, Any]) -> str | None:
    """Why the pod failed ("pod nb-0: OOMKilled (container main exited with code 137)"), or None.

    A pod fails when its phase is Failed (evicted, or a container of a pod that is not restarted
    exited with an error), when a container is stuck in a waiting reason that waiting does not cure
    (CrashLoopBackOff, ImagePullBackOff, ...; a crash loop reports what killed it last), or when a
    container has terminated with a non-zero exit code.
    """
    name = describe(pod)
    status = _status(pod)
    containers = _container_statuses(pod)
    terminated = [
        (c, t) for c in containers if (t := _state(c, "terminated")) is not None and _int(t.get("exitCode"))
    ]
    if status.get("phase") == "Failed":
        reason = status.get("reason") or (terminated[0][1].get("reason") if terminated else None) or "Failed"
        detail = status.get("message")
        if not detail and terminated:
            container, state = terminated[0]
            detail = f"container {container.get('name')} exited with code {state.get('exitCode')}"
        return f"{name}: {reason}" + (f" ({detail})" if detail else "")
    for container in containers:
        waiting = _state(container, "waiting")
        if waiting is not None and waiting.get("reason") in FAILING_WAITING_REASONS:
            reason = waiting["reason"]
            last = _state(container, "terminated", "lastState")
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
    condition = _condition(pod, "PodScheduled")
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


def _pod_readiness(pod: Mapping[str, Any]) -> Readiness:
    name = describe(pod)
    if _metadata(pod).get("deletionTimestamp"):
        return Readiness(False, f"{name} is being deleted")
    problem = pod_problem(pod)
    if problem is not None:
        return Readiness(False, problem, failed=True)
    phase = _status(pod).get("phase") or "Pending"
    if phase == "Succeeded":
        return _READY
    ready = _condition(pod, "Ready")
    if phase == "Running" and ready is not None and ready.get("status") == "True":
        return _READY
    waiting = [
        str(w["reason"])
        for c in _container_statuses(pod)
        if (w := _state(c, "waiting")) is not None and w.get("reason")
    ]
    if waiting:
        return Readiness(False, f"{name}: {phase} ({', '.join(dict.fromkeys(waiting))})")
    if phase == "Running":
        detail = ready.get("message") if ready is not None else None
        return Readiness(False, f"{name}: Running, not ready" + (f" ({detail})" if detail else ""))
    return Readiness(False, f"{name}: {phase}")


def _namespace_readiness(namespace: Mapping[str, Any]) -> Readiness:
    phase = _status(namespace).get("phase")
    if phase == "Active":
        return _READY
    if phase == "Terminating":
        return Readiness(False, f"{describe(namespace)} is terminating")
    return Readiness(False, f"{describe(namespace)}: waiting for it to become Active")


def _pvc_readiness(claim: Mapping[str, Any], wait_for_first_consumer: bool) -> Readiness:
    phase = _status(claim).get("phase") or "Pending"
    if phase == "Bound":
        return _READY
    if phase == "Lost":
        return Readiness(False, f"{describe(claim)}: Lost (its PersistentVolume is gone)", failed=True)
    if wait_for_first_consumer:
        # Its storage class binds only when a pod uses it: waiting for Bound would wait forever for
        # a claim no pod mounts yet, and the pods that mount it are waited for anyway.
        return _READY
    return Readiness(False, f"{describe(claim)}: {phase} (waiting for a volume)")


def _deployment_readiness(deployment: Mapping[str, Any]) -> Readiness:
    name = describe(deployment)
    for condition in _list(_status(deployment).get("conditions")):
        if condition.get("type") == "Progressing" and condition.get("reason") == "ProgressDeadlineExceeded":
            detail = condition.get("message") or "progress deadline exceeded"
            return Readiness(False, f"{name}: {detail}", failed=True)
        if condition.get("type") == "ReplicaFailure" and condition.get("status") == "True":
            detail = condition.get("message") or condition.get("reason") or "cannot create pods"
            return Readiness(False, f"{name}: {detail}", failed=True)
    stale = _observed(deployment)
    if stale is not None:
        return stale
    status = _status(deployment)
    wanted = _int(_spec(deployment).get("replicas"), 1)
    updated = _int(status.get("updatedReplicas"))
    total = _int(status.get("replicas"))
    available = _int(status.get("availableReplicas"))
    if updated < wanted:
        return Readiness(False, f"{name}: {updated} of {wanted} replicas updated")
    if total > updated:
        return Readiness(False, f"{name}: {total - updated} old replicas are being replaced")
    if available < updated:
        return Readiness(False, f"{name}: {available} of {updated} replicas available")
    return _READY


def _statefulset_readiness(statefulset: Mapping[str, Any]) -> Readiness:
    name = describe(statefulset)
    stale = _observed(statefulset)
    if stale is not None:
        return stale
    spec, status = _spec(statefulset), _status(statefulset)
    wanted = _int(spec.get("replicas"), 1)
    ready = _int(status.get("readyReplicas"))
    if ready < wanted:
        return Readiness(False, f"{name}: {ready} of {wanted} replicas ready")
    strategy = spec.get("updateStrategy")
    strategy = strategy if isinstance(strategy, Mapping) else {}
    if strategy.get("type", "RollingUpdate") == "RollingUpdate":
        rolling = strategy.get("rollingUpdate")
        partition = _int(rolling.get("partition")) if isinstance(rolling, Mapping) else 0
        updated = _int(status.get("updatedReplicas"))
        if partition > 0 and updated < wanted - partition:
            return Readiness(False, f"{name}: {updated} of {wanted - partition} replicas updated")
        current, update = status.get("currentRevision"), status.get("updateRevision")
        if partition == 0 and current and update and current != update:
            return Readiness(
                False, f"{name}: rolling update to revision {update}: {updated} of {wanted} updated"
            )
    if "availableReplicas" in status and _int(status.get("availableReplicas")) < wanted:
        return Readiness(
            False, f"{name}: {_int(status.get('availableReplicas'))} of {wanted} replicas available"
        )
    return _READY


def _job_readiness(job: Mapping[str, Any]) -> Readiness:
    # A Job is not waited for to complete (it may train for days); only a failed Job fails the run.
    failed = _condition(job, "Failed")
    if failed is not None and failed.get("status") == "True":
        detail = ": ".join(str(p) for p in (failed.get("reason"), failed.get("message")) if p)
        return Readiness(False, f"{describe(job)} failed" + (f": {detail}" if detail else ""), failed=True)
    return _READY


WAITED_KINDS = frozenset({"Namespace", "PersistentVolumeClaim", "Pod", "Deployment", "StatefulSet", "Job"})


def readiness(obj: Mapping[str, Any], *, wait_for_first_consumer: bool = False) -> Readiness:
    """Whether an object as the API server serves it is ready. Kinds that have no readiness of
    their own (ConfigMap, Service, ...; see WAITED_KINDS) are ready once they exist.
    `wait_for_first_consumer`: a PersistentVolumeClaim's storage class binds only when a pod uses it.
    """
    kind = obj.get("kind")
    if kind == "Namespace":
        return _namespace_readiness(obj)
    if kind == "PersistentVolumeClaim":
        return _pvc_readiness(obj, wait_for_first_consumer)
    if kind == "Pod":
        return _pod_readiness(obj)
    if kind == "Deployment":
        return _deployment_readiness(obj)
    if kind == "StatefulSet":
        return _statefulset_readiness(obj)
    if kind == "Job":
        return _job_readiness(obj)
    return _READY


# ---------------------------------------------------------------------------------------- health

_CONTROLLERS_THAT_REPLACE = frozenset(
    {"ReplicaSet", "StatefulSet", "DaemonSet", "Job", "ReplicationController"}
)


def counts(pod: Mapping[str, Any]) -> bool:
    """Whether a pod says something about its instance's health. Not a pod being deleted, nor a
    finished (Failed or Succeeded) pod of a controller: the controller replaces it (an evicted pod
    of a Deployment stays Failed until garbage-collected while its replacement runs), and a Job
    reports its own failure."""
    if _metadata(pod).get("deletionTimestamp"):
        return False
    if _status(pod).get("phase") in ("Failed", "Succeeded"):
        owners = _list(_metadata(pod).get("ownerReferences"))
        return not any(o.get("controller") and o.get("kind") in _CONTROLLERS_THAT_REPLACE for o in owners)
    return True


_MAX_REPORTED = 3


def instance_health(pods: Iterable[Mapping[str, Any]]) -> Observed | None:
    """The health of an instance from its pods: FAILED with the problems (the first few, by pod
    name), READY when every pod is ready, PROGRESSING otherwise; None when no pod counts."""
    counted = sorted(
        (pod for pod in pods if counts(pod)),
        key=lambda p: (str(_metadata(p).get("namespace") or ""), str(_metadata(p).get("name") or "")),
    )
    if not counted:
        return None
    problems = [problem for pod in counted if (problem := pod_problem(pod)) is not None]
    if problems:
        more = len(problems) - _MAX_REPORTED
        return Observed(
            Phase.FAILED, "; ".join(problems[:_MAX_REPORTED]) + (f"; and {more} more" if more > 0 else "")
        )
    waiting = [r.message for pod in counted if not (r := _pod_readiness(pod)).ready]
    if waiting:
        return Observed(Phase.PROGRESSING, waiting[0])
    return Observed(Phase.READY)


# ----------------------------------------------------------------------------------------- errors

_REASONS = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    409: "Conflict",
    410: "Gone",
    415: "Unsupported Media Type",
    422: "Unprocessable Entity",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    504: "Gateway Timeout",
}
_MAX_BODY_TEXT = 500


def _parse_status(body: str | bytes | None) -> Mapping[str, Any] | None:
    if not body:
        return None
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    return parsed if isinstance(parsed, dict) else None


def status_text(body: str | bytes | None) -> str:
    """A Status's message with the causes it does not already spell out ("spec.replicas: Invalid
    value: -1: must be greater than or equal to 0"), or the start of a body that is no Status."""
    status = _parse_status(body)
    if status is None:
        text = body.decode(errors="replace") if isinstance(body, bytes) else (body or "")
        text = " ".join(text.split())
        return text[:_MAX_BODY_TEXT] + ("..." if len(text) > _MAX_BODY_TEXT else "")
    message = str(status.get("message") or status.get("reason") or "").strip()
    details = status.get("details")
    causes = _list(details.get("causes")) if isinstance(details, Mapping) else []
    extra: list[str] = []
    for cause in causes:
        text = ": ".join(str(p) for p in (cause.get("field"), cause.get("message")) if p)
        if text and text not in message and cause.get("message", "") not in message:
            extra.append(text)
    return "; ".join([part for part in (message, *extra) if part])


def _terminating(body: str | bytes | None) -> bool:
    status = _parse_status(body) or {}
    details = status.get("details")
    causes = _list(details.get("causes")) if isinstance(details, Mapping) else []
    return any(c.get("reason") == "NamespaceTerminating" for c in causes) or (
        "because it is being terminated" in str(status.get("message") or "")
    )


def api_error(status: int, body: str | bytes | None, action: str) -> DriverError:
    """The error of a request the API server answered with `status` (not 2xx).

    5xx, 429 and 410 are temporary (the worker retries the run), as is a 403 for a namespace that
    is still terminating (a destroy not finished yet). Other 4xx are permanent: retrying the same
    request cannot help. `action` says what was being done ("applying deployment web").
    """
    text = status_text(body) or _REASONS.get(status, "")
    code = f"HTTP {status} {_REASONS.get(status, '')}".rstrip()
    if status == 403 and _terminating(body):
        return TemporaryError(
            f"{action}: {text} (a previous destroy has not finished; try again when it has)"
        )
    if status >= 500 or status in (410, 429):
        return TemporaryError(f"{action}: the API server answered {code}: {text}")
    if status == 401:
        return PermanentError(
            f"{action}: the API server did not accept the credentials ({code}: {text}); check the "
            "kubeconfig's user (an expired token, a client certificate of another cluster)"
        )
    if status == 403:
        return PermanentError(
            f"{action}: {text} ({code}); the kubeconfig's user needs this permission (RBAC)"
        )
    return PermanentError(f"{action}: {text} ({code})")


def unreachable(host: str, detail: str, action: str) -> TemporaryError:
    return TemporaryError(f"{action}: cannot reach the Kubernetes API server at {host}: {detail}")


# ------------------------------------------------------------------------------------------ nodes

# The device plugins' extended resources (gpu-operator, AMD, Intel, Huawei Ascend).
_GPU_LIKE = re.compile(r"gpu|ascend|^mig-", re.IGNORECASE)

# Where GPU feature discovery and the clouds put the GPU model, most specific first.
GPU_MODEL_LABELS: tuple[str, ...] = (
    "nvidia.com/gpu.product",
    "amd.com/gpu.product-name",
    "beta.amd.com/gpu.product-name",
    "gpu.intel.com/product",
    "cloud.google.com/gke-accelerator",
    "k8s.amazonaws.com/accelerator",
    "accelerator",
)


def is_gpu_resource(name: str) -> bool:
    """A GPU-like extended resource: the known ones, and any "<domain>/<name>" whose name says gpu,
    ascend or a MIG slice (nvidia.com/mig-1g.10gb, nvidia.com/gpu.shared)."""
    if name in KNOWN_GPU_RESOURCES:
        return True
    domain, slash, rest = name.partition("/")
    return bool(slash and domain and _GPU_LIKE.search(rest))


def _whole(quantity: object) -> int:
    try:
        return int(parse_quantity(str(quantity)).to_integral_value(rounding=ROUND_FLOOR))
    except (ValueError, ArithmeticError):
        return 0


def gpu_resources(capacity: Mapping[str, Any]) -> dict[str, int]:
    """The GPU-like extended resources of a node's capacity that it has any of."""
    found = {name: _whole(value) for name, value in capacity.items() if is_gpu_resource(str(name))}
    return {name: count for name, count in sorted(found.items()) if count > 0}


def node_info(node: Mapping[str, Any]) -> NodeInfo:
    """A Node object (GET /api/v1/nodes) as a NodeInfo."""
    status = _status(node)
    allocatable = status.get("allocatable")
    allocatable = allocatable if isinstance(allocatable, Mapping) else {}
    capacity = status.get("capacity")
    capacity = capacity if isinstance(capacity, Mapping) else {}
    labels = _metadata(node).get("labels")
    labels = labels if isinstance(labels, Mapping) else {}
    model = next((str(labels[key]) for key in GPU_MODEL_LABELS if labels.get(key)), None)
    ready = _condition(node, "Ready")
    return NodeInfo(
        name=str(_metadata(node).get("name") or ""),
        cpu=str(allocatable.get("cpu") or capacity.get("cpu") or "0"),
        memory=str(allocatable.get("memory") or capacity.get("memory") or "0"),
        gpus=gpu_resources({**capacity, **{k: v for k, v in allocatable.items() if k not in capacity}}),
        gpu_model=model,
        ready=ready is not None and ready.get("status") == "True",
    )


# ------------------------------------------------------------------------------------- rollouts

REVISION_ANNOTATION = "deployment.kubernetes.io/revision"


def _controller(obj: Mapping[str, Any], kind: str) -> str | None:
    owners = _list(_metadata(obj).get("ownerReferences"))
    owner = next((o for o in owners if o.get("controller") and o.get("kind") == kind), None)
    return str(owner.get("name")) if owner is not None else None


def _revision(obj: Mapping[str, Any]) -> str | None:
    annotations = _metadata(obj).get("annotations")
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
        (str(_metadata(d).get("namespace") or ""), str(_metadata(d).get("name") or "")): _revision(d)
        for d in deployments
    }
    stale: set[tuple[str, str]] = set()
    for replicaset in replicasets:
        namespace = str(_metadata(replicaset).get("namespace") or "")
        owner = _controller(replicaset, "Deployment")
        want, have = wanted.get((namespace, owner or "")), _revision(replicaset)
        if owner is not None and want and have and want != have:
            stale.add((namespace, str(_metadata(replicaset).get("name") or "")))
    return [
        pod
        for pod in pods
        if (str(_metadata(pod).get("namespace") or ""), _controller(pod, "ReplicaSet") or "") not in stale
    ]


# ---------------------------------------------------------------------------------------- drift


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
