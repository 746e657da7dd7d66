"""The HTTP face of the fake Kubernetes API server: a Starlette app with the API's URL layout.

/version, /api, /api/v1, /apis, /apis/{group}, /apis/{group}/{version} for discovery, /openapi/v3
for the OpenAPI documents (openapi.py); then /api/v1/... and /apis/{group}/{version}/... with `namespaces/{ns}/` for namespaced kinds:
collections (GET list or watch, POST create, DELETE deletecollection), objects (GET, PUT, PATCH,
DELETE) and the subresources status, scale, finalize and log. Answers are JSON; errors are
Status objects.

Before a request reaches the store: the request log, authentication (401 for a token the server
refuses), injected latency, authorization (403 Forbidden worded as kube-apiserver's; authz/) and
injected errors (test controls); while it writes, the authorization guards the store's writes
(create on apply, RBAC escalation checks). Every state change runs
synchronously on the server's event loop. Watches stream newline-delimited JSON events, with
BOOKMARK events every `bookmark_interval` seconds when asked for.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import traceback
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import yaml
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.fake_kube import errors, openapi, resources
from tests.fake_kube.authz import Attributes, Authorization, User, request_attributes
from tests.fake_kube.controllers import Controllers
from tests.fake_kube.errors import ApiError
from tests.fake_kube.resources import ResourceType
from tests.fake_kube.schema import Cause
from tests.fake_kube.store import Store, Watcher
from tests.fake_kube.util import Obj


class RequestRecord(NamedTuple):
    """One request the server received (for assertions), and when (time.monotonic())."""

    method: str
    path: str
    query: dict[str, str]
    content_type: str | None
    at: float = 0.0


@dataclass
class ErrorRule:
    """An injected error: the next `times` requests that match answer `status` (None: forever)."""

    method: str
    path_regex: str
    status: int
    times: int | None = 1
    reason: str | None = None
    message: str | None = None
    retry_after: int | None = None
    hits: int = 0

    def matches(self, method: str, path: str) -> bool:
        if self.times is not None and self.times <= 0:
            return False
        return self.method in ("*", method) and re.search(self.path_regex, path) is not None


@dataclass
class LatencyRule:
    seconds: float
    method: str = "*"
    path_regex: str = ""

    def matches(self, method: str, path: str) -> bool:
        return self.method in ("*", method) and re.search(self.path_regex, path) is not None


@dataclass
class ServerState:
    store: Store
    controllers: Controllers
    token: str | None = None
    bookmark_interval: float = 0.5
    requests: list[RequestRecord] = field(default_factory=list)
    error_rules: list[ErrorRule] = field(default_factory=list)
    latency_rules: list[LatencyRule] = field(default_factory=list)
    internal_errors: list[str] = field(default_factory=list)
    # Aggregated APIs (APIServices) whose backend is down: group -> version.
    unavailable_apis: dict[str, str] = field(default_factory=dict)
    authz: Authorization = field(init=False)

    def __post_init__(self) -> None:
        self.authz = Authorization(self.store, self.token)


def _json(body: Any, code: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(body), status_code=code, media_type="application/json", headers=headers)


def _error(error: ApiError) -> Response:
    return _json(error.status(), error.code, error.headers)


def _flag(value: str | None) -> bool | None:
    if value is None:
        return None
    return value.lower() in ("true", "1")


@dataclass
class Target:
    """What a resource URL names."""

    rt: ResourceType
    namespace: str | None
    name: str | None
    subresource: str
    watch_path: bool = False


def _parse_target(parts: list[str]) -> Target | None:
    if parts[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    watch_path = False
    if rest and rest[0] == "watch":
        watch_path, rest = True, rest[1:]
    if not rest:
        return None
    namespace: str | None = None
    if (
        rest[0] == "namespaces"
        and len(rest) >= 3
        and not (len(rest) == 3 and rest[2] in ("status", "finalize"))
    ):
        namespace, rest = rest[1], rest[2:]
    rt = resources.by_path(group, version, rest[0])
    if rt is None or len(rest) > 3:
        return None
    if namespace is not None and not rt.namespaced:
        return None
    name = rest[1] if len(rest) > 1 else None
    subresource = rest[2] if len(rest) > 2 else ""
    if subresource and subresource not in dict(rt.all_subresources):
        return None
    return Target(rt, namespace, name, subresource, watch_path)


def create_app(state: ServerState) -> Starlette:
    async def handle(request: Request) -> Response:
        path = request.url.path
        method = request.method
        query = dict(request.query_params)
        state.requests.append(
            RequestRecord(method, path, query, request.headers.get("content-type"), time.monotonic())
        )
        user = state.authz.authenticate(request.headers.get("authorization"))
        if user is None:
            return _error(errors.unauthorized())
        for latency in list(state.latency_rules):
            if latency.matches(method, path):
                await asyncio.sleep(latency.seconds)
        attributes = request_attributes(method, path, query)
        try:
            state.authz.authorize(user, attributes)
        except ApiError as error:
            return _error(error)
        for rule in state.error_rules:
            if rule.matches(method, path):
                rule.hits += 1
                if rule.times is not None:
                    rule.times -= 1
                headers = {"Retry-After": str(rule.retry_after)} if rule.retry_after is not None else None
                reason = rule.reason or errors.REASONS.get(rule.status, "InternalError")
                message = rule.message or f"injected error: {reason}"
                return _json(errors.status_object(rule.status, message, reason), rule.status, headers)
        unavailable = _unavailable_api(state, method, path)
        if unavailable is not None:
            return unavailable
        try:
            return await _dispatch(state, request, path, method, query, user, attributes)
        except ApiError as error:
            return _error(error)
        except Exception as error:
            state.internal_errors.append(f"{method} {path}: {traceback.format_exc()}")
            return _json(
                errors.status_object(500, f"fake kube internal error: {error!r}", "InternalError"), 500
            )

    methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
    return Starlette(routes=[Route("/{path:path}", handle, methods=methods)])


async def _dispatch(
    state: ServerState,
    request: Request,
    path: str,
    method: str,
    query: dict[str, str],
    user: User,
    attributes: Attributes,
) -> Response:
    parts = [part for part in path.split("/") if part]
    if method == "GET":
        discovery = _discovery(parts, request)
        if discovery is not None:
            return discovery
    target = _parse_target(parts)
    if target is None:
        raise errors.not_found_path(path)
    store = state.store
    rt = target.rt
    if rt.create_only:
        if method != "POST" or target.name is not None:
            raise errors.method_not_allowed()
        return _json(state.authz.review(user, rt, await _body(request)), 201)
    acting = state.authz.acting(user, attributes)  # around the store's writes, with no await inside
    dry_run = query.get("dryRun") == "All"
    manager = query.get("fieldManager")
    if manager is not None and len(manager) > 128:
        raise errors.invalid_options(
            "PatchOptions" if method == "PATCH" else "CreateOptions",
            [Cause("FieldValueTooLong", "Too long: may not be more than 128 bytes", "fieldManager")],
        )
    default_manager = (request.headers.get("user-agent") or "unknown").split("/")[0] or "unknown"
    if target.name is None:
        if method == "GET":
            watch = _flag(query.get("watch")) or target.watch_path
            if watch:
                return _watch(state, target, query)
            limit = int(query["limit"]) if query.get("limit", "").isdigit() else None
            return _json(
                store.list_objects(
                    rt,
                    target.namespace,
                    query.get("labelSelector"),
                    query.get("fieldSelector"),
                    limit,
                    query.get("continue"),
                    query.get("resourceVersion"),
                    query.get("resourceVersionMatch"),
                )
            )
        if method == "POST":
            if rt.namespaced and target.namespace is None:
                raise errors.not_found_path(path)
            body = await _body(request)
            with acting:
                created = store.create(
                    rt, target.namespace, body, manager=manager or default_manager, dry_run=dry_run
                )
            return _json(created, 201)
        if method == "DELETE":
            options = await _delete_options(request, query)
            return _json(
                store.delete_collection(
                    rt,
                    target.namespace,
                    query.get("labelSelector"),
                    query.get("fieldSelector"),
                    options,
                    dry_run=dry_run,
                )
            )
        raise errors.method_not_allowed()
    if rt.namespaced and target.namespace is None:
        raise errors.not_found_path(path)
    name = target.name
    sub = target.subresource
    if method == "GET":
        if sub == "log":
            return _pod_log(state, target.namespace or "", name, query)
        obj = store.get(rt, target.namespace, name)
        return _json(store.scale_of(rt, obj) if sub == "scale" else obj)
    if sub == "log":
        raise errors.method_not_allowed()
    if method == "PUT":
        body = await _body(request)
        with acting:
            replaced = store.replace(
                rt,
                target.namespace,
                name,
                body,
                manager=manager or default_manager,
                subresource=sub,
                dry_run=dry_run,
            )
        return _json(replaced)
    if method == "PATCH":
        raw = await request.body()
        with acting:
            code, result = store.patch(
                rt,
                target.namespace,
                name,
                raw,
                request.headers.get("content-type") or "",
                manager=manager if manager is not None or _is_apply(request) else default_manager,
                force=_flag(query.get("force")),
                subresource=sub,
                dry_run=dry_run,
            )
        return _json(result, code)
    if method == "DELETE":
        if sub:
            raise errors.method_not_allowed()
        options = await _delete_options(request, query)
        code, result = store.delete(rt, target.namespace, name, options, dry_run=dry_run)
        return _json(result, code)
    raise errors.method_not_allowed()


def _pod_log(state: ServerState, namespace: str, name: str, query: dict[str, str]) -> Response:
    """pods/log as kube-apiserver serves it (text/plain): the lines there are (tailLines,
    timestamps, previous); with follow=true a chunked stream of the lines as the container writes
    them, which ends when the container stops or its pod goes."""
    controllers = state.controllers
    lines, pod, container, instance = controllers.log_lines(namespace, name, query)
    body = "".join(f"{line}\n" for line in lines)
    if not _flag(query.get("follow")) or _flag(query.get("previous")):
        return PlainTextResponse(body)
    uid = str(pod["metadata"]["uid"])
    stamps = _flag(query.get("timestamps"))

    async def stream() -> AsyncIterator[bytes]:
        yield body.encode()
        sent, running = controllers.log_follow_state(namespace, name, uid, container, instance)
        while True:
            for at, text in controllers.log_entries(namespace, name, container, instance, sent):
                sent += 1
                yield (f"{at} {text}\n" if stamps else f"{text}\n").encode()
            if not running:
                return
            await asyncio.sleep(0.05)
            _, running = controllers.log_follow_state(namespace, name, uid, container, instance)

    return StreamingResponse(stream(), media_type="text/plain")


def _unavailable_api(state: ServerState, method: str, path: str) -> Response | None:
    """What kube-aggregator answers for an APIService whose backend is down: /apis still lists its
    group (the APIService is registered) and /apis/<group> describes it, but everything under
    /apis/<group>/<version> is 503 with the plain text "service unavailable" (no Status)."""
    if not state.unavailable_apis:
        return None
    parts = [part for part in path.split("/") if part]
    if method == "GET" and parts == ["apis"]:
        listing = resources.api_group_list()
        listing["groups"] += [_aggregated_group(g, v) for g, v in state.unavailable_apis.items()]
        return _json(listing)
    if len(parts) < 2 or parts[0] != "apis" or parts[1] not in state.unavailable_apis:
        return None
    if len(parts) == 2 and method == "GET":
        group = parts[1]
        return _json(
            {
                "kind": "APIGroup",
                "apiVersion": "v1",
                **_aggregated_group(group, state.unavailable_apis[group]),
            }
        )
    return PlainTextResponse("service unavailable\n", status_code=503)


def _aggregated_group(group: str, version: str) -> dict[str, Any]:
    versions = [{"groupVersion": f"{group}/{version}", "version": version}]
    return {"name": group, "versions": versions, "preferredVersion": dict(versions[0])}


def _is_apply(request: Request) -> bool:
    return (request.headers.get("content-type") or "").startswith("application/apply-patch")


def _discovery(parts: list[str], request: Request) -> Response | None:
    if parts == ["version"]:
        return _json(resources.version_info())
    if parts in (["healthz"], ["livez"], ["readyz"]):
        return PlainTextResponse("ok")
    if parts == ["api"]:
        host = request.headers.get("host", "127.0.0.1")
        return _json(
            {
                "kind": "APIVersions",
                "versions": ["v1"],
                "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": host}],
            }
        )
    if parts == ["apis"]:
        return _json(resources.api_group_list())
    if len(parts) == 2 and parts[0] == "apis":
        if parts[1] not in resources.groups():
            raise errors.not_found_path("/" + "/".join(parts))
        return _json({"kind": "APIGroup", "apiVersion": "v1", **resources.api_group(parts[1])})
    if parts == ["api", "v1"] or (len(parts) == 3 and parts[0] == "apis"):
        group, version = ("", "v1") if parts[0] == "api" else (parts[1], parts[2])
        listing = resources.api_resource_list(group, version)
        if listing is None:
            raise errors.not_found_path("/" + "/".join(parts))
        return _json(listing)
    if parts == ["openapi", "v3"]:
        return _json(openapi.discovery())
    if parts[:2] == ["openapi", "v3"]:
        text = openapi.document("/".join(parts[2:]))
        if text is not None:
            return Response(
                text, media_type="application/json", headers={"Cache-Control": "public, immutable"}
            )
    if parts and parts[0] == "openapi":
        raise errors.not_found_path("/" + "/".join(parts))
    return None


async def _body(request: Request) -> Obj:
    raw = await request.body()
    if not raw.strip():
        raise errors.bad_request("the body of the request is empty")
    content_type = (request.headers.get("content-type") or "application/json").split(";")[0].strip()
    try:
        if content_type in ("application/yaml", "text/yaml", "application/x-yaml"):
            body = yaml.safe_load(raw)
        else:
            body = json.loads(raw)
    except (ValueError, yaml.YAMLError) as error:
        raise errors.bad_request(f"couldn't get version/kind; json parse error: {error}") from error
    if not isinstance(body, dict):
        raise errors.bad_request("the body of the request must be an object")
    return body


async def _delete_options(request: Request, query: dict[str, str]) -> Obj:
    raw = await request.body()
    options: Obj = {}
    if raw.strip():
        try:
            parsed = json.loads(raw)
        except ValueError as error:
            raise errors.bad_request(f"invalid DeleteOptions: {error}") from error
        if isinstance(parsed, dict):
            options = parsed
    if query.get("propagationPolicy"):
        options["propagationPolicy"] = query["propagationPolicy"]
    if query.get("gracePeriodSeconds", "").lstrip("-").isdigit():
        options["gracePeriodSeconds"] = int(query["gracePeriodSeconds"])
    if query.get("orphanDependents") is not None:
        options["orphanDependents"] = _flag(query["orphanDependents"])
    return options


def _watch(state: ServerState, target: Target, query: dict[str, str]) -> Response:
    store = state.store
    rt = target.rt
    send_initial = bool(_flag(query.get("sendInitialEvents")))
    watcher = store.watch(
        rt,
        target.namespace,
        query.get("labelSelector"),
        query.get("fieldSelector"),
        query.get("resourceVersion"),
        send_initial,
    )
    bookmarks = bool(_flag(query.get("allowWatchBookmarks")))
    timeout = float(query["timeoutSeconds"]) if query.get("timeoutSeconds", "").isdigit() else None
    return StreamingResponse(_events(state, watcher, rt, bookmarks, timeout), media_type="application/json")


async def _events(
    state: ServerState, watcher: Watcher, rt: ResourceType, bookmarks: bool, timeout: float | None
) -> AsyncIterator[bytes]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout if timeout else None
    next_bookmark = loop.time() + state.bookmark_interval if bookmarks else None
    try:
        while True:
            moment = loop.time()
            waits = [t - moment for t in (deadline, next_bookmark) if t is not None]
            wait = max(min(waits), 0.0) if waits else None
            try:
                item = await asyncio.wait_for(watcher.queue.get(), timeout=wait)
            except TimeoutError:
                moment = loop.time()
                if deadline is not None and moment >= deadline:
                    return
                if next_bookmark is not None and moment >= next_bookmark:
                    bookmark = {
                        "type": "BOOKMARK",
                        "object": {
                            "kind": rt.kind,
                            "apiVersion": rt.api_version,
                            "metadata": {"resourceVersion": str(state.store.rv)},
                        },
                    }
                    next_bookmark = moment + state.bookmark_interval
                    yield (json.dumps(bookmark) + "\n").encode()
                continue
            if item is None:
                return
            yield (json.dumps(item) + "\n").encode()
            if item.get("type") == "ERROR":
                return
    finally:
        state.store.unwatch(watcher)
