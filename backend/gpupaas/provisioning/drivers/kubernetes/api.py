"""Requests to the API server as the driver makes them: the generic REST paths (/api/v1/...,
/apis/<group>/<version>/...) that discovery finds, JSON answers, lists read page by page.

Answers: 2xx is the object; 4xx are PermanentError with the Status's message and causes, 410 and a
namespace still terminating TemporaryError (k8s_manifests/errors.py). Faults that go away by
themselves (connection refused or reset, timeouts, 5xx, 429) are retried, within `patient` (an
apply or destroy): with exponential backoff and jitter, or after the pause the server asked for
(Retry-After, on writes as on reads), until the request has failed for `retry_seconds` (long
enough to ride out a control-plane restart) or the run's deadline passes; then they fail the run
(PermanentError) naming the last answer. The worker does not retry them again: that would
multiply the budget and start the readiness deadline over. Outside `patient` (the cluster check,
observing, the drift watch) a fault is a TemporaryError at once, as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, NamedTuple

from gpupaas.provisioning.drivers.k8s_manifests.api import (
    ApiResource,
    Request,
    list_request,
    parse_resource_list,
    preferred_group_versions,
)
from gpupaas.provisioning.drivers.k8s_manifests.errors import (
    RetriesExhausted,
    Transient,
    api_error,
    unreachable,
)
from gpupaas.provisioning.drivers.k8s_manifests.objects import group_of
from gpupaas.provisioning.drivers.kubernetes.connection import Transport, Unreachable
from gpupaas.provisioning.plan import DriverError, PermanentError, TemporaryError
from gpupaas.provisioning.wording import plural

__all__ = [
    "CLAIMS",
    "NAMESPACES",
    "NODES",
    "PODS",
    "REPLICASETS",
    "RESOURCE_QUOTAS",
    "STORAGE_CLASSES",
    "Discovered",
    "KubeApi",
    "Patience",
]

PODS = ApiResource("v1", "Pod", "pods", namespaced=True)
NODES = ApiResource("v1", "Node", "nodes", namespaced=False)
NAMESPACES = ApiResource("v1", "Namespace", "namespaces", namespaced=False)
REPLICASETS = ApiResource("apps/v1", "ReplicaSet", "replicasets", namespaced=True)
STORAGE_CLASSES = ApiResource("storage.k8s.io/v1", "StorageClass", "storageclasses", namespaced=False)
RESOURCE_QUOTAS = ApiResource("v1", "ResourceQuota", "resourcequotas", namespaced=True)
CLAIMS = ApiResource("v1", "PersistentVolumeClaim", "persistentvolumeclaims", namespaced=True)

# Listed by destroy's sweep for nothing: nobody labels them with an instance.
_NOT_SWEPT = frozenset({"Event", "Binding", "LocalSubjectAccessReview"})
_LIST_PAGE = 500
_DISCOVERY_TTL = 300.0
# The longest pause between two attempts of a request: a control plane that is back is seen soon.
_MAX_PAUSE = 16.0


@dataclass(frozen=True)
class Patience:
    """How the requests of one apply or destroy ride out transient faults: each is retried until it
    has failed for `budget` seconds, never past `deadline` (time.monotonic(): the run's readiness
    deadline, from its start, which retries do not move). Pauses start at `first_pause` and double,
    with jitter, up to 16 s; a Retry-After is waited for as it says (at least `first_pause`)."""

    budget: float
    deadline: float
    first_pause: float


# Set by `KubeApi.patient` for the task of a run, and so for every request made on its behalf,
# including the readiness checks (tasks started in it inherit it), without passing it through.
_PATIENCE: ContextVar[Patience | None] = ContextVar("gpupaas_kubernetes_patience", default=None)


class Discovered(NamedTuple):
    """What discovery found to sweep: the kinds, and the group versions that did not answer (with
    why), whose kinds could not be looked at."""

    resources: tuple[ApiResource, ...]
    skipped: tuple[str, ...] = ()


class KubeApi:
    """Requests to one API server, answered as objects or DriverErrors, and what discovery found.

    Discovery (kind -> plural and scope) is cached per driver and looked up again once when a kind
    is unknown, as after a CRD is installed.
    """

    def __init__(self, transport: Transport, *, retry_seconds: float = 0.0, first_pause: float = 0.5) -> None:
        self.transport = transport
        self.retry_seconds = retry_seconds
        self.first_pause = first_pause
        self._resources: dict[str, dict[str, ApiResource]] = {}
        self._sweepable: tuple[float, tuple[ApiResource, ...]] | None = None

    @contextlib.contextmanager
    def patient(self, deadline: float) -> Iterator[Patience]:
        """Within it, requests retry transient faults (see Patience) until `deadline` at the latest."""
        patience = Patience(self.retry_seconds, deadline, self.first_pause)
        token = _PATIENCE.set(patience)
        try:
            yield patience
        finally:
            _PATIENCE.reset(token)

    async def call(
        self, request: Request, action: str, *, missing_ok: bool = False, retry_server_errors: bool = True
    ) -> dict[str, Any] | None:
        """The answer's object; None for a 404 when `missing_ok`. Raises DriverError.

        Within `patient`, a transient fault is retried (see the module's docstring); with
        `retry_server_errors` False only a server nobody reaches, or one that asks to slow down
        (429), is: a 5xx is that part of the API being broken (an aggregated API whose backend is
        down), which waiting rarely cures."""
        patience = _PATIENCE.get()
        failing_since: float | None = None
        attempts = 0
        while True:
            try:
                return await self._call_once(request, action, missing_ok)
            except Transient as error:
                attempts += 1
                if patience is None or patience.budget <= 0:
                    raise
                if not retry_server_errors and error.status is not None and error.status != 429:
                    raise
                now = time.monotonic()
                failing_since = now if failing_since is None else failing_since
                pause = self._pause(patience, attempts, error.retry_after)
                problem = _give_up(patience, error, now, pause, failing_since, attempts)
                if problem is not None:
                    raise RetriesExhausted(problem) from None
                await asyncio.sleep(min(pause, min(failing_since + patience.budget, patience.deadline) - now))

    @staticmethod
    def _pause(patience: Patience, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return max(retry_after, patience.first_pause)
        ceiling = min(_MAX_PAUSE, patience.first_pause * 2.0 ** (attempt - 1))
        # Half of it fixed, half at random: clients that failed together do not come back together.
        return ceiling / 2 + random.uniform(0, ceiling / 2)  # noqa: S311 (jitter, not a secret)

    async def _call_once(self, request: Request, action: str, missing_ok: bool) -> dict[str, Any] | None:
        try:
            status, data, retry_after = await self.transport.run(self.transport.send, request)
        except Unreachable as error:
            if error.permanent:
                raise PermanentError(
                    f"{action}: TLS with the API server at {self.transport.host} failed: {error}"
                ) from None
            raise unreachable(self.transport.host, str(error), action) from None
        if status == 404 and missing_ok:
            return None
        if not 200 <= status < 300:
            raise api_error(status, data, action, retry_after=retry_after)
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

    async def _discover(self, group_version: str, *, needed: bool = True) -> dict[str, ApiResource]:
        root = "/apis" if "/" in group_version else "/api"
        answer = await self.call(
            Request("GET", f"{root}/{group_version}"),
            f"discovering the kinds of {group_version}",
            missing_ok=True,
            retry_server_errors=needed,
        )
        resources = {r.kind: r for r in parse_resource_list(answer or {})}
        self._resources[group_version] = resources
        return resources

    async def resource(self, api_version: str, kind: str) -> ApiResource | None:
        known = self._resources.get(api_version)
        if known is None or kind not in known:
            known = await self._discover(api_version)
        return known.get(kind)

    async def sweepable_resources(self, needed: Iterable[str] = ()) -> Discovered:
        """Every namespaced kind (preferred versions) that can be listed and deleted.

        A group version that does not answer its discovery (an aggregated API such as
        metrics.k8s.io whose backend is down answers 503) is skipped and named in `skipped`,
        unless its group is that of one of the `needed` group versions (or the core group): the
        kinds a caller cannot do without fail the call instead. A result with skipped groups is
        not cached, so that the next call asks again."""
        now = time.monotonic()
        if self._sweepable is not None and now - self._sweepable[0] < _DISCOVERY_TTL:
            return Discovered(self._sweepable[1])
        required = {""} | {group_of(group_version) for group_version in needed}
        group_versions = ["v1"]
        groups = await self.call(Request("GET", "/apis"), "discovering the API groups", missing_ok=True)
        group_versions += preferred_group_versions(groups or {})

        async def discover(group_version: str) -> dict[str, ApiResource] | str:
            needed_here = group_of(group_version) in required
            try:
                return await self._discover(group_version, needed=needed_here)
            except DriverError as error:
                if needed_here:
                    raise
                return f"{group_version} ({error})"

        found: list[ApiResource] = []
        skipped: list[str] = []
        for answer in await asyncio.gather(*(discover(gv) for gv in group_versions)):
            if isinstance(answer, str):
                skipped.append(answer)
                continue
            found.extend(
                r
                for r in answer.values()
                if r.namespaced and {"list", "delete"} <= r.verbs and r.kind not in _NOT_SWEPT
            )
        if not skipped:
            self._sweepable = (now, tuple(found))
        return Discovered(tuple(found), tuple(skipped))


def _give_up(
    patience: Patience, error: Transient, now: float, pause: float, failing_since: float, attempts: int
) -> str | None:
    """Why a failing request is not tried again, naming the last error; None: it is, after `pause`
    (cut short to what the budget and the deadline leave, for one last attempt then)."""
    spent = now - failing_since
    budget_end = failing_since + patience.budget
    tries = plural(attempts, "attempt")
    last = f"; the last error: {error}"
    if now >= patience.deadline:
        return (
            "the run's deadline (its readiness timeout, from its start) passed while the API server "
            f"kept failing ({tries} in {spent:.1f} s){last}"
        )
    if now >= budget_end:
        return (
            f"the API server kept failing for {spent:.1f} s ({tries}; the driver retries for "
            f"{patience.budget:g} s){last}"
        )
    if error.retry_after is not None and now + pause > min(budget_end, patience.deadline):
        left = min(budget_end, patience.deadline) - now
        return (
            f"the API server asked to wait {error.retry_after:g} s before the next attempt, more than "
            f"the retries have left ({left:.1f} s){last}"
        )
    return None
