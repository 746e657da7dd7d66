"""Garbage collection by ownerReferences: background, foreground and orphan propagation."""

from __future__ import annotations

from tests.fake_kube.controllers.base import (
    NAMESPACE,
    ControllerBase,
)
from tests.fake_kube.resources import BY_ID, ResourceType
from tests.fake_kube.util import Obj, get_path


class GarbageCollector(ControllerBase):
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
