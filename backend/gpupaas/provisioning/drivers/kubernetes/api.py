"""Requests to the API server as the driver makes them: the generic REST paths (/api/v1/...,
/apis/<group>/<version>/...) that discovery finds, JSON answers, lists read page by page.

Answers: 2xx is the object; 5xx, 429, 410, timeouts and connection errors are TemporaryError (the
worker retries the run); other 4xx are PermanentError with the Status's message and causes
(k8s_manifests/errors.py).
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from gpupaas.provisioning.drivers.k8s_manifests.api import (
    ApiResource,
    Request,
    list_request,
    parse_resource_list,
    preferred_group_versions,
)
from gpupaas.provisioning.drivers.k8s_manifests.errors import api_error, unreachable
from gpupaas.provisioning.drivers.kubernetes.connection import Transport, Unreachable
from gpupaas.provisioning.plan import PermanentError, TemporaryError

__all__ = ["NODES", "PODS", "REPLICASETS", "STORAGE_CLASSES", "KubeApi"]

PODS = ApiResource("v1", "Pod", "pods", namespaced=True)
NODES = ApiResource("v1", "Node", "nodes", namespaced=False)
REPLICASETS = ApiResource("apps/v1", "ReplicaSet", "replicasets", namespaced=True)
STORAGE_CLASSES = ApiResource("storage.k8s.io/v1", "StorageClass", "storageclasses", namespaced=False)

# Listed by destroy's sweep for nothing: nobody labels them with an instance.
_NOT_SWEPT = frozenset({"Event", "Binding", "LocalSubjectAccessReview"})
_LIST_PAGE = 500
_DISCOVERY_TTL = 300.0


class KubeApi:
    """Requests to one API server, answered as objects or DriverErrors, and what discovery found.

    Discovery (kind -> plural and scope) is cached per driver and looked up again once when a kind
    is unknown, as after a CRD is installed.
    """

    def __init__(self, transport: Transport) -> None:
        self.transport = transport
        self._resources: dict[str, dict[str, ApiResource]] = {}
        self._sweepable: tuple[float, tuple[ApiResource, ...]] | None = None

    async def call(self, request: Request, action: str, *, missing_ok: bool = False) -> dict[str, Any] | None:
        """The answer's object; None for a 404 when `missing_ok`. Raises DriverError."""
        try:
            status, data = await self.transport.run(self.transport.send, request)
        except Unreachable as error:
            if error.permanent:
                raise PermanentError(
                    f"{action}: TLS with the API server at {self.transport.host} failed: {error}"
                ) from None
            raise unreachable(self.transport.host, str(error), action) from None
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

    async def get(self, request: Request, action: str) -> dict[str, Any]:
        answer = await self.call(request, action)
        assert answer is not None  # only missing_ok gives None
        return answer

    async def list_objects(
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
                    page = await self.get(request, action)
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

    async def _discover(self, group_version: str) -> dict[str, ApiResource]:
        root = "/apis" if "/" in group_version else "/api"
        answer = await self.call(
            Request("GET", f"{root}/{group_version}"),
            f"discovering the kinds of {group_version}",
            missing_ok=True,
        )
        resources = {r.kind: r for r in parse_resource_list(answer or {})}
        self._resources[group_version] = resources
        return resources

    async def resource(self, api_version: str, kind: str) -> ApiResource | None:
        known = self._resources.get(api_version)
        if known is None or kind not in known:
            known = await self._discover(api_version)
        return known.get(kind)

    async def sweepable_resources(self) -> tuple[ApiResource, ...]:
        """Every namespaced kind (preferred versions) that can be listed and deleted."""
        now = time.monotonic()
        if self._sweepable is not None and now - self._sweepable[0] < _DISCOVERY_TTL:
            return self._sweepable[1]
        group_versions = ["v1"]
        groups = await self.call(Request("GET", "/apis"), "discovering the API groups", missing_ok=True)
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
