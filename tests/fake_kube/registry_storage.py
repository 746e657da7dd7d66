"""storage.k8s.io/v1 StorageClass and v1 PersistentVolume as the API server's registry treats them:
their defaults, and the DefaultStorageClass admission plugin, which gives a new claim without
`storageClassName` the cluster's default class (the newest one annotated
`storageclass.kubernetes.io/is-default-class: "true"`); a claim with `storageClassName: ""` asks
for no class, and so for a pre-made PersistentVolume without one."""

from __future__ import annotations

from tests.fake_kube.util import Obj, get_path

DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class"
NO_PROVISIONER = "kubernetes.io/no-provisioner"


def default_storage_class(obj: Obj) -> None:
    obj.setdefault("reclaimPolicy", "Delete")
    obj.setdefault("volumeBindingMode", "Immediate")


def default_persistent_volume(obj: Obj) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
        spec.setdefault("volumeMode", "Filesystem")


def is_default(storage_class: Obj) -> bool:
    return bool(get_path(storage_class, "metadata", "annotations", DEFAULT_CLASS_ANNOTATION) == "true")


def default_class_name(classes: list[Obj]) -> str | None:
    """The default class a new claim gets: the newest of those marked default, by creation time
    then name, as the admission plugin picks among several."""
    defaults = [c for c in classes if is_default(c)]
    if not defaults:
        return None
    newest = max(
        defaults,
        key=lambda c: (str(get_path(c, "metadata", "creationTimestamp")), str(c["metadata"]["name"])),
    )
    return str(newest["metadata"]["name"])


# The class every fake cluster starts with, as kind and k3s ship one: default, dynamically provisioned,
# bound at once (tests that want WaitForFirstConsumer make a class of their own).
STANDARD_CLASS: Obj = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {"name": "standard", "annotations": {DEFAULT_CLASS_ANNOTATION: "true"}},
    "provisioner": "fake-kube.io/hostpath",
    "reclaimPolicy": "Delete",
    "volumeBindingMode": "Immediate",
}
