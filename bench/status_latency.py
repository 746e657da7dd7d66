"""Status latency benchmark: a pod that dies in the cluster -> the FAILED event at a websocket
subscriber, with many pods watched; and what each watch event costs gpupaas.

It runs the fake Kubernetes API server of tests/fake_kube/ in this process (a daemon thread, a
loopback port) and `gpupaas serve` as a subprocess (in-process bus, its worker and drift watch on,
a fresh SQLite file) with that server registered as its KUBERNETES cluster. Through GraphQL it
creates a template whose plan is a namespace, a quota and one pod (restartPolicy Never), a
CPU-only profile on it and `--deployed` compute instances, deployed by the kubernetes driver; the
fake server also holds more pods labelled as gpupaas's (other instances' pods), so that the drift
watch holds `--pods` pods. One websocket subscription of `computeInstanceEvents(project:)` listens.

Then, `--kills` times, it kills one deployed instance's pod as a kubelet reports an OOM kill
(phase Failed, the container terminated with OOMKilled and exit code 137) and measures the time
until the FAILED event arrives on the subscription; then it brings the pod back (Running and Ready)
and measures the time to the SUCCESS event. Last, the watched pods are topped up to
`--event-pods` and `--events` watch events that change nothing gpupaas reports (a label of a
running pod) are made at `--rate` per second; gpupaas's CPU (/proc/<pid>/stat) over them gives
the cost of one watch event.

    .venv/bin/python bench/status_latency.py [--pods 1000] [--kills 50] [--event-pods 10000] [--events 3000]
    .venv/bin/python bench/status_latency.py --pods 50 --kills 5      # a quick check

It prints figures and the goal (kill -> FAILED p50 <= 1 s, p99 <= 2 s) as met or not; it fails
(exit status 1) when an event does not arrive within `--timeout` or the subscriber sees a status
change that no kill made. All traffic stays on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import secrets
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # tests.fake_kube: the fake API server the tests use

import httpx  # noqa: E402
import websockets  # noqa: E402
from fanout import Server, percentile  # noqa: E402
from harness import (  # noqa: E402
    BenchError,
    GraphQL,
    base_env,
    cpu_seconds,
    status_events,
    stop_all_children,
    tail,
    terminate_on_sigterm,
)

HOST = "127.0.0.1"
PROJECT = "bench"
MANAGED_BY = "app.kubernetes.io/managed-by"  # gpupaas.provisioning.plan: what the drift watch selects
INSTANCE_LABEL = "gpupaas.io/instance"
SEEDED_NAMESPACE = "bench-watched"
BEAT_LABEL = "bench.gpupaas.io/beat"
GOAL_P50, GOAL_P99 = 1.0, 2.0  # seconds, kill -> FAILED at the subscriber (issue 19)

SUBSCRIPTION = """
subscription($project: String!) {
  computeInstanceEvents(project: $project) { instance { id name } status message at source }
}
"""
CREATE_CLUSTER = """
mutation($input: CreateClusterInput!) {
  createCluster(input: $input) { cluster { id status statusMessage } userErrors { field message } }
}
"""
CREATE_TEMPLATE = """
mutation($input: CreateEnvironmentTemplateInput!) {
  createEnvironmentTemplate(input: $input) { environmentTemplate { id } userErrors { field message } }
}
"""
ADD_VERSION = """
mutation($input: AddEnvironmentTemplateVersionInput!) {
  addEnvironmentTemplateVersion(input: $input) { version { id } userErrors { field message } }
}
"""
CREATE_PROFILE = """
mutation($input: CreateComputeProfileInput!) {
  createComputeProfile(input: $input) { computeProfile { id } userErrors { field message } }
}
"""
CREATE_INSTANCE = """
mutation($input: CreateComputeInstanceInput!) {
  createComputeInstance(input: $input) { computeInstance { id name status } userErrors { field message } }
}
"""

# One pod per instance, in a namespace of its own under a quota. restartPolicy Never: a container
# that the kernel kills fails the pod (phase Failed) at once, with no restart grace to wait out.
TEMPLATE = """\
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
---
apiVersion: v1
kind: ResourceQuota
metadata:
  name: compute
  namespace: "{{ instance.namespace }}"
