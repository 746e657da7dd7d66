"""Talking to the API server as plain data: discovery (which kinds it serves, under which URL
path) and the requests the driver sends (server-side apply, get, delete, list, watch), built
before they are sent so that they can be tested by asserting.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from gpupaas.provisioning.drivers.k8s_manifests.objects import describe, group_of, mappings_in, metadata_of

__all__ = [
    "APPLY_CONTENT_TYPE",
    "ApiResource",
    "Request",
    "apply_request",
    "delete_request",
    "get_request",
    "list_request",
    "parse_resource_list",
    "preferred_group_versions",
    "release_request",
    "watch_request",
]


APPLY_CONTENT_TYPE = "application/apply-patch+yaml"


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


# --------------------------------------------------------------------------------- discovery


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
    for item in mappings_in(body.get("resources")):
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
    for group in mappings_in(group_list.get("groups")):
        preferred = group.get("preferredVersion")
        if isinstance(preferred, Mapping) and preferred.get("groupVersion"):
            versions.append(str(preferred["groupVersion"]))
            continue
        listed = mappings_in(group.get("versions"))
        if listed and listed[0].get("groupVersion"):
            versions.append(str(listed[0]["groupVersion"]))
    return versions


# ---------------------------------------------------------------------------------- requests


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
    metadata = metadata_of(manifest)
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


def release_request(
    resource: ApiResource,
    name: str,
    namespace: str | None,
    *,
    labels: Iterable[str],
    annotations: Mapping[str, str | None],
) -> Request:
    """A JSON merge patch (RFC 7386) that takes `labels` off the object and sets (None: removes)
    `annotations`: what a delete does instead with an object it keeps (a workspace claim with
    reclaim Keep), so that no later sweep by those labels finds it."""
    metadata: dict[str, Any] = {"labels": dict.fromkeys(labels)}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return Request(
        method="PATCH",
        path=resource.path(name, namespace),
        content_type="application/merge-patch+json",
        body={"metadata": metadata},
    )


def get_request(resource: ApiResource, name: str, namespace: str | None) -> Request:
    return Request(method="GET", path=resource.path(name, namespace))


def delete_request(
    resource: ApiResource,
    name: str,
    namespace: str | None,
    *,
    propagation: str = "Foreground",
    uid: str | None = None,
) -> Request:
    """DELETE with DeleteOptions: Foreground waits for the dependents (a Deployment's ReplicaSets and
    pods) before the object itself goes, so "gone" means everything under it is gone too. `uid`:
    only the object with this uid (the one that was read) is deleted; another made since under
    the same name is answered 409 Conflict and stays."""
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": propagation}
    if uid:
        body["preconditions"] = {"uid": uid}
    return Request(
        method="DELETE",
        path=resource.path(name, namespace),
        content_type="application/json",
        body=body,
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
