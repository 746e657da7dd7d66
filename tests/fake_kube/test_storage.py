"""StorageClasses and PersistentVolumes in the fake cluster, seen through the official client: the
default class, dynamic provisioning, binding to a pre-made volume, WaitForFirstConsumer, reclaim
policies, and a claim that nothing can satisfy."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from tests.fake_kube import FakeKube


def claim(name: str, size: str = "10Gi", storage_class: str | None = None) -> Any:
    spec: dict[str, Any] = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": spec}


def volume(name: str, size: str, storage_class: str = "", reclaim: str = "Retain") -> Any:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce", "ReadOnlyMany"],
            "storageClassName": storage_class,
            "persistentVolumeReclaimPolicy": reclaim,
            "nfs": {"server": "nfs.example.com", "path": f"/exports/{name}"},
        },
    }


def phase_of(fake: FakeKube, kind: str, name: str, namespace: str | None = "default") -> str | None:
    obj = fake.get("v1", kind, name, namespace)
    return None if obj is None else obj.get("status", {}).get("phase")


def events_of(fake: FakeKube, name: str) -> list[tuple[str, str]]:
    return [
        (e["reason"], e["message"])
        for e in fake.list("v1", "Event", "default")
        if e["involvedObject"]["name"] == name
    ]


def test_a_claim_without_a_class_gets_the_default_one_and_a_provisioned_volume(
    fake_kube: FakeKube, kube_client: client.ApiClient
) -> None:
    core = client.CoreV1Api(kube_client)
    classes = client.StorageV1Api(kube_client).list_storage_class().items
    assert [(c.metadata.name if c.metadata else None, c.volume_binding_mode) for c in classes] == [
        ("standard", "Immediate")
    ]

    created = core.create_namespaced_persistent_volume_claim("default", claim("data"))
    fake_kube.wait_for(lambda: phase_of(fake_kube, "PersistentVolumeClaim", "data") == "Bound")

    assert created.spec is not None and created.spec.storage_class_name == "standard"
    bound = core.read_namespaced_persistent_volume_claim("data", "default")
    assert bound.spec is not None and bound.status is not None and bound.metadata is not None
    uid = bound.metadata.uid
    assert bound.spec.volume_name == f"pvc-{uid}"
    assert bound.status.capacity == {"storage": "10Gi"}
    pv = core.read_persistent_volume(f"pvc-{uid}")
    assert pv.spec is not None and pv.spec.claim_ref is not None and pv.status is not None
    assert (pv.spec.claim_ref.name, pv.spec.claim_ref.uid, pv.status.phase) == ("data", uid, "Bound")
    assert pv.spec.persistent_volume_reclaim_policy == "Delete"
    assert ("ProvisioningSucceeded", f"Successfully provisioned volume pvc-{uid}") in events_of(
        fake_kube, "data"
    )

    core.delete_namespaced_persistent_volume_claim("data", "default")
    fake_kube.wait_for(lambda: fake_kube.get("v1", "PersistentVolume", f"pvc-{uid}") is None)


def test_a_claim_binds_the_smallest_pre_made_volume_that_fits(
    fake_kube: FakeKube, kube_client: client.ApiClient
) -> None:
    core = client.CoreV1Api(kube_client)
    for name, size in (("small", "5Gi"), ("large", "100Gi"), ("medium", "20Gi")):
        core.create_persistent_volume(volume(name, size))
    fake_kube.wait_for(lambda: phase_of(fake_kube, "PersistentVolume", "medium", None) == "Available")

    core.create_namespaced_persistent_volume_claim("default", claim("data", "10Gi", storage_class=""))
    fake_kube.wait_for(lambda: phase_of(fake_kube, "PersistentVolumeClaim", "data") == "Bound")

    bound = fake_kube.get("v1", "PersistentVolumeClaim", "data", "default")
    assert bound is not None
    assert bound["spec"]["volumeName"] == "medium"
    assert bound["status"]["capacity"] == {"storage": "20Gi"}
    assert bound["status"]["accessModes"] == ["ReadWriteOnce", "ReadOnlyMany"]
    assert bound["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert phase_of(fake_kube, "PersistentVolume", "medium", None) == "Bound"
    assert phase_of(fake_kube, "PersistentVolume", "small", None) == "Available"

    core.delete_namespaced_persistent_volume_claim("data", "default")
    fake_kube.wait_for(lambda: phase_of(fake_kube, "PersistentVolume", "medium", None) == "Released")


def test_wait_for_first_consumer_binds_when_a_pod_that_uses_the_claim_is_scheduled(
    fake_kube: FakeKube, kube_client: client.ApiClient
) -> None:
    local: Any = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "local"},
        "provisioner": "rancher.io/local-path",
        "volumeBindingMode": "WaitForFirstConsumer",
    }
    client.StorageV1Api(kube_client).create_storage_class(local)
    core = client.CoreV1Api(kube_client)
    core.create_namespaced_persistent_volume_claim("default", claim("scratch", storage_class="local"))
    fake_kube.wait_for(lambda: events_of(fake_kube, "scratch"))

    assert phase_of(fake_kube, "PersistentVolumeClaim", "scratch") == "Pending"
    assert events_of(fake_kube, "scratch") == [
        ("WaitForFirstConsumer", "waiting for first consumer to be created before binding")
    ]
    pod: Any = {
        "metadata": {"name": "user"},
        "spec": {
            "containers": [{"name": "main", "image": "busybox:1.36"}],
            "volumes": [{"name": "scratch", "persistentVolumeClaim": {"claimName": "scratch"}}],
        },
    }
    core.create_namespaced_pod("default", pod)
    fake_kube.wait_for(lambda: phase_of(fake_kube, "PersistentVolumeClaim", "scratch") == "Bound")

    pod = fake_kube.get("v1", "Pod", "user", "default")
    bound = fake_kube.get("v1", "PersistentVolumeClaim", "scratch", "default")
    assert pod is not None and bound is not None
    node = pod["spec"]["nodeName"]
    assert bound["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == node
    pv = fake_kube.get("v1", "PersistentVolume", bound["spec"]["volumeName"])
    assert pv is not None
    terms = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert terms == [
        {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}
    ]


def test_a_claim_that_nothing_can_satisfy_stays_pending_and_says_why(
    fake_kube: FakeKube, kube_client: client.ApiClient
) -> None:
    core = client.CoreV1Api(kube_client)
    core.create_namespaced_persistent_volume_claim("default", claim("nothing", storage_class=""))
    core.create_namespaced_persistent_volume_claim("default", claim("typo", storage_class="fast-ssd"))

    fake_kube.wait_for(lambda: events_of(fake_kube, "nothing") and events_of(fake_kube, "typo"))
    assert events_of(fake_kube, "nothing") == [
        ("FailedBinding", "no persistent volumes available for this claim and no storage class is set")
    ]
    assert events_of(fake_kube, "typo") == [
        ("ProvisioningFailed", 'storageclass.storage.k8s.io "fast-ssd" not found')
    ]
    assert phase_of(fake_kube, "PersistentVolumeClaim", "nothing") == "Pending"
    assert phase_of(fake_kube, "PersistentVolumeClaim", "typo") == "Pending"
