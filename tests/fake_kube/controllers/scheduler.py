"""The scheduler: binds pods to nodes where they fit, or reports why they do not (node selectors,
required node affinity and taints as kube-scheduler reads them: node_affinity.py)."""

from __future__ import annotations

from decimal import Decimal

from tests.fake_kube import admission
from tests.fake_kube.controllers import node_affinity
from tests.fake_kube.controllers.base import (
    KUBELET,
    NODE,
    POD,
    SCHEDULER,
    ControllerBase,
    _condition,
    _set_condition,
)
from tests.fake_kube.util import Obj, deep, get_path, now, parse_quantity


class Scheduler(ControllerBase):
    # Scheduler -------------------------------------------------------------------------------

    def _reconcile_schedule_all(self, _namespace: str, _name: str) -> None:
        for pod in self.store.items(POD):
            if not get_path(pod, "spec", "nodeName") and not get_path(pod, "metadata", "deletionTimestamp"):
                self.enqueue("schedule", pod["metadata"]["namespace"], pod["metadata"]["name"])

    def _node_used(self, node_name: str) -> dict[str, Decimal]:
        used: dict[str, Decimal] = {"pods": Decimal(0)}
        for pod in self.store.items(POD):
            if get_path(pod, "spec", "nodeName") != node_name or admission.is_terminal(pod):
                continue
            used["pods"] += 1
            for resource, value in admission.pod_resources(pod.get("spec") or {}, "requests").items():
                used[resource] = used.get(resource, Decimal(0)) + value
        return used

    def _fit(self, pod: Obj, node_obj: Obj, requests: dict[str, Decimal]) -> tuple[list[str], bool]:
        """Why the pod does not fit the node (empty when it fits), and whether the reasons are
        only resources (preemption could help)."""
        spec = pod.get("spec") or {}
        if get_path(node_obj, "spec", "unschedulable"):
            tolerated = any(
                t.get("key") == "node.kubernetes.io/unschedulable" for t in spec.get("tolerations") or []
            )
            if not tolerated:
                return ["node(s) were unschedulable"], False
        if not node_affinity.matches_node(spec, node_obj):
            return ["node(s) didn't match Pod's node affinity/selector"], False
        taints = list(get_path(node_obj, "spec", "taints") or [])
        ready = next(
            (c for c in get_path(node_obj, "status", "conditions") or [] if c.get("type") == "Ready"),
            {"status": "True"},
        )
        if ready.get("status") != "True":
            taints.append({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"})
        taint = node_affinity.untolerated_taint(spec, taints)
        if taint is not None:
            value = taint.get("value", "")
            return [f"node(s) had untolerated taint {{{taint.get('key')}: {value}}}"], False
        allocatable = get_path(node_obj, "status", "allocatable") or {}
        used = self._node_used(node_obj["metadata"]["name"])
        reasons = []
        for resource, amount in sorted({**requests, "pods": Decimal(1)}.items()):
            if amount <= 0:
                continue
            try:
                total = parse_quantity(allocatable.get(resource, "0"))
            except ValueError:
                total = Decimal(0)
            if used.get(resource, Decimal(0)) + amount > total:
                reasons.append("Too many pods" if resource == "pods" else f"Insufficient {resource}")
        return reasons, True

    def _reconcile_schedule(self, namespace: str, name: str) -> None:
        pod = self.store.find(POD, namespace, name)
        if pod is None or get_path(pod, "spec", "nodeName") or get_path(pod, "metadata", "deletionTimestamp"):
            return
        if admission.is_terminal(pod):
            return
        uid = pod["metadata"]["uid"]
        nodes = self.store.items(NODE)
        requests = admission.pod_resources(pod.get("spec") or {}, "requests")
        chosen = None
        counts: dict[str, int] = {}
        preemption: dict[str, int] = {}
        if uid not in self._pinned:
            for node_obj in nodes:
                reasons, resources_only = self._fit(pod, node_obj, requests)
                if not reasons:
                    chosen = node_obj
                    break
                for reason in reasons:
                    counts[reason] = counts.get(reason, 0) + 1
                key = (
                    "No preemption victims found for incoming pod"
                    if resources_only
                    else ("Preemption is not helpful for scheduling")
                )
                preemption[key] = preemption.get(key, 0) + 1
        if chosen is not None:
            self._bind(pod, chosen)
            return
        message = self._pinned.get(uid)
        if message is None:
            if not nodes:
                message = "no nodes available to schedule pods"
            else:
                total = len(nodes)
                reasons_text = ", ".join(sorted(f"{count} {reason}" for reason, count in counts.items()))
                preempt_text = ", ".join(sorted(f"{count} {reason}" for reason, count in preemption.items()))
                message = (
                    f"0/{total} nodes are available: {reasons_text}. preemption: 0/{total} nodes are "
                    f"available: {preempt_text}."
                )
        current = next(
            (c for c in get_path(pod, "status", "conditions") or [] if c.get("type") == "PodScheduled"), None
        )
        if current is not None and current.get("message") == message and current.get("status") == "False":
            return

        def unschedulable(new: Obj) -> None:
            status = new.setdefault("status", {})
            status["phase"] = "Pending"
            condition = _condition("PodScheduled", "False", "Unschedulable", message)
            status["conditions"] = _set_condition(status.get("conditions") or [], condition)

        updated = self.store.internal_update(POD, pod, unschedulable, manager=SCHEDULER, subresource="status")
        if updated is not None:
            self.event(POD, updated, "Warning", "FailedScheduling", message or "", "default-scheduler")

    def _bind(self, pod: Obj, node_obj: Obj) -> None:
        node_name = node_obj["metadata"]["name"]
        host_ip = f"192.168.0.{(sum(node_name.encode()) % 250) + 2}"

        def bind(new: Obj) -> None:
            new["spec"]["nodeName"] = node_name

        bound = self.store.internal_update(POD, pod, bind, manager=SCHEDULER, subresource="binding")
        if bound is None:
            return
        namespace, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        self.event(
            POD,
            bound,
            "Normal",
            "Scheduled",
            f"Successfully assigned {namespace}/{name} to {node_name}",
            "default-scheduler",
        )

        def creating(new: Obj) -> None:
            status = new.setdefault("status", {})
            spec = new.get("spec") or {}
            status["phase"] = "Pending"
            status["hostIP"] = host_ip
            status["hostIPs"] = [{"ip": host_ip}]
            status["startTime"] = now()
            names = [c["name"] for c in spec.get("containers") or []]
            unready = f"containers with unready status: [{' '.join(names)}]"
            conditions = status.get("conditions") or []
            for condition in (
                _condition("PodReadyToStartContainers", "False"),
                _condition("Initialized", "True"),
                _condition("Ready", "False", "ContainersNotReady", unready),
                _condition("ContainersReady", "False", "ContainersNotReady", unready),
                _condition("PodScheduled", "True"),
            ):
                conditions = _set_condition(conditions, condition)
            status["conditions"] = conditions
            status["containerStatuses"] = [
                self._container_status(c, {"waiting": {"reason": "ContainerCreating"}}, ready=False)
                for c in spec.get("containers") or []
            ]

        self.store.internal_update(POD, bound, creating, manager=KUBELET, subresource="status")

    def make_unschedulable(self, namespace: str, name: str, message: str | None = None) -> Obj:
        pod = self.store.find(POD, namespace, name)
        if pod is None:
            raise KeyError(f"no pod {namespace}/{name}")
        uid = pod["metadata"]["uid"]
        total = len(self.store.items(NODE))
        self._pinned[uid] = message or (
            f"0/{total} nodes are available: {total} node(s) didn't match Pod's node affinity/selector. "
            f"preemption: 0/{total} nodes are available: {total} Preemption is not helpful for scheduling."
        )
        self._failed.pop(uid, None)
        if get_path(pod, "spec", "nodeName"):
            # Rebinding is not possible; the fake unbinds the pod as if it had been rescheduled.
            def unbind(new: Obj) -> None:
                new["spec"].pop("nodeName", None)
                new["status"] = {
                    "phase": "Pending",
                    "qosClass": get_path(new, "status", "qosClass", default="BestEffort"),
                }

            pod = self.store.internal_update(POD, pod, unbind, manager=SCHEDULER) or pod
        self._reconcile_schedule(namespace, name)
        return deep(self.store.find(POD, namespace, name) or pod)
