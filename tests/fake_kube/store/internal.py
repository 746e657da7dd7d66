"""The writes of the cluster itself (controllers, Nodes, test controls): no admission or
validation, but managedFields, generation and a schema self-check."""

from __future__ import annotations

from collections.abc import Callable

from tests.fake_kube import merge
from tests.fake_kube.resources import ResourceType
from tests.fake_kube.schema import kind_schema, schema_causes
from tests.fake_kube.store.state import _key, _spec_part
from tests.fake_kube.store.writes import Writing
from tests.fake_kube.util import Obj, deep, get_path, now, strip_nulls


class InternalWrites(Writing):
    """The writes of the cluster itself: no admission or validation."""

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
