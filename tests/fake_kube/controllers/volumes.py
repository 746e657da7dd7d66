"""The persistent volume controller and a dynamic provisioner: claims bind to volumes.

A Pending claim (after `pvc_delay` seconds; None: the controller does nothing) binds:

- to the volume it names (`spec.volumeName`), or else to the smallest Available PersistentVolume
  that matches it (same storage class, "" for none; every access mode; enough capacity; the same
  volume mode; its selector);
- or, when none does and its StorageClass has a provisioner, to a new volume `pvc-<claim uid>` of
  the requested size, made with the class's reclaim policy;
- a class with `volumeBindingMode: WaitForFirstConsumer` binds only once a pod that uses the claim
  is scheduled: the claim is annotated `volume.kubernetes.io/selected-node` with that pod's node,
  and a provisioned volume gets node affinity to it. Until then the claim stays Pending with a
  WaitForFirstConsumer event;
- a claim without a class and without a matching volume stays Pending (FailedBinding event).

Binding writes the volume's claimRef and phase Bound, and the claim's volumeName, bind annotations
and status (Bound, the volume's capacity and access modes). A new volume without a claim becomes
Available. When a bound claim is deleted its volume is Released (reclaim policy Retain) or deleted
(Delete).
"""

from __future__ import annotations

from decimal import Decimal

from tests.fake_kube import registry_storage, selectors
from tests.fake_kube.controllers.base import CONTROLLER_MANAGER, POD, PVC, ControllerBase
from tests.fake_kube.errors import ApiError
from tests.fake_kube.resources import ResourceType, resource_for
from tests.fake_kube.store import Store
from tests.fake_kube.util import Obj, get_path, parse_quantity

PV = resource_for("v1", "PersistentVolume")
STORAGE_CLASS = resource_for("storage.k8s.io/v1", "StorageClass")
SELECTED_NODE = "volume.kubernetes.io/selected-node"
BINDER = "persistentvolume-controller"


def _claims_of(pod: Obj) -> list[str]:
    return [
        str(get_path(volume, "persistentVolumeClaim", "claimName"))
        for volume in get_path(pod, "spec", "volumes") or []
        if get_path(volume, "persistentVolumeClaim", "claimName")
    ]


def _size(value: object) -> Decimal:
    try:
        return parse_quantity(value)
    except (ValueError, TypeError, ArithmeticError):
        return Decimal(0)


