"""The state of the fake cluster: objects per kind, the resourceVersion, the event history
for watches that resume, and reading, committing and watching it."""

from __future__ import annotations

import base64
import binascii
import json
from collections import deque
from collections.abc import Callable

from tests.fake_kube import errors, selectors
from tests.fake_kube.errors import ApiError
from tests.fake_kube.resources import RESOURCE_TYPES, ResourceType
from tests.fake_kube.schema import Cause
from tests.fake_kube.store.watch import Watcher, WatchEvent
from tests.fake_kube.util import Obj, deep, get_path

Listener = Callable[[ResourceType, str, Obj, Obj | None], None]
# Called with ("create" or "update", the kind, the new object, the old one) before a write through
# the API is admitted; raises an ApiError to refuse it (the authorization's checks of writes).
WriteGuard = Callable[[str, ResourceType, Obj, Obj | None], None]


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


class StoreState:
    """The objects, the resourceVersion and the event history; reading, committing, watching."""

    def __init__(self, history_size: int = 1000) -> None:
        self.objects: dict[str, dict[tuple[str, str], Obj]] = {item.id: {} for item in RESOURCE_TYPES}
        self.rv = 0
        self.history: deque[WatchEvent] = deque(maxlen=history_size)
        self.compacted_rv = 0
        self.watchers: set[Watcher] = set()
        self.listeners: list[Listener] = []
        self.guards: list[WriteGuard] = []
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
        resource_version: str | None = None,
        resource_version_match: str | None = None,
    ) -> Obj:
        """A list as the API answers it. resourceVersion: unset, "0" (any) or an older one than the
        store's with resourceVersionMatch NotOlderThan: the current state; Exact (or, as legacy
        clients ask, a resourceVersion with a limit and no match): the state at that version,
        rebuilt from the event history, or 410 Expired once it is compacted away; newer than the
        store's: 504 "Too large resource version". Continue tokens go on at the first page's
        version, so that every page is of one consistent state."""
        labels, fields = self._selectors(rt, label_selector, field_selector)
        at = self._list_version(limit, continue_token, resource_version, resource_version_match)
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
            at = token_rv
        selected = []
        for obj in self.items(rt, namespace) if at is None else self._items_at(rt, namespace, at):
            if start is not None and _key(obj) <= start:
                continue
            if selectors.matches(labels, get_path(obj, "metadata", "labels")) and selectors.fields_match(
                fields, obj
            ):
                selected.append(obj)
        version = self.rv if at is None else at
        metadata: Obj = {"resourceVersion": str(version)}
        if limit and len(selected) > limit:
            remaining = len(selected) - limit
            selected = selected[:limit]
            token = {"rv": version, "start": list(_key(selected[-1]))}
            metadata["continue"] = base64.urlsafe_b64encode(json.dumps(token).encode()).decode()
            metadata["remainingItemCount"] = remaining
        items = []
        for obj in selected:
            item = deep(obj)
            item.pop("apiVersion", None)
            item.pop("kind", None)
            items.append(item)
        return {"kind": f"{rt.kind}List", "apiVersion": rt.api_version, "metadata": metadata, "items": items}

    def _list_version(
        self,
        limit: int | None,
        continue_token: str | None,
        resource_version: str | None,
        match: str | None,
    ) -> int | None:
        """The resourceVersion a list is read at; None: the current state."""
        causes: list[Cause] = []
        if match:
            if not resource_version:
                causes.append(
                    Cause(
                        "FieldValueForbidden",
                        "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
                        "resourceVersionMatch",
                    )
                )
            if continue_token:
                causes.append(
                    Cause(
                        "FieldValueForbidden",
                        "Forbidden: resourceVersionMatch is forbidden when continue is provided",
                        "resourceVersionMatch",
                    )
                )
            if match not in ("Exact", "NotOlderThan"):
                causes.append(
                    Cause(
                        "FieldValueNotSupported",
                        f'Unsupported value: "{match}": supported values: "Exact", "NotOlderThan", ""',
                        "resourceVersionMatch",
                    )
                )
            if match == "Exact" and resource_version == "0":
                causes.append(
                    Cause(
                        "FieldValueForbidden",
                        'Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                        "resourceVersionMatch",
                    )
                )
        if causes:
            raise errors.invalid_options("ListOptions", causes)
        if resource_version in (None, "", "0") or continue_token:
            return None
        try:
            wanted = int(str(resource_version))
        except ValueError as error:
            raise errors.bad_request(f"invalid resource version: {resource_version}") from error
        if wanted > self.rv:
            raise ApiError(
                504,
                f"Timeout: Too large resource version: {wanted}, current: {self.rv}",
                "Timeout",
                {
                    "causes": [
                        {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
                    ],
                    "retryAfterSeconds": 1,
                },
            )
        exact = match == "Exact" or (not match and bool(limit))
        if not exact:
            return None
        if wanted < self.compacted_rv:
            raise errors.expired("The resourceVersion for the provided list is too old.")
        return wanted

    def _items_at(self, rt: ResourceType, namespace: str | None, version: int) -> list[Obj]:
        """The objects of a kind as they were at `version`: the current ones with every later
        event of the history undone."""
        found = dict(self.objects[rt.id])
        for event in reversed(self.history):
            if event.rv <= version:
                break
            if event.rt_id != rt.id:
                continue
            key = _key(event.obj)
            if event.type == "ADDED" or event.old is None:
                found.pop(key, None)
            else:
                found[key] = event.old
        return [found[k] for k in sorted(found) if namespace is None or k[0] == namespace]

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

    def _guard(self, operation: str, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        for guard in self.guards:
            guard(operation, rt, obj, old)

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
