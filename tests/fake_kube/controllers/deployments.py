"""The Deployment and ReplicaSet controllers: rollouts, scaling, pods and their conditions.

As the real ones: the Deployment's current ReplicaSet carries the revision annotation
(`deployment.kubernetes.io/revision`, one more than any other of its ReplicaSets) and the
Deployment the same value; a ReplicaSet that cannot create its pods (a quota) reports
ReplicaFailure and tries again with a growing backoff (`_RETRY_FIRST` doubling up to
`_RETRY_MAX`), so that it makes its pods once the quota frees. `observe_delay` (base.py) makes the
Deployment controller slow to observe a new generation.
"""

from __future__ import annotations

import time

from tests.fake_kube import admission
from tests.fake_kube.controllers.base import (
    CONTROLLER_MANAGER,
    DEPLOYMENT,
    POD,
    REPLICASET,
    ControllerBase,
    _condition,
    _is_ready,
    _owner_ref,
    _set_condition,
)
from tests.fake_kube.errors import ApiError
from tests.fake_kube.store import Store
from tests.fake_kube.util import Obj, deep, get_path, now, short_hash

REVISION = "deployment.kubernetes.io/revision"
# The ReplicaSet controller's retries after a failed pod creation (its work queue's per-item
# backoff, which starts at 5 ms and ends at 1000 s, shortened for tests).
_RETRY_FIRST = 0.05
_RETRY_MAX = 1.0


