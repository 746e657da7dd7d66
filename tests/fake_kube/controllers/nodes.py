"""The Node objects of the fake cluster."""

from __future__ import annotations

from tests.fake_kube.util import Obj, now


def node(
    name: str,
    *,
    cpu: str = "32",
    memory: str = "256Gi",
    gpus: int = 0,
    gpu_resource: str = "nvidia.com/gpu",
    pods: int = 110,
    ephemeral_storage: str = "500Gi",
    labels: dict[str, str] | None = None,
    taints: list[dict[str, str]] | None = None,
    unschedulable: bool = False,
    ready: bool = True,
    extra: dict[str, str] | None = None,
) -> Obj:
    """A Node object for `set_nodes`: capacity = allocatable = the given resources."""
    resources = {"cpu": cpu, "memory": memory, "pods": str(pods), "ephemeral-storage": ephemeral_storage}
    if gpus:
        resources[gpu_resource] = str(gpus)
    resources.update(extra or {})
    spec: Obj = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                **(labels or {}),
            },
        },
        "spec": spec,
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True" if ready else "False",
                    "reason": "KubeletReady" if ready else "KubeletNotReady",
                    "message": "kubelet is posting ready status" if ready else "container runtime is down",
                    "lastHeartbeatTime": now(),
                    "lastTransitionTime": now(),
                }
            ],
            "addresses": [{"type": "Hostname", "address": name}],
            "nodeInfo": {
                "architecture": "amd64",
                "bootID": "",
                "containerRuntimeVersion": "containerd://2.1.0",
                "kernelVersion": "6.8.0",
                "kubeProxyVersion": "",
                "kubeletVersion": "v1.37.0",
                "machineID": "",
                "operatingSystem": "linux",
                "osImage": "Fake Linux",
                "systemUUID": "",
            },
        },
    }


DEFAULT_NODES = (node("fake-node-1", cpu="64", memory="512Gi", gpus=8),)
