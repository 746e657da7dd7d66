"""The drift watch: the pods that fail or recover after a run applied them.

`watch_drift` lists and then watches the pods labelled app.kubernetes.io/managed-by=gpupaas in every
namespace (with bookmarks, so that the resourceVersion it keeps stays recent). It reports an
instance FAILED when one of its pods fails and READY when all its pods are ready again after that
(k8s_manifests/drift.py decides which). A watch the server ends is started again from the last
resourceVersion (no event is lost in between); after 410 Gone (that resourceVersion was compacted
away) or a broken connection it lists again at once and compares the list with what it reported:
nothing is missed across restarts of the watch, nor reported late. Each watch holds a thread of
its own for its stream, which the event loop unblocks when `stop` is set or the task is cancelled.

Troubles that may pass (a pod Pending after a node drain, waiting for a node; an image pull the
kubelet retries; a crash it restarts) turn an instance FAILED only after their grace (`graces`),
as during a run. A pod that waits for a node changes nothing on the server, so while a trouble is
being timed the watch also looks again every `poll_interval` on its own (DriftTracker.tick). The
graces are timed from when this watch first saw each trouble: a watch started again (a worker
restarted) gives them their whole grace again.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

import urllib3

from gpupaas.provisioning.drivers.base import Observed, OnDrift, Owner
from gpupaas.provisioning.drivers.k8s_manifests.api import watch_request
from gpupaas.provisioning.drivers.k8s_manifests.drift import DriftTracker
from gpupaas.provisioning.drivers.k8s_manifests.errors import api_error, status_text
from gpupaas.provisioning.drivers.k8s_manifests.objects import MANAGER_VALUE
from gpupaas.provisioning.drivers.k8s_manifests.pods import Graces
from gpupaas.provisioning.drivers.kubernetes.api import PODS, KubeApi
from gpupaas.provisioning.drivers.kubernetes.connection import HttpError, Unreachable, WatchStream
from gpupaas.provisioning.plan import MANAGED_BY, PermanentError, TemporaryError

__all__ = ["watch_drift"]

# The logger of the driver before it became a package, so that log settings keep finding it.
log = logging.getLogger("gpupaas.provisioning.drivers.kubernetes")

# A server-side watch lasts this long; the read timeout is longer, so a dead connection is noticed.
_WATCH_SECONDS = 300
_MAX_BACKOFF = 30.0


async def watch_drift(
    api: KubeApi,
    on_change: OnDrift,
    *,
    stop: asyncio.Event,
    poll_interval: float,
    graces: Graces | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Reports the instances whose pods fail (FAILED with the reason) or recover (READY) until
    `stop` is set. Temporary failures (the API server unreachable, 5xx) are retried with a
    growing pause; a permanent one (credentials, RBAC: it needs list and watch on pods in every
    namespace) is raised. An exception of `on_change` is logged and the change is reported
    again at the instance's next change. `graces`, and how long each watch lasted (one that ended
    at once is followed by a pause), are timed on `clock`."""
    tracker = DriftTracker(graces, clock)
    selector = f"{MANAGED_BY}={MANAGER_VALUE}"
    # Its own thread: a watch holds one for as long as it lasts.
    executor = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpupaas-k8s-watch")
    failures = 0
    version: str | None = None  # to resume from; None: list first
    try:
        while not stop.is_set():
            try:
                fresh = version is None  # this round lists first
                if version is None:
                    pods, listed = await api.list_objects(
                        PODS, None, selector, "listing the pods gpupaas manages"
                    )
                    if not listed:
                        raise TemporaryError("the API server listed the pods without a resourceVersion")
                    await _notify(tracker, tracker.reset(pods), on_change)
                    version = listed
                started = clock()
                version = await _watch(
                    api, executor, selector, version, tracker, on_change, stop, poll_interval=poll_interval
                )
                failures = 0
                if clock() - started < poll_interval and not stop.is_set() and (fresh or version is not None):
                    # A watch that ends at once, again and again, must not turn into a busy loop. But a
                    # resumed watch that ends at once to be listed again (410 Gone: the API server's
                    # history moved past it, as after its restart) is followed by the list at once:
                    # what changed meanwhile is news, and the list is no busy loop unless it too is
                    # followed by a watch that ends at once, which waits.
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), timeout=poll_interval)
            except TemporaryError as error:
                version = None
                failures += 1
                pause = min(poll_interval * 2 ** min(failures, 10), _MAX_BACKOFF)
                log.warning("drift watch: %s; listing again in %.1f s", error, pause)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), timeout=pause)
    finally:
        executor.shutdown(wait=False, cancel_futures=True)


async def _notify(
    tracker: DriftTracker, changes: Sequence[tuple[Owner, Observed]], on_change: OnDrift
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
    api: KubeApi,
    executor: concurrent.futures.Executor,
    selector: str,
    version: str,
    tracker: DriftTracker,
    on_change: OnDrift,
    stop: asyncio.Event,
    *,
    poll_interval: float,
) -> str | None:
    """One watch from `version`, until it ends. The resourceVersion to go on from (of the last
    event or bookmark) when the server ended it, or `stop` was set; None when the pods must be
    listed again: 410 Gone (that resourceVersion is no longer in the server's history) or the
    connection broke (events may have been lost with it). While the tracker times a trouble, it
    is also ticked every `poll_interval` without an event."""
    request = watch_request(
        PODS, None, label_selector=selector, resource_version=version, timeout_seconds=_WATCH_SECONDS
    )
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    stream = WatchStream()

    def emit(kind: str, value: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody listens any more
            loop.call_soon_threadsafe(queue.put_nowait, (kind, value))

    def read() -> None:
        try:
            api.transport.read_watch(
                request, stream, lambda event: emit("event", event), seconds=_WATCH_SECONDS
            )
            emit("end", None)
        except BaseException as error:  # everything goes to the loop, which decides
            emit("error", error)

    loop.run_in_executor(executor, read)
    stopping = asyncio.ensure_future(stop.wait())
    getting: asyncio.Future[tuple[str, Any]] | None = None
    try:
        while True:
            if getting is None:
                getting = asyncio.ensure_future(queue.get())
            waiters: set[asyncio.Future[Any]] = {getting, stopping}
            done, _ = await asyncio.wait(
                waiters,
                timeout=poll_interval if tracker.waiting else None,
                return_when=asyncio.FIRST_COMPLETED,
            )
            if stopping in done:
                return version
            if getting not in done:  # a grace may have run out meanwhile
                await _notify(tracker, tracker.tick(), on_change)
                continue
            kind, value = getting.result()
            getting = None
            if kind == "end":  # timeoutSeconds passed, or the server closed it: go on from here
                return version
            if kind == "error":
                _watch_error(api, value)
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
                await _notify(tracker, tracker.event(event_type, obj), on_change)
    finally:
        if getting is not None:
            getting.cancel()
        stream.close()
        stopping.cancel()


def _watch_error(api: KubeApi, error: BaseException) -> None:
    """Raises what a failed watch means; returns for a broken connection (list again)."""
    if isinstance(error, HttpError):
        if error.status == 410:
            return
        raise api_error(error.status, error.body, "watching the pods gpupaas manages")
    if isinstance(error, Unreachable):
        if error.permanent:
            raise PermanentError(
                f"watching the pods: TLS with the API server at {api.transport.host} failed: {error}"
            )
        log.info("drift watch: the connection broke (%s); listing again", error)
        return
    if isinstance(error, (urllib3.exceptions.HTTPError, OSError, ValueError)):
        log.info("drift watch: the stream broke (%s); listing again", error)
        return
    raise error
