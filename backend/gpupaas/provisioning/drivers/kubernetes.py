"""The `kubernetes` driver: applies plans to a real cluster through the official client.

This is the only module of gpupaas that imports `kubernetes`. What it decides (order, requests,
readiness, failure reasons, error classes) are pure functions in drivers/k8s_manifests/; this
module sends requests and waits.

Connection. A `ClusterConnection` holds a kubeconfig's text (and optionally a context) or says
"in-cluster" (the pod's service account). Each driver builds its own `Configuration` and
`ApiClient` (the client's global default configuration is never touched), lazily, in a worker
thread, on the first request: loading a kubeconfig may run an exec credential plugin. A
kubeconfig that cannot be used fails every call with a PermanentError that says why.

Requests. The generic REST paths (/api/v1/..., /apis/<group>/<version>/...) found by discovery
(kind -> plural and scope, cached per driver and looked up again once when a kind is unknown, as
after a CRD is installed), sent through `ApiClient.call_api` on a thread pool of the driver's own,
so the event loop never blocks; every request has `_request_timeout`. Answers: 2xx is the object;
5xx, 429, 410, timeouts and connection errors are TemporaryError (the worker retries the run);
other 4xx are PermanentError with the Status's message and causes (k8s_manifests/errors.py).

apply. Every manifest of the plan, with its namespace defaulted to the plan's and its pod
templates stamped with the instance's labels (so that pods can be found and watched), is applied
in dependency order by server-side apply (PATCH application/apply-patch+yaml, fieldManager,
force=true): applying again changes nothing, and a run that died half-way is finished by the next.
Then it waits, polling every `poll_interval`, until namespaces are Active, claims Bound (or their
storage class binds on first use), pods Ready and Deployments/StatefulSets rolled out, for at most
`readiness_timeout` seconds from the start of the run. A pod that cannot be scheduled ("0/4 nodes
are available: 4 Insufficient nvidia.com/gpu."), a crash-looping or failed container, a failed Job
or a Deployment that cannot create its pods fails the run at once (PermanentError); so does the
timeout, naming what it waited for. A namespace still terminating from a destroy is a
TemporaryError. The outputs are rendered from the objects as the server holds them afterwards.

destroy. Deletes the plan's objects in reverse order (foreground propagation: dependents first),
then anything else labelled gpupaas.io/instance=<id> in the plan's namespaces (every namespaced
kind discovery lists that can be listed and deleted), then the plan's namespaces, and waits until
all of it is gone (a namespace may be Terminating for a while). 404 is fine: it is idempotent.

observe. ABSENT when none of the plan's objects exist; FAILED with the reason when an object or a
pod of the instance failed; PROGRESSING with what it waits for; READY.

Drift. `watch_drift` lists and then watches the pods labelled app.kubernetes.io/managed-by=gpupaas
in every namespace (with bookmarks, so that the resourceVersion it keeps stays recent). It reports
an instance FAILED when one of its pods fails and READY when all its pods are ready again after
that. A watch the server ends is started again from the last resourceVersion (no event is lost in
between); after 410 Gone (that resourceVersion was compacted away) or a broken connection it lists
again and compares the list with what it reported: nothing is missed across restarts of the watch.

Threads. Requests run on a pool of 4 threads of the driver's own; each `watch_drift` holds one
more thread for its stream, which the event loop unblocks (socket shutdown) when `stop` is set or
the task is cancelled. `close()` releases connections, threads and temporary files.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import json
import logging
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import urllib3
import yaml
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from gpupaas.provisioning.drivers.base import (
    Applied,
    ClusterInfo,
    ObjectRef,
    Observed,
    OnDrift,
    Owner,
    Phase,
    Progress,
)
from gpupaas.provisioning.drivers.k8s_manifests.api import (
    ApiResource,
    Request,
    apply_request,
    delete_request,
    get_request,
    list_request,
    parse_resource_list,
    preferred_group_versions,
    watch_request,
)
from gpupaas.provisioning.drivers.k8s_manifests.drift import DriftTracker, instance_health
from gpupaas.provisioning.drivers.k8s_manifests.errors import api_error, status_text, unreachable
from gpupaas.provisioning.drivers.k8s_manifests.nodes import node_info
from gpupaas.provisioning.drivers.k8s_manifests.objects import (
    MANAGER_VALUE,
    apply_order,
    describe,
    label_problem,
    object_key,
    stamp_pod_templates,
    with_namespace,
)
from gpupaas.provisioning.drivers.k8s_manifests.pods import counts, current_pods, pod_problem
from gpupaas.provisioning.drivers.k8s_manifests.readiness import WAITED_KINDS, readiness
from gpupaas.provisioning.plan import MANAGED_BY, PermanentError, Plan, TemporaryError
from gpupaas.provisioning.render.problems import TemplateError
from gpupaas.provisioning.render.rendering import render_outputs
from gpupaas.provisioning.wording import plural

__all__ = ["ClusterConnection", "KubernetesDriver"]

log = logging.getLogger(__name__)

T = TypeVar("T")

PODS = ApiResource("v1", "Pod", "pods", namespaced=True)
NODES = ApiResource("v1", "Node", "nodes", namespaced=False)
REPLICASETS = ApiResource("apps/v1", "ReplicaSet", "replicasets", namespaced=True)
STORAGE_CLASSES = ApiResource("storage.k8s.io/v1", "StorageClass", "storageclasses", namespaced=False)

# Kinds whose controllers make pods that carry the instance's labels (see stamp_pod_templates).
_POD_MAKERS = frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob"})
# Listed by destroy's sweep for nothing: nobody labels them with an instance.
_NOT_SWEPT = frozenset({"Event", "Binding", "LocalSubjectAccessReview"})
_LIST_PAGE = 500
# A server-side watch lasts this long; the read timeout is longer, so a dead connection is noticed.
_WATCH_SECONDS = 300
_DISCOVERY_TTL = 300.0
_MAX_BACKOFF = 30.0


async def _silent(message: str) -> None:
    return None


@dataclass(frozen=True)
class ClusterConnection:
    """How to reach a cluster: a kubeconfig's text (its current context, or `context`), or the
    service account of the pod gpupaas runs in (`in_cluster`)."""

    kubeconfig: str | None = field(repr=False)  # holds credentials: kept out of repr()
    in_cluster: bool = False
    context: str | None = None


class _HttpError(Exception):
    """The API server answered, but not with 2xx."""

    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body


class _Unreachable(Exception):
    """No answer: connection refused or reset, timeout, TLS failure."""

    def __init__(self, detail: str, *, permanent: bool = False) -> None:
        super().__init__(detail)
        self.permanent = permanent


@dataclass(frozen=True)
class _Item:
    """One object of a plan, ready to apply: the manifest as sent and where it lives."""

    manifest: dict[str, Any]
    resource: ApiResource

    @property
    def kind(self) -> str:
        return self.resource.kind

    @property
    def name(self) -> str:
        return str(self.manifest["metadata"]["name"])

    @property
    def namespace(self) -> str | None:
        namespace = self.manifest["metadata"].get("namespace")
        return str(namespace) if namespace else None

    @property
    def label(self) -> str:
        return describe(self.manifest)

    @property
    def ref(self) -> ObjectRef:
        return ObjectRef(
            api_version=str(self.manifest["apiVersion"]),
            kind=self.kind,
            name=self.name,
            namespace=self.namespace,
        )


class _Stream:
    """The response of one watch, which the event loop closes to unblock the thread reading it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._response: Any = None
        self._closed = False

    def attach(self, response: Any) -> bool:
        with self._lock:
            if self._closed:
                return False
            self._response = response
            return True

    def close(self) -> None:
        with self._lock:
            self._closed = True
            response, self._response = self._response, None
        if response is not None:
            # shutdown() wakes a read blocked in another thread (close() alone would not).
            with contextlib.suppress(Exception):
                response.shutdown()


