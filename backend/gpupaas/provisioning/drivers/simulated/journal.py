"""The simulated cluster's pods, container logs and events, kept in the database (the tables of
provisioning/models.py) so that every process sees them: a worker's apply writes them, an API
process reads and follows them.

Pods: each Deployment, StatefulSet and Pod of a plan that asks for replicas has a pod (one, as the
GPU services' Deployments do), named as its controller would name it ("<deployment>-<hash>-<x>",
"<statefulset>-0", the Pod's own name); the hash is that of its pod template, so that applying
the same template again keeps the pod and a new one (a restart, an edit) replaces it. A workload
scaled to zero, a destroy, or a replaced pod stops its containers.

The log of each container is the lifecycle of its start command, written as it happens: the image
being pulled, the container started, its command, ready (listening on its ports), and on the way
down the SIGTERM and the exit code. Events are those the components of a real cluster report for
the same steps: ScalingReplicaSet (deployment-controller), SuccessfulCreate and FailedCreate
(replicaset-controller), Scheduled and FailedScheduling (default-scheduler), Pulling, Pulled,
Failed, BackOff, Created, Started and Killing (kubelet). A repeated event raises the count of the
one before (same object, reason and message), as the event recorder does.

Followers read on by row id, every `poll` seconds. A pod's log goes with its pod's replacement or
the owner's destroy; a compute instance's destroy takes its namespace's rows along.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import secrets
import shlex
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from gpupaas.provisioning.drivers.base import ClusterEvent, EventQuery, LogLine, LogQuery
from gpupaas.provisioning.models import SimulatedEvent, SimulatedLogLine, SimulatedPod
from gpupaas.provisioning.plan import PermanentError, Plan

__all__ = [
    "PodSet",
    "forget_namespace",
    "forget_owner",
    "read_events",
    "read_logs",
    "refused",
    "start_pods",
    "stop_pods",
]

_WORKLOADS = ("Deployment", "StatefulSet", "Pod")
# How long the log of a pod that is gone stays (for followers to read its last lines).
_LOGS_OUTLIVE_PODS = timedelta(minutes=1)
_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"  # what Kubernetes uses for generated name suffixes


def _now() -> datetime:
    return datetime.now(UTC)


def _suffix(seed: str, length: int) -> str:
    digest = hashlib.sha256(seed.encode()).digest()
    return "".join(_ALPHANUMS[byte % len(_ALPHANUMS)] for byte in digest[:length])


@dataclass(frozen=True)
class Container:
    name: str
    image: str
    command: tuple[str, ...]
    ports: tuple[tuple[int, str, str], ...]  # (port, protocol, name)


@dataclass(frozen=True)
class Workload:
    kind: str
    name: str
    replicas: int
    template_hash: str
    containers: tuple[Container, ...]

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.name}"

    @property
    def replica_set(self) -> str:
        return f"{self.name}-{self.template_hash}"

    def pod_name(self, seed: str) -> str:
        if self.kind == "Pod":
            return self.name
        if self.kind == "StatefulSet":
            return f"{self.name}-0"
        return f"{self.replica_set}-{_suffix(seed, 5)}"


def _containers(pod_spec: Mapping[str, Any]) -> tuple[Container, ...]:
    found: list[Container] = []
    for raw in pod_spec.get("containers") or []:
        if not isinstance(raw, Mapping):
            continue
        command = [str(part) for part in (raw.get("command") or []) + (raw.get("args") or [])]
        ports = tuple(
            (int(p["containerPort"]), str(p.get("protocol") or "TCP"), str(p.get("name") or ""))
            for p in raw.get("ports") or []
            if isinstance(p, Mapping) and isinstance(p.get("containerPort"), int)
        )
        found.append(
            Container(str(raw.get("name") or ""), str(raw.get("image") or ""), tuple(command), ports)
        )
    return tuple(found)


def workloads(manifests: Iterable[Mapping[str, Any]]) -> list[Workload]:
    """The workloads of the manifests that make pods, with their pod templates' hashes."""
    found: list[Workload] = []
    for manifest in manifests:
        kind = manifest.get("kind")
        if kind not in _WORKLOADS:
            continue
        spec = manifest.get("spec") or {}
        if kind == "Pod":
            template: Mapping[str, Any] = {"spec": spec}
            replicas = 1
        else:
            template = spec.get("template") or {}
            raw = spec.get("replicas", 1)
            replicas = raw if isinstance(raw, int) else 1
        text = json.dumps(template, sort_keys=True, separators=(",", ":"), default=str)
        digest = hashlib.sha256(text.encode()).hexdigest()
        found.append(
            Workload(
                kind=str(kind),
                name=str((manifest.get("metadata") or {}).get("name")),
                replicas=replicas,
                template_hash=_suffix(digest, 10),
                containers=_containers(template.get("spec") or {}),
            )
        )
    return found


