"""The connection to a cluster: the only module of gpupaas that imports `kubernetes`.

A `ClusterConnection` holds a kubeconfig's text (and optionally a context) or says "in-cluster"
(the pod's service account). Each driver's `Transport` builds its own `Configuration` and
`ApiClient` (the client's global default configuration is never touched), lazily, in a worker
thread, on the first request: loading a kubeconfig may run an exec credential plugin. A kubeconfig
that cannot be used fails every call with a PermanentError that says why.

Requests are sent through `ApiClient.call_api` on a thread pool of the transport's own (4
threads), so the event loop never blocks; every request has `_request_timeout`. A request nobody
answers (connection refused or reset, timeout, TLS failure) raises `Unreachable`; a watch is read
in a thread of the caller's, which the event loop unblocks by closing its `WatchStream` (socket
shutdown). `close()` releases connections, threads and temporary files.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import json
import shutil
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

import urllib3
import yaml
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException

from gpupaas.provisioning.drivers.k8s_manifests.api import Request
from gpupaas.provisioning.plan import PermanentError, TemporaryError

__all__ = ["ClusterConnection", "HttpError", "Reply", "Transport", "Unreachable", "WatchStream"]

T = TypeVar("T")


@dataclass(frozen=True)
class ClusterConnection:
    """How to reach a cluster: a kubeconfig's text (its current context, or `context`), or the
    service account of the pod gpupaas runs in (`in_cluster`)."""

    kubeconfig: str | None = field(repr=False)  # holds credentials: kept out of repr()
    in_cluster: bool = False
    context: str | None = None


class Reply(NamedTuple):
    """An answer of the API server: its status, its body, and its Retry-After header (None when
    it has none), which says how long to wait before asking again (429, some 5xx)."""

    status: int
    body: bytes
    retry_after: str | None = None


class HttpError(Exception):
    """The API server answered, but not with 2xx."""

    def __init__(self, status: int, body: bytes) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body


class Unreachable(Exception):
    """No answer: connection refused or reset, timeout, TLS failure."""

    def __init__(self, detail: str, *, permanent: bool = False) -> None:
        super().__init__(detail)
        self.permanent = permanent


class WatchStream:
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


class Transport:
    """The driver's line to one API server: its own `ApiClient` (built on the first request), the
    thread pool its blocking calls run on, and the temporary files of its kubeconfig."""

    def __init__(self, connection: ClusterConnection, *, request_timeout: float) -> None:
        self.connection = connection
        self.request_timeout = request_timeout
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
        self._closed = False

    @property
    def host(self) -> str:
        """The API server's URL once the client is built; "the API server" before."""
        return self._host

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

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        """`function(*args)` on the transport's threads, so that the event loop never blocks."""
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, functools.partial(function, *args))
        except RuntimeError as error:  # the executor was shut down by close()
            if self._closed:
                raise TemporaryError(
                    "the cluster's driver was closed (its settings changed); try again"
                ) from None
            raise error

    def open(self, request: Request, timeout: Any) -> Any:
        """Sends the request; the response, not read yet. Raises Unreachable when nobody answers."""
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
            raise Unreachable(str(error.reason or error).splitlines()[0], permanent=True) from None
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise Unreachable(_transport_detail(error)) from None

    def send(self, request: Request) -> Reply:
        """Sends the request and reads the answer."""
        response = self.open(request, self.request_timeout)
        try:
            data: bytes = response.read() or b""
        except (urllib3.exceptions.HTTPError, OSError) as error:
            raise Unreachable(_transport_detail(error)) from None
        retry_after = response.headers.get("Retry-After")
        return Reply(int(response.status), data, str(retry_after) if retry_after is not None else None)

    def read_watch(
        self,
        request: Request,
        stream: WatchStream,
        on_event: Callable[[dict[str, Any]], None],
        *,
        seconds: int,
    ) -> None:
        """Reads one watch that lasts `seconds` on the server, in this (worker) thread, one JSON event
        per line, until it ends."""
        response = self.open(request, (self.request_timeout, seconds + self.request_timeout))
        raw = response.response
        try:
            if not stream.attach(raw):
                return
            if int(response.status) != 200:
                raise HttpError(int(response.status), raw.read() or b"")
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

    def read_lines(
        self,
        request: Request,
        stream: WatchStream,
        on_line: Callable[[bytes], None],
        *,
        seconds: float | None,
    ) -> None:
        """Reads a streamed answer (a followed pod log: chunked, open for as long as the container
        runs) in this (worker) thread, one line at a time, until it ends or `stream` is closed.
        `seconds`: how long a read may wait for the next chunk (None: for ever)."""
        response = self.open(request, (self.request_timeout, seconds))
        raw = response.response
        try:
            if not stream.attach(raw):
                return
            if int(response.status) != 200:
                raise HttpError(int(response.status), raw.read() or b"")
            buffer = b""
            for chunk in raw.stream(65536):
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    on_line(line)
            if buffer:
                on_line(buffer)
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