spec:
  hard:
    requests.cpu: "{{ resources.cpu }}"
    limits.cpu: "{{ resources.cpu }}"
    requests.memory: "{{ resources.memory }}"
    limits.memory: "{{ resources.memory }}"
    pods: "1"
---
apiVersion: v1
kind: Pod
metadata:
  name: worker
  namespace: "{{ instance.namespace }}"
spec:
  restartPolicy: Never
  containers:
    - name: main
      image: busybox:1.36
      command: ["sleep", "infinity"]
      resources:
        requests: {cpu: 50m, memory: 64Mi}
        limits: {cpu: 50m, memory: 64Mi}
"""


# ------------------------------------------------------------------------------ the fake cluster


class Cluster:
    """The fake API server and what the bench does in it; every change runs on the server's own
    loop (FakeKube.call), so it never races its requests."""

    def __init__(self, history_size: int) -> None:
        from tests.fake_kube import node, run_fake_kube
        from tests.fake_kube.resources import resource_for

        self._running = run_fake_kube(
            # One roomy node: the pods of --deployed instances fit, wherever the scheduler looks.
            nodes=[node("bench-0", cpu="4000", memory="16Ti", pods=100000)],
            # A real API server keeps minutes of history (etcd's compaction): more than a run makes.
            history_size=history_size,
        )
        self.kube = self._running.__enter__()
        # A real API server sends a watch a bookmark about once a minute; the fake's default (0.5 s,
        # for quick tests) would be the only traffic of an idle watch, and its CPU.
        self.kube.set_bookmark_interval(60.0)
        self.pod = resource_for("v1", "Pod")
        self.seeded = 0  # pods made here
        self.pods: list[tuple[str, str]] = []  # (namespace, name) of every watched pod
        self.beats = 0

    def close(self) -> None:
        self._running.__exit__(None, None, None)

    def kubeconfig(self, path: Path) -> str:
        return self.kube.kubeconfig(path).read_text()

    def watched(self) -> int:
        """The pods the drift watch's selector matches."""
        return len(self.kube.pods(None, f"{MANAGED_BY}=gpupaas"))

    def pod_watches(self) -> int:
        return self.kube.open_watches("Pod")

    def request_count(self) -> int:
        """Requests the fake server has answered so far (the bench's own changes are not requests)."""
        return len(self.kube.requests)

    def pod_lists(self) -> int:
        """How many times the pods of every namespace were listed (not watched)."""
        return sum(
            1 for r in self.kube.requests if r.path == "/api/v1/pods" and r.query.get("watch") != "true"
        )

    def expire_watches(self) -> None:
        """The history is compacted and the watches cut, as when an API server restarts after its
        history moved on: a watch resumed from its resourceVersion gets 410 Gone, and lists again."""
        store = self.kube.store

        def expire() -> None:  # in one go on the server's loop: no watch can start in between
            store.drop_watches()
            self._beat(self.beats, 1)  # the history moves past every watch's resourceVersion
            store.compact()

        self.kube.call(expire)
        self.beats += 1

    def pending_watch_events(self) -> int:
        """Events the server has queued for its open pod watches and not yet written out."""
        store = self.kube.store
        return self.kube.call(lambda: sum(w.queue.qsize() for w in store.watchers if w.rt.kind == "Pod"))

    def instance_pod(self, instance_id: str) -> tuple[str, str]:
        pods = self.kube.pods(None, f"{INSTANCE_LABEL}={instance_id}")
        if len(pods) != 1:
            raise BenchError(f"instance {instance_id} has {len(pods)} pods, expected 1")
        return pods[0]["metadata"]["namespace"], pods[0]["metadata"]["name"]

    def kill(self, namespace: str, name: str) -> None:
        """As a kubelet reports a container the kernel killed for memory, in a pod not restarted."""
        self.kube.fail_pod(namespace, name, "OOMKilled", "out of memory", exit_code=137, phase="Failed")

    def revive(self, namespace: str, name: str) -> None:
        self.kube.recover_pod(namespace, name)

    def seed(self, count: int, like: tuple[str, str]) -> None:
        """`count` more running pods labelled as gpupaas's, each of another (unknown) instance: the
        pods of other instances that the drift watch holds and sifts. Written as the cluster
        writes its own objects (no admission), copies of a deployed instance's running pod."""
        template = self.kube.get("v1", "Pod", like[1], like[0])
        if template is None:
            raise BenchError(f"pod {like} is gone")
        if not self.kube.get("v1", "Namespace", SEEDED_NAMESPACE):
            self.kube.create(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SEEDED_NAMESPACE}}
            )
        store, pod = self.kube.store, self.pod
        start = self.seeded

        def write(first: int, last: int) -> None:
            for i in range(first, last):
                store.put_internal(
                    pod,
                    {
                        "metadata": {
                            "name": f"watched-{i:05d}",
                            "namespace": SEEDED_NAMESPACE,
                            "labels": {MANAGED_BY: "gpupaas", INSTANCE_LABEL: str(uuid.uuid4())},
                        },
                        "spec": template["spec"],
                        "status": template["status"],
                    },
                    manager="kubelet",
                )

        for first in range(start, start + count, 500):  # in slices: the server goes on answering
            last = min(first + 500, start + count)
            self.kube.call(write, first, last)
            self.pods.extend((SEEDED_NAMESPACE, f"watched-{i:05d}") for i in range(first, last))
            self.seeded = last

    def beat(self, count: int) -> None:
        """`count` watch events that change nothing gpupaas reports: a label of a running pod, the
        watched pods in turn."""
        self.kube.call(self._beat, self.beats, count)
        self.beats += count

    def _beat(self, first: int, count: int) -> None:  # on the server's loop
        for i in range(first, first + count):
            namespace, name = self.pods[i % len(self.pods)]
            current = self.kube.store.find(self.pod, namespace, name)
            if current is not None:
                self.kube.store.internal_update(
                    self.pod,
                    current,
                    lambda new, i=i: new["metadata"]["labels"].__setitem__(BEAT_LABEL, str(i)),
                    manager="bench",
                )


