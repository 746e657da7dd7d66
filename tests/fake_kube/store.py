"""The state of the fake cluster and the API semantics of every verb.

Objects are kept per kind, keyed by (namespace, name). Every write bumps one cluster-wide
resourceVersion (a counter, sent as a string), is recorded in a bounded event history (for
watches that resume from a resourceVersion) and is offered to the open watches and to the
controllers. All methods run on the server's event loop: they are synchronous, so each request
is atomic with respect to the others.

The verbs follow the Kubernetes API conventions: create (201), get, list (label and field
selectors, limit/continue), replace (PUT, resourceVersion precondition), patch (server-side apply,
JSON merge, strategic merge, JSON patch), delete (propagationPolicy, finalizers, graceful pod
deletion, Terminating namespaces), deletecollection and watch.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import yaml

from tests.fake_kube import admission, errors, merge, selectors, validation
from tests.fake_kube.errors import ApiError
from tests.fake_kube.resources import RESOURCE_TYPES, ResourceType, resource_for
from tests.fake_kube.schema import Cause, kind_schema, schema_causes
from tests.fake_kube.util import Obj, deep, get_path, now, random_suffix, strip_nulls

_SERVER_METADATA = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "selfLink",
)
APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"

Listener = Callable[[ResourceType, str, Obj, Obj | None], None]


@dataclass(frozen=True)
class WatchEvent:
    rv: int
    rt_id: str
    type: str  # ADDED, MODIFIED, DELETED
    obj: Obj
    old: Obj | None


class Watcher:
    """One open watch: a queue of events for one kind, namespace and selectors. None in the
    queue ends the stream."""

    def __init__(
        self,
        rt: ResourceType,
        namespace: str | None,
        labels: list[selectors.Requirement],
        fields: list[selectors.FieldRequirement],
    ) -> None:
        self.rt = rt
        self.namespace = namespace
        self.labels = labels
        self.fields = fields
        self.queue: asyncio.Queue[Obj | None] = asyncio.Queue()
        self.closed = False

    def matches(self, obj: Obj) -> bool:
        metadata = obj.get("metadata") or {}
        if self.namespace is not None and metadata.get("namespace") != self.namespace:
            return False
        return selectors.matches(self.labels, metadata.get("labels")) and selectors.fields_match(
            self.fields, obj
        )

    def offer(self, event: WatchEvent) -> None:
        if self.closed or event.rt_id != self.rt.id:
            return
        now_matches = self.matches(event.obj)
        before = event.old is not None and self.matches(event.old)
        kind = event.type
        if kind == "MODIFIED":
            if now_matches and not before:
                kind = "ADDED"
            elif before and not now_matches:
                kind = "DELETED"
            elif not now_matches:
                return
        elif not now_matches:
            return
        self.queue.put_nowait({"type": kind, "object": event.obj})

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.queue.put_nowait(None)


def _key(obj: Obj) -> tuple[str, str]:
    metadata = obj.get("metadata") or {}
    return (metadata.get("namespace") or "", metadata.get("name") or "")


def _without_times(obj: Obj) -> Obj:
    copy = deep(obj)
    for entry in get_path(copy, "metadata", "managedFields") or []:
        entry.pop("time", None)
    return copy


def _spec_part(obj: Obj) -> Obj:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


class Store:
    def __init__(self, history_size: int = 1000) -> None:
        self.objects: dict[str, dict[tuple[str, str], Obj]] = {item.id: {} for item in RESOURCE_TYPES}
        self.rv = 0
        self.history: deque[WatchEvent] = deque(maxlen=history_size)
        self.compacted_rv = 0
        self.watchers: set[Watcher] = set()
        self.listeners: list[Listener] = []
        self.node_ports: set[int] = set()
        self._next_ip = 10
        self.problems: list[str] = []  # schema violations in objects the fake wrote itself

    # Reading ---------------------------------------------------------------------------------

    def find(self, rt: ResourceType, namespace: str | None, name: str) -> Obj | None:
        return self.objects[rt.id].get((namespace or "", name) if rt.namespaced else ("", name))

    def items(self, rt: ResourceType, namespace: str | None = None) -> list[Obj]:
        found = self.objects[rt.id]
        keys = sorted(found)
        return [found[k] for k in keys if namespace is None or k[0] == namespace]

    def namespace_objects(self, namespace: str) -> list[tuple[ResourceType, Obj]]:
        return [
            (item, obj) for item in RESOURCE_TYPES if item.namespaced for obj in self.items(item, namespace)
        ]

    def dependents(self, uid: str) -> list[tuple[ResourceType, Obj]]:
        found = []
        for item in RESOURCE_TYPES:
            for obj in self.objects[item.id].values():
                refs = get_path(obj, "metadata", "ownerReferences") or []
                if any(ref.get("uid") == uid for ref in refs):
                    found.append((item, obj))
        return found

    def uid_exists(self, uid: str) -> bool:
        return any(
            get_path(obj, "metadata", "uid") == uid for objs in self.objects.values() for obj in objs.values()
        )

    def get(self, rt: ResourceType, namespace: str | None, name: str) -> Obj:
        obj = self.find(rt, namespace, name)
        if obj is None:
            raise errors.not_found(rt, name)
        return deep(obj)

    def list_objects(
        self,
        rt: ResourceType,
        namespace: str | None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> Obj:
        labels, fields = self._selectors(rt, label_selector, field_selector)
        start: tuple[str, str] | None = None
        if continue_token:
            try:
                token = json.loads(base64.urlsafe_b64decode(continue_token.encode()))
                start = (token["start"][0], token["start"][1])
                token_rv = int(token["rv"])
            except (ValueError, KeyError, TypeError, binascii.Error) as error:
                raise errors.bad_request(f"continue key is not valid: {error}") from error
            if token_rv < self.compacted_rv:
                raise errors.expired(
                    "The provided continue parameter is too old to display a consistent list result. You "
                    "can start a new list without the continue parameter, or use the continue token in "
                    "this response to retrieve the remainder of the results."
                )
        selected = []
        for obj in self.items(rt, namespace):
            if start is not None and _key(obj) <= start:
                continue
            if selectors.matches(labels, get_path(obj, "metadata", "labels")) and selectors.fields_match(
                fields, obj
            ):
                selected.append(obj)
        metadata: Obj = {"resourceVersion": str(self.rv)}
        if limit and len(selected) > limit:
            remaining = len(selected) - limit
            selected = selected[:limit]
            token = {"rv": self.rv, "start": list(_key(selected[-1]))}
            metadata["continue"] = base64.urlsafe_b64encode(json.dumps(token).encode()).decode()
            metadata["remainingItemCount"] = remaining
        items = []
        for obj in selected:
            item = deep(obj)
            item.pop("apiVersion", None)
            item.pop("kind", None)
            items.append(item)
        return {"kind": f"{rt.kind}List", "apiVersion": rt.api_version, "metadata": metadata, "items": items}

    def _selectors(
        self, rt: ResourceType, label_selector: str | None, field_selector: str | None
    ) -> tuple[list[selectors.Requirement], list[selectors.FieldRequirement]]:
        try:
            return (
                selectors.parse_label_selector(label_selector),
                selectors.parse_field_selector(field_selector, rt.kind),
            )
        except selectors.SelectorError as error:
            raise errors.bad_request(str(error)) from error

    # Committing ------------------------------------------------------------------------------

    def _commit(self, rt: ResourceType, kind: str, obj: Obj, old: Obj | None) -> Obj:
        self.rv += 1
        obj["metadata"]["resourceVersion"] = str(self.rv)
        key = _key(obj)
        if kind == "DELETED":
            self.objects[rt.id].pop(key, None)
        else:
            self.objects[rt.id][key] = obj
        if self.history.maxlen is not None and len(self.history) == self.history.maxlen:
            self.compacted_rv = self.history[0].rv
        event = WatchEvent(self.rv, rt.id, kind, obj, old)
        self.history.append(event)
        for watcher in list(self.watchers):
            watcher.offer(event)
        for listener in self.listeners:
            listener(rt, kind, obj, old)
        return obj

    def compact(self) -> None:
        """Forgets the event history: watches from any earlier resourceVersion get 410 Expired."""
        self.history.clear()
        self.compacted_rv = self.rv

    # Admission -------------------------------------------------------------------------------

    def _check_type(self, rt: ResourceType, body: Obj) -> None:
        api_version, kind = body.get("apiVersion"), body.get("kind")
        if api_version is not None and api_version != rt.api_version:
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API version ({rt.api_version})"
            )
        if kind is not None and kind != rt.kind:
            raise errors.bad_request(
                f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})"
            )
        body["apiVersion"], body["kind"] = rt.api_version, rt.kind

    def _check_namespace(self, rt: ResourceType, namespace: str | None, body: Obj) -> None:
        metadata = body.setdefault("metadata", {})
        if not rt.namespaced:
            metadata.pop("namespace", None)
            return
        given = metadata.get("namespace")
        if given and given != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        metadata["namespace"] = namespace

    def _admit_namespace(self, rt: ResourceType, namespace: str | None, name: str) -> None:
        """NamespaceLifecycle: no new objects in a missing or Terminating namespace."""
        if not rt.namespaced or namespace is None:
            return
        ns_rt = resource_for("v1", "Namespace")
        ns = self.find(ns_rt, None, namespace)
        if ns is None:
            raise errors.not_found(ns_rt, namespace)
        if get_path(ns, "metadata", "deletionTimestamp"):
            why = f"unable to create new content in namespace {namespace} because it is being terminated"
            raise errors.forbidden(
                rt,
                name,
                why,
                [{"reason": "NamespaceTerminating", "message": why, "field": "metadata.namespace"}],
            )

    def _mutate(self, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        """Defaulting and mutating admission (in place)."""
        admission.apply_defaults(rt.kind, obj)
        namespace = get_path(obj, "metadata", "namespace")
        if rt.kind == "Pod" and old is None:
            limit_ranges = self.items(resource_for("v1", "LimitRange"), namespace)
            self._admission(rt, obj, lambda: admission.limit_ranger(obj, limit_ranges))
        if rt.kind == "Service":
            self._allocate_service(obj, old)
        if rt.kind == "Pod" and isinstance(obj.get("status"), dict) and old is None:
            obj["status"]["qosClass"] = admission.qos_class(obj.get("spec") or {})

    def _admission(self, rt: ResourceType, obj: Obj, check: Callable[[], None]) -> None:
        try:
            check()
        except admission.AdmissionDenied as denied:
            metadata = obj.get("metadata") or {}
            name = metadata.get("name") or metadata.get("generateName") or ""
            raise errors.forbidden(rt, name, str(denied)) from denied

    def _admit_quota(self, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        namespace = get_path(obj, "metadata", "namespace")
        if not rt.namespaced or namespace is None:
            return
        quotas = self.items(resource_for("v1", "ResourceQuota"), namespace)
        if not quotas:
            return
        new_usage = admission.usage(rt.kind, rt.plural, rt.group, obj)
        old_usage = admission.usage(rt.kind, rt.plural, rt.group, old) if old is not None else {}
        delta = {k: v - old_usage.get(k, Decimal(0)) for k, v in new_usage.items()}
        if not any(v > 0 for v in delta.values()):
            return
        used = self.namespace_usage(namespace)
        pod_spec = obj.get("spec") if rt.kind == "Pod" and old is None else None
        for quota in quotas:
            self._admission(
                rt, obj, lambda q=quota: admission.check_quota(q, rt.kind, "", delta, used, pod_spec)
            )

    def namespace_usage(self, namespace: str) -> dict[str, Decimal]:
        used: dict[str, Decimal] = {}
        for item, obj in self.namespace_objects(namespace):
            if get_path(obj, "metadata", "deletionTimestamp") and item.kind != "Pod":
                continue
            for key, value in admission.usage(item.kind, item.plural, item.group, obj).items():
                used[key] = used.get(key, Decimal(0)) + value
        return used

    def _allocate_service(self, obj: Obj, old: Obj | None) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        old_spec = (old or {}).get("spec") or {}
        if spec.get("type") != "ExternalName":
            if not spec.get("clusterIP"):
                spec["clusterIP"] = old_spec.get("clusterIP") or self._new_cluster_ip()
            spec.setdefault("clusterIPs", [spec["clusterIP"]])
        old_ports = {
            (p.get("port"), p.get("protocol", "TCP")): p.get("nodePort") for p in old_spec.get("ports") or []
        }
        mine = {p for p in old_ports.values() if p}
        for port in spec.get("ports") or []:
            if spec.get("type") not in ("NodePort", "LoadBalancer"):
                continue
            wanted = port.get("nodePort")
            if wanted:
                if wanted in self.node_ports and wanted not in mine:
                    raise errors.invalid(
                        resource_for("v1", "Service"),
                        get_path(obj, "metadata", "name") or "",
                        [
                            Cause(
                                "FieldValueInvalid",
                                f"Invalid value: {wanted}: provided port is already allocated",
                                "spec.ports[].nodePort",
                            )
                        ],
                    )
                continue
            previous = old_ports.get((port.get("port"), port.get("protocol", "TCP")))
            port["nodePort"] = previous or self._free_node_port()

    def _new_cluster_ip(self) -> str:
        self._next_ip += 1
        return f"10.96.{self._next_ip // 250}.{self._next_ip % 250 + 1}"

    def _free_node_port(self) -> int:
        for port in range(30000, 32768):
            if port not in self.node_ports:
                self.node_ports.add(port)
                return port
        raise ApiError(500, "range is full: no free node port in 30000-32767")

    def _release_service(self, obj: Obj) -> None:
        for port in get_path(obj, "spec", "ports") or []:
            self.node_ports.discard(port.get("nodePort"))

    def _claim_node_ports(self, obj: Obj) -> None:
        for port in get_path(obj, "spec", "ports") or []:
            if port.get("nodePort"):
                self.node_ports.add(port["nodePort"])

    def _validate(self, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        causes = validation.validate(rt, obj, old)
        if causes:
            raise errors.invalid(rt, get_path(obj, "metadata", "name") or "", causes)

    # Create ----------------------------------------------------------------------------------

    def create(
        self,
        rt: ResourceType,
        namespace: str | None,
        body: Obj,
        *,
        manager: str,
        dry_run: bool = False,
        managed_from: Obj | None = None,
    ) -> Obj:
        if rt.read_only:
            raise errors.method_not_allowed()
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        body = strip_nulls(deep(body))
        self._check_type(rt, body)
        self._check_namespace(rt, namespace, body)
        metadata = body["metadata"]
        name = metadata.get("name") or ""
        self._admit_namespace(rt, namespace, name or metadata.get("generateName", ""))
        if not name and not metadata.get("generateName"):
            raise errors.invalid(
                rt,
                "",
                [
                    Cause(
                        "FieldValueRequired",
                        "Required value: name or generateName is required",
                        "metadata.name",
                    )
                ],
            )
        if name and self.find(rt, namespace, name) is not None:
            raise errors.already_exists(rt, name)
        obj = self._new_object(rt, body)
        self._mutate(rt, obj, None)
        # Admission sees the generateName prefix: 'pods "web-5d9c7-" is forbidden: exceeded quota'.
        self._admit_quota(rt, obj, None)
        if not name:
            name = self._generate_name(rt, namespace, metadata["generateName"])
            obj["metadata"]["name"] = name
        self._validate(rt, obj, None)
        if managed_from is not None:
            obj["metadata"]["managedFields"] = get_path(managed_from, "metadata", "managedFields") or []
        elif not get_path(body, "metadata", "managedFields"):
            merge.record_update(
                None,
                obj,
                manager=manager,
                api_version=rt.api_version,
                time=now(),
                root=kind_schema(rt.api_version, rt.kind),
                has_status=rt.has_status,
            )
        if dry_run:
            return deep(obj)
        if rt.kind == "Service":
            self._claim_node_ports(obj)
        return deep(self._commit(rt, "ADDED", obj, None))

    def _generate_name(self, rt: ResourceType, namespace: str | None, prefix: str) -> str:
        prefix = prefix[:58]
        while True:
            name = prefix + random_suffix()
            if self.find(rt, namespace, name) is None:
                return name

    def _new_object(self, rt: ResourceType, body: Obj) -> Obj:
        obj = deep(body)
        metadata = obj.setdefault("metadata", {})
        for field in _SERVER_METADATA:
            metadata.pop(field, None)
        metadata["uid"] = str(uuid.uuid4())
        metadata["creationTimestamp"] = now()
        if rt.generation:
            metadata["generation"] = 1
        if rt.has_status:
            status = admission.initial_status(rt.kind, obj)
            if status is None:
                obj.pop("status", None)
            else:
                obj["status"] = status
        return obj

    # Update ----------------------------------------------------------------------------------

    def replace(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        body: Obj,
        *,
        manager: str,
        subresource: str = "",
        dry_run: bool = False,
    ) -> Obj:
        if rt.read_only:
            raise errors.method_not_allowed()
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        body = strip_nulls(deep(body))
        old = self.find(rt, namespace, name)
        if old is None:
            raise errors.not_found(rt, name)
        if subresource == "scale":
            return self._scale(rt, old, body, manager, dry_run)
        self._check_type(rt, body)
        self._check_namespace(rt, namespace, body)
        body_name = get_path(body, "metadata", "name")
        if body_name and body_name != name:
            raise errors.bad_request(
                f"the name of the object ({body_name}) does not match the name on the URL ({name})"
            )
        self._check_preconditions(rt, old, body)
        new = self._merge_write(rt, old, body, subresource)
        return self._update(rt, old, new, manager=manager, subresource=subresource, dry_run=dry_run)

    def _check_preconditions(self, rt: ResourceType, old: Obj, body: Obj) -> None:
        wanted_rv = get_path(body, "metadata", "resourceVersion")
        if wanted_rv and wanted_rv != get_path(old, "metadata", "resourceVersion"):
            raise errors.modified(rt, get_path(old, "metadata", "name"))
        wanted_uid = get_path(body, "metadata", "uid")
        if wanted_uid and wanted_uid != get_path(old, "metadata", "uid"):
            raise errors.conflict(
                rt,
                get_path(old, "metadata", "name"),
                f"Precondition failed: UID in precondition: {wanted_uid}, UID in object meta: "
                f"{get_path(old, 'metadata', 'uid')}",
            )

    def _merge_write(self, rt: ResourceType, old: Obj, body: Obj, subresource: str) -> Obj:
        """The new object of a write: the body with the server's metadata (and, for writes to the
        main resource, the old status), or the old object with the body's status."""
        if subresource == "status":
            new = deep(old)
            if "status" in body:
                new["status"] = deep(body["status"])
            else:
                new.pop("status", None)
            return new
        if subresource == "finalize":
            new = deep(old)
            new.setdefault("spec", {})["finalizers"] = list(get_path(body, "spec", "finalizers") or [])
            return new
        new = deep(body)
        metadata = new.setdefault("metadata", {})
        for field in _SERVER_METADATA:
            if field in old["metadata"]:
                metadata[field] = old["metadata"][field]
            else:
                metadata.pop(field, None)
        if "managedFields" not in metadata and "managedFields" in old["metadata"]:
            metadata["managedFields"] = deep(old["metadata"]["managedFields"])
        if rt.has_status:
            if "status" in old:
                new["status"] = deep(old["status"])
            else:
                new.pop("status", None)
        return new

    def _update(
        self,
        rt: ResourceType,
        old: Obj,
        new: Obj,
        *,
        manager: str,
        subresource: str = "",
        dry_run: bool = False,
        record: bool = True,
    ) -> Obj:
        name = get_path(old, "metadata", "name")
        if subresource not in ("status", "finalize"):
            self._mutate(rt, new, old)
        if get_path(old, "metadata", "deletionTimestamp"):
            added = set(get_path(new, "metadata", "finalizers") or []) - set(
                get_path(old, "metadata", "finalizers") or []
            )
            if added:
                raise errors.invalid(
                    rt,
                    name,
                    [
                        Cause(
                            "FieldValueForbidden",
                            "Forbidden: no new finalizers can be added if the object is being deleted, found new "
                            f"finalizers {json.dumps(sorted(added))}",
                            "metadata.finalizers",
                        )
                    ],
                )
        if rt.generation and _spec_part(new) != _spec_part(old):
            new["metadata"]["generation"] = int(get_path(old, "metadata", "generation") or 0) + 1
        self._validate(rt, new, old)
        if subresource == "" and rt.kind != "Pod":
            self._admit_quota(rt, new, old)
        if record:
            merge.record_update(
                old,
                new,
                manager=manager,
                api_version=rt.api_version,
                time=now(),
                root=kind_schema(rt.api_version, rt.kind),
                subresource=subresource,
                has_status=rt.has_status,
            )
        if _without_times(new) == _without_times(old):
            return deep(old)  # a no-op update does not change the resourceVersion
        if dry_run:
            return deep(new)
        if rt.kind == "Service":
            self._release_service(old)
            self._claim_node_ports(new)
        committed = self._commit(rt, "MODIFIED", new, old)
        result = deep(committed)
        self.finalize_if_done(rt, committed)
        return result

    def _scale(self, rt: ResourceType, old: Obj, body: Obj, manager: str, dry_run: bool) -> Obj:
        replicas = get_path(body, "spec", "replicas")
        if not isinstance(replicas, int) or replicas < 0:
            raise errors.invalid(
                rt,
                get_path(old, "metadata", "name"),
                [
                    Cause(
                        "FieldValueInvalid",
                        f"Invalid value: {replicas}: must be greater than or equal to 0",
                        "spec.replicas",
                    )
                ],
            )
        new = deep(old)
        new["spec"]["replicas"] = replicas
        updated = self._update(rt, old, new, manager=manager, dry_run=dry_run)
        return self.scale_of(rt, updated)

    def scale_of(self, rt: ResourceType, obj: Obj) -> Obj:
        metadata = obj["metadata"]
        requirements = selectors.from_label_selector(get_path(obj, "spec", "selector")) or []
        selector = ",".join(
            f"{r.key}={r.values[0]}" if r.operator == "=" else f"{r.key} {r.operator} ({','.join(r.values)})"
            for r in requirements
        )
        return {
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": {
                k: metadata[k]
                for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                if k in metadata
            },
            "spec": {"replicas": get_path(obj, "spec", "replicas", default=0)},
            "status": {"replicas": get_path(obj, "status", "replicas", default=0), "selector": selector},
        }

    # Patch -----------------------------------------------------------------------------------

    def patch(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        raw: bytes,
        content_type: str,
        *,
        manager: str | None,
        force: bool | None,
        subresource: str = "",
        dry_run: bool = False,
    ) -> tuple[int, Obj]:
        if rt.read_only:
            raise errors.method_not_allowed()
        media = content_type.split(";")[0].strip().lower()
        if media == APPLY:
            if not manager:
                raise errors.invalid_options(
                    "PatchOptions",
                    [
                        Cause(
                            "FieldValueRequired",
                            "Required value: is required for apply patch",
                            "fieldManager",
                        )
                    ],
                )
            applied = _parse_body(raw, yaml_ok=True)
            return self.apply(
                rt,
                namespace,
                name,
                applied,
                manager=manager,
                force=bool(force),
                subresource=subresource,
                dry_run=dry_run,
            )
        if media not in (MERGE, STRATEGIC, JSON_PATCH):
            raise ApiError(
                415,
                f"the body of the request was in an unknown format - accepted media types include: {JSON_PATCH}, "
                f"{MERGE}, {APPLY}, {STRATEGIC}",
            )
        if force is not None:
            raise errors.invalid_options(
                "PatchOptions",
                [
                    Cause(
                        "FieldValueForbidden", "Forbidden: may not be specified for non-apply patch", "force"
                    )
                ],
            )
        patch = _parse_body(raw, yaml_ok=False)
        old = self.find(rt, namespace, name)
        if old is None:
            raise errors.not_found(rt, name)
        current = self.scale_of(rt, old) if subresource == "scale" else deep(old)
        try:
            if media == JSON_PATCH:
                patched = merge.json_patch(current, patch)
            elif media == MERGE:
                patched = merge.json_merge_patch(current, patch)
            else:
                root = None if subresource == "scale" else kind_schema(rt.api_version, rt.kind)
                patched = merge.strategic_merge_patch(current, patch, root)
        except merge.PatchError as error:
            raise ApiError(422 if "test" in str(error) else 400, str(error)) from error
        if not isinstance(patched, dict):
            raise errors.bad_request("the patched object is not a JSON object")
        if subresource == "scale":
            return 200, self._scale(rt, old, patched, manager or "unknown", dry_run)
        if subresource == "status":
            body = deep(old)
            body["status"] = patched.get("status")
            body["metadata"]["resourceVersion"] = get_path(patched, "metadata", "resourceVersion")
        else:
            body = patched
        body = strip_nulls(body)
        self._check_type(rt, body)
        self._check_namespace(rt, namespace, body)
        self._check_preconditions(rt, old, body)
        new = self._merge_write(rt, old, body, subresource)
        return 200, self._update(
            rt, old, new, manager=manager or "unknown", subresource=subresource, dry_run=dry_run
        )

    def apply(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        applied: Any,
        *,
        manager: str,
        force: bool,
        subresource: str = "",
        dry_run: bool = False,
    ) -> tuple[int, Obj]:
        """Server-side apply: creates the object, or merges the manager's fields into it."""
        if not isinstance(applied, dict):
            raise errors.bad_request("the applied configuration must be an object")
        applied = strip_nulls(applied)
        api_version, kind = applied.get("apiVersion"), applied.get("kind")
        if not api_version or not kind:
            raise errors.bad_request(
                "error decoding patch: Object 'Kind' is missing"
                if not kind
                else "error decoding patch: apiVersion is missing"
            )
        self._check_type(rt, applied)
        applied_name = get_path(applied, "metadata", "name")
        if applied_name != name:
            raise errors.bad_request(
                f"the name of the object ({applied_name}) does not match the name on the URL ({name})"
            )
        self._check_namespace(rt, namespace, applied)
        root = kind_schema(rt.api_version, rt.kind)
        old = self.find(rt, namespace, name)
        if old is None:
            if subresource:
                raise errors.not_found(rt, name)
            self._admit_namespace(rt, namespace, name)
            merged = self._apply_merge(rt, None, applied, manager, force, subresource, root)
            merged["apiVersion"], merged["kind"] = rt.api_version, rt.kind
            merged.setdefault("metadata", {}).update({"name": name})
            if rt.namespaced:
                merged["metadata"]["namespace"] = namespace
            return 201, self.create(
                rt, namespace, merged, manager=manager, dry_run=dry_run, managed_from=merged
            )
        self._check_preconditions(rt, old, applied)
        merged = self._apply_merge(rt, old, applied, manager, force, subresource, root)
        if rt.has_status and subresource != "status":
            if "status" in old:
                merged["status"] = deep(old["status"])
            else:
                merged.pop("status", None)
        return 200, self._update(
            rt, old, merged, manager=manager, subresource=subresource, dry_run=dry_run, record=False
        )

    def _apply_merge(
        self,
        rt: ResourceType,
        old: Obj | None,
        applied: Obj,
        manager: str,
        force: bool,
        subresource: str,
        root: Any,
    ) -> Obj:
        try:
            return merge.apply(
                old,
                applied,
                manager=manager,
                api_version=rt.api_version,
                time=now(),
                root=root,
                force=force,
                subresource=subresource,
                has_status=rt.has_status,
            )
        except merge.ApplyConflict as conflict:
            count = len(conflict.conflicts)
            by_manager: dict[str, list[str]] = {}
            for other, path in conflict.conflicts:
                by_manager.setdefault(other, []).append(path)
            if count == 1:
                other, path = conflict.conflicts[0]
                text = f'Apply failed with 1 conflict: conflict with "{other}" using {rt.api_version}: {path}'
            else:
                parts = [
                    f'conflicts with "{other}" using {rt.api_version}:\n' + "\n".join(f"- {p}" for p in paths)
                    for other, paths in by_manager.items()
                ]
                text = f"Apply failed with {count} conflicts: " + "\n".join(parts)
            causes = [
                {
                    "reason": "FieldManagerConflict",
                    "message": f'conflict with "{other}" using {rt.api_version}',
                    "field": path,
                }
                for other, path in conflict.conflicts
            ]
            name = get_path(applied, "metadata", "name") or ""
            details: Obj = {"name": name}
            if rt.group:
                details["group"] = rt.group
            details["kind"] = rt.plural
            details["causes"] = causes
            raise ApiError(409, text, "Conflict", details) from conflict

    # Delete ----------------------------------------------------------------------------------

    def delete(
        self,
        rt: ResourceType,
        namespace: str | None,
        name: str,
        options: Obj,
        *,
        dry_run: bool = False,
    ) -> tuple[int, Obj]:
        if rt.read_only:
            raise errors.method_not_allowed()
        obj = self.find(rt, namespace, name)
        if obj is None:
            raise errors.not_found(rt, name)
        preconditions = options.get("preconditions") or {}
        if preconditions.get("uid") and preconditions["uid"] != get_path(obj, "metadata", "uid"):
            raise errors.conflict(
                rt,
                name,
                f"Precondition failed: UID in precondition: {preconditions['uid']}, UID in object meta: "
                f"{get_path(obj, 'metadata', 'uid')}",
            )
        if preconditions.get("resourceVersion") and preconditions["resourceVersion"] != get_path(
            obj, "metadata", "resourceVersion"
        ):
            raise errors.conflict(
                rt,
                name,
                f"Precondition failed: ResourceVersion in precondition: {preconditions['resourceVersion']}, "
                f"ResourceVersion in object meta: {get_path(obj, 'metadata', 'resourceVersion')}",
            )
        policy = options.get("propagationPolicy")
        if policy is None and options.get("orphanDependents") is not None:
            policy = "Orphan" if options["orphanDependents"] else "Background"
        if policy not in (None, "Foreground", "Background", "Orphan"):
            raise errors.invalid_options(
                "DeleteOptions",
                [
                    Cause(
                        "FieldValueNotSupported",
                        f'Unsupported value: "{policy}": supported values: "Foreground", "Background", "Orphan"',
                        "propagationPolicy",
                    )
                ],
            )
        if rt.kind == "Namespace":
            if name in ("default", "kube-system", "kube-public"):
                raise errors.forbidden(rt, name, "this namespace may not be deleted")
            if get_path(obj, "metadata", "deletionTimestamp"):
                raise errors.conflict(
                    rt,
                    name,
                    "The system is ensuring all content is removed from this namespace.  Upon completion, this "
                    "namespace will automatically be purged by the system.",
                )
        if dry_run:
            return 200, deep(obj)
        return self.delete_object(rt, obj, policy or "Background", options.get("gracePeriodSeconds"))

    def delete_object(
        self, rt: ResourceType, obj: Obj, policy: str = "Background", grace: int | None = None
    ) -> tuple[int, Obj]:
        """Starts (or finishes) the deletion of a stored object; returns the HTTP answer."""
        new = deep(obj)
        metadata = new["metadata"]
        finalizers = list(metadata.get("finalizers") or [])
        if policy == "Foreground" and "foregroundDeletion" not in finalizers:
            finalizers.append("foregroundDeletion")
        if policy == "Orphan" and "orphan" not in finalizers and rt.kind != "Namespace":
            finalizers.append("orphan")
        graceful = False
        if rt.kind == "Pod" and get_path(obj, "spec", "nodeName") and not admission.is_terminal(obj):
            if grace is None:
                grace = int(get_path(obj, "spec", "terminationGracePeriodSeconds", default=30))
            graceful = grace > 0
            if metadata.get("deletionGracePeriodSeconds") is not None:
                grace = min(grace, int(metadata["deletionGracePeriodSeconds"]))
                graceful = grace > 0
            if graceful:
                metadata["deletionGracePeriodSeconds"] = grace
        elif grace == 0 and rt.kind == "Pod":
            graceful = False
        pending = graceful or bool(finalizers) or rt.kind == "Namespace"
        if not pending:
            return self._remove(rt, obj)
        if finalizers:
            metadata["finalizers"] = finalizers
        if not metadata.get("deletionTimestamp"):
            metadata["deletionTimestamp"] = now()
        if rt.kind == "Namespace":
            new.setdefault("status", {})["phase"] = "Terminating"
        if _without_times(new) != _without_times(obj):
            self._commit(rt, "MODIFIED", new, obj)
        return 200, deep(new)

    def _remove(self, rt: ResourceType, obj: Obj) -> tuple[int, Obj]:
        gone = deep(obj)
        self._commit(rt, "DELETED", gone, obj)
        if rt.kind == "Service":
            self._release_service(obj)
        if rt.kind == "Pod":
            return 200, deep(gone)
        details: Obj = {"name": get_path(obj, "metadata", "name")}
        if rt.group:
            details["group"] = rt.group
        details["kind"] = rt.plural
        details["uid"] = get_path(obj, "metadata", "uid")
        return 200, {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "details": details,
        }

    def finalize_if_done(self, rt: ResourceType, obj: Obj) -> bool:
        """Removes an object being deleted once its finalizers (and a pod's grace) are done."""
        current = self.objects[rt.id].get(_key(obj))
        if current is None or not get_path(current, "metadata", "deletionTimestamp"):
            return False
        if get_path(current, "metadata", "finalizers"):
            return False
        if rt.kind == "Namespace" and get_path(current, "spec", "finalizers"):
            return False
        if rt.kind == "Pod" and get_path(current, "metadata", "deletionGracePeriodSeconds"):
            return False
        self._remove(rt, current)
        return True

    def delete_collection(
        self,
        rt: ResourceType,
        namespace: str | None,
        label_selector: str | None,
        field_selector: str | None,
        options: Obj,
        *,
        dry_run: bool = False,
    ) -> Obj:
        listed = self.list_objects(rt, namespace, label_selector, field_selector)
        for item in listed["items"]:
            self.delete(
                rt, item["metadata"].get("namespace"), item["metadata"]["name"], options, dry_run=dry_run
            )
        return listed

    # Watch -----------------------------------------------------------------------------------

    def watch(
        self,
        rt: ResourceType,
        namespace: str | None,
        label_selector: str | None,
        field_selector: str | None,
        resource_version: str | None,
        send_initial_events: bool = False,
    ) -> Watcher:
        labels, fields = self._selectors(rt, label_selector, field_selector)
        watcher = Watcher(rt, namespace, labels, fields)
        if resource_version in (None, "", "0") or send_initial_events:
            for obj in self.items(rt, namespace):
                if watcher.matches(obj):
                    watcher.queue.put_nowait({"type": "ADDED", "object": obj})
            if send_initial_events:
                watcher.queue.put_nowait(
                    {
                        "type": "BOOKMARK",
                        "object": {
                            "kind": rt.kind,
                            "apiVersion": rt.api_version,
                            "metadata": {
                                "resourceVersion": str(self.rv),
                                "annotations": {"k8s.io/initial-events-end": "true"},
                            },
                        },
                    }
                )
        else:
            try:
                since = int(str(resource_version))
            except ValueError as error:
                raise errors.bad_request(f"invalid resource version: {resource_version}") from error
            if since < self.compacted_rv:
                oldest = self.history[0].rv - 1 if self.history else self.compacted_rv
                watcher.queue.put_nowait(
                    {
                        "type": "ERROR",
                        "object": errors.status_object(
                            410, f"too old resource version: {since} ({oldest})", "Expired"
                        ),
                    }
                )
                watcher.queue.put_nowait(None)
                watcher.closed = True
                return watcher
            for event in self.history:
                if event.rv > since:
                    watcher.offer(event)
        self.watchers.add(watcher)
        return watcher

    def unwatch(self, watcher: Watcher) -> None:
        self.watchers.discard(watcher)
        watcher.closed = True

    def drop_watches(self) -> int:
        count = 0
        for watcher in list(self.watchers):
            watcher.close()
            self.watchers.discard(watcher)
            count += 1
        return count

    # Internal writes (controllers and test controls) -----------------------------------------

    def internal_update(
        self,
        rt: ResourceType,
        obj: Obj,
        mutate: Callable[[Obj], None],
        *,
        manager: str,
        subresource: str = "",
    ) -> Obj | None:
        """Writes a change a controller makes; no admission or validation. Returns the stored
        object, or None when it is gone."""
        current = self.objects[rt.id].get(_key(obj))
        if current is None:
            return None
        new = deep(current)
        mutate(new)
        if new == current:
            return current
        merge.record_update(
            current,
            new,
            manager=manager,
            api_version=rt.api_version,
            time=now(),
            root=kind_schema(rt.api_version, rt.kind),
            subresource=subresource,
            has_status=rt.has_status,
        )
        if rt.generation and subresource != "binding" and _spec_part(new) != _spec_part(current):
            new["metadata"]["generation"] = int(get_path(current, "metadata", "generation") or 0) + 1
        self._self_check(rt, new)
        committed = self._commit(rt, "MODIFIED", new, current)
        if self.finalize_if_done(rt, committed):
            return None
        return committed

    def _self_check(self, rt: ResourceType, obj: Obj) -> None:
        """What the fake itself writes must pass the schema too; problems are bugs of the fake."""
        for cause in schema_causes(obj):
            self.problems.append(f"{rt.kind} {_key(obj)} written by the fake: {cause.text()}")

    def put_internal(self, rt: ResourceType, obj: Obj, *, manager: str) -> Obj:
        """Creates or replaces an object as the cluster itself would (Nodes), without admission."""
        obj = strip_nulls(deep(obj))
        obj["apiVersion"], obj["kind"] = rt.api_version, rt.kind
        current = self.objects[rt.id].get(_key(obj))
        if current is None:
            new = self._new_object(rt, obj)
            if rt.has_status and "status" in obj:
                new["status"] = deep(obj["status"])
            merge.record_update(
                None,
                new,
                manager=manager,
                api_version=rt.api_version,
                time=now(),
                root=kind_schema(rt.api_version, rt.kind),
                has_status=False,
            )
            self._self_check(rt, new)
            return self._commit(rt, "ADDED", new, None)
        result = self.internal_update(rt, current, lambda new: _replace_content(new, obj), manager=manager)
        assert result is not None
        return result

    def remove_internal(self, rt: ResourceType, obj: Obj) -> None:
        current = self.objects[rt.id].get(_key(obj))
        if current is not None:
            self._remove(rt, current)


def _replace_content(target: Obj, source: Obj) -> None:
    metadata = target["metadata"]
    for key in list(target):
        if key not in ("metadata", "apiVersion", "kind"):
            target.pop(key)
    for key, value in source.items():
        if key != "metadata":
            target[key] = deep(value)
    for key in ("labels", "annotations"):
        if key in source.get("metadata", {}):
            metadata[key] = deep(source["metadata"][key])
        else:
            metadata.pop(key, None)


def _parse_body(raw: bytes, *, yaml_ok: bool) -> Any:
    text = raw.decode("utf-8", errors="replace") if raw else ""
    if not text.strip():
        raise errors.bad_request("the body of the request is empty")
    try:
        return json.loads(text)
    except ValueError as json_error:
        if not yaml_ok:
            raise errors.bad_request(f"error decoding patch: {json_error}") from json_error
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as yaml_error:
        raise errors.bad_request(f"error decoding YAML: {yaml_error}") from yaml_error
