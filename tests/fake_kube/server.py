"""Running the fake Kubernetes API server, and the handle tests control it with.

`run_fake_kube()` (a sync context manager) serves the app with uvicorn on a free loopback port
in a daemon thread with its own event loop, so the official (synchronous) client can call it
from any thread. `run_fake_kube_async()` serves it as a task of the running loop instead; then
call the sync client through `asyncio.to_thread`, never on the loop itself.

Both yield a `FakeKube`. Its control methods may be called from any thread: they run on the
server's loop (and wait for it), so they never race the requests.
"""

from __future__ import annotations

import asyncio
import base64
import builtins
import concurrent.futures
import contextlib
import socket
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import uvicorn
import yaml
from kubernetes import client

from tests.fake_kube.app import ErrorRule, LatencyRule, RequestRecord, ServerState, create_app
from tests.fake_kube.authz import Denial, bootstrap_objects
from tests.fake_kube.authz.identity import (
    SERVICE_ACCOUNT_NAME_ANNOTATION,
    SERVICE_ACCOUNT_TOKEN_TYPE,
    User,
)
from tests.fake_kube.controllers import DEFAULT_NODES, Controllers
from tests.fake_kube.registry_storage import STANDARD_CLASS
from tests.fake_kube.resources import resource_for
from tests.fake_kube.store import Store
from tests.fake_kube.util import Obj, deep, get_path