# ---------------------------------------------------------------------------------------- writing


async def _event(
    namespace: str, owner_id: str, kind: str, name: str, type_: str, reason: str, message: str
) -> None:
    """Records an event, or raises the count of the same one (same object, reason, message)."""
    moment = _now()
    same = await SimulatedEvent.filter(
        namespace=namespace, object_kind=kind, object_name=name, reason=reason, message=message
    ).first()
    values: dict[str, Any] = {
        "namespace": namespace,
        "owner_id": owner_id,
        "object_kind": kind,
        "object_name": name,
        "type": type_,
        "reason": reason,
        "message": message,
        "last_at": moment,
    }
    if same is None:
        await SimulatedEvent.create(name=f"{name}.{secrets.token_hex(8)}", count=1, first_at=moment, **values)
        return
    # A new row (a higher id) so that followers see the change.
    await SimulatedEvent.create(name=same.name, count=same.count + 1, first_at=same.first_at, **values)
    await same.delete()


async def _log(pod: SimulatedPod, container: str, text: str) -> None:
    await SimulatedLogLine.create(
        owner_id=pod.owner_id,
        namespace=pod.namespace,
        pod=pod.name,
        container=container,
        at=_now(),
        text=text,
    )


@dataclass
class PodSet:
    """The pods one apply started, with their workloads' containers, for the steps that follow,
    and those it kept (their template did not change)."""

    started: list[tuple[SimulatedPod, Workload]]
    kept: list[tuple[SimulatedPod, Workload]]

    async def pulling(self) -> None:
        for pod, workload in self.started:
            for container in workload.containers:
                await _event(
                    pod.namespace, pod.owner_id, "Pod", pod.name, "Normal", "Pulling",
                    f'Pulling image "{container.image}"',
                )  # fmt: skip
                await _log(pod, container.name, f'Pulling image "{container.image}"')

    async def pull_failed(self, why: str) -> None:
        """The image cannot be pulled: the kubelet's events (counted again on each retry: a kept
        pod pulls again too)."""
        for pod, workload in self.started + self.kept:
            for container in workload.containers:
                if (pod, workload) in self.kept:
                    await _event(
                        pod.namespace, pod.owner_id, "Pod", pod.name, "Normal", "Pulling",
                        f'Pulling image "{container.image}"',
                    )  # fmt: skip
                await _event(
                    pod.namespace, pod.owner_id, "Pod", pod.name, "Warning", "Failed",
                    f'Failed to pull image "{container.image}": {why}',
                )  # fmt: skip
                await _event(
                    pod.namespace, pod.owner_id, "Pod", pod.name, "Normal", "BackOff",
                    f'Back-off pulling image "{container.image}"',
                )  # fmt: skip
                await _log(pod, container.name, f'Failed to pull image "{container.image}": {why}')

    async def running(self) -> None:
        for pod, workload in self.started:
            for container in workload.containers:
                await _event(
                    pod.namespace, pod.owner_id, "Pod", pod.name, "Normal", "Pulled",
                    f'Container image "{container.image}" pulled',
                )  # fmt: skip
                await _event(
                    pod.namespace, pod.owner_id, "Pod", pod.name, "Normal", "Created",
                    f"Created container: {container.name}",
                )  # fmt: skip
                await _event(
                    pod.namespace, pod.owner_id, "Pod", pod.name, "Normal", "Started",
                    f"Started container {container.name}",
                )  # fmt: skip
                await _log(pod, container.name, f"Started container {container.name}")
                if container.command:
                    await _log(pod, container.name, f"$ {shlex.join(container.command)}")
                else:
                    await _log(pod, container.name, "$ (the image's own entrypoint)")

    async def ready(self) -> None:
        for pod, workload in self.started:
            for container in workload.containers:
                ports = ", ".join(
                    f"{port}/{protocol}" + (f" ({name})" if name else "")
                    for port, protocol, name in container.ports
                )
                await _log(pod, container.name, f"Ready: listening on {ports}" if ports else "Ready")