def _max_unavailable(deployment: Obj, desired: int) -> int:
    strategy = get_path(deployment, "spec", "strategy") or {}
    if strategy.get("type") == "Recreate":
        return 0
    value = get_path(strategy, "rollingUpdate", "maxUnavailable", default="25%")
    if isinstance(value, str) and value.endswith("%"):
        return int(desired * int(value[:-1]) // 100)
    return int(value)


def _revision(obj: Obj) -> int:
    return int(get_path(obj, "metadata", "annotations", REVISION) or 0)


class Deployments(ControllerBase):
    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self._retry: dict[str, float] = {}  # replicaset uid -> its next retry's backoff

    # ReplicaSets and Deployments -------------------------------------------------------------

    def _reconcile_replicaset(self, namespace: str, name: str) -> None:
        rs = self.store.find(REPLICASET, namespace, name)
        if rs is None or get_path(rs, "metadata", "deletionTimestamp"):
            return
        uid = rs["metadata"]["uid"]
        pods = self._owned(POD, namespace, uid)
        active = [
            p
            for p in pods
            if not get_path(p, "metadata", "deletionTimestamp") and not admission.is_terminal(p)
        ]
        wanted = int(get_path(rs, "spec", "replicas", default=1))
        failure: str | None = None
        if len(active) < wanted:
            template = get_path(rs, "spec", "template") or {}
            for _ in range(wanted - len(active)):
                body: Obj = {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {
                        "generateName": f"{name}-",
                        "namespace": namespace,
                        "labels": dict(get_path(template, "metadata", "labels") or {}),
                        "annotations": dict(get_path(template, "metadata", "annotations") or {}),
                        "ownerReferences": [_owner_ref(REPLICASET, rs)],
                    },
                    "spec": deep(template.get("spec") or {}),
                }
                if not body["metadata"]["annotations"]:
                    del body["metadata"]["annotations"]
                try:
                    created = self.store.create(POD, namespace, body, manager=CONTROLLER_MANAGER)
                except ApiError as error:
                    failure = error.message
                    self.event(
                        REPLICASET,
                        rs,
                        "Warning",
                        "FailedCreate",
                        f"Error creating: {error.message}",
                        "replicaset-controller",
                    )
                    break
                active.append(created)
                self.event(
                    REPLICASET,
                    rs,
                    "Normal",
                    "SuccessfulCreate",
                    f"Created pod: {created['metadata']['name']}",
                    "replicaset-controller",
                )
        elif len(active) > wanted:
            surplus = sorted(active, key=lambda p: (_is_ready(p), p["metadata"]["creationTimestamp"]))[
                : len(active) - wanted
            ]
            for pod in surplus:
                self.store.delete_object(POD, pod)
                active.remove(pod)
                self.event(
                    REPLICASET,
                    rs,
                    "Normal",
                    "SuccessfulDelete",
                    f"Deleted pod: {pod['metadata']['name']}",
                    "replicaset-controller",
                )
        ready = sum(1 for p in active if _is_ready(p))
        labels = get_path(rs, "spec", "template", "metadata", "labels") or {}
        labeled = sum(
            1
            for p in active
            if all((get_path(p, "metadata", "labels") or {}).get(k) == v for k, v in labels.items())
        )

        def status(new: Obj) -> None:
            current = new.get("status") or {}
            result: Obj = {"replicas": len(active)}
            if labeled:
                result["fullyLabeledReplicas"] = labeled
            if ready:
                result["readyReplicas"] = ready
                result["availableReplicas"] = ready
            result["observedGeneration"] = new["metadata"].get("generation", 1)
            conditions = list(current.get("conditions") or [])
            if failure:
                failed = _condition("ReplicaFailure", "True", "FailedCreate", failure)
                conditions = _set_condition(conditions, failed)
            elif len(active) >= wanted:
                conditions = [c for c in conditions if c.get("type") != "ReplicaFailure"]
            if conditions:
                result["conditions"] = conditions
            new["status"] = result

        self.store.internal_update(REPLICASET, rs, status, manager=CONTROLLER_MANAGER, subresource="status")
        if failure is not None:
            backoff = self._retry.get(uid, _RETRY_FIRST / 2) * 2
            self._retry[uid] = min(backoff, _RETRY_MAX)
            self.later(self._retry[uid], lambda: self.enqueue("replicaset", namespace, name))
        else:
            self._retry.pop(uid, None)
            if len(active) < wanted:
                self.enqueue("replicaset", namespace, name)

    def _reconcile_deployment(self, namespace: str, name: str) -> None:
        deployment = self.store.find(DEPLOYMENT, namespace, name)
        if deployment is None or get_path(deployment, "metadata", "deletionTimestamp"):
            return
        if self._lagging("deployment", deployment):
            return
        uid = deployment["metadata"]["uid"]
        spec = deployment.get("spec") or {}
        desired = int(spec.get("replicas", 1))
        template = deep(spec.get("template") or {})
        template_hash = short_hash(template)
        owned = self._owned(REPLICASET, namespace, uid)
        new_rs = next(
            (rs for rs in owned if get_path(rs, "metadata", "labels", "pod-template-hash") == template_hash),
            None,
        )
        old_sets = [rs for rs in owned if rs is not new_rs]
        revisions = [_revision(rs) for rs in owned]
        created_now = False
        if new_rs is None and not spec.get("paused"):
            labels = {**(get_path(template, "metadata", "labels") or {}), "pod-template-hash": template_hash}
            template.setdefault("metadata", {})["labels"] = labels
            selector = deep(spec.get("selector") or {})
            selector.setdefault("matchLabels", {})["pod-template-hash"] = template_hash
            recreate = get_path(spec, "strategy", "type") == "Recreate"
            old_pods = any(self._owned(POD, namespace, rs["metadata"]["uid"]) for rs in old_sets)
            body = {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {
                    "name": f"{name}-{template_hash}",
                    "namespace": namespace,
                    "labels": labels,
                    "annotations": {
                        REVISION: str(max(revisions, default=0) + 1),
                        "deployment.kubernetes.io/desired-replicas": str(desired),
                        "deployment.kubernetes.io/max-replicas": str(desired + 1),
                    },
                    "ownerReferences": [_owner_ref(DEPLOYMENT, deployment)],
                },
                "spec": {
                    "replicas": 0 if recreate and old_pods else desired,
                    "minReadySeconds": spec.get("minReadySeconds", 0),
                    "selector": selector,
                    "template": template,
                },
            }
            new_rs = self.store.create(REPLICASET, namespace, body, manager=CONTROLLER_MANAGER)
            created_now = True
            self._progress[uid] = time.monotonic()
            self.event(
                DEPLOYMENT,
                deployment,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled up replica set {new_rs['metadata']['name']} from 0 to {desired}",
                "deployment-controller",
            )
        if new_rs is None:
            return
        newest = max((_revision(rs) for rs in old_sets), default=0)
        if _revision(new_rs) <= newest:
            # Back to the template of an older ReplicaSet (a rollback): it becomes the newest revision.
            def bump(new: Obj) -> None:
                new["metadata"].setdefault("annotations", {})[REVISION] = str(newest + 1)

            new_rs = (
                self.store.internal_update(REPLICASET, new_rs, bump, manager=CONTROLLER_MANAGER) or new_rs
            )
        revision = str(_revision(new_rs))
        if get_path(deployment, "metadata", "annotations", REVISION) != revision:

            def annotate(new: Obj) -> None:
                new["metadata"].setdefault("annotations", {})[REVISION] = revision

            deployment = (
                self.store.internal_update(DEPLOYMENT, deployment, annotate, manager=CONTROLLER_MANAGER)
                or deployment
            )
        new_available = int(get_path(new_rs, "status", "availableReplicas", default=0))
        recreate = get_path(spec, "strategy", "type") == "Recreate"
        if not spec.get("paused"):
            if recreate:
                old_wanted = 0
                old_pods = any(self._owned(POD, namespace, rs["metadata"]["uid"]) for rs in old_sets)
                new_wanted = 0 if old_pods else desired
            else:
                old_wanted = max(0, desired - new_available)
                new_wanted = desired
            for index, rs in enumerate(
                sorted(old_sets, key=lambda r: r["metadata"]["creationTimestamp"], reverse=True)
            ):
                target = old_wanted if index == 0 else 0
                target = min(target, int(get_path(rs, "spec", "replicas", default=0)))
                self._scale_rs(rs, target)
            self._scale_rs(new_rs, new_wanted)
        owned = self._owned(REPLICASET, namespace, uid)
        new_rs = next((rs for rs in owned if rs["metadata"]["uid"] == new_rs["metadata"]["uid"]), new_rs)
        replicas = sum(int(get_path(rs, "status", "replicas", default=0)) for rs in owned)
        ready = sum(int(get_path(rs, "status", "readyReplicas", default=0)) for rs in owned)
        available = sum(int(get_path(rs, "status", "availableReplicas", default=0)) for rs in owned)
        updated = int(get_path(new_rs, "status", "replicas", default=0))
        new_rs_name = new_rs["metadata"]["name"]
        complete = (
            updated == desired
            and replicas == desired
            and available >= desired
            and int(get_path(new_rs, "status", "availableReplicas", default=0)) >= desired
        )
        started = self._progress.setdefault(uid, time.monotonic())
        deadline = int(spec.get("progressDeadlineSeconds", 600))
        failure = next(
            (c for c in get_path(new_rs, "status", "conditions") or [] if c.get("type") == "ReplicaFailure"),
            None,
        )

        def status(new: Obj) -> None:
            current = new.get("status") or {}
            result: Obj = {"observedGeneration": new["metadata"].get("generation", 1)}
            for key, value in (
                ("replicas", replicas),
                ("updatedReplicas", updated),
                ("readyReplicas", ready),
                ("availableReplicas", available),
                ("unavailableReplicas", max(0, desired - available)),
            ):
                if value:
                    result[key] = value
            conditions = list(current.get("conditions") or [])
            minimum = desired - _max_unavailable(new, desired)
            if available >= minimum:
                available_condition = _condition(
                    "Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability."
                )
            else:
                available_condition = _condition(
                    "Available",
                    "False",
                    "MinimumReplicasUnavailable",
                    "Deployment does not have minimum availability.",
                )
            available_condition["lastUpdateTime"] = now()
            conditions = _set_condition(conditions, available_condition, update_time=True)
            kept = next((c for c in conditions if c.get("type") == "Progressing"), None)
            settled = (
                kept is not None
                and kept.get("reason") == "NewReplicaSetAvailable"
                and not created_now
                and updated >= desired
                and f'"{new_rs_name}"' in str(kept.get("message"))
            )
            if settled and not complete:
                # A finished rollout stays finished when pods fail later (no deadline applies).
                assert kept is not None  # settled says so
                progressing = dict(kept)
            elif complete:
                self._progress[uid] = time.monotonic()
                progressing = _condition(
                    "Progressing",
                    "True",
                    "NewReplicaSetAvailable",
                    f'ReplicaSet "{new_rs_name}" has successfully progressed.',
                )
            elif time.monotonic() - started > deadline:
                progressing = _condition(
                    "Progressing",
                    "False",
                    "ProgressDeadlineExceeded",
                    f'ReplicaSet "{new_rs_name}" has timed out progressing.',
                )
            elif created_now:
                progressing = _condition(
                    "Progressing", "True", "NewReplicaSetCreated", f'Created new replica set "{new_rs_name}"'
                )
            else:
                progressing = _condition(
                    "Progressing", "True", "ReplicaSetUpdated", f'ReplicaSet "{new_rs_name}" is progressing.'
                )
            progressing["lastUpdateTime"] = now()
            conditions = _set_condition(conditions, progressing, update_time=True)
            conditions = [c for c in conditions if c.get("type") != "ReplicaFailure"]
            if failure is not None:
                conditions.append(dict(failure))
            order = {"Available": 0, "Progressing": 1, "ReplicaFailure": 2}
            result["conditions"] = sorted(conditions, key=lambda c: order.get(c.get("type", ""), 3))
            new["status"] = result

        self.store.internal_update(
            DEPLOYMENT, deployment, status, manager=CONTROLLER_MANAGER, subresource="status"
        )
        if not complete and uid not in self._deadlines:
            remaining = deadline - (time.monotonic() - started)
            if remaining > -1:
                self._deadlines.add(uid)

                def check() -> None:
                    self._deadlines.discard(uid)
                    self.enqueue("deployment", namespace, name)

                self.later(max(remaining, 0) + 0.05, check)

    def _scale_rs(self, rs: Obj, replicas: int) -> None:
        if int(get_path(rs, "spec", "replicas", default=0)) == replicas:
            return

        def scale(new: Obj) -> None:
            new["spec"]["replicas"] = replicas
            new["metadata"].setdefault("annotations", {})["deployment.kubernetes.io/desired-replicas"] = str(
                replicas
            )

        self.store.internal_update(REPLICASET, rs, scale, manager=CONTROLLER_MANAGER)