class KubernetesDriver:
    """A Driver (drivers/base.py) over a Kubernetes cluster; see the module's docstring."""

    def __init__(
        self,
        connection: ClusterConnection,
        *,
        field_manager: str = "gpupaas",
        readiness_timeout: float = 600,
        request_timeout: float = 30,
        poll_interval: float = 1.0,
    ) -> None:
        for name, value in (
            ("readiness_timeout", readiness_timeout),
            ("request_timeout", request_timeout),
            ("poll_interval", poll_interval),
        ):
            if not value > 0:
                raise ValueError(f"{name} must be more than 0, not {value}")
        if not field_manager:
            raise ValueError("field_manager must not be empty")
        self.connection = connection
        self.field_manager = field_manager
        self.readiness_timeout = float(readiness_timeout)
        self.request_timeout = float(request_timeout)
        self.poll_interval = float(poll_interval)
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=4, thread_name_prefix="gpupaas-k8s"
        )
        self._client_lock = threading.Lock()
        self._api: Any = None
        self._host = "the API server"
        # A connection that cannot work fails every call (PermanentError), not the constructor:
        # the registry builds drivers where nobody could report it.
        self._config_error: str | None = (
            None
            if connection.in_cluster or (connection.kubeconfig or "").strip()
            else "the cluster has neither a kubeconfig nor in-cluster configuration"
        )
        # The kubeconfig loader writes certificate data to files; they live here, and go on close().
        self._files = tempfile.mkdtemp(prefix="gpupaas-kube-")
        self._resources: dict[str, dict[str, ApiResource]] = {}
        self._sweepable: tuple[float, tuple[ApiResource, ...]] | None = None
        self._closed = False

    # ------------------------------------------------------------------------------ connection

    def _client(self) -> Any:
        """The ApiClient, built on first use (in a worker thread: an exec plugin may run)."""
        with self._client_lock:
            if self._closed:
                raise TemporaryError("the cluster's driver was closed (its settings changed); try again")
            if self._api is not None:
                return self._api
            if self._config_error is not None:
                raise PermanentError(self._config_error)
            configuration = k8s_client.Configuration()
            try:
                if self.connection.in_cluster:
                    k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
                else:
                    data = yaml.safe_load(self.connection.kubeconfig or "")
                    if not isinstance(data, dict):
                        raise ConfigException("it is not a kubeconfig (a YAML mapping)")
                    k8s_config.load_kube_config_from_dict(  # type: ignore[no-untyped-call]
                        data,
                        context=self.connection.context,
                        client_configuration=configuration,
                        persist_config=False,
                        temp_file_path=self._files,
                    )
            except (ConfigException, yaml.YAMLError, ValueError, TypeError, KeyError, OSError) as error:
                # Not remembered: an exec credential plugin may work next time.
                where = "the in-cluster configuration" if self.connection.in_cluster else "the kubeconfig"
                raise PermanentError(f"{where} cannot be used: {error}".splitlines()[0]) from None
            api = k8s_client.ApiClient(configuration)
            api.user_agent = "gpupaas"
            self._host = str(configuration.host)
            self._api = api
            return api

    async def close(self) -> None:
        """Releases the connections, threads and files of the driver; later calls fail."""
        with self._client_lock:
            self._closed = True
            api, self._api = self._api, None
        if api is not None:
            await asyncio.get_running_loop().run_in_executor(self._executor, api.close)
        self._executor.shutdown(wait=False, cancel_futures=True)
        shutil.rmtree(self._files, ignore_errors=True)

    async def _run(self, function: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, functools.partial(function, *args))
        except RuntimeError as error:  # the executor was shut down by close()
            if self._closed:
                raise TemporaryError(
                    "the cluster's driver was closed (its settings changed); try again"
                ) from None
            raise error

    def _open(self, request: Request, timeout: Any) -> Any:
        """Sends the request; the response, not read yet. Raises _Unreachable when nobody answers."""
        api = self._client()
        headers = {"Accept": "application/json"}
        if request.content_type:
            headers["Content-Type"] = request.content_type
        method, url, headers, body, _ = api.param_serialize(
            request.method,
            request.path,
            query_params=list(request.query) or None,
            header_params=headers,
            body=dict(request.body) if request.body is not None else None,
            auth_settings=["BearerToken"],
        )
        try:
            return api.call_api(method, url, header_params=headers, body=body, _request_timeout=timeout)
        except ApiException as error:  # the client's way of saying TLS failed
            raise _Unreachable(str(error.reason or error).splitlines()[0], permanent=True) from None
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise _Unreachable(_transport_detail(error)) from None

    def _send(self, request: Request) -> tuple[int, bytes]:
        response = self._open(request, self.request_timeout)
        try:
            data: bytes = response.read() or b""
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise _Unreachable(_transport_detail(error)) from None
        return int(response.status), data

    async def _call(
        self, request: Request, action: str, *, missing_ok: bool = False
    ) -> dict[str, Any] | None:
        """The answer's object; None for a 404 when `missing_ok`. Raises DriverError."""
        try:
            status, data = await self._run(self._send, request)
        except _Unreachable as error:
            if error.permanent:
                raise PermanentError(
                    f"{action}: TLS with the API server at {self._host} failed: {error}"
                ) from None
            raise unreachable(self._host, str(error), action) from None
        if status == 404 and missing_ok:
            return None
        if not 200 <= status < 300:
            raise api_error(status, data, action)
        if not data:
            return {}
        try:
            parsed = json.loads(data)
        except ValueError:
            raise TemporaryError(f"{action}: the API server answered something that is not JSON") from None
        return parsed if isinstance(parsed, dict) else {}

    async def _get(self, request: Request, action: str) -> dict[str, Any]:
        answer = await self._call(request, action)
        assert answer is not None  # only missing_ok gives None
        return answer

    async def _list(
        self, resource: ApiResource, namespace: str | None, selector: str | None, action: str
    ) -> tuple[list[dict[str, Any]], str]:
        """Every object of the collection, page by page, and the list's resourceVersion. Items of a
        list carry no kind: it is put back, so that they read like what GET serves."""
        for _attempt in range(2):
            items: list[dict[str, Any]] = []
            token: str | None = None
            try:
                while True:
                    request = list_request(
                        resource, namespace, label_selector=selector, limit=_LIST_PAGE, continue_token=token
                    )
                    page = await self._get(request, action)
                    for item in page.get("items") or []:
                        if isinstance(item, dict):
                            item.setdefault("apiVersion", resource.group_version)
                            item.setdefault("kind", resource.kind)
                            items.append(item)
                    metadata = page.get("metadata") or {}
                    token = metadata.get("continue") or None
                    if token is None:
                        return items, str(metadata.get("resourceVersion") or "")
            except TemporaryError:
                # A continue token expires (410) when paging takes long: start again, once.
                if token is None:
                    raise
        raise TemporaryError(f"{action}: the list kept changing while it was read; try again")

    # ------------------------------------------------------------------------------- discovery

    async def _discover(self, group_version: str) -> dict[str, ApiResource]:
        root = "/apis" if "/" in group_version else "/api"
        answer = await self._call(
            Request("GET", f"{root}/{group_version}"),
            f"discovering the kinds of {group_version}",
            missing_ok=True,
        )
        resources = {r.kind: r for r in parse_resource_list(answer or {})}
        self._resources[group_version] = resources
        return resources

    async def _resource(self, api_version: str, kind: str) -> ApiResource | None:
        known = self._resources.get(api_version)
        if known is None or kind not in known:
            known = await self._discover(api_version)
        return known.get(kind)

    async def _sweepable_resources(self) -> tuple[ApiResource, ...]:
        """Every namespaced kind (preferred versions) that can be listed and deleted."""
        now = time.monotonic()
        if self._sweepable is not None and now - self._sweepable[0] < _DISCOVERY_TTL:
            return self._sweepable[1]
        group_versions = ["v1"]
        groups = await self._call(Request("GET", "/apis"), "discovering the API groups", missing_ok=True)
        group_versions += preferred_group_versions(groups or {})
        found: list[ApiResource] = []
        for resources in await asyncio.gather(*(self._discover(gv) for gv in group_versions)):
            found.extend(
                r
                for r in resources.values()
                if r.namespaced and {"list", "delete"} <= r.verbs and r.kind not in _NOT_SWEPT
            )
        self._sweepable = (now, tuple(found))
        return self._sweepable[1]

    async def _read(self, items: Sequence[_Item]) -> list[dict[str, Any] | None]:
        """The objects as the server holds them now (None: not there), read side by side."""
        return list(
            await asyncio.gather(
                *(
                    self._call(
                        get_request(item.resource, item.name, item.namespace),
                        f"reading {item.label}",
                        missing_ok=True,
                    )
                    for item in items
                )
            )
        )

    async def _items(self, plan: Plan, *, strict: bool) -> list[_Item]:
        """The plan's objects as they are applied, in order. `strict`: a kind the cluster does not
        serve, or an object without the instance's labels, fails (apply); otherwise it is skipped
        (destroy, observe: what cannot exist is not there)."""
        problems: list[str] = []
        prepared: list[tuple[dict[str, Any], ApiResource]] = []
        for manifest in plan.manifests:
            api_version, kind = str(manifest.get("apiVersion", "")), str(manifest.get("kind", ""))
            problem = label_problem(manifest, plan.instance_id, plan.owner_label)
            if problem is not None and strict:
                problems.append(problem)
                continue
            resource = await self._resource(api_version, kind)
            if resource is None:
                if strict:
                    problems.append(
                        f"{describe(manifest)}: the cluster does not serve kind {kind} of {api_version} "
                        "(is its CustomResourceDefinition installed?)"
                    )
                continue
            obj = with_namespace(manifest, plan.namespace, resource.namespaced)
            prepared.append((stamp_pod_templates(obj, plan.instance_id, plan.owner_label), resource))
        if problems:
            raise PermanentError("; ".join(problems))
        by_key = {object_key(obj): resource for obj, resource in prepared}
        return [_Item(obj, by_key[object_key(obj)]) for obj in apply_order(obj for obj, _ in prepared)]

    # ---------------------------------------------------------------------------------- check

    async def check(self, gpu_resource_names: Mapping[str, str] | None = None) -> ClusterInfo:
        """The API server's version and its nodes (allocatable CPU and memory, GPUs per extended
        resource as the nodes report them, GPU model). Raises DriverError saying what is wrong:
        unreachable, credentials refused, or which permission (RBAC) is missing."""
        version = await self._get(Request("GET", "/version"), "reading the API server's version")
        nodes, _ = await self._list(NODES, None, None, "listing the nodes (the driver needs list on nodes)")
        server = str(version.get("gitVersion") or f"v{version.get('major', '?')}.{version.get('minor', '?')}")
        return ClusterInfo(
            server_version=server,
            nodes=tuple(sorted((node_info(node) for node in nodes), key=lambda n: n.name)),
        )

    # ---------------------------------------------------------------------------------- apply

    async def apply(self, plan: Plan, progress: Progress | None = None) -> Applied:
        report = progress or _silent
        deadline = time.monotonic() + self.readiness_timeout
        items = await self._items(plan, strict=True)
        await report(f"Applying {plural(len(items), 'object')}")
        for item in items:
            request = apply_request(
                item.manifest, item.resource, field_manager=self.field_manager, force=True
            )
            applied = await self._get(request, f"applying {item.label}")
            if item.kind == "Namespace" and (applied.get("status") or {}).get("phase") == "Terminating":
                raise TemporaryError(
                    f"{item.label} is still terminating (a destroy has not finished); try again later"
                )
        await report(f"Waiting for {plural(len(items), 'object')} to be ready")
        await self._wait_ready(plan, items, deadline, report)
        objects: list[dict[str, Any]] = []
        for item, obj in zip(items, await self._read(items), strict=True):
            if obj is None:
                raise TemporaryError(f"{item.label} was deleted while it was being applied; try again")
            objects.append(obj)
        try:
            outputs = render_outputs(plan.outputs, plan.context, objects)
        except TemplateError as error:
            raise PermanentError(f"the outputs cannot be rendered: {error}") from None
        return Applied(outputs=outputs, objects=tuple(item.ref for item in items))

    async def _wait_ready(
        self, plan: Plan, items: Sequence[_Item], deadline: float, report: Progress
    ) -> None:
        waited = [item for item in items if item.kind in WAITED_KINDS]
        makers = [item for item in items if item.kind in _POD_MAKERS]
        makes_pods = bool(makers)
        # Every controller scaled to zero (a stopped service): ready once its pods are gone.
        stopping = makes_pods and all(
            item.kind == "Deployment" and (item.manifest.get("spec") or {}).get("replicas") == 0
            for item in makers
        )
        namespaces = sorted({item.namespace for item in items if item.namespace})
        storage_classes: dict[str, bool] = {}
        last_message: str | None = None
        while True:
            waiting: list[str] = []
            deployments: list[dict[str, Any]] = []
            for item, obj in zip(waited, await self._read(waited), strict=True):
                if obj is None:
                    waiting.append(f"{item.label} to exist")
                    continue
                if item.kind == "Namespace" and (obj.get("status") or {}).get("phase") == "Terminating":
                    raise TemporaryError(
                        f"{item.label} is terminating (a destroy has not finished); try again when it is gone"
                    )
                if item.kind == "Deployment":
                    deployments.append(obj)
                first_consumer = False
                if item.kind == "PersistentVolumeClaim" and (obj.get("status") or {}).get("phase") != "Bound":
                    first_consumer = await self._binds_on_first_consumer(obj, storage_classes)
                state = readiness(obj, wait_for_first_consumer=first_consumer)
                if state.failed:
                    raise PermanentError(state.message or f"{item.label} failed")
                if not state.ready:
                    waiting.append(state.message or item.label)
            if makes_pods:
                pods = await self._check_pods(plan, namespaces, deployments)
                if stopping and pods:
                    waiting.append(f"pod {pods[0]} to terminate")
            if not waiting:
                return
            if waiting[0] != last_message:
                last_message = waiting[0]
                await report(f"Waiting for {last_message}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                more = len(waiting) - 3
                raise PermanentError(
                    f"not ready after {self.readiness_timeout:g} s: "
                    + "; ".join(waiting[:3])
                    + (f"; and {more} more" if more > 0 else "")
                )
            await asyncio.sleep(min(self.poll_interval, remaining))

    async def _check_pods(
        self, plan: Plan, namespaces: Sequence[str], deployments: Sequence[Mapping[str, Any]]
    ) -> list[str]:
        """Fails the run when a pod the plan's controllers made cannot run (their own status only
        says that replicas are missing, not why). The names of the plan's pods."""
        selector = f"{plan.owner_label}={plan.instance_id}"
        names: list[str] = []
        for namespace in namespaces:
            pods, _ = await self._list(PODS, namespace, selector, f"listing the pods of {namespace}")
            replicasets: list[dict[str, Any]] = []
            if deployments and any(p.get("metadata", {}).get("ownerReferences") for p in pods):
                replicasets, _ = await self._list(
                    REPLICASETS, namespace, selector, f"listing the replicasets of {namespace}"
                )
            names.extend(str((pod.get("metadata") or {}).get("name")) for pod in pods)
            for pod in current_pods(pods, replicasets, deployments):
                problem = pod_problem(pod) if counts(pod) else None
                if problem is not None:
                    raise PermanentError(problem)
        return names

    async def _binds_on_first_consumer(self, claim: Mapping[str, Any], cache: dict[str, bool]) -> bool:
        """Whether the claim's storage class binds only when a pod uses it (WaitForFirstConsumer).
        The DefaultStorageClass admission plugin has already filled in the default class."""
        name = (claim.get("spec") or {}).get("storageClassName")
        if not name:
            return False
        if name not in cache:
            try:
                storage_class = await self._call(
                    get_request(STORAGE_CLASSES, str(name), None),
                    f"reading storageclass {name}",
                    missing_ok=True,
                )
            except PermanentError:  # not allowed to read storage classes: wait for Bound
                storage_class = None
            mode = (storage_class or {}).get("volumeBindingMode")
            cache[name] = mode == "WaitForFirstConsumer"
        return cache[name]

    # -------------------------------------------------------------------------------- destroy

    async def destroy(self, plan: Plan, progress: Progress | None = None) -> None:
        report = progress or _silent
        deadline = time.monotonic() + self.readiness_timeout
        items = await self._items(plan, strict=False)
        namespaces = [item for item in items if item.kind == "Namespace"]
        others = [item for item in items if item.kind != "Namespace"]
        await report(f"Deleting {plural(len(items), 'object')}")
        for item in reversed(others):
            await self._delete(item)
        # What the plan does not name: an older template's objects, what controllers made. Before
        # the namespace goes, so that the namespace's deletion has nothing of ours left to wait for.
        spaces = sorted({plan.namespace} | {item.namespace for item in others if item.namespace})
        leftovers = await self._leftovers(plan, spaces)
        for item in leftovers:
            await self._delete(item)
        for item in namespaces:
            await self._delete(item)
        if namespaces:
            await report(f"Waiting for namespace {', '.join(item.name for item in namespaces)} to terminate")
        await self._wait_gone([*others, *leftovers, *namespaces], deadline)

    async def _delete(self, item: _Item) -> None:
        try:
            await self._call(
                delete_request(item.resource, item.name, item.namespace),
                f"deleting {item.label}",
                missing_ok=True,
            )
        except PermanentError as error:
            # 409: already being deleted with other options, which is as good.
            if "HTTP 409" not in str(error):
                raise

    async def _leftovers(self, plan: Plan, namespaces: Sequence[str]) -> list[_Item]:
        """The objects labelled with the instance in its namespaces (every namespaced kind that can
        be listed and deleted), but those already being deleted."""
        selector = f"{plan.owner_label}={plan.instance_id}"

        async def listed(resource: ApiResource, namespace: str) -> list[dict[str, Any]]:
            try:
                objects, _ = await self._list(
                    resource, namespace, selector, f"listing the {resource.plural} of {namespace}"
                )
            except PermanentError:  # not allowed to list this kind: nothing of ours can be there
                return []
            return objects

        # One list per kind and namespace: dozens on a real cluster, so side by side.
        pairs = [(r, ns) for r in await self._sweepable_resources() for ns in namespaces]
        answers = await asyncio.gather(*(listed(r, ns) for r, ns in pairs))
        return [
            _Item(
                {
                    "apiVersion": resource.group_version,
                    "kind": resource.kind,
                    "metadata": {"name": obj["metadata"]["name"], "namespace": namespace},
                },
                resource,
            )
            for (resource, namespace), objects in zip(pairs, answers, strict=True)
            for obj in objects
            if not (obj.get("metadata") or {}).get("deletionTimestamp")
        ]

    async def _wait_gone(self, items: Sequence[_Item], deadline: float) -> None:
        remaining_items = list(items)
        while True:
            objects = await self._read(remaining_items)
            left = [
                (item, obj) for item, obj in zip(remaining_items, objects, strict=True) if obj is not None
            ]
            if not left:
                return
            remaining_items = [item for item, _ in left]
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise PermanentError(
                    f"still there {self.readiness_timeout:g} s after it was deleted: "
                    + "; ".join(_terminating(item.label, obj) for item, obj in left[:3])
                )
            await asyncio.sleep(min(self.poll_interval, remaining))

    # -------------------------------------------------------------------------------- observe

    async def observe(self, plan: Plan) -> Observed:
        items = await self._items(plan, strict=False)
        found: list[tuple[_Item, dict[str, Any]]] = []
        missing: list[str] = []
        for item, obj in zip(items, await self._read(items), strict=True):
            if obj is None:
                missing.append(item.label)
            else:
                found.append((item, obj))
        if not found:
            return Observed(Phase.ABSENT)
        problems: list[str] = []
        waiting: list[str] = []
        storage_classes: dict[str, bool] = {}
        for item, obj in found:
            if (obj.get("metadata") or {}).get("deletionTimestamp"):
                waiting.append(f"{item.label} is being deleted")
                continue
            first_consumer = False
            if item.kind == "PersistentVolumeClaim" and (obj.get("status") or {}).get("phase") != "Bound":
                first_consumer = await self._binds_on_first_consumer(obj, storage_classes)
            state = readiness(obj, wait_for_first_consumer=first_consumer)
            if state.failed:
                problems.append(state.message or item.label)
            elif not state.ready:
                waiting.append(state.message or item.label)
        if any(item.kind in _POD_MAKERS or item.kind == "Pod" for item in items):
            pods: list[dict[str, Any]] = []
            for namespace in sorted({item.namespace for item, _ in found if item.namespace}):
                listed, _ = await self._list(
                    PODS,
                    namespace,
                    f"{plan.owner_label}={plan.instance_id}",
                    f"listing the pods of {namespace}",
                )
                pods.extend(listed)
            health = instance_health(pods)
            if health is not None and health.phase == Phase.FAILED and health.message not in problems:
                problems.append(str(health.message))
        if problems:
            return Observed(Phase.FAILED, "; ".join(dict.fromkeys(problems)))
        if missing:
            return Observed(Phase.PROGRESSING, f"missing: {', '.join(missing)}")
        if waiting:
            return Observed(Phase.PROGRESSING, waiting[0])
        return Observed(Phase.READY)

    # ---------------------------------------------------------------------------------- drift

    async def watch_drift(self, on_change: OnDrift, *, stop: asyncio.Event) -> None:
        """Reports the instances whose pods fail (FAILED with the reason) or recover (READY) until
        `stop` is set. Temporary failures (the API server unreachable, 5xx) are retried with a
        growing pause; a permanent one (credentials, RBAC: it needs list and watch on pods in every
        namespace) is raised. An exception of `on_change` is logged and the change is reported
        again at the instance's next change."""
        tracker = DriftTracker()
        selector = f"{MANAGED_BY}={MANAGER_VALUE}"
        # Its own thread: a watch holds one for as long as it lasts.
        executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="gpupaas-k8s-watch"
        )
        failures = 0
        version: str | None = None  # to resume from; None: list first
        try:
            while not stop.is_set():
                try:
                    if version is None:
                        pods, listed = await self._list(
                            PODS, None, selector, "listing the pods gpupaas manages"
                        )
                        if not listed:
                            raise TemporaryError("the API server listed the pods without a resourceVersion")
                        await self._notify(tracker, tracker.reset(pods), on_change)
                        version = listed
                    started = time.monotonic()
                    version = await self._watch(executor, selector, version, tracker, on_change, stop)
                    failures = 0
                    if time.monotonic() - started < self.poll_interval and not stop.is_set():
                        # A watch that ends at once, again and again, must not turn into a busy loop.
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(stop.wait(), timeout=self.poll_interval)
                except TemporaryError as error:
                    version = None
                    failures += 1
                    pause = min(self.poll_interval * 2 ** min(failures, 10), _MAX_BACKOFF)
                    log.warning("drift watch: %s; listing again in %.1f s", error, pause)
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), timeout=pause)
        finally:
            executor.shutdown(wait=False, cancel_futures=True)

    async def _notify(
        self, tracker: DriftTracker, changes: Sequence[tuple[Owner, Observed]], on_change: OnDrift
    ) -> None:
        for owner, observed in changes:
            try:
                await on_change(owner, observed)
            except Exception:
                log.exception(
                    "drift watch: reporting %s=%s %s failed", owner.label, owner.id, observed.phase.value
                )
                continue
            tracker.reported[owner] = observed.phase

    async def _watch(
        self,
        executor: concurrent.futures.Executor,
        selector: str,
        version: str,
        tracker: DriftTracker,
        on_change: OnDrift,
        stop: asyncio.Event,
    ) -> str | None:
        """One watch from `version`, until it ends. The resourceVersion to go on from (of the last
        event or bookmark) when the server ended it, or `stop` was set; None when the pods must be
        listed again: 410 Gone (that resourceVersion is no longer in the server's history) or the
        connection broke (events may have been lost with it)."""
        request = watch_request(
            PODS, None, label_selector=selector, resource_version=version, timeout_seconds=_WATCH_SECONDS
        )
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        stream = _Stream()

        def emit(kind: str, value: Any) -> None:
            with contextlib.suppress(RuntimeError):  # the loop is gone: nobody listens any more
                loop.call_soon_threadsafe(queue.put_nowait, (kind, value))

        def read() -> None:
            try:
                self._stream(request, stream, lambda event: emit("event", event))
                emit("end", None)
            except BaseException as error:  # everything goes to the loop, which decides
                emit("error", error)

        loop.run_in_executor(executor, read)
        stopping = asyncio.ensure_future(stop.wait())
        try:
            while True:
                getting = asyncio.ensure_future(queue.get())
                done, _ = await asyncio.wait({getting, stopping}, return_when=asyncio.FIRST_COMPLETED)
                if getting not in done:
                    getting.cancel()
                    return version
                kind, value = getting.result()
                if kind == "end":  # timeoutSeconds passed, or the server closed it: go on from here
                    return version
                if kind == "error":
                    self._watch_error(value)
                    return None
                event_type = str(value.get("type") or "")
                obj = value.get("object") if isinstance(value.get("object"), dict) else {}
                if event_type == "ERROR":
                    if obj.get("code") == 410:
                        return None  # Gone: the resourceVersion was compacted away
                    raise TemporaryError(f"the pod watch failed: {status_text(json.dumps(obj))}")
                new_version = (obj.get("metadata") or {}).get("resourceVersion")
                if new_version:
                    version = str(new_version)
                if event_type in ("ADDED", "MODIFIED", "DELETED"):
                    await self._notify(tracker, tracker.event(event_type, obj), on_change)
        finally:
            stream.close()
            stopping.cancel()

    def _watch_error(self, error: BaseException) -> None:
        """Raises what a failed watch means; returns for a broken connection (list again)."""
        if isinstance(error, _HttpError):
            if error.status == 410:
                return
            raise api_error(error.status, error.body, "watching the pods gpupaas manages")
        if isinstance(error, _Unreachable):
            if error.permanent:
                raise PermanentError(
                    f"watching the pods: TLS with the API server at {self._host} failed: {error}"
                )
            log.info("drift watch: the connection broke (%s); listing again", error)
            return
        if isinstance(error, (urllib3.exceptions.HTTPError, OSError, ValueError)):
            log.info("drift watch: the stream broke (%s); listing again", error)
            return
        raise error

    def _stream(self, request: Request, stream: _Stream, on_event: Callable[[dict[str, Any]], None]) -> None:
        """Reads one watch in this (worker) thread, one JSON event per line, until it ends."""
        response = self._open(request, (self.request_timeout, _WATCH_SECONDS + self.request_timeout))
        raw = response.response
        try:
            if not stream.attach(raw):
                return
            if int(response.status) != 200:
                raise _HttpError(int(response.status), raw.read() or b"")
            buffer = b""
            for chunk in raw.stream(65536):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    if line.strip():
                        on_event(json.loads(line))
            if buffer.strip():
                on_event(json.loads(buffer))
        finally:
            stream.close()
            with contextlib.suppress(Exception):
                raw.close()
            with contextlib.suppress(Exception):
                raw.release_conn()


def _transport_detail(error: BaseException) -> str:
    reason = getattr(error, "reason", None)  # MaxRetryError wraps the real cause
    text = str(reason or error) or type(error).__name__
    return text.splitlines()[0]


def _terminating(label: str, obj: Mapping[str, Any]) -> str:
    """What holds an object that was deleted: a namespace's conditions say what is left in it."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    details = [
        str(c.get("message"))
        for c in conditions
        if isinstance(c, dict) and c.get("status") == "True" and c.get("message")
    ]
    finalizers = (obj.get("metadata") or {}).get("finalizers") or []
    if not details and finalizers:
        details.append("finalizers: " + ", ".join(str(f) for f in finalizers))
    return label + (f" ({'; '.join(details)})" if details else "")