# ------------------------------------------------------------------------------ the subscriber


def _epoch(at: str) -> float:
    return datetime.fromisoformat(at.replace("Z", "+00:00")).timestamp()


@dataclass
class Arrival:
    received: float  # time.time() at receipt
    at: float  # the event's `at`: when the server wrote the status
    message: str | None


class Events:
    """One graphql-transport-ws subscription to computeInstanceEvents: the live events by instance
    and status, and a future per awaited (instance, status)."""

    def __init__(self, ws: websockets.ClientConnection) -> None:
        self.ws = ws
        self.count = 0
        self.waiters: dict[tuple[str, str], asyncio.Future[Arrival]] = {}
        self.latest: dict[tuple[str, str], Arrival] = {}  # the last arrival of each (instance, status)
        self.unexpected: list[str] = []
        self.error: BaseException | None = None

    def expect(self, instance_id: str, status: str, since: float | None = None) -> asyncio.Future[Arrival]:
        """The next arrival of this status of the instance; with `since` (a time.time()), one that
        came since then does too."""
        future: asyncio.Future[Arrival] = asyncio.get_running_loop().create_future()
        came = self.latest.get((instance_id, status))
        if self.error is not None:
            future.set_exception(self.error)
        elif since is not None and came is not None and came.received >= since:
            future.set_result(came)
        else:
            self.waiters[(instance_id, status)] = future
        return future

    async def read(self) -> None:
        try:
            async for received, event in status_events(self.ws, "computeInstanceEvents", time.time):
                self.count += 1
                key = (event["instance"]["id"], event["status"])
                future = self.waiters.pop(key, None)
                arrival = self.latest[key] = Arrival(received, _epoch(event["at"]), event.get("message"))
                if future is not None and not future.done():
                    future.set_result(arrival)
                elif event["status"] == "FAILED":
                    self.unexpected.append(f"{event['instance']['name']} FAILED: {event['message']}")
        except asyncio.CancelledError:
            raise
        except BaseException as error:
            self.error = error
            for future in self.waiters.values():
                if not future.done():
                    future.set_exception(error)