class Volumes(ControllerBase):
    """Binds claims to volumes and provisions volumes (see the module's docstring)."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        store.listeners.append(self._volume_objects_changed)

    def _volume_objects_changed(self, rt: ResourceType, kind: str, obj: Obj, old: Obj | None) -> None:
        metadata = obj.get("metadata") or {}
        if rt is PV and kind != "DELETED":
            self.enqueue("volume", "", str(metadata.get("name")))
        elif rt is STORAGE_CLASS and kind != "DELETED":
            self.enqueue("pending_claims")
        elif rt is PVC and kind == "DELETED" and get_path(obj, "spec", "volumeName"):
            self.enqueue("released_volume", "", str(obj["spec"]["volumeName"]))
        elif (
            rt is POD
            and kind != "DELETED"
            and get_path(obj, "spec", "nodeName")
            and (old is None or not get_path(old, "spec", "nodeName"))
        ):
            for claim in _claims_of(obj):  # a consumer was scheduled: WaitForFirstConsumer claims bind
                self.enqueue("pvc", str(metadata.get("namespace") or ""), claim)

    # Claims ---------------------------------------------------------------------------------------

    def _reconcile_pvc(self, namespace: str, name: str) -> None:
        if self.pvc_delay is None:
            return
        self.later(self.pvc_delay, lambda: self._bind_claim(namespace, name))

    def _reconcile_pending_claims(self, _namespace: str, _name: str) -> None:
        for claim in self.store.items(PVC):
            if get_path(claim, "status", "phase") != "Bound":
                self._reconcile_pvc(claim["metadata"]["namespace"], claim["metadata"]["name"])

    def bind_pending_pvcs(self) -> None:
        """Binds every Pending claim now (when `pvc_delay` is set again)."""
        for claim in self.store.items(PVC):
            if get_path(claim, "status", "phase") != "Bound":
                self._bind_claim(claim["metadata"]["namespace"], claim["metadata"]["name"])

    def _bind_claim(self, namespace: str, name: str) -> None:
        claim = self.store.find(PVC, namespace, name)
        if (
            self.pvc_delay is None
            or claim is None
            or get_path(claim, "status", "phase") == "Bound"
            or get_path(claim, "metadata", "deletionTimestamp")
        ):
            return
        spec = claim.get("spec") or {}
        class_name = str(spec.get("storageClassName") or "")
        storage_class = self.store.find(STORAGE_CLASS, None, class_name) if class_name else None
        if storage_class is not None and storage_class.get("volumeBindingMode") == "WaitForFirstConsumer":
            node = get_path(claim, "metadata", "annotations", SELECTED_NODE) or self._consumer_node(claim)
            if node is None:
                self.event(
                    PVC,
                    claim,
                    "Normal",
                    "WaitForFirstConsumer",
                    "waiting for first consumer to be created before binding",
                    BINDER,
                )
                return
            claim = self._annotate(claim, {SELECTED_NODE: node})
            if claim is None:
                return
        volume = self._named_or_matching_volume(claim, class_name)
        if volume is None:
            volume = self._provision(claim, class_name, storage_class)
            if volume is None:
                return
        self._bind_volume(claim, volume)

    def _consumer_node(self, claim: Obj) -> str | None:
        namespace, name = claim["metadata"]["namespace"], claim["metadata"]["name"]
        for pod in self.store.items(POD, namespace):
            if name in _claims_of(pod) and get_path(pod, "spec", "nodeName"):
                return str(pod["spec"]["nodeName"])
        return None

    def _named_or_matching_volume(self, claim: Obj, class_name: str) -> Obj | None:
        spec = claim.get("spec") or {}
        uid = claim["metadata"]["uid"]
        if spec.get("volumeName"):
            volume = self.store.find(PV, None, str(spec["volumeName"]))
            claimed_by = get_path(volume, "spec", "claimRef", "uid") if volume is not None else None
            return volume if volume is not None and claimed_by in (None, uid) else None
        wanted_modes = set(spec.get("accessModes") or [])
        wanted_size = _size(get_path(spec, "resources", "requests", "storage", default="0"))
        try:
            requirements = selectors.from_label_selector(spec.get("selector")) or []
        except selectors.SelectorError:
            return None
        candidates = [
            volume
            for volume in self.store.items(PV)
            if get_path(volume, "status", "phase") == "Available"
            and get_path(volume, "spec", "claimRef", "uid") in (None, uid)
            and str(get_path(volume, "spec", "storageClassName") or "") == class_name
            and wanted_modes <= set(get_path(volume, "spec", "accessModes") or [])
            and _size(get_path(volume, "spec", "capacity", "storage", default="0")) >= wanted_size
            and get_path(volume, "spec", "volumeMode", default="Filesystem")
            == spec.get("volumeMode", "Filesystem")
            and selectors.matches(requirements, get_path(volume, "metadata", "labels"))
        ]
        if not candidates:
            return None
        return min(candidates, key=lambda v: _size(get_path(v, "spec", "capacity", "storage", default="0")))

    def _provision(self, claim: Obj, class_name: str, storage_class: Obj | None) -> Obj | None:
        if storage_class is None or storage_class.get("provisioner") == registry_storage.NO_PROVISIONER:
            if not class_name:
                reason, message = (
                    "FailedBinding",
                    "no persistent volumes available for this claim and no storage class is set",
                )
            elif storage_class is None:
                reason, message = (
                    "ProvisioningFailed",
                    f'storageclass.storage.k8s.io "{class_name}" not found',
                )
            else:
                reason, message = "FailedBinding", "no persistent volumes available for this claim"
            self.event(PVC, claim, "Warning", reason, message, BINDER)
            return None
        provisioner = str(storage_class.get("provisioner"))
        annotated = self._annotate(
            claim,
            {
                "volume.beta.kubernetes.io/storage-provisioner": provisioner,
                "volume.kubernetes.io/storage-provisioner": provisioner,
            },
        )
        if annotated is None:
            return None
        spec = annotated.get("spec") or {}
        metadata = annotated["metadata"]
        name = f"pvc-{metadata['uid']}"
        volume: Obj = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": name, "annotations": {"pv.kubernetes.io/provisioned-by": provisioner}},
            "spec": {
                "capacity": {"storage": get_path(spec, "resources", "requests", "storage", default="1Gi")},
                "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
                "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy", "Delete"),
                "storageClassName": class_name,
                "volumeMode": spec.get("volumeMode", "Filesystem"),
                "hostPath": {"path": f"/var/lib/fake-kube/volumes/{name}", "type": "DirectoryOrCreate"},
                "claimRef": self._claim_ref(annotated),
            },
        }
        node = get_path(metadata, "annotations", SELECTED_NODE)
        if node:
            volume["spec"]["nodeAffinity"] = {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
                            ]
                        }
                    ]
                }
            }
        existing = self.store.find(PV, None, name)
        if existing is not None:
            return existing
        try:
            created = self.store.create(PV, None, volume, manager=provisioner)
        except ApiError as error:
            self.event(PVC, claim, "Warning", "ProvisioningFailed", error.message, provisioner)
            return None
        self.event(
            PVC,
            claim,
            "Normal",
            "ProvisioningSucceeded",
            f"Successfully provisioned volume {name}",
            provisioner,
        )
        return created

    @staticmethod
    def _claim_ref(claim: Obj) -> Obj:
        metadata = claim["metadata"]
        return {
            "kind": "PersistentVolumeClaim",
            "namespace": metadata["namespace"],
            "name": metadata["name"],
            "uid": metadata["uid"],
            "apiVersion": "v1",
            "resourceVersion": metadata.get("resourceVersion"),
        }

    def _annotate(self, claim: Obj, annotations: dict[str, str]) -> Obj | None:
        def annotate(new: Obj) -> None:
            new["metadata"].setdefault("annotations", {}).update(annotations)

        return self.store.internal_update(PVC, claim, annotate, manager=CONTROLLER_MANAGER)

    def _bind_volume(self, claim: Obj, volume: Obj) -> None:
        chosen_by_binder = get_path(volume, "spec", "claimRef") is None

        def claim_volume(new: Obj) -> None:
            new["spec"]["claimRef"] = self._claim_ref(claim)
            if chosen_by_binder:
                new["metadata"].setdefault("annotations", {})["pv.kubernetes.io/bound-by-controller"] = "yes"

        bound_volume = self.store.internal_update(PV, volume, claim_volume, manager=CONTROLLER_MANAGER)
        if bound_volume is None:
            return

        def volume_bound(new: Obj) -> None:
            new["status"] = {"phase": "Bound"}

        bound_volume = self.store.internal_update(
            PV, bound_volume, volume_bound, manager=CONTROLLER_MANAGER, subresource="status"
        )
        if bound_volume is None:
            return

        def claim_bound(new: Obj) -> None:
            new["spec"]["volumeName"] = bound_volume["metadata"]["name"]
            annotations = new["metadata"].setdefault("annotations", {})
            annotations["pv.kubernetes.io/bind-completed"] = "yes"
            if chosen_by_binder or not get_path(claim, "spec", "volumeName"):
                annotations["pv.kubernetes.io/bound-by-controller"] = "yes"

        bound_claim = self.store.internal_update(PVC, claim, claim_bound, manager=CONTROLLER_MANAGER)
        if bound_claim is None:
            return

        def claim_status(new: Obj) -> None:
            new["status"] = {
                "phase": "Bound",
                "accessModes": list(get_path(bound_volume, "spec", "accessModes") or []),
                "capacity": dict(get_path(bound_volume, "spec", "capacity") or {}),
            }

        self.store.internal_update(
            PVC, bound_claim, claim_status, manager=CONTROLLER_MANAGER, subresource="status"
        )

    # Volumes --------------------------------------------------------------------------------------

    def _reconcile_volume(self, _namespace: str, name: str) -> None:
        volume = self.store.find(PV, None, name)
        if volume is None or get_path(volume, "metadata", "deletionTimestamp"):
            return
        if get_path(volume, "status", "phase") == "Pending" and not get_path(volume, "spec", "claimRef"):

            def available(new: Obj) -> None:
                new["status"] = {"phase": "Available"}

            self.store.internal_update(
                PV, volume, available, manager=CONTROLLER_MANAGER, subresource="status"
            )
            self.enqueue("pending_claims")

    def _reconcile_released_volume(self, _namespace: str, name: str) -> None:
        volume = self.store.find(PV, None, name)
        if volume is None or get_path(volume, "metadata", "deletionTimestamp"):
            return
        ref = get_path(volume, "spec", "claimRef") or {}
        claim = self.store.find(PVC, ref.get("namespace"), str(ref.get("name") or ""))
        if claim is not None and claim["metadata"]["uid"] == ref.get("uid"):
            return
        if get_path(volume, "spec", "persistentVolumeReclaimPolicy") == "Delete":
            self.store.delete_object(PV, volume)
            return

        def released(new: Obj) -> None:
            new["status"] = {"phase": "Released"}

        self.store.internal_update(PV, volume, released, manager=CONTROLLER_MANAGER, subresource="status")