async def start_pods(plan: Plan, manifests: Sequence[Mapping[str, Any]], node: str | None) -> PodSet:
    """The pods of the plan's workloads that ask for replicas and have none of their current
    template yet, created and scheduled on `node`; the pods of older templates, and of workloads
    scaled to zero, stopped. The PodSet says what happens to the new ones next."""
    found = workloads(manifests)
    current = {w.key: w for w in found}
    pods = await SimulatedPod.filter(owner_id=plan.instance_id).order_by("created_at")
    keep: dict[str, SimulatedPod] = {}
    kept: list[tuple[SimulatedPod, Workload]] = []
    for pod in pods:
        workload = current.get(pod.workload)
        if workload is not None and workload.replicas > 0 and pod.template_hash == workload.template_hash:
            keep[pod.workload] = pod
            kept.append((pod, workload))
        else:
            await _stop(pod, scaled_down=workload is not None and workload.replicas == 0)
    started: list[tuple[SimulatedPod, Workload]] = []
    for workload in found:
        if workload.replicas <= 0 or workload.key in keep:
            continue
        name = workload.pod_name(f"{plan.instance_id}/{workload.template_hash}/{secrets.token_hex(4)}")
        # A replaced pod's log goes with it.
        await SimulatedLogLine.filter(owner_id=plan.instance_id, pod=name).delete()
        pod = await SimulatedPod.create(
            owner_id=plan.instance_id,
            namespace=plan.namespace,
            name=name,
            workload=workload.key,
            template_hash=workload.template_hash,
            node=node,
            containers=[c.name for c in workload.containers],
        )
        if workload.kind == "Deployment":
            await _event(
                plan.namespace, plan.instance_id, "Deployment", workload.name, "Normal", "ScalingReplicaSet",
                f"Scaled up replica set {workload.replica_set} from 0 to {workload.replicas}",
            )  # fmt: skip
            await _event(
                plan.namespace, plan.instance_id, "ReplicaSet", workload.replica_set, "Normal",
                "SuccessfulCreate", f"Created pod: {name}",
            )  # fmt: skip
        elif workload.kind == "StatefulSet":
            await _event(
                plan.namespace, plan.instance_id, "StatefulSet", workload.name, "Normal", "SuccessfulCreate",
                f"create Pod {name} in StatefulSet {workload.name} successful",
            )  # fmt: skip
        where = node or "node-1"
        await _event(
            plan.namespace, plan.instance_id, "Pod", name, "Normal", "Scheduled",
            f"Successfully assigned {plan.namespace}/{name} to {where}",
        )  # fmt: skip
        started.append((pod, workload))
    # The logs of pods gone for a while go (followers of a stopped pod read its last lines first).
    await (
        SimulatedLogLine.filter(owner_id=plan.instance_id, at__lt=_now() - _LOGS_OUTLIVE_PODS)
        .exclude(pod__in=[p.name for p, _ in started] + [p.name for p in keep.values()])
        .delete()
    )
    return PodSet(started, kept)


async def _stop(pod: SimulatedPod, *, scaled_down: bool) -> None:
    """Stops the pod's containers (SIGTERM, exit 0) and deletes it, with the events of a real one."""
    kind, _, workload = pod.workload.partition("/")
    if scaled_down and kind == "Deployment":
        await _event(
            pod.namespace, pod.owner_id, "Deployment", workload, "Normal", "ScalingReplicaSet",
            f"Scaled down replica set {workload}-{pod.template_hash} from 1 to 0",
        )  # fmt: skip
    if kind == "Deployment":
        await _event(
            pod.namespace, pod.owner_id, "ReplicaSet", f"{workload}-{pod.template_hash}", "Normal",
            "SuccessfulDelete", f"Deleted pod: {pod.name}",
        )  # fmt: skip
    for container in pod.containers:
        await _event(
            pod.namespace, pod.owner_id, "Pod", pod.name, "Normal", "Killing",
            f"Stopping container {container}",
        )  # fmt: skip
        await _log(pod, container, "Received SIGTERM: stopping")
        await _log(pod, container, "Exited with code 0")
    await pod.delete()


async def stop_pods(owner_id: str) -> None:
    """Stops every pod of the owner (its destroy)."""
    for pod in await SimulatedPod.filter(owner_id=owner_id).order_by("created_at"):
        await _stop(pod, scaled_down=False)