@contextlib.asynccontextmanager
async def subscribe(url: str, token: str) -> AsyncIterator[Events]:
    async with websockets.connect(
        url.replace("http://", "ws://", 1) + "/graphql",
        subprotocols=[websockets.Subprotocol("graphql-transport-ws")],
        proxy=None,
        compression=None,
        open_timeout=10,
    ) as ws:
        await ws.send(
            json.dumps({"type": "connection_init", "payload": {"authorization": f"Bearer {token}"}})
        )
        ack = json.loads(await asyncio.wait_for(ws.recv(), 10))
        if ack.get("type") != "connection_ack":
            raise BenchError(f"websocket not accepted: {ack}")
        start = {"query": SUBSCRIPTION, "variables": {"project": PROJECT}}
        await ws.send(json.dumps({"id": "1", "type": "subscribe", "payload": start}))
        events = Events(ws)
        reader = asyncio.create_task(events.read(), name="subscription-reader")
        try:
            yield events
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader


# ------------------------------------------------------------------------------ the run


@dataclass
class Result:
    watched: int = 0
    deployed: int = 0
    deploy_seconds: float = 0.0
    failed: list[Arrival] = field(default_factory=list)
    failed_from: list[float] = field(default_factory=list)  # kill times, as `failed`
    recovered: list[Arrival] = field(default_factory=list)
    recovered_from: list[float] = field(default_factory=list)
    event_pods: int = 0
    events: int = 0
    event_seconds: float = 0.0
    event_cpu: float = 0.0  # server CPU seconds from the first event until it was at rest again
    busy_seconds: float = 0.0  # that window's length (its last quiet quarter-second left out)
    idle_rate: float = 0.0  # server CPU per second at rest, before the events
    event_requests: int = 0  # API requests gpupaas made while the watch events came
    relist_cpu: float = 0.0  # server CPU for a list of every watched pod after 410 Gone (less idle)
    relist_seconds: float = 0.0  # from the cut to the new watch
    messages: list[str] = field(default_factory=list)


