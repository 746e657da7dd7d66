"""The kubelet: starts bound pods, terminates deleted ones, fails and recovers containers on
request, crash-loops them (restartCount growing with each crash), serves the pod logs and keeps
the Nodes, which may join later (a node pool scaling up) and advertise their GPUs later still (a
device plugin starting)."""

from __future__ import annotations

import contextlib
import shlex
from dataclasses import dataclass

from tests.fake_kube import errors
from tests.fake_kube.controllers.base import (
    KUBELET,
    NODE,
    POD,
    ControllerBase,
    _condition,
    _set_condition,
)
from tests.fake_kube.store import Store
from tests.fake_kube.util import Obj, deep, get_path, now, now_nano

WAITING_REASONS = (
    "ContainerCreating",
    "CrashLoopBackOff",
    "ErrImagePull",
    "ImagePullBackOff",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
    "RunContainerError",
)


@dataclass
class _CrashLoop:
    """A container that keeps dying: `crashes` times (None: for ever), then it runs."""

    crashes: int | None
    reason: str
    message: str
    exit_code: int
    back_off: float
    runs_for: float
    container: str | None
    count: int = 0


class Kubelet(ControllerBase):
    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self._crash_loops: dict[str, _CrashLoop] = {}  # pod uid -> its crash loop

    # Kubelet ---------------------------------------------------------------------------------

    def _start(self, namespace: str, name: str, uid: str) -> None:
        self._starting.discard(uid)
        pod = self.store.find(POD, namespace, name)
        if pod is None or pod["metadata"]["uid"] != uid or uid in self._failed:
            return
        if get_path(pod, "metadata", "deletionTimestamp") or get_path(pod, "status", "phase") != "Pending":
            return
        self._run(pod)

    def _run(self, pod: Obj, restarts: dict[str, int] | None = None) -> Obj | None:
        self._ip += 1
        pod_ip = f"10.244.{self._ip // 250}.{self._ip % 250 + 2}"

        def running(new: Obj) -> None:
            status = new.setdefault("status", {})
            spec = new.get("spec") or {}
            started = now()
            status["phase"] = "Running"
            status.setdefault("podIP", pod_ip)
            status.setdefault("podIPs", [{"ip": status["podIP"]}])
            status.pop("reason", None)
            status.pop("message", None)
            conditions = status.get("conditions") or []
            for kind in (
                "PodReadyToStartContainers",
                "Initialized",
                "Ready",
                "ContainersReady",
                "PodScheduled",
            ):
                conditions = _set_condition(conditions, _condition(kind, "True"))
            status["conditions"] = conditions
            previous = {c["name"]: c for c in status.get("containerStatuses") or []}
            status["containerStatuses"] = [
                self._container_status(
                    c,
                    {"running": {"startedAt": started}},
                    ready=True,
                    restarts=int(previous.get(c["name"], {}).get("restartCount", 0)),
                    last=previous.get(c["name"], {}).get("lastState") or None,
                )
                for c in spec.get("containers") or []
            ]
            if spec.get("initContainers"):
                status["initContainerStatuses"] = [
                    self._container_status(
                        c,
                        {
                            "terminated": {
                                "exitCode": 0,
                                "reason": "Completed",
                                "startedAt": started,
                                "finishedAt": started,
                            }
                        },
                        ready=True,
                    )
                    for c in spec["initContainers"]
                ]
            if get_path(new, "metadata", "generation"):
                status["observedGeneration"] = new["metadata"]["generation"]

        updated = self.store.internal_update(POD, pod, running, manager=KUBELET, subresource="status")
        if updated is not None:
            self._started_log(updated)
            for container in get_path(updated, "spec", "containers") or []:
                self.event(
                    POD,
                    updated,
                    "Normal",
                    "Pulled",
                    f'Container image "{container.get("image")}" already present on machine',
                    "kubelet",
                )
                self.event(
                    POD, updated, "Normal", "Created", f"Created container: {container['name']}", "kubelet"
                )
                self.event(
                    POD, updated, "Normal", "Started", f"Started container {container['name']}", "kubelet"
                )
        return updated

    def _terminate(self, namespace: str, name: str, uid: str) -> None:
        pod = self.store.find(POD, namespace, name)
        if pod is None or pod["metadata"]["uid"] != uid:
            return

        for container in get_path(pod, "spec", "containers") or []:
            self.event(POD, pod, "Normal", "Killing", f"Stopping container {container['name']}", "kubelet")
            if get_path(pod, "status", "phase") == "Running":
                self.write_log(
                    namespace,
                    name,
                    container["name"],
                    f"fake container {container['name']}: received SIGTERM",
                )

        def terminated(new: Obj) -> None:
            new["metadata"]["deletionGracePeriodSeconds"] = 0

        self.store.internal_update(POD, pod, terminated, manager=KUBELET)

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
        pod = self.store.find(POD, namespace, name)
        if pod is None:
            raise KeyError(f"no pod {namespace}/{name}")
        uid = pod["metadata"]["uid"]
        code = exit_code if exit_code is not None else (137 if reason == "OOMKilled" else 1)
        spec = pod.get("spec") or {}
        names = [c["name"] for c in spec.get("containers") or []]
        failing = [container] if container else names
        restart = spec.get("restartPolicy", "Always")
        moment = now()
        for failing_container in failing:
            with contextlib.suppress(KeyError):
                self.write_log(
                    namespace,
                    name,
                    failing_container,
                    f"fake container {failing_container}: exited with code {code}",
                )

        def fail(new: Obj) -> None:
            status = new.setdefault("status", {})
            was_running = status.get("phase") == "Running"
            previous = {c["name"]: c for c in status.get("containerStatuses") or []}
            terminated = {"exitCode": code, "reason": reason, "startedAt": moment, "finishedAt": moment}
            if message:
                terminated["message"] = message
            statuses = []
            failed_phase = (
                phase == "Failed"
                or reason == "Evicted"
                or (restart == "Never" and reason not in WAITING_REASONS)
            )
            for c in spec.get("containers") or []:
                old = previous.get(c["name"], {})
                restarts = int(old.get("restartCount", 0))
                if c["name"] not in failing:
                    statuses.append(
                        old or self._container_status(c, {"running": {"startedAt": moment}}, ready=True)
                    )
                    continue
                if reason in WAITING_REASONS:
                    waiting = {"reason": reason, "message": message} if message else {"reason": reason}
                    statuses.append(
                        self._container_status(
                            c, {"waiting": waiting}, ready=False, restarts=restarts, last=old.get("lastState")
                        )
                    )
                elif failed_phase:
                    statuses.append(
                        self._container_status(c, {"terminated": terminated}, ready=False, restarts=restarts)
                    )
                else:
                    back_off = {
                        "reason": "CrashLoopBackOff",
                        "message": f"back-off 10s restarting failed container={c['name']} pod={name}_{namespace}({uid})",
                    }
                    statuses.append(
                        self._container_status(
                            c,
                            {"waiting": back_off},
                            ready=False,
                            restarts=restarts + 1,
                            last={"terminated": terminated},
                        )
                    )
            status["containerStatuses"] = statuses
            if failed_phase:
                status["phase"] = phase or "Failed"
                if reason == "Evicted":
                    status["reason"] = "Evicted"
                    status["message"] = message
            elif reason in WAITING_REASONS:
                status["phase"] = "Running" if was_running else "Pending"
            else:
                status["phase"] = "Running"  # restartPolicy Always/OnFailure: the container restarts
            unready = f"containers with unready status: [{' '.join(failing)}]"
            not_ready_reason = "PodFailed" if failed_phase else "ContainersNotReady"
            conditions = status.get("conditions") or []
            conditions = _set_condition(conditions, _condition("Ready", "False", not_ready_reason, unready))
            conditions = _set_condition(
                conditions, _condition("ContainersReady", "False", not_ready_reason, unready)
            )
            status["conditions"] = conditions

        self._starting.discard(uid)
        updated = self.store.internal_update(POD, pod, fail, manager=KUBELET, subresource="status")
        assert updated is not None
        self._failed[uid] = updated["status"]
        pull = "Pull" in reason or reason in (
            "InvalidImageName",
            "CreateContainerConfigError",
            "CreateContainerError",
        )
        kind = "Failed" if pull else "BackOff"
        text = message or f"Back-off restarting failed container {failing[0] if failing else ''}"
        self.event(POD, updated, "Warning", kind, text, "kubelet")
        return deep(updated)

    def recover_pod(self, namespace: str, name: str) -> Obj | None:
        pod = self.store.find(POD, namespace, name)
        if pod is None:
            raise KeyError(f"no pod {namespace}/{name}")
        uid = pod["metadata"]["uid"]
        self._failed.pop(uid, None)
        self._crash_loops.pop(uid, None)
        if self._pinned.pop(uid, "unset") != "unset":
            self.enqueue("schedule", namespace, name)
            return deep(pod)
        if not get_path(pod, "spec", "nodeName"):
            self.enqueue("schedule", namespace, name)
            return deep(pod)
        updated = self._run(pod)
        return deep(updated) if updated is not None else None

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
        """Makes the pod's containers (or one) crash as a kubelet reports it for restartPolicy
        Always or OnFailure: CrashLoopBackOff with lastState.terminated {reason, exitCode,
        message} and restartCount + 1; after the back-off (`back_off`, doubling with each crash)
        the container runs again, not ready (it dies before its readiness probe passes), and
        crashes again `runs_for` seconds later. After `crashes` crashes (None: never) it runs
        and is Ready. `recover_pod` ends the loop. Returns the pod after the first crash."""
        pod = self.store.find(POD, namespace, name)
        if pod is None:
            raise KeyError(f"no pod {namespace}/{name}")
        if get_path(pod, "spec", "restartPolicy") == "Never":
            raise ValueError(f"pod {namespace}/{name} has restartPolicy Never: it fails, it does not loop")
        uid = pod["metadata"]["uid"]
        self._crash_loops[uid] = _CrashLoop(
            crashes, reason, message, exit_code, back_off, runs_for, container
        )
        crashed = self._crash(namespace, name, uid)
        assert crashed is not None
        return crashed

    def _looping(self, namespace: str, name: str, uid: str) -> tuple[_CrashLoop, Obj] | None:
        loop, pod = self._crash_loops.get(uid), self.store.find(POD, namespace, name)
        if loop is None or pod is None or pod["metadata"]["uid"] != uid:
            self._crash_loops.pop(uid, None)
            return None
        if get_path(pod, "metadata", "deletionTimestamp"):
            self._crash_loops.pop(uid, None)
            return None
        return loop, pod

    def _crash(self, namespace: str, name: str, uid: str) -> Obj | None:
        looping = self._looping(namespace, name, uid)
        if looping is None:
            return None
        loop, _ = looping
        loop.count += 1
        crashed = self.fail_pod(
            namespace, name, loop.reason, loop.message, exit_code=loop.exit_code, container=loop.container
        )
        self.later(loop.back_off * 2 ** (loop.count - 1), lambda: self._restart(namespace, name, uid))
        return crashed

    def _restart(self, namespace: str, name: str, uid: str) -> None:
        looping = self._looping(namespace, name, uid)
        if looping is None:
            return
        loop, pod = looping
        if loop.crashes is not None and loop.count >= loop.crashes:
            del self._crash_loops[uid]
            self._failed.pop(uid, None)
            self._run(pod)
            return
        started = now()

        def restarted(new: Obj) -> None:
            for status in get_path(new, "status", "containerStatuses") or []:
                if "waiting" in (status.get("state") or {}):
                    status["state"] = {"running": {"startedAt": started}}
                    status["started"] = True

        updated = self.store.internal_update(POD, pod, restarted, manager=KUBELET, subresource="status")
        if updated is not None:
            self._started_log(updated)

        def crash_again() -> None:
            self._crash(namespace, name, uid)

        self.later(loop.runs_for, crash_again)

    def add_nodes(
        self, nodes: list[Obj], *, after: float = 0.0, device_plugin_delay: float | None = None
    ) -> None:
        """Nodes that join `after` seconds from now, Ready, as a node pool scaling up (from zero)
        does. With `device_plugin_delay` they join without their extended resources (GPUs),
        which their device plugin advertises that much later. Pending pods are scheduled again
        at each step (the scheduler retries when nodes change)."""
        nodes = [deep(n) for n in nodes]

        def join() -> None:
            for item in nodes:
                body = deep(item)
                if device_plugin_delay is not None:
                    for key in ("capacity", "allocatable"):
                        resources = get_path(body, "status", key) or {}
                        for resource in [r for r in resources if "/" in r]:
                            del resources[resource]
                self.store.put_internal(NODE, body, manager=KUBELET)
            if device_plugin_delay is not None:
                self.later(device_plugin_delay, advertise)

        def advertise() -> None:
            for item in nodes:
                if self.store.find(NODE, None, item["metadata"]["name"]) is not None:
                    self.store.put_internal(NODE, item, manager=KUBELET)

        self.later(after, join)

    def set_nodes(self, nodes: list[Obj]) -> None:
        wanted = {n["metadata"]["name"] for n in nodes}
        for existing in self.store.items(NODE):
            if existing["metadata"]["name"] not in wanted:
                self.store.remove_internal(NODE, existing)
        for item in nodes:
            self.store.put_internal(NODE, item, manager=KUBELET)
        self.enqueue("schedule_all")

    # Pod logs --------------------------------------------------------------------------------

    def write_log(self, namespace: str, name: str, container: str, text: str) -> None:
        """The container writes `text` (lines) to its log: that of its current instance (its
        restartCount), as the container runtime keeps one file per container instance."""
        pod = self.store.find(POD, namespace, name)
        if pod is None:
            raise KeyError(f"no pod {namespace}/{name}")
        restarts = next(
            (
                int(c.get("restartCount", 0))
                for c in get_path(pod, "status", "containerStatuses") or []
                if c.get("name") == container
            ),
            0,
        )
        lines = self.container_logs.setdefault((namespace, name, container), {}).setdefault(restarts, [])
        for line in text.splitlines():
            lines.append((now_nano(), line))

    def _started_log(self, pod: Obj) -> None:
        """What a container writes first: the fake runtime says what it runs."""
        namespace, name = pod["metadata"].get("namespace") or "", pod["metadata"]["name"]
        for container in get_path(pod, "spec", "containers") or []:
            command = [str(p) for p in (container.get("command") or []) + (container.get("args") or [])]
            what = shlex.join(command) if command else f"the entrypoint of {container.get('image')}"
            self.write_log(
                namespace, name, container["name"], f"fake container {container['name']}: running {what}"
            )

    def log_lines(self, namespace: str, name: str, query: dict[str, str]) -> tuple[list[str], Obj, str, int]:
        """The lines pods/log serves now (with tailLines, timestamps), the pod, the container and
        the container instance; ApiError as kube-apiserver answers: 404 for no pod, 400 for no such
        container, a container waiting to start, or no previous instance."""
        pod = self.store.find(POD, namespace, name)
        if pod is None:
            raise errors.not_found(POD, name)
        names = [c["name"] for c in get_path(pod, "spec", "containers") or []]
        container = query.get("container") or ""
        if not container:
            if len(names) != 1:
                raise errors.bad_request(
                    f"a container name must be specified for pod {name}, choose one of: [{' '.join(names)}]"
                )
            container = names[0]
        if container not in names:
            raise errors.bad_request(f"container {container} is not valid for pod {name}")
        status = next(
            (c for c in get_path(pod, "status", "containerStatuses") or [] if c.get("name") == container),
            None,
        )
        restarts = int((status or {}).get("restartCount", 0))
        if _flag(query.get("previous")):
            instance = restarts - 1
            if instance < 0 or instance not in self.container_logs.get((namespace, name, container), {}):
                raise errors.bad_request(
                    f'previous terminated container "{container}" in pod "{name}" not found'
                )
        else:
            instance = restarts
            waiting = (
                ((status or {}).get("state") or {}).get("waiting")
                if status
                else {"reason": "ContainerCreating"}
            )
            if waiting is not None and instance not in self.container_logs.get(
                (namespace, name, container), {}
            ):
                raise errors.bad_request(
                    f'container "{container}" in pod "{name}" is waiting to start: '
                    + str(waiting.get("reason") or "ContainerCreating")
                )
        entries = self.container_logs.get((namespace, name, container), {}).get(instance, [])
        tail = query.get("tailLines")
        if tail is not None:
            if not tail.isdigit():
                raise errors.bad_request(f'strconv.ParseInt: parsing "{tail}": invalid syntax')
            entries = entries[-int(tail) :] if int(tail) else []
        stamps = _flag(query.get("timestamps"))
        return [f"{at} {text}" if stamps else text for at, text in entries], pod, container, instance

    def log_follow_state(
        self, namespace: str, name: str, uid: str, container: str, instance: int
    ) -> tuple[int, bool]:
        """How many lines the followed container instance has now, and whether it still runs (a
        followed log ends when its container stops or its pod goes). A pod being deleted still runs
        its containers through their grace period, as kubelet does: what they write on SIGTERM is in
        the stream, which ends once the kubelet has terminated them (grace period 0) or the pod is gone."""
        lines = len(self.container_logs.get((namespace, name, container), {}).get(instance, []))
        pod = self.store.find(POD, namespace, name)
        if pod is None or pod["metadata"]["uid"] != uid:
            return lines, False
        if get_path(pod, "metadata", "deletionTimestamp") and not get_path(
            pod, "metadata", "deletionGracePeriodSeconds"
        ):
            return lines, False
        status = next(
            (c for c in get_path(pod, "status", "containerStatuses") or [] if c.get("name") == container),
            None,
        )
        running = (
            status is not None
            and int(status.get("restartCount", 0)) == instance
            and "running" in (status.get("state") or {})
        )
        return lines, running

    def log_entries(
        self, namespace: str, name: str, container: str, instance: int, start: int
    ) -> list[tuple[str, str]]:
        return self.container_logs.get((namespace, name, container), {}).get(instance, [])[start:]


def _flag(value: str | None) -> bool:
    return value is not None and value.lower() in ("true", "1")
