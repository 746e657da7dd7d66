"""Container logs and events of the objects an instance owns, read from the API server.

Logs: the newest pod carrying the owner's label (the pods of its Deployment) is read through the
pods/log subresource (`kubectl logs`: container, tailLines, previous, timestamps; with follow the
answer is a chunked stream that lasts as long as the container runs). A pod the API server cannot
serve a log of answers 400 (no previous container, a container still waiting to start) and that
message is the error.

Events: core/v1 Events of the owner's namespace whose involved object carries the owner's label
(each involved object is read once, by its uid, to see its labels; pods gone by then are judged
by the name of a pod seen before). With follow, the events are listed and then watched from the
list's resourceVersion; a repeated event comes again (MODIFIED, a higher count). A watch the
server ends is started again from the last resourceVersion; after 410 Gone the events are listed
again and only the new or changed ones are given.

Streams are read in threads of their own (`streams`), which closing the stream (the caller stops
reading) unblocks, so the event loop never waits on a socket.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator
from datetime import datetime
from typing import Any

from gpupaas.provisioning.drivers.base import ClusterEvent, EventQuery, LogLine, LogQuery, Owner
from gpupaas.provisioning.drivers.k8s_manifests.api import ApiResource, Request, watch_request
from gpupaas.provisioning.drivers.k8s_manifests.errors import api_error, status_text
from gpupaas.provisioning.drivers.kubernetes.api import PODS, KubeApi
from gpupaas.provisioning.drivers.kubernetes.connection import HttpError, Unreachable, WatchStream
from gpupaas.provisioning.plan import PermanentError, TemporaryError

__all__ = ["EVENTS", "read_events", "read_logs"]

EVENTS = ApiResource("v1", "Event", "events", namespaced=True)
_WATCH_SECONDS = 300
_END = object()


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    text = value.strip().replace("Z", "+00:00")
    # The API server writes nanoseconds; Python reads microseconds.
    head, dot, rest = text.partition(".")
    if dot:
        digits = "".join(c for c in rest if c.isdigit())
        zone = rest[len(digits) :]
        text = f"{head}.{digits[:6]}{zone}"
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def parse_log_line(raw: bytes, pod: str, container: str, containers: tuple[str, ...] = ()) -> LogLine:
    """A line of a log read with timestamps=true: "<RFC3339Nano> <text>"."""
    text = raw.decode("utf-8", errors="replace").rstrip("\r")
    stamp, _, rest = text.partition(" ")
    at = _time(stamp)
    return LogLine(
        at=at, text=rest if at is not None else text, pod=pod, container=container, containers=containers
    )


async def _stream(
    api: KubeApi, executor: concurrent.futures.Executor, request: Request, *, seconds: float | None
) -> AsyncGenerator[bytes, None]:
    """The lines of a streamed answer, read in a thread of `executor`; closing the iterator closes
    the stream (which wakes the thread)."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Any] = asyncio.Queue()
    stream = WatchStream()

    def emit(item: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop is gone: nobody listens any more
            loop.call_soon_threadsafe(queue.put_nowait, item)

    def read() -> None:
        try:
            api.transport.read_lines(request, stream, emit, seconds=seconds)
            emit(_END)
        except BaseException as error:  # everything goes to the loop, which decides
            emit(error)

    loop.run_in_executor(executor, read)
    try:
        while True:
            item = await queue.get()
            if item is _END:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stream.close()


def _failure(api: KubeApi, error: BaseException, action: str) -> Exception:
    if isinstance(error, HttpError):
        return api_error(error.status, error.body, action)
    if isinstance(error, Unreachable):
        return TemporaryError(f"{action}: the API server at {api.transport.host} did not answer: {error}")
    if isinstance(error, Exception):
        return TemporaryError(f"{action}: the stream broke: {error}")
    raise error


async def _newest_pod(api: KubeApi, namespace: str, owner: Owner) -> dict[str, Any]:
    pods, _ = await api.list_objects(
        PODS, namespace, f"{owner.label}={owner.id}", "listing the pods (the driver needs list on pods)"
    )
    if not pods:
        raise PermanentError("it has no pod: it is not running")
    return max(pods, key=lambda p: (str((p.get("metadata") or {}).get("creationTimestamp") or ""),))


async def read_logs(
    api: KubeApi, executor: concurrent.futures.Executor, query: LogQuery
) -> AsyncIterator[LogLine]:
    pod = await _newest_pod(api, query.namespace, query.owner)
    name = str(pod["metadata"]["name"])
    containers = tuple(str(c.get("name")) for c in (pod.get("spec") or {}).get("containers") or [])
    container = query.container or (containers[0] if containers else "")
    params: list[tuple[str, str]] = [("container", container), ("timestamps", "true")]
    if query.tail_lines is not None:
        params.append(("tailLines", str(query.tail_lines)))
    if query.previous:
        params.append(("previous", "true"))
    if query.follow:
        params.append(("follow", "true"))
    path = f"{PODS.path(name, query.namespace)}/log"
    request = Request("GET", path, query=tuple(params))
    action = f"reading the log of container {container} of pod {name} (the driver needs get on pods/log)"
    if not query.follow:
        status, data, _ = await api.transport.run(api.transport.send, request)
        if status != 200:
            raise api_error(status, data, action)
        for raw in data.split(b"\n"):
            if raw:
                yield parse_log_line(raw, name, container, containers)
        return
    lines = _stream(api, executor, request, seconds=None)
    try:
        try:
            async for raw in lines:
                if raw:
                    yield parse_log_line(raw, name, container, containers)
        except (HttpError, Unreachable, OSError, ValueError) as error:
            raise _failure(api, error, action) from None
    finally:
        await lines.aclose()


class _Ownership:
    """Whether an event's involved object is the owner's: read once per object (by uid)."""

    def __init__(self, api: KubeApi, owner: Owner) -> None:
        self.api = api
        self.owner = owner
        self.known: dict[str, bool] = {}  # uid -> the owner's?
        self.names: dict[tuple[str, str], bool] = {}  # (kind, name) -> the owner's?

    async def owns(self, involved: dict[str, Any], namespace: str) -> bool:
        uid = str(involved.get("uid") or "")
        kind, name = str(involved.get("kind") or ""), str(involved.get("name") or "")
        if uid and uid in self.known:
            return self.known[uid]
        found = await self._labels(involved, namespace)
        if found is None:  # gone: judged by what was seen under that name
            return self.names.get((kind, name), False)
        mine = found.get(self.owner.label) == self.owner.id
        if uid:
            self.known[uid] = mine
        self.names[(kind, name)] = mine
        return mine

    async def _labels(self, involved: dict[str, Any], namespace: str) -> dict[str, Any] | None:
        api_version, kind = str(involved.get("apiVersion") or "v1"), str(involved.get("kind") or "")
        name = str(involved.get("name") or "")
        try:
            resource = await self.api.resource(api_version, kind)
        except TemporaryError:
            return None
        if resource is None or not name:
            return None
        path = resource.path(name, involved.get("namespace") or namespace)
        obj = await self.api.call(
            Request("GET", path), f"reading {kind.lower()} {name}", missing_ok=True, retry_server_errors=False
        )
        if obj is None:
            return None
        return (obj.get("metadata") or {}).get("labels") or {}


def event_of(obj: dict[str, Any]) -> ClusterEvent:
    involved = obj.get("involvedObject") or {}
    first = _time(obj.get("firstTimestamp")) or _time(obj.get("eventTime"))
    last = (
        _time(obj.get("lastTimestamp")) or _time((obj.get("series") or {}).get("lastObservedTime")) or first
    )
    count = obj.get("count") or (obj.get("series") or {}).get("count") or 1
    return ClusterEvent(
        name=str((obj.get("metadata") or {}).get("name") or ""),
        type=str(obj.get("type") or "Normal"),
        reason=str(obj.get("reason") or ""),
        message=str(obj.get("message") or ""),
        object_kind=str(involved.get("kind") or ""),
        object_name=str(involved.get("name") or ""),
        count=int(count) if isinstance(count, int) else 1,
        first_at=first,
        last_at=last,
    )


def _stamp(obj: dict[str, Any]) -> str:
    """Orders events as `kubectl get events` does: by when they last happened."""
    return str(obj.get("lastTimestamp") or obj.get("eventTime") or obj.get("firstTimestamp") or "")


async def read_events(
    api: KubeApi, executor: concurrent.futures.Executor, query: EventQuery
) -> AsyncIterator[ClusterEvent]:
    ownership = _Ownership(api, query.owner)
    action = "listing the events (the driver needs list and watch on events)"
    seen: dict[str, tuple[int, str]] = {}  # event name -> (count, last timestamp) given

    async def fresh(obj: dict[str, Any]) -> ClusterEvent | None:
        if not await ownership.owns(obj.get("involvedObject") or {}, query.namespace):
            return None
        event = event_of(obj)
        mark = (event.count, _stamp(obj))
        if seen.get(event.name) == mark:
            return None
        seen[event.name] = mark
        return event

    version: str | None = None
    while True:
        if version is None:
            items, version = await api.list_objects(EVENTS, query.namespace, None, action)
            for obj in sorted(items, key=_stamp):
                event = await fresh(obj)
                if event is not None:
                    yield event
            if not query.follow:
                return
        request = watch_request(
            EVENTS, query.namespace, resource_version=version, timeout_seconds=_WATCH_SECONDS
        )
        lines = _stream(api, executor, request, seconds=_WATCH_SECONDS + api.transport.request_timeout)
        try:
            async for raw in lines:
                if not raw.strip():
                    continue
                change = json.loads(raw)
                kind = str(change.get("type") or "")
                obj = change.get("object") if isinstance(change.get("object"), dict) else {}
                if kind == "ERROR":
                    if obj.get("code") == 410:
                        version = None  # Gone: list again
                        break
                    raise TemporaryError(f"the event watch failed: {status_text(json.dumps(obj))}")
                new_version = (obj.get("metadata") or {}).get("resourceVersion")
                if new_version:
                    version = str(new_version)
                if kind in ("ADDED", "MODIFIED"):
                    event = await fresh(obj)
                    if event is not None:
                        yield event
        except HttpError as error:
            if error.status != 410:
                raise _failure(api, error, "watching the events") from None
            version = None
        except (Unreachable, OSError, ValueError):
            version = None  # the connection broke: list again (only what is new is given)
            await asyncio.sleep(1.0)
        finally:
            await lines.aclose()


def stream_executor() -> concurrent.futures.ThreadPoolExecutor:
    """The threads a driver's followed logs and events are read in (one each while they last)."""
    return concurrent.futures.ThreadPoolExecutor(max_workers=64, thread_name_prefix="gpupaas-k8s-stream")
