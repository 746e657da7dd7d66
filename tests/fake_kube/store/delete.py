"""Delete and deletecollection: preconditions, propagationPolicy, finalizers, graceful pod
deletion and Terminating namespaces."""

from __future__ import annotations

from tests.fake_kube import admission, errors
from tests.fake_kube.resources import ResourceType
from tests.fake_kube.schema import Cause
from tests.fake_kube.store.admit import Admitting
from tests.fake_kube.store.state import _key, _without_times
from tests.fake_kube.util import Obj, deep, get_path, now


class Deleting(Admitting):
    """Delete and deletecollection."""

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
        if rt.kind in ("Pod", "PersistentVolumeClaim", "PersistentVolume"):  # their ReturnDeletedObject
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
