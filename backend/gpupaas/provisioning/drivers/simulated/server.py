"""What the simulated API server does to the objects of an apply: the fields it fills in, and which
objects and images an apply holds.

What it keeps is what a real API server keeps, and no more: the object as applied with these
fields, never the manifest it was applied from. A Secret's `stringData` (a write-only field) is
merged into its `data`, base64, as the API server does before it stores a Secret; nothing of a
Secret is kept in plain text (neither is a pod's command: GPU service instances read their tokens
from a Secret, service_instances/podspec.py).

Fields it fills in: metadata.uid, creationTimestamp (kept across applies), resourceVersion (a
cluster-wide counter, bumped only when an object changes: it is compared with the object kept) and
generation; a Namespace gets the
label kubernetes.io/metadata.name, spec.finalizers and status.phase=Active; a ResourceQuota gets
status.hard and status.used; a Service gets spec.type, a spec.clusterIP in 10.96.0.0/12 (from a
hash, not checked for uniqueness), each port's protocol and targetPort and, for type NodePort or
LoadBalancer, a spec.ports[*].nodePort in 30000-32767 chosen from a hash of the instance id and
unique across the cluster (so `{{ objects.Service.spec.ports.0.nodePort }}` works in outputs); a
LoadBalancer gets an ingress IP in 198.51.100.0/24; Deployments and StatefulSets report all
replicas ready, Pods Running and PersistentVolumeClaims Bound.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import ipaddress
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from gpupaas.provisioning.plan import PermanentError

__all__ = ["NODE_PORT_MAX", "NODE_PORT_MIN", "Server", "distinct", "images_of", "object_key", "replicas_of"]


NODE_PORT_MIN, NODE_PORT_MAX = 30000, 32767
_SERVICE_NETWORK = ipaddress.IPv4Network("10.96.0.0/12")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _hash(seed: str) -> int:
    return int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big")


# ----------------------------------------------------------------------------------------- objects


def object_key(obj: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """Identifies an object as the API server does: group, kind, namespace, name."""
    metadata = obj.get("metadata") or {}
    group = str(obj.get("apiVersion", "")).rpartition("/")[0]
    return (group, str(obj.get("kind", "")), str(metadata.get("namespace") or ""), str(metadata.get("name")))


def replicas_of(manifests: Iterable[Mapping[str, Any]]) -> int:
    """The pods the manifests' controllers ask for (0: every Deployment is scaled to zero)."""
    total = 0
    for manifest in manifests:
        if manifest.get("kind") in ("Deployment", "StatefulSet", "ReplicaSet"):
            spec = manifest.get("spec")
            replicas = spec.get("replicas", 1) if isinstance(spec, dict) else 1
            total += replicas if isinstance(replicas, int) else 1
        elif manifest.get("kind") == "Pod":
            total += 1
    return total


def images_of(manifests: Iterable[Mapping[str, Any]]) -> list[str]:
    """The container images of the manifests' pod templates, each once, in order."""
    images: list[str] = []
    for manifest in manifests:
        template = ((manifest.get("spec") or {}).get("template") or {}).get("spec") or {}
        for container in template.get("containers") or []:
            image = container.get("image") if isinstance(container, dict) else None
            if isinstance(image, str) and image not in images:
                images.append(image)
    return images


