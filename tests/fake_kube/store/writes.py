"""Create, replace (PUT, with its resourceVersion precondition) and the scale subresource."""

from __future__ import annotations

import json
import uuid

from tests.fake_kube import admission, errors, merge, selectors
from tests.fake_kube.resources import ResourceType
from tests.fake_kube.schema import Cause, kind_schema
from tests.fake_kube.store.delete import Deleting
from tests.fake_kube.store.state import _spec_part, _without_times
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


class Writing(Deleting):
    """Create, replace and the scale subresource."""

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
        self._guard("create", rt, body, None)
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
            self._guard("update", rt, new, old)
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
