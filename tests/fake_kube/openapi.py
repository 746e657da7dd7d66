"""The OpenAPI v3 documents the fake API server serves, built from the kinds it serves and the
Kubernetes 1.37 schemas that kubernetes-validate ships.

As kube-apiserver: `/openapi/v3` lists a document per group-version (`api/v1`, `apis/apps/v1`...),
each at a `serverRelativeURL` carrying the hash of its content; a document holds the paths of
its resources (collection and object, namespaced or not, with their subresources), their
operations with `x-kubernetes-group-version-kind` and `x-kubernetes-action`, the query parameters
the server takes (dryRun, fieldManager, fieldValidation, force...), and under
`components.schemas` every schema those kinds reference.

kubectl (1.27 and later) reads these to learn that the server validates fields itself: it then
sends `fieldValidation=Strict` instead of validating against a schema of its own, so `kubectl apply
--server-side` works against the fake without `--validate=false`. /openapi/v2 is not served: kubectl
only falls back to it (as protobuf) for a group-version that v3 does not describe.
"""

from __future__ import annotations

import functools
import hashlib
import json
from importlib import resources as importlib_resources
from typing import Any

import kubernetes_validate

from tests.fake_kube.resources import KUBERNETES_VERSION, RESOURCE_TYPES, ResourceType

Obj = dict[str, Any]
_SCHEMAS = f"kubernetes-json-schema/v{KUBERNETES_VERSION}-local/_definitions.json"
_META = "io.k8s.apimachinery.pkg.apis.meta.v1"
_GROUP_PACKAGES = {
    "": "core",
    "apps": "apps",
    "batch": "batch",
    "rbac.authorization.k8s.io": "rbac",
    "networking.k8s.io": "networking",
    "policy": "policy",
    "storage.k8s.io": "storage",
    "authorization.k8s.io": "authorization",
}


@functools.cache
def _definitions() -> dict[str, Obj]:
    ref = importlib_resources.files(kubernetes_validate).joinpath(_SCHEMAS)
    defs: dict[str, Obj] = json.loads(ref.read_text())["$defs"]
    return defs


def _openapi_schema(schema: Any) -> Any:
    """A JSON-schema definition as OpenAPI writes it: types without "null", references into
    components, no enum on apiVersion and kind (kubernetes-validate adds those)."""
    if isinstance(schema, list):
        return [_openapi_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    result: Obj = {}
    for key, value in schema.items():
        if key == "$ref":
            result[key] = value.replace("#/$defs/", "#/components/schemas/")
        elif key == "type" and isinstance(value, list):
            types = [t for t in value if t != "null"]
            result[key] = types[0] if len(types) == 1 else types
        elif key == "properties":
            result[key] = {
                name: {
                    k: v
                    for k, v in _openapi_schema(prop).items()
                    if not (name in ("apiVersion", "kind") and k == "enum")
                }
                for name, prop in value.items()
            }
        else:
            result[key] = _openapi_schema(value)
    return result


# Schemas kube-openapi writes otherwise than as a oneOf of JSON types.
_SPECIAL = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {"type": "string"},
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": "string", "format": "int-or-string"},
}


def _component(name: str) -> Obj:
    schema = _definitions()[name]
    if name in _SPECIAL:
        return {"description": schema.get("description", ""), **_SPECIAL[name]}
    converted: Obj = _openapi_schema(schema)
    return converted


def _references(value: Any) -> set[str]:
    if isinstance(value, dict):
        found = {str(value["$ref"]).rpartition("/")[2]} if "$ref" in value else set()
        for item in value.values():
            found |= _references(item)
        return found
    if isinstance(value, list):
        return set().union(*(_references(item) for item in value)) if value else set()
    return set()


def schema_name(rt: ResourceType) -> str:
    return f"io.k8s.api.{_GROUP_PACKAGES[rt.group]}.{rt.version}.{rt.kind}"


def _query(name: str, description: str, kind: str = "string") -> Obj:
    return {
        "name": name,
        "in": "query",
        "description": description,
        "schema": {"type": kind, "uniqueItems": True},
    }


_DRY_RUN = _query("dryRun", "When present, indicates that modifications should not be persisted.")
_FIELD_MANAGER = _query(
    "fieldManager", "fieldManager is a name associated with the actor or entity that is making these changes."
)
_FIELD_VALIDATION = _query(
    "fieldValidation",
    "fieldValidation instructs the server on how to handle objects in the request containing unknown or "
    "duplicate fields. Valid values are: - Ignore - Warn - Strict",
)
_FORCE = _query("force", 'Force is going to "force" Apply requests.', "boolean")
_PRETTY = _query("pretty", "If 'true', then the output is pretty printed.")
_LIST = [
    _query(name, name)
    for name in ("continue", "fieldSelector", "labelSelector", "resourceVersion", "resourceVersionMatch")
] + [
    _query("limit", "limit", "integer"),
    _query("watch", "watch", "boolean"),
    _query("sendInitialEvents", "sendInitialEvents", "boolean"),
]


def _response(ref: str | None) -> Obj:
    content = {"schema": {"$ref": f"#/components/schemas/{ref}"}} if ref else {"schema": {"type": "string"}}
    return {
        "200": {"description": "OK", "content": {"application/json": content, "application/yaml": content}}
    }


