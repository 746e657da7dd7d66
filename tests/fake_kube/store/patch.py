"""Patch: server-side apply (with managedFields and conflicts), JSON merge, strategic merge and
JSON patch."""

from __future__ import annotations

import json
from typing import Any

import yaml

from tests.fake_kube import errors, merge
from tests.fake_kube.errors import ApiError
from tests.fake_kube.resources import ResourceType
from tests.fake_kube.schema import Cause, kind_schema
from tests.fake_kube.store.writes import Writing
from tests.fake_kube.util import Obj, deep, get_path, now, strip_nulls

APPLY = "application/apply-patch+yaml"
MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"
JSON_PATCH = "application/json-patch+json"


class Patching(Writing):
    """Patch: apply, merge, strategic merge and JSON patch."""

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