async def refused(plan: Plan, manifests: Sequence[Mapping[str, Any]], message: str) -> None:
    """The events of workloads whose pods cannot be made or placed: a quota that refuses the pod
    is the ReplicaSet's FailedCreate, a pod no node fits is the scheduler's FailedScheduling."""
    for workload in workloads(manifests):
        if workload.replicas <= 0:
            continue
        if "exceeded quota" in message and workload.kind == "Deployment":
            await _event(
                plan.namespace, plan.instance_id, "ReplicaSet", workload.replica_set, "Warning",
                "FailedCreate", f"Error creating: {message}",
            )  # fmt: skip
        else:
            name = workload.pod_name(f"{plan.instance_id}/{workload.template_hash}/pending")
            await _event(
                plan.namespace, plan.instance_id, "Pod", name, "Warning", "FailedScheduling", message
            )


async def forget_owner(owner_id: str) -> None:
    """What the owner's destroy takes along: its pods, their logs and its events."""
    await SimulatedPod.filter(owner_id=owner_id).delete()
    await SimulatedLogLine.filter(owner_id=owner_id).delete()
    await SimulatedEvent.filter(owner_id=owner_id).delete()


async def forget_namespace(namespace: str) -> None:
    """What a namespace's deletion takes along."""
    await SimulatedPod.filter(namespace=namespace).delete()
    await SimulatedLogLine.filter(namespace=namespace).delete()
    await SimulatedEvent.filter(namespace=namespace).delete()


# ---------------------------------------------------------------------------------------- reading


def _line(row: SimulatedLogLine, containers: tuple[str, ...]) -> LogLine:
    return LogLine(at=row.at, text=row.text, pod=row.pod, container=row.container, containers=containers)


async def read_logs(query: LogQuery, *, poll: float) -> AsyncIterator[LogLine]:
    """The log of the query's container, as kubectl logs reads it (see LogQuery); PermanentError
    worded as the API server's when there is none."""
    pod = (
        await SimulatedPod.filter(owner_id=query.owner.id, namespace=query.namespace)
        .order_by("-created_at")
        .first()
    )
    if pod is None:
        raise PermanentError("it has no pod: it is not running")
    containers = tuple(str(name) for name in pod.containers)
    container = query.container or (containers[0] if containers else "")
    if container not in containers:
        raise PermanentError(
            f"container {container} is not valid for pod {pod.name}: its containers are "
            + ", ".join(pod.containers)
        )
    if query.previous:
        # Nothing restarts a simulated container in place: a restart makes a new pod.
        raise PermanentError(f'previous terminated container "{container}" in pod "{pod.name}" not found')
    rows = SimulatedLogLine.filter(owner_id=query.owner.id, pod=pod.name, container=container)
    if query.tail_lines is not None:
        lines = list(reversed(await rows.order_by("-id").limit(query.tail_lines)))
    else:
        lines = await rows.order_by("id")
    last = 0
    for row in lines:
        last = row.id
        yield _line(row, containers)
    if not query.follow:
        return
    while True:
        gone = not await SimulatedPod.exists(id=pod.id)
        for row in await SimulatedLogLine.filter(
            owner_id=query.owner.id, pod=pod.name, container=container, id__gt=last
        ).order_by("id"):
            last = row.id
            yield _line(row, containers)
        if gone:  # the container stopped: its log ends, as a followed log does
            return
        await asyncio.sleep(poll)


def _record(row: SimulatedEvent) -> ClusterEvent:
    return ClusterEvent(
        name=row.name,
        type=row.type,
        reason=row.reason,
        message=row.message,
        object_kind=row.object_kind,
        object_name=row.object_name,
        count=row.count,
        first_at=row.first_at,
        last_at=row.last_at,
    )


async def read_events(query: EventQuery, *, poll: float) -> AsyncIterator[ClusterEvent]:
    """The events of the query's owner in its namespace, oldest first; with `follow`, new ones and
    changes as they are recorded."""
    rows = SimulatedEvent.filter(namespace=query.namespace, owner_id=query.owner.id)
    last = 0
    for row in await rows.order_by("id"):
        last = row.id
        yield _record(row)
    while query.follow:
        await asyncio.sleep(poll)
        for row in await SimulatedEvent.filter(
            namespace=query.namespace, owner_id=query.owner.id, id__gt=last
        ).order_by("id"):
            last = row.id
            yield _record(row)