T = TypeVar("T")
_INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class _Server(uvicorn.Server):
    """uvicorn's server with a quick stop: uvicorn polls every 0.1 s while it runs and while it
    shuts down (~0.2 s a stop), which adds up when every test starts its own server."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.wake = asyncio.Event()

    async def main_loop(self) -> None:
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.wake.wait(), 0.1)
            counter = (counter + 1) % 864000
            should_exit = await self.on_tick(counter)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        for connection in list(self.server_state.connections):
            connection.shutdown()
        # uvicorn's state has no event to wait on: poll, often, for the open answers to finish.
        for _ in range(int(float(self.config.timeout_graceful_shutdown or 1) / 0.002)):
            if not (self.server_state.connections or self.server_state.tasks):
                break
            await asyncio.sleep(0.002)
        for task in self.server_state.tasks:
            task.cancel()
        for server in self.servers:
            await server.wait_closed()

    def stop(self) -> None:
        self.should_exit = True
        self.wake.set()


class FakeKube:
    """A fake Kubernetes API server (see the package docstring) and its test controls."""

    def __init__(self, *, token: str | None = None, history_size: int = 1000) -> None:
        self.store = Store(history_size=history_size)
        self.controllers = Controllers(self.store)
        self.state = ServerState(self.store, self.controllers, token=token)
        self.app = create_app(self.state)
        self.url = ""
        self.port = 0
        self.loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._thread: threading.Thread | None = None
        self._server: _Server | None = None
        self._task: asyncio.Task[None] | None = None

    # Lifecycle -------------------------------------------------------------------------------

    def _socket(self) -> socket.socket:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        # Without TCP_NODELAY every answer waits ~40 ms for the client's delayed ACK (Nagle).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind(("127.0.0.1", 0))
        self.port = sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        return sock

    def _config(self) -> uvicorn.Config:
        return uvicorn.Config(
            self.app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            ws="none",
            timeout_graceful_shutdown=1,
            timeout_keep_alive=30,
        )

    def _bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._loop_thread = threading.get_ident()
        self.controllers.bind(loop)
        for name in _INITIAL_NAMESPACES:
            self.store.create(
                resource_for("v1", "Namespace"),
                None,
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
                manager="kube-apiserver",
            )
        for obj in [STANDARD_CLASS, *bootstrap_objects()]:
            rt = resource_for(obj["apiVersion"], obj["kind"])
            self.store.create(rt, None, deep(obj), manager="kube-apiserver")
        self.controllers.set_nodes([deep(n) for n in DEFAULT_NODES])

    async def _serve(self, sock: socket.socket, started: Callable[[], None]) -> None:
        self._server = _Server(self._config())
        task = asyncio.ensure_future(self._server.serve(sockets=[sock]))
        while not self._server.started:
            if task.done():
                task.result()
                raise RuntimeError("the fake kube server stopped while starting")
            await asyncio.sleep(0.002)
        started()
        await task

    def start(self) -> FakeKube:
        """Serves in a daemon thread with its own event loop; returns when it accepts requests."""
        sock = self._socket()
        ready = threading.Event()
        failure: list[BaseException] = []

        def main() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            try:
                self._bind(loop)
                loop.run_until_complete(self._serve(sock, ready.set))
            except BaseException as error:
                failure.append(error)
                ready.set()
            finally:
                self.controllers.close()
                loop.run_until_complete(loop.shutdown_asyncgens())
                loop.close()

        self._thread = threading.Thread(target=main, name="fake-kube", daemon=True)
        self._thread.start()
        if not ready.wait(10) or failure:
            raise RuntimeError(f"the fake kube server did not start: {failure}")
        return self

    def stop(self) -> None:
        loop, thread = self.loop, self._thread
        if loop is None or thread is None or not thread.is_alive():
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(self._shutdown)
        thread.join(10)

    def _shutdown(self) -> None:
        self.store.drop_watches()
        self.controllers.close()
        if self._server is not None:
            self._server.stop()

    async def start_async(self) -> FakeKube:
        """Serves as a task of the running event loop; returns when it accepts requests."""
        sock = self._socket()
        self._bind(asyncio.get_running_loop())
        started = asyncio.Event()
        self._task = asyncio.ensure_future(self._serve(sock, started.set))
        waiter = asyncio.ensure_future(started.wait())
        await asyncio.wait([self._task, waiter], return_when=asyncio.FIRST_COMPLETED)
        if self._task.done():
            waiter.cancel()
            self._task.result()
        return self

    async def stop_async(self) -> None:
        self._shutdown()
        if self._task is not None:
            await self._task

    # Running on the server's loop ------------------------------------------------------------

    def call(self, function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Runs function(*args, **kwargs) on the server's event loop and returns its result."""
        loop = self.loop
        if (
            loop is None
            or loop.is_closed()
            or threading.get_ident() == self._loop_thread
            or not loop.is_running()
        ):
            return function(*args, **kwargs)
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def run() -> None:
            try:
                future.set_result(function(*args, **kwargs))
            except BaseException as error:
                future.set_exception(error)

        loop.call_soon_threadsafe(run)
        return future.result(timeout=30)

    # Client configuration --------------------------------------------------------------------

    @property
    def token(self) -> str | None:
        return self.state.token

    def configuration(self, token: str | None = None) -> client.Configuration:
        """A client Configuration for this server (host = url, bearer token)."""
        configuration = client.Configuration()
        configuration.host = self.url
        configuration.api_key = {"authorization": f"Bearer {token or self.token or 'fake-token'}"}
        return configuration

    def api_client(self, token: str | None = None) -> client.ApiClient:
        return client.ApiClient(self.configuration(token))

    def kubeconfig(self, path: str | Path, *, token: str | None = None, namespace: str = "default") -> Path:
        """Writes a kubeconfig for this server (a token user, insecure-skip-tls-verify) and
        returns its path."""
        path = Path(path)
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": "fake-kube", "cluster": {"server": self.url, "insecure-skip-tls-verify": True}}
            ],
            "users": [{"name": "fake-user", "user": {"token": token or self.token or "fake-token"}}],
            "contexts": [
                {
                    "name": "fake-kube",
                    "context": {"cluster": "fake-kube", "user": "fake-user", "namespace": namespace},
                }
            ],
            "current-context": "fake-kube",
            "preferences": {},
        }
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        return path

    # Identities ------------------------------------------------------------------------------

    def load_rbac(self, *paths: str | Path) -> builtins.list[Obj]:
        """Applies every object of these YAML files as `kubectl apply --server-side` by an admin
        would (ServiceAccounts, their token Secrets, Roles, bindings...); returns them as stored."""
        documents = [
            doc
            for path in paths
            for doc in yaml.safe_load_all(Path(path).read_text(encoding="utf-8"))
            if isinstance(doc, dict)
        ]

        def apply() -> builtins.list[Obj]:
            stored = []
            for doc in documents:
                rt = resource_for(str(doc.get("apiVersion")), str(doc.get("kind")))
                namespace = get_path(doc, "metadata", "namespace") if rt.namespaced else None
                name = str(get_path(doc, "metadata", "name"))
                _, obj = self.store.apply(rt, namespace, name, deep(doc), manager="kubectl", force=True)
                stored.append(obj)
            return stored

        return self.call(apply)

    def service_account_token(self, namespace: str, name: str, timeout: float = 5.0) -> str:
        """The token the tokens controller put into a `kubernetes.io/service-account-token`
        Secret of this ServiceAccount (waits for it), as a kubeconfig's user would hold it."""

        def token() -> str | None:
            for secret in self.list("v1", "Secret", namespace):
                annotations = secret["metadata"].get("annotations") or {}
                if (
                    secret.get("type") == SERVICE_ACCOUNT_TOKEN_TYPE
                    and annotations.get(SERVICE_ACCOUNT_NAME_ANNOTATION) == name
                    and get_path(secret, "data", "token")
                ):
                    return base64.b64decode(secret["data"]["token"]).decode()
            return None

        found = self.wait_for(token, timeout)
        assert found is not None  # wait_for returns only what is truthy
        return found

    def add_user(self, token: str, name: str, groups: Iterable[str] = ()) -> User:
        """A bearer token for a user of this name and groups (and system:authenticated), as a line
        of kube-apiserver's --token-auth-file; RBAC decides what it may do."""
        return self.call(self.state.authz.authenticator.add, token, name, tuple(groups))

    # Cluster controls ------------------------------------------------------------------------

    def set_nodes(self, nodes: Iterable[Obj]) -> None:
        """Replaces the node inventory (Node objects; see `tests.fake_kube.node`). Pending pods
        are scheduled again."""
        nodes = [deep(n) for n in nodes]
        self.call(self.controllers.set_nodes, nodes)

    def set_pod_delay(self, seconds: float) -> None:
        """How long a bound pod stays ContainerCreating before it is Running and Ready."""
        self.call(setattr, self.controllers, "pod_delay", float(seconds))

    def set_termination_delay(self, seconds: float) -> None:
        """How long a deleted pod on a node stays Terminating (deletionTimestamp set)."""
        self.call(setattr, self.controllers, "termination_delay", float(seconds))

    def set_namespace_deletion_delay(self, seconds: float) -> None:
        """How long a deleted namespace stays Terminating before its content is deleted."""
        self.call(setattr, self.controllers, "namespace_deletion_delay", float(seconds))

    def set_pvc_delay(self, seconds: float | None) -> None:
        """How long a new PVC stays Pending before it is Bound; None: PVCs stay Pending."""

        def apply() -> None:
            self.controllers.pvc_delay = seconds
            if seconds is not None:
                self.controllers.bind_pending_pvcs()

        self.call(apply)

    def set_bookmark_interval(self, seconds: float) -> None:
        self.call(setattr, self.state, "bookmark_interval", float(seconds))

    def pause_controllers(self) -> None:
        """Stops the scheduler, kubelet and controllers (the API keeps answering)."""
        self.call(setattr, self.controllers, "enabled", False)

    def resume_controllers(self) -> None:
        self.call(self.controllers.resume)

    def fail_pod(
        self,
        namespace: str,
        name: str,
        reason: str = "Error",
        message: str = "",
        *,
        exit_code: int | None = None,
        phase: str | None = None,
        container: str | None = None,
    ) -> Obj:
        """Makes the pod's containers (or one) fail, as a kubelet would report it:
        - a waiting reason (ImagePullBackOff, ErrImagePull, CrashLoopBackOff,
          CreateContainerConfigError, ...): the container waits with that reason and message;
        - otherwise (OOMKilled, Error, ...), restartPolicy Always/OnFailure: phase Running, the
          container in CrashLoopBackOff with lastState.terminated {reason, exitCode} and
          restartCount + 1; restartPolicy Never, reason Evicted or phase="Failed": phase Failed,
          the container terminated with that reason.
        The pod stays failed until `recover_pod`. Returns the pod."""
        return self.call(
            self.controllers.fail_pod,
            namespace,
            name,
            reason,
            message,
            exit_code=exit_code,
            phase=phase,
            container=container,
        )

    def recover_pod(self, namespace: str, name: str) -> Obj | None:
        """Undoes fail_pod / make_unschedulable: the pod is scheduled again or Running and Ready."""
        return self.call(self.controllers.recover_pod, namespace, name)

    def make_unschedulable(self, namespace: str, name: str, message: str | None = None) -> Obj:
        """Keeps the pod Pending with PodScheduled=False (reason Unschedulable, this message)."""
        return self.call(self.controllers.make_unschedulable, namespace, name, message)

    def complete_pod(self, namespace: str, name: str, exit_code: int = 0) -> Obj:
        """The running pod's containers exit with `exit_code`: 0 -> Succeeded; otherwise Failed
        (restartPolicy Never) or restarted (OnFailure, Always). How a Job's pods end."""
        return self.call(self.controllers.complete_pod, namespace, name, exit_code)

    def set_job_pod_seconds(self, seconds: float | None) -> None:
        """Job pods succeed this long after they run (None, the default: when complete_pod says)."""
        self.call(setattr, self.controllers, "job_pod_seconds", seconds)

    def write_log(self, namespace: str, name: str, container: str, text: str) -> None:
        """The pod's container writes these lines to its log (its current instance's)."""
        self.call(self.controllers.write_log, namespace, name, container, text)

    # What readiness waits on -----------------------------------------------------------------

    def add_nodes(
        self, nodes: Iterable[Obj], *, after: float = 0.0, device_plugin_delay: float | None = None
    ) -> None:
        """Nodes that join `after` seconds from now (a node pool scaling up from zero); with
        `device_plugin_delay`, without their GPUs until that much later. Pending pods are
        scheduled again when they join."""
        nodes = [deep(n) for n in nodes]
        self.call(self.controllers.add_nodes, nodes, after=after, device_plugin_delay=device_plugin_delay)

    def crash_loop(
        self,
        namespace: str,
        name: str,
        *,
        crashes: int | None = None,
        reason: str = "Error",
        message: str = "",
        exit_code: int = 1,
        back_off: float = 0.05,
        runs_for: float = 0.05,
        container: str | None = None,
    ) -> Obj:
        """Makes the pod's containers crash again and again (restartPolicy Always or OnFailure):
        CrashLoopBackOff with restartCount growing at each crash, `back_off` seconds (doubling)
        before each restart, `runs_for` seconds running (not ready) before the next crash;
        after `crashes` crashes (None: never) it runs and is Ready. `recover_pod` ends it."""
        return self.call(
            self.controllers.crash_loop,
            namespace,
            name,
            crashes=crashes,
            reason=reason,
            message=message,
            exit_code=exit_code,
            back_off=back_off,
            runs_for=runs_for,
            container=container,
        )

    def set_observe_delay(self, seconds: float | None) -> None:
        """How long the Deployment and StatefulSet controllers take to observe a new generation
        (their status stays that of the one before meanwhile); None: not until set again."""

        def apply() -> None:
            self.controllers.observe_delay = seconds
            for rt, kind in (
                (resource_for("apps/v1", "Deployment"), "deployment"),
                (resource_for("apps/v1", "StatefulSet"), "statefulset"),
            ):
                for obj in self.store.items(rt):
                    self.controllers.enqueue(kind, obj["metadata"]["namespace"], obj["metadata"]["name"])

        self.call(apply)

    def set_loadbalancer_delay(self, seconds: float | None) -> None:
        """How long a LoadBalancer Service waits for its ingress address; None: until set again."""
        self.call(self.controllers.set_loadbalancer_delay, seconds)

    # API controls ----------------------------------------------------------------------------

    def inject_error(
        self,
        method: str,
        path_regex: str,
        status: int,
        times: int | None = 1,
        *,
        reason: str | None = None,
        message: str | None = None,
        retry_after: int | None = None,
    ) -> ErrorRule:
        """The next `times` requests (None: all) whose method (or "*") and path (re.search)
        match answer a Status with this code (reason from the code unless given)."""
        rule = ErrorRule(
            method.upper() if method != "*" else "*", path_regex, status, times, reason, message, retry_after
        )
        self.call(self.state.error_rules.append, rule)
        return rule

    def clear_errors(self) -> None:
        self.call(self.state.error_rules.clear)

    def add_unavailable_api(self, group: str = "metrics.k8s.io", version: str = "v1beta1") -> None:
        """Registers an aggregated API whose backend is down (a broken metrics-server, say): /apis
        lists the group, and every request under /apis/<group>/<version> (its discovery too) is
        answered 503 "service unavailable", as kube-aggregator does."""
        self.call(self.state.unavailable_apis.__setitem__, group, version)

    def set_latency(self, seconds: float, *, method: str = "*", path_regex: str = "") -> None:
        """Delays every matching request by `seconds` before it is handled (0 removes it)."""

        def apply() -> None:
            self.state.latency_rules[:] = [
                r for r in self.state.latency_rules if (r.method, r.path_regex) != (method, path_regex)
            ]
            if seconds > 0:
                self.state.latency_rules.append(LatencyRule(float(seconds), method, path_regex))

        self.call(apply)

    def drop_watches(self) -> int:
        """Ends every open watch stream (as an API server restart would); returns how many."""
        return self.call(self.store.drop_watches)

    def open_watches(self, kind: str | None = None) -> int:
        """How many watch streams (of `kind`, e.g. "Pod") are open: a client's watch counts from
        when the server has taken its request until the stream ends (or the client goes)."""
        return self.call(lambda: sum(1 for w in self.store.watchers if kind is None or w.rt.kind == kind))

    def compact(self) -> None:
        """Forgets the event history: watches from any earlier resourceVersion get an ERROR
        event with a 410 Expired Status."""
        self.call(self.store.compact)

    @property
    def requests(self) -> builtins.list[RequestRecord]:
        """Every request so far: (method, path, query, content_type, at: its time.monotonic())."""
        return list(self.state.requests)

    @property
    def denials(self) -> builtins.list[Denial]:
        """Every request refused by authorization so far (403; see tests/fake_kube/authz)."""
        return self.call(lambda: builtins.list(self.state.authz.denials))

    def clear_requests(self) -> None:
        self.call(self.state.requests.clear)

    @property
    def internal_errors(self) -> builtins.list[str]:
        """Bugs of the fake: tracebacks of requests that failed inside it (answered 500) and
        objects it wrote that its own schema check rejects."""
        return list(self.state.internal_errors) + list(self.store.problems)

    @property
    def resource_version(self) -> int:
        return self.store.rv

    # Reading and seeding objects -------------------------------------------------------------

    def get(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> Obj | None:
        rt = resource_for(api_version, kind)
        return self.call(lambda: deep(self.store.find(rt, namespace, name)))

    def list(
        self, api_version: str, kind: str, namespace: str | None = None, label_selector: str | None = None
    ) -> builtins.list[Obj]:
        rt = resource_for(api_version, kind)

        def read() -> builtins.list[Obj]:
            listed = self.store.list_objects(rt, namespace, label_selector)
            for item in listed["items"]:
                item["apiVersion"], item["kind"] = rt.api_version, rt.kind
            return builtins.list(listed["items"])

        return self.call(read)

    def pods(self, namespace: str | None = None, label_selector: str | None = None) -> builtins.list[Obj]:
        return self.list("v1", "Pod", namespace, label_selector)

    def create(self, obj: Obj, *, manager: str = "test") -> Obj:
        """Creates an object through the API's rules (defaults, admission, validation)."""
        rt = resource_for(str(obj.get("apiVersion")), str(obj.get("kind")))
        namespace = get_path(obj, "metadata", "namespace") if rt.namespaced else None
        return self.call(self.store.create, rt, namespace, deep(obj), manager=manager)

    def delete(
        self, api_version: str, kind: str, name: str, namespace: str | None = None, policy: str = "Background"
    ) -> None:
        rt = resource_for(api_version, kind)

        def remove() -> None:
            obj = self.store.find(rt, namespace, name)
            if obj is not None:
                self.store.delete_object(rt, obj, policy)

        self.call(remove)

    def wait_for(self, predicate: Callable[[], T], timeout: float = 5.0, interval: float = 0.01) -> T:
        """Polls predicate() until it returns something truthy; returns it (AssertionError on timeout)."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout} s waiting for {predicate}")
            time.sleep(interval)

    def pod_names(self, namespace: str, label_selector: str | None = None) -> builtins.list[str]:
        return [p["metadata"]["name"] for p in self.pods(namespace, label_selector)]

    def ready_pods(self, namespace: str, label_selector: str | None = None) -> builtins.list[Obj]:
        return [
            p
            for p in self.pods(namespace, label_selector)
            if any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in get_path(p, "status", "conditions") or []
            )
        ]


@contextlib.contextmanager
def run_fake_kube(
    *, token: str | None = None, nodes: Iterable[Obj] | None = None, history_size: int = 1000
) -> Iterator[FakeKube]:
    """Serves a fresh fake API server in a daemon thread; yields its handle and stops it after."""
    kube = FakeKube(token=token, history_size=history_size)
    kube.start()
    try:
        if nodes is not None:
            kube.set_nodes(nodes)
        yield kube
    finally:
        kube.stop()


@contextlib.asynccontextmanager
async def run_fake_kube_async(
    *, token: str | None = None, nodes: Iterable[Obj] | None = None, history_size: int = 1000
) -> AsyncIterator[FakeKube]:
    """Serves a fresh fake API server as a task of the running loop; yields its handle."""
    kube = FakeKube(token=token, history_size=history_size)
    await kube.start_async()
    try:
        if nodes is not None:
            kube.set_nodes(nodes)
        yield kube
    finally:
        await kube.stop_async()


__all__ = ["FakeKube", "RequestRecord", "run_fake_kube", "run_fake_kube_async"]