def distinct(manifests: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The manifests, an object named twice applied once (where it first appears, as it last reads)."""
    objects: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for manifest in manifests:
        objects[object_key(manifest)] = copy.deepcopy(dict(manifest))
    return list(objects.values())


# ---------------------------------------------------------------------------------------- the server


@dataclass
class Server:
    """Fills the fields the API server would, for one apply of one instance."""

    instance_id: str
    resource_version: int
    taken_ports: set[int]  # node ports other instances hold
    ports: list[int] = field(default_factory=list)  # node ports of this instance

    def next_version(self) -> str:
        self.resource_version += 1
        return str(self.resource_version)

    def node_port(self, seed: str, wanted: object, previous: object, where: str) -> int:
        held = self.taken_ports | set(self.ports)
        if wanted is not None:
            if not isinstance(wanted, int) or not NODE_PORT_MIN <= wanted <= NODE_PORT_MAX:
                raise PermanentError(
                    f"{where}: {wanted} is not in the node port range {NODE_PORT_MIN}-{NODE_PORT_MAX}"
                )
            if wanted in held:
                raise PermanentError(f"{where}: {wanted} is already allocated")
            self.ports.append(wanted)
            return wanted
        if isinstance(previous, int) and previous not in held:
            self.ports.append(previous)
            return previous
        size = NODE_PORT_MAX - NODE_PORT_MIN + 1
        start = _hash(f"{self.instance_id}/{seed}") % size
        for step in range(size):
            port = NODE_PORT_MIN + (start + step) % size
            if port not in held:
                self.ports.append(port)
                return port
        raise PermanentError(f"{where}: no node port is free in {NODE_PORT_MIN}-{NODE_PORT_MAX}")

    def fill(self, obj: dict[str, Any], previous: Mapping[str, Any] | None) -> None:
        """Makes the applied manifest `obj` the object the server keeps, given the one it kept
        before under the same name (`previous`)."""
        metadata = obj.setdefault("metadata", {})
        old_metadata = (previous or {}).get("metadata") or {}
        metadata["uid"] = old_metadata.get("uid") or str(uuid.uuid4())
        metadata["creationTimestamp"] = old_metadata.get("creationTimestamp") or _now()
        kind = obj.get("kind")
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else None
        if kind == "Namespace":
            metadata["labels"] = {
                **(metadata.get("labels") or {}),
                "kubernetes.io/metadata.name": metadata["name"],
            }
            obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        elif kind == "Secret":
            _store_string_data(obj)
        elif kind == "Service":
            self._service(obj, previous)
        if previous is None or _kept(obj) != _kept(previous) or "resourceVersion" not in old_metadata:
            metadata["resourceVersion"] = self.next_version()
            metadata["generation"] = int(old_metadata.get("generation") or 0) + 1
        else:
            metadata["resourceVersion"] = old_metadata["resourceVersion"]
            metadata["generation"] = old_metadata.get("generation", 1)
        if kind == "Namespace":
            obj["status"] = {"phase": "Active"}
        elif kind == "ResourceQuota" and spec is not None:
            hard = dict(spec.get("hard") or {})
            obj["status"] = {"hard": hard, "used": dict.fromkeys(hard, "0")}
        elif kind in ("Deployment", "StatefulSet", "ReplicaSet"):
            replicas = (spec or {}).get("replicas", 1)
            obj["status"] = {
                "observedGeneration": metadata["generation"],
                "replicas": replicas,
                "readyReplicas": replicas,
                "availableReplicas": replicas,
                "updatedReplicas": replicas,
            }
        elif kind == "Pod":
            obj["status"] = {"phase": "Running"}
        elif kind == "PersistentVolumeClaim":
            obj["status"] = {"phase": "Bound"}

    def _service(self, obj: dict[str, Any], previous: Mapping[str, Any] | None) -> None:
        spec = obj.setdefault("spec", {})
        if not isinstance(spec, dict):
            return
        name = str(obj["metadata"].get("name"))
        kind = spec.setdefault("type", "ClusterIP")
        if kind != "ExternalName" and "clusterIP" not in spec:
            offset = _hash(f"{self.instance_id}/{name}") % (_SERVICE_NETWORK.num_addresses - 2) + 1
            spec["clusterIP"] = str(_SERVICE_NETWORK.network_address + offset)
        if "clusterIP" in spec:
            spec.setdefault("clusterIPs", [spec["clusterIP"]])
        old_spec = (previous or {}).get("spec") or {}
        old_ports = {
            (port.get("name"), port.get("port")): port.get("nodePort")
            for port in old_spec.get("ports") or []
            if isinstance(port, dict)
        }
        for index, port in enumerate(spec.get("ports") or []):
            if not isinstance(port, dict):
                continue
            port.setdefault("protocol", "TCP")
            port.setdefault("targetPort", port.get("port"))
            if kind in ("NodePort", "LoadBalancer"):
                port["nodePort"] = self.node_port(
                    f"{name}/{index}",
                    port.get("nodePort"),
                    old_ports.get((port.get("name"), port.get("port"))),
                    f"Service {name}: spec.ports[{index}].nodePort",
                )
        if kind == "LoadBalancer":
            ip = f"198.51.100.{_hash(f'{self.instance_id}/{name}/lb') % 254 + 1}"
            obj["status"] = {"loadBalancer": {"ingress": [{"ip": ip}]}}


def _store_string_data(secret: dict[str, Any]) -> None:
    """`stringData` merged into `data` (base64), over the keys `data` has: what the API server
    stores of a Secret (its `stringData` is write-only, never kept nor read back)."""
    given = secret.pop("stringData", None)
    if not isinstance(given, dict) or not given:
        return
    data = secret.get("data")
    secret["data"] = {
        **(data if isinstance(data, dict) else {}),
        **{str(key): base64.b64encode(str(value).encode()).decode() for key, value in given.items()},
    }


def _kept(obj: Mapping[str, Any]) -> Any:
    """An object as far as a change of it goes: without its version fields and status (which the
    server writes, and which follow from the rest)."""
    metadata = {
        k: v for k, v in (obj.get("metadata") or {}).items() if k not in ("resourceVersion", "generation")
    }
    return {**{k: v for k, v in obj.items() if k != "status"}, "metadata": metadata}