def _operation(
    rt: ResourceType,
    action: str,
    verb: str,
    scope: str,
    parameters: list[Obj],
    body: str | None,
    answer: str | None,
) -> Obj:
    group_name = "".join(part.capitalize() for part in (_GROUP_PACKAGES[rt.group], rt.version))
    operation: Obj = {
        "tags": [f"{_GROUP_PACKAGES[rt.group]}_{rt.version}"],
        "description": f"{action} {rt.kind}",
        "operationId": f"{verb}{group_name}{scope}{rt.kind}",
        "parameters": parameters,
        "responses": _response(answer),
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": rt.group, "version": rt.version, "kind": rt.kind},
    }
    if body is not None:
        content = {"schema": {"$ref": f"#/components/schemas/{body}"}}
        operation["requestBody"] = {"content": {"*/*": content}, "required": True}
    return operation


def _paths(rt: ResourceType) -> dict[str, Obj]:
    prefix = f"/apis/{rt.group}/{rt.version}" if rt.group else "/api/v1"
    collection = (
        f"{prefix}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced else f"{prefix}/{rt.plural}"
    )
    scope = "Namespaced" if rt.namespaced else ""
    kind_ref = schema_name(rt)
    list_ref = kind_ref + "List" if kind_ref + "List" in _definitions() else None
    path_parameters = (
        [{"name": "namespace", "in": "path", "required": True, "schema": {"type": "string"}}]
        if rt.namespaced
        else []
    )
    writes = [_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION]
    paths: dict[str, Obj] = {}
    if rt.create_only:
        paths[collection] = {
            "parameters": [*path_parameters, _PRETTY],
            "post": _operation(rt, "post", "create", scope, writes, kind_ref, kind_ref),
        }
        return paths
    collection_item: Obj = {
        "parameters": [*path_parameters, _PRETTY],
        "get": _operation(rt, "list", "list", scope, _LIST, None, list_ref),
    }
    if not rt.read_only:
        collection_item["post"] = _operation(rt, "post", "create", scope, writes, kind_ref, kind_ref)
        collection_item["delete"] = _operation(
            rt,
            "deletecollection",
            "deleteCollection",
            scope,
            [*_LIST, _DRY_RUN],
            f"{_META}.DeleteOptions",
            f"{_META}.Status",
        )
    paths[collection] = collection_item
    item_parameters = [
        {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}},
        *path_parameters,
        _PRETTY,
    ]
    item: Obj = {
        "parameters": item_parameters,
        "get": _operation(rt, "get", "read", scope, [], None, kind_ref),
    }
    if not rt.read_only:
        item["put"] = _operation(rt, "put", "replace", scope, writes, kind_ref, kind_ref)
        item["patch"] = _operation(rt, "patch", "patch", scope, [*writes, _FORCE], f"{_META}.Patch", kind_ref)
        item["delete"] = _operation(
            rt, "delete", "delete", scope, [_DRY_RUN], f"{_META}.DeleteOptions", f"{_META}.Status"
        )
    paths[f"{collection}/{{name}}"] = item
    for sub, verbs in rt.all_subresources:
        if sub == "log":
            continue
        sub_ref = "io.k8s.api.autoscaling.v1.Scale" if sub == "scale" else kind_ref
        sub_item: Obj = {"parameters": item_parameters}
        if "get" in verbs:
            sub_item["get"] = _operation(rt, "get", "read", scope + sub.capitalize(), [], None, sub_ref)
        if "update" in verbs:
            sub_item["put"] = _operation(
                rt, "put", "replace", scope + sub.capitalize(), writes, sub_ref, sub_ref
            )
        if "patch" in verbs:
            sub_item["patch"] = _operation(
                rt, "patch", "patch", scope + sub.capitalize(), [*writes, _FORCE], f"{_META}.Patch", sub_ref
            )
        paths[f"{collection}/{{name}}/{sub}"] = sub_item
    return paths


def _document_path(rt: ResourceType) -> str:
    return f"apis/{rt.group}/{rt.version}" if rt.group else "api/v1"


@functools.cache
def _documents() -> dict[str, tuple[str, bytes]]:
    """Each group-version's document path -> (its hash, its JSON)."""
    by_path: dict[str, list[ResourceType]] = {}
    for rt in RESOURCE_TYPES:
        by_path.setdefault(_document_path(rt), []).append(rt)
    documents: dict[str, tuple[str, bytes]] = {}
    for path, kinds in by_path.items():
        paths: dict[str, Obj] = {}
        for rt in kinds:
            paths.update(_paths(rt))
        wanted = _references(paths)
        schemas: dict[str, Obj] = {}
        while wanted:
            name = wanted.pop()
            if name in schemas or name not in _definitions():
                continue
            schemas[name] = _component(name)
            wanted |= _references(schemas[name]) - set(schemas)
        document = {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": f"v{KUBERNETES_VERSION}"},
            "paths": paths,
            "components": {"schemas": dict(sorted(schemas.items()))},
        }
        text = json.dumps(document, sort_keys=True).encode()
        documents[path] = (hashlib.sha512(text).hexdigest().upper(), text)
    return documents


def discovery() -> Obj:
    """The /openapi/v3 answer: where each group-version's document is."""
    return {
        "paths": {
            path: {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
            for path, (digest, _) in sorted(_documents().items())
        }
    }


def document(path: str) -> bytes | None:
    """The JSON of the document of a group-version ("api/v1", "apis/apps/v1"), or None."""
    found = _documents().get(path)
    return None if found is None else found[1]
