"""The StatefulSet controller: ordered pods <name>-<ordinal> and their PVCs; each pod carries its
revision (`controller-revision-hash`), the status the current and update revisions.
`observe_delay` (base.py) makes it slow to observe a new generation."""

from __future__ import annotations

from tests.fake_kube import admission
from tests.fake_kube.controllers.base import (
    CONTROLLER_MANAGER,
    POD,
    PVC,
    STATEFULSET,
    ControllerBase,
    _condition,
    _is_ready,
    _owner_ref,
)
from tests.fake_kube.errors import ApiError
from tests.fake_kube.util import Obj, deep, get_path, short_hash


class StatefulSets(ControllerBase):
    # StatefulSets ----------------------------------------------------------------------------

    def _reconcile_statefulset(self, namespace: str, name: str) -> None:
        sts = self.store.find(STATEFULSET, namespace, name)
        if sts is None or get_path(sts, "metadata", "deletionTimestamp"):
            return
        if self._lagging("statefulset", sts):
            return
        spec = sts.get("spec") or {}
        uid = sts["metadata"]["uid"]
        replicas = int(spec.get("replicas", 1))
        start = int(get_path(spec, "ordinals", "start", default=0))
        revision = f"{name}-{short_hash(spec.get('template') or {})}"
        parallel = spec.get("podManagementPolicy") == "Parallel"
        pods = {p["metadata"]["name"]: p for p in self._owned(POD, namespace, uid)}
        failure = None
        for ordinal in range(start, start + replicas):
            pod_name = f"{name}-{ordinal}"
            pod = pods.get(pod_name)
            if (
                pod is not None
                and admission.is_terminal(pod)
                and not get_path(pod, "metadata", "deletionTimestamp")
            ):
                self.store.delete_object(POD, pod, grace=0)
                pod = None
            if pod is None:
                if not parallel and not all(
                    _is_ready(pods[f"{name}-{i}"]) for i in range(start, ordinal) if f"{name}-{i}" in pods
                ):
                    break
                if not parallel and any(f"{name}-{i}" not in pods for i in range(start, ordinal)):
                    break
                try:
                    pods[pod_name] = self._create_sts_pod(sts, ordinal, revision)
                except ApiError as error:
                    failure = error.message
                    self.event(
                        STATEFULSET,
                        sts,
                        "Warning",
                        "FailedCreate",
                        f"create Pod {pod_name} in StatefulSet {name} failed error: {error.message}",
                        "statefulset-controller",
                    )
                    break
                if not parallel:
                    break
        for pod_name, pod in sorted(pods.items(), key=lambda item: -int(item[0].rsplit("-", 1)[1])):
            ordinal = int(pod_name.rsplit("-", 1)[1])
            if not start <= ordinal < start + replicas and not get_path(pod, "metadata", "deletionTimestamp"):
                self.store.delete_object(POD, pod)
                if not parallel:
                    break
        update_type = get_path(spec, "updateStrategy", "type", default="RollingUpdate")
        partition = int(get_path(spec, "updateStrategy", "rollingUpdate", "partition", default=0))
        live = [p for p in pods.values() if not get_path(p, "metadata", "deletionTimestamp")]
        if update_type == "RollingUpdate" and all(_is_ready(p) for p in live):
            outdated = [
                p
                for p in live
                if get_path(p, "metadata", "labels", "controller-revision-hash") != revision
                and int(p["metadata"]["name"].rsplit("-", 1)[1]) >= partition
            ]
            if outdated:
                newest = max(outdated, key=lambda p: int(p["metadata"]["name"].rsplit("-", 1)[1]))
                self.store.delete_object(POD, newest)
        current = [
            p for p in self._owned(POD, namespace, uid) if not get_path(p, "metadata", "deletionTimestamp")
        ]
        ready = sum(1 for p in current if _is_ready(p))
        updated = sum(
            1 for p in current if get_path(p, "metadata", "labels", "controller-revision-hash") == revision
        )

        def status(new: Obj) -> None:
            old = new.get("status") or {}
            result: Obj = {
                "observedGeneration": new["metadata"].get("generation", 1),
                "replicas": len(current),
                "updateRevision": revision,
                "currentRevision": revision
                if updated == len(current)
                else old.get("currentRevision", revision),
                "collisionCount": 0,
            }
            for key, value in (
                ("readyReplicas", ready),
                ("availableReplicas", ready),
                ("currentReplicas", updated),
                ("updatedReplicas", updated),
            ):
                if value:
                    result[key] = value
            if failure:
                result["conditions"] = [_condition("ReplicaFailure", "True", "FailedCreate", failure)]
            new["status"] = result

        self.store.internal_update(STATEFULSET, sts, status, manager=CONTROLLER_MANAGER, subresource="status")

    def _create_sts_pod(self, sts: Obj, ordinal: int, revision: str) -> Obj:
        metadata = sts["metadata"]
        name, namespace = metadata["name"], metadata["namespace"]
        spec = sts.get("spec") or {}
        template = deep(spec.get("template") or {})
        pod_name = f"{name}-{ordinal}"
        pod_spec = template.get("spec") or {}
        volumes = pod_spec.setdefault("volumes", [])
        retention = get_path(spec, "persistentVolumeClaimRetentionPolicy", "whenDeleted", default="Retain")
        for claim in spec.get("volumeClaimTemplates") or []:
            claim_name = f"{claim['metadata']['name']}-{pod_name}"
            if self.store.find(PVC, namespace, claim_name) is None:
                claim_body: Obj = {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": {
                        "name": claim_name,
                        "namespace": namespace,
                        "labels": {
                            **(get_path(spec, "selector", "matchLabels") or {}),
                            **(get_path(claim, "metadata", "labels") or {}),
                        },
                    },
                    "spec": deep(claim.get("spec") or {}),
                }
                if retention == "Delete":
                    claim_body["metadata"]["ownerReferences"] = [
                        _owner_ref(STATEFULSET, sts) | {"controller": True}
                    ]
                self.store.create(PVC, namespace, claim_body, manager=CONTROLLER_MANAGER)
            if not any(v.get("name") == claim["metadata"]["name"] for v in volumes):
                volumes.append(
                    {"name": claim["metadata"]["name"], "persistentVolumeClaim": {"claimName": claim_name}}
                )
        if not volumes:
            pod_spec.pop("volumes")
        pod_spec["hostname"] = pod_name
        if spec.get("serviceName"):
            pod_spec["subdomain"] = spec["serviceName"]
        labels = {
            **(get_path(template, "metadata", "labels") or {}),
            "controller-revision-hash": revision,
            "statefulset.kubernetes.io/pod-name": pod_name,
            "apps.kubernetes.io/pod-index": str(ordinal),
        }
        body: Obj = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": pod_name,
                "namespace": namespace,
                "labels": labels,
                "ownerReferences": [_owner_ref(STATEFULSET, sts)],
            },
            "spec": pod_spec,
        }
        if get_path(template, "metadata", "annotations"):
            body["metadata"]["annotations"] = deep(template["metadata"]["annotations"])
        created = self.store.create(POD, namespace, body, manager=CONTROLLER_MANAGER)
        self.event(
            STATEFULSET,
            sts,
            "Normal",
            "SuccessfulCreate",
            f"create Pod {pod_name} in StatefulSet {name} successful",
            "statefulset-controller",
        )
        return created