async def wait_for(
    check: Callable[[], Any], timeout: float, what: str, server: Server, interval: float = 0.05
) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = await asyncio.to_thread(check)
        if value:
            return value
        server.alive()
        if time.monotonic() > deadline:
            raise BenchError(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(interval)


async def cpu_rate(pid: int, seconds: float) -> float:
    """The process's CPU per second (of one core) over the next `seconds`."""
    before = cpu_seconds(pid)
    await asyncio.sleep(seconds)
    return (cpu_seconds(pid) - before) / seconds


async def setup(gql: GraphQL, cluster: Cluster, workdir: Path) -> str:
    """The cluster registered (checked at once), the template, its version and the profile."""
    created = await gql.payload(
        CREATE_CLUSTER,
        {
            "input": {
                "name": "bench",
                "driver": "KUBERNETES",
                "kubeconfig": cluster.kubeconfig(workdir / "kubeconfig"),
                "accessAddress": HOST,
                "isDefault": True,
            }
        },
        "createCluster",
    )
    if created["cluster"]["status"] != "READY":
        raise BenchError(
            f"the cluster is {created['cluster']['status']}: {created['cluster']['statusMessage']}"
        )
    template = await gql.payload(
        CREATE_TEMPLATE,
        {"input": {"project": PROJECT, "name": "one-pod", "displayName": "One pod"}},
        "createEnvironmentTemplate",
    )
    version = await gql.payload(
        ADD_VERSION,
        {
            "input": {
                "template": template["environmentTemplate"]["id"],
                "version": "1.0.0",
                "resources": TEMPLATE,
                "state": "ACTIVE",
            }
        },
        "addEnvironmentTemplateVersion",
    )
    profile = await gql.payload(
        CREATE_PROFILE,
        {
            "input": {
                "project": PROJECT,
                "name": "one-pod",
                "displayName": "One pod",
                "allocationType": "SHARED",
                "environmentTemplateVersion": version["version"]["id"],
                "cluster": created["cluster"]["id"],
                "resources": {
                    "cpu": "100m",
                    "memory": "128Mi",
                    "storage": "1Gi",
                    "gpuCount": 0,
                    "gpuVendor": "CPU",
                },
            }
        },
        "createComputeProfile",
    )
    profile_id: str = profile["computeProfile"]["id"]
    return profile_id


async def deploy(gql: GraphQL, events: Events, profile_id: str, count: int, timeout: float) -> list[str]:
    """`count` instances created with deploy: true, 16 at a time; their ids once all are SUCCESS."""
    gate = asyncio.Semaphore(16)

    async def one(i: int) -> str:
        async with gate:
            since = time.time()
            created = await gql.payload(
                CREATE_INSTANCE,
                {
                    "input": {
                        "project": PROJECT,
                        "profile": profile_id,
                        "name": f"pod-{i:04d}",
                        "deploy": True,
                    }
                },
                "createComputeInstance",
            )
            instance_id: str = created["computeInstance"]["id"]
            failed = events.expect(instance_id, "FAILED", since)
            done = events.expect(instance_id, "SUCCESS", since)
            finished, _ = await asyncio.wait(
                {failed, done}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
            if done not in finished:
                why = failed.result().message if failed in finished else f"not SUCCESS within {timeout:.0f} s"
                raise BenchError(f"instance pod-{i:04d}: {why}")
            events.waiters.pop((instance_id, "FAILED"), None)
            return instance_id

    return list(await asyncio.gather(*(one(i) for i in range(count))))


async def kills(
    cluster: Cluster, events: Events, instances: list[str], count: int, timeout: float, result: Result
) -> None:
    pods = {
        instance_id: await asyncio.to_thread(cluster.instance_pod, instance_id) for instance_id in instances
    }
    for k in range(count):
        instance_id = instances[k % len(instances)]
        namespace, name = pods[instance_id]
        failed = events.expect(instance_id, "FAILED")
        killed = time.time()
        await asyncio.to_thread(cluster.kill, namespace, name)
        result.failed.append(await arrival(failed, timeout, f"FAILED after kill {k + 1}"))
        result.failed_from.append(killed)
        recovered = events.expect(instance_id, "SUCCESS")
        revived = time.time()
        await asyncio.to_thread(cluster.revive, namespace, name)
        result.recovered.append(await arrival(recovered, timeout, f"SUCCESS after revival {k + 1}"))
        result.recovered_from.append(revived)


async def arrival(future: asyncio.Future[Arrival], timeout: float, what: str) -> Arrival:
    try:
        return await asyncio.wait_for(future, timeout)
    except TimeoutError:
        raise BenchError(f"no {what} within {timeout:.0f} s") from None


async def watch_events(cluster: Cluster, server: Server, args: argparse.Namespace, result: Result) -> None:
    """`--events` label changes at `--rate` a second; the server's CPU from the first until it is
    as quiet again as before them, less its idle CPU over that time."""
    result.idle_rate = await cpu_rate(server.pid, 2.0)
    requests = await asyncio.to_thread(cluster.request_count)
    quiet = result.idle_rate + 0.02
    start_cpu, start = cpu_seconds(server.pid), time.monotonic()
    sent = 0
    while sent < args.events:
        due = min(args.events, int(args.rate * (time.monotonic() - start)) + 1) - sent
        if due > 0:
            await asyncio.to_thread(cluster.beat, due)
            sent += due
        await asyncio.sleep(0.01)
    result.event_seconds = time.monotonic() - start
    await wait_for(lambda: cluster.pending_watch_events() == 0, args.timeout, "the watch to be sent", server)
    mark_cpu, mark = await at_rest(server, quiet, args.timeout, "the watch events")
    result.event_requests = await asyncio.to_thread(cluster.request_count) - requests
    result.busy_seconds = mark - start
    result.event_cpu = mark_cpu - start_cpu
    result.events = sent


async def at_rest(server: Server, quiet: float, timeout: float, what: str) -> tuple[float, float]:
    """Waits until a quarter-second in which the server used no more than `quiet` of a core; its
    CPU seconds and time.monotonic() at the start of that quarter-second."""
    deadline = time.monotonic() + timeout
    while True:
        mark_cpu, mark = cpu_seconds(server.pid), time.monotonic()
        if await cpu_rate(server.pid, 0.25) <= quiet:
            return mark_cpu, mark
        if time.monotonic() > deadline:
            raise BenchError(f"the server did not come to rest after {what}")


async def relist(cluster: Cluster, server: Server, args: argparse.Namespace, result: Result) -> None:
    """What the drift watch's list after 410 Gone costs with every watched pod in it."""
    lists = await asyncio.to_thread(cluster.pod_lists)
    start_cpu, start = cpu_seconds(server.pid), time.monotonic()
    await asyncio.to_thread(cluster.expire_watches)
    await wait_for(lambda: cluster.pod_lists() > lists, args.timeout, "the list after 410 Gone", server)
    await wait_for(lambda: cluster.pod_watches() >= 1, args.timeout, "the watch after the list", server)
    result.relist_seconds = time.monotonic() - start
    mark_cpu, mark = await at_rest(server, result.idle_rate + 0.02, args.timeout, "the list")
    result.relist_cpu = mark_cpu - start_cpu - result.idle_rate * (mark - start)


async def measure(args: argparse.Namespace, workdir: Path) -> Result:
    def progress(text: str) -> None:
        print(f"status_latency: {text}", file=sys.stderr, flush=True)

    result = Result()
    async with contextlib.AsyncExitStack() as stack:
        progress("starting the fake API server ...")
        cluster = Cluster(history_size=max(100000, 4 * (args.event_pods + args.events)))
        stack.callback(cluster.close)
        env = base_env()
        env.update(
            {
                "GPUPAAS_DATABASE_URL": f"sqlite://{workdir / 'gpupaas.db'}",
                "GPUPAAS_SECRET_KEY": secrets.token_hex(32),
                "GPUPAAS_RUN_WORKER": "true",
                "GPUPAAS_GRAPHIQL": "false",
            }
        )
        env.update(dict(item.split("=", 1) for item in args.server_env))
        server = Server(env, workdir)
        stack.callback(server.stop)
        progress("starting gpupaas serve ...")
        await server.start()
        try:
            password = f"bench password {secrets.token_hex(8)}\n"
            await server.cli(
                "create-user", "--username", "bench", "--platform-admin", "--password-stdin", stdin=password
            )
            token = await server.cli("create-token", "--username", "bench", "--name", "bench")
            await server.cli("create-project", PROJECT)
            gql = GraphQL(server.url, token)
            stack.push_async_callback(gql.close)
            profile_id = await setup(gql, cluster, workdir)
            # The drift watch looks for newly registered clusters every 30 s (workers/drift.py); a
            # server started with the cluster registered watches it at once.
            progress("cluster registered; starting gpupaas serve again to watch it at once ...")
            server.stop()
            await server.start()
            await wait_for(lambda: cluster.pod_watches() >= 1, args.timeout, "the drift watch", server)

            events = await stack.enter_async_context(subscribe(server.url, token))
            progress(f"deploying {args.deployed} instances ...")
            started = time.monotonic()
            instances = await deploy(gql, events, profile_id, args.deployed, args.timeout)
            result.deploy_seconds = time.monotonic() - started
            result.deployed = len(instances)
            deployed_pods = [await asyncio.to_thread(cluster.instance_pod, i) for i in instances]
            cluster.pods.extend(deployed_pods)
            first_pod = deployed_pods[0]
            progress(f"seeding {args.pods - args.deployed} more watched pods ...")
            await asyncio.to_thread(cluster.seed, args.pods - args.deployed, first_pod)
            result.watched = await asyncio.to_thread(cluster.watched)
            await wait_for(
                lambda: cluster.pending_watch_events() == 0, args.timeout, "the watch to catch up", server
            )
            await asyncio.sleep(1.0)

            progress(f"{args.kills} kills with {result.watched} pods watched ...")
            await kills(cluster, events, instances, args.kills, args.timeout, result)

            progress(f"topping up to {args.event_pods} watched pods ...")
            await asyncio.to_thread(cluster.seed, args.event_pods - result.watched, first_pod)
            result.event_pods = await asyncio.to_thread(cluster.watched)
            await wait_for(
                lambda: cluster.pending_watch_events() == 0, args.timeout, "the watch to catch up", server
            )
            deadline = time.monotonic() + args.timeout
            while await cpu_rate(server.pid, 0.5) > 0.05:  # the ADDED events of the new pods
                if time.monotonic() > deadline:
                    raise BenchError("the server did not come to rest after the seeding")
            before = events.count
            progress(f"{args.events} watch events at {args.rate:g}/s over {result.event_pods} pods ...")
            await watch_events(cluster, server, args, result)
            if events.count != before:
                result.messages.append(
                    f"the subscriber received {events.count - before} status events during the watch events"
                )
            progress(f"410 Gone and a list of {result.event_pods} pods ...")
            await relist(cluster, server, args, result)
            result.messages.extend(events.unexpected)
            server.alive()
        except (BenchError, httpx.HTTPError, OSError, websockets.WebSocketException, TimeoutError):
            await server.explain()
            raise
        if cluster.kube.internal_errors:
            result.messages.append(
                "the fake API server failed: " + "; ".join(cluster.kube.internal_errors[:3])
            )
        progress("done; stopping")
    return result


# ------------------------------------------------------------------------------ the report


def _ms(values: list[float]) -> str:
    return (
        " / ".join(f"{percentile(values, q) * 1000:.1f}" for q in (50, 90, 99))
        + f" / {max(values) * 1000:.1f}"
    )


def report(result: Result, args: argparse.Namespace) -> int:
    to_failed = [a.received - t for a, t in zip(result.failed, result.failed_from, strict=True)]
    detected = [a.at - t for a, t in zip(result.failed, result.failed_from, strict=True)]
    delivered = [a.received - a.at for a in result.failed]
    to_success = [a.received - t for a, t in zip(result.recovered, result.recovered_from, strict=True)]
    print()
    print(
        f"status latency: {result.watched} pods watched ({result.deployed} deployed instances' pods, "
        f"{result.watched - result.deployed} more labelled as gpupaas's), {len(to_failed)} kills"
    )
    print(f"  ({result.deployed} deploys took {result.deploy_seconds:.1f} s)")
    print("                                        p50 / p90 / p99 / max (ms)")
    print(f"  kill -> FAILED at the subscriber      {_ms(to_failed)}")
    print(f"    kill -> status written (its `at`)   {_ms(detected)}")
    print(f"    written -> received                 {_ms(delivered)}")
    print(f"  revive -> SUCCESS at the subscriber   {_ms(to_success)}")
    p50, p99 = percentile(to_failed, 50), percentile(to_failed, 99)
    met = p50 <= GOAL_P50 and p99 <= GOAL_P99
    print(
        f"  goal kill -> FAILED p50 <= {GOAL_P50:g} s, p99 <= {GOAL_P99:g} s: "
        f"{'met' if met else 'NOT met'} (p50 {p50:.3f} s, p99 {p99:.3f} s)"
    )
    if result.failed:
        print(f"  a FAILED message: {result.failed[0].message}")
    net = result.event_cpu - result.idle_rate * max(result.busy_seconds, 0.0)
    print()
    print(
        f"watch events: {result.events} pod label changes at {args.rate:g}/s asked, "
        f"{result.events / result.event_seconds:.0f}/s made, over {result.event_pods} watched pods"
    )
    print(
        f"  server CPU until at rest again ({result.busy_seconds:.1f} s): {result.event_cpu * 1000:.0f} ms, "
        f"idle {result.idle_rate * 100:.1f}% of a core"
    )
    print(
        f"  per watch event: {net / max(result.events, 1) * 1e6:.0f} µs "
        f"(less idle; {result.event_cpu / max(result.events, 1) * 1e6:.0f} µs with it); "
        f"API requests meanwhile: {result.event_requests}"
    )
    print(
        f"  410 Gone: the watch listed {result.event_pods} pods and watched again in "
        f"{result.relist_seconds * 1000:.0f} ms; {result.relist_cpu * 1000:.0f} ms of server CPU (less idle)"
    )
    for message in result.messages:
        print(f"WARNING: {message}")
    print(
        f"settings: --pods {args.pods} --deployed {args.deployed} --kills {args.kills} "
        f"--event-pods {args.event_pods} --events {args.events} --rate {args.rate:g}"
        + (f" --server-env {' '.join(args.server_env)}" if args.server_env else "")
    )
    return len(result.messages)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--pods", type=int, default=1000, help="pods watched during the kills (default 1000)")
    parser.add_argument("--kills", type=int, default=50, help="pods killed, one at a time (default 50)")
    parser.add_argument(
        "--deployed",
        type=int,
        default=None,
        help="instances deployed through GraphQL, each with one pod (default: --kills, at most --pods); "
        "the other pods are made in the fake API server",
    )
    parser.add_argument(
        "--event-pods",
        type=int,
        default=None,
        help="pods watched during the watch events (default 10 x --pods)",
    )
    parser.add_argument("--events", type=int, default=3000, help="watch events made (default 3000)")
    parser.add_argument(
        "--rate",
        type=float,
        default=250.0,
        help="watch events per second (default 250: what the fake API server here keeps up with)",
    )
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds for each step (default 60)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory (logs)")
    parser.add_argument(
        "--server-env", nargs="*", default=[], metavar="NAME=VALUE", help="more settings for gpupaas serve"
    )
    args = parser.parse_args(argv)
    if args.deployed is None:
        args.deployed = min(args.kills, args.pods)
    if args.event_pods is None:
        args.event_pods = 10 * args.pods
    if not 1 <= args.deployed <= args.pods or args.kills < 1:
        parser.error("--kills and --deployed must be at least 1, --deployed at most --pods")
    if args.event_pods < args.pods or args.events < 1 or args.rate <= 0:
        parser.error("--event-pods must be at least --pods, --events at least 1 and --rate above 0")
    return args


async def main_async(args: argparse.Namespace) -> int:
    workdir = Path(tempfile.mkdtemp(prefix="gpupaas-status-latency-"))
    keep = args.keep
    try:
        result = await measure(args, workdir)
    except BaseException:
        keep = True
        log = workdir / "server.log"
        if log.exists() and log.stat().st_size:
            print(f"--- last lines of {log}:\n{tail(log)}", file=sys.stderr)
        raise
    finally:
        if keep:
            print(f"(files kept in {workdir})", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return 1 if report(result, args) else 0


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        with terminate_on_sigterm():
            return asyncio.run(main_async(args))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (BenchError, TimeoutError) as error:
        print(f"status_latency: error: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    except (httpx.HTTPError, OSError, websockets.WebSocketException) as error:
        print(f"status_latency: error: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    finally:
        stop_all_children()


if __name__ == "__main__":
    sys.exit(main())
