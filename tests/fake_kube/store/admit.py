"""What every write goes through before it is stored: the type and namespace of the body,
NamespaceLifecycle, defaulting and mutating admission (LimitRanger, QoS class, Service cluster
IPs and node ports), ResourceQuota and validation."""

from __future__ import annotations

import functools
from collections.abc import Callable
from decimal import Decimal

from tests.fake_kube import admission, errors, quantities, registry_storage, validation
from tests.fake_kube.errors import ApiError
from tests.fake_kube.resources import ResourceType, resource_for
from tests.fake_kube.schema import Cause, kind_schema
from tests.fake_kube.store.state import StoreState
from tests.fake_kube.util import Obj, get_path


class Admitting(StoreState):
    """The checks and admission plugins every write goes through."""

    # Admission -------------------------------------------------------------------------------

    def _check_type(self, rt: ResourceType, body: Obj) -> None:
        api_version, kind = body.get("apiVersion"), body.get("kind")
        if api_version is not None and api_version != rt.api_version:
            raise errors.bad_request(
                f"the API version in the data ({api_version}) does not match the expected API version ({rt.api_version})"
            )
        if kind is not None and kind != rt.kind:
            raise errors.bad_request(
                f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})"
            )
        body["apiVersion"], body["kind"] = rt.api_version, rt.kind

    def _check_namespace(self, rt: ResourceType, namespace: str | None, body: Obj) -> None:
        metadata = body.setdefault("metadata", {})
        if not rt.namespaced:
            metadata.pop("namespace", None)
            return
        given = metadata.get("namespace")
        if given and given != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        metadata["namespace"] = namespace

    def _admit_namespace(self, rt: ResourceType, namespace: str | None, name: str) -> None:
        """NamespaceLifecycle: no new objects in a missing or Terminating namespace."""
        if not rt.namespaced or namespace is None:
            return
        ns_rt = resource_for("v1", "Namespace")
        ns = self.find(ns_rt, None, namespace)
        if ns is None:
            raise errors.not_found(ns_rt, namespace)
        if get_path(ns, "metadata", "deletionTimestamp"):
            why = f"unable to create new content in namespace {namespace} because it is being terminated"
            raise errors.forbidden(
                rt,
                name,
                why,
                [{"reason": "NamespaceTerminating", "message": why, "field": "metadata.namespace"}],
            )

    def _mutate(self, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        """Decoding (quantities in canonical form), defaulting and mutating admission (in place)."""
        quantities.canonicalize(obj, kind_schema(rt.api_version, rt.kind))
        admission.apply_defaults(rt.kind, obj)
        spec = obj.get("spec")
        if (
            rt.kind == "PersistentVolumeClaim"
            and old is None
            and isinstance(spec, dict)
            and "storageClassName" not in spec
        ):
            # DefaultStorageClass admission.
            classes = self.items(resource_for("storage.k8s.io/v1", "StorageClass"))
            default = registry_storage.default_class_name(classes)
            if default is not None:
                spec["storageClassName"] = default
        namespace = get_path(obj, "metadata", "namespace")
        if rt.kind == "Pod" and old is None:
            limit_ranges = self.items(resource_for("v1", "LimitRange"), namespace)
            self._admission(rt, obj, lambda: admission.limit_ranger(obj, limit_ranges))
        if rt.kind == "Service":
            self._allocate_service(obj, old)
        if rt.kind == "Pod" and isinstance(obj.get("status"), dict) and old is None:
            obj["status"]["qosClass"] = admission.qos_class(obj.get("spec") or {})

    def _admission(self, rt: ResourceType, obj: Obj, check: Callable[[], None]) -> None:
        try:
            check()
        except admission.AdmissionDenied as denied:
            metadata = obj.get("metadata") or {}
            name = metadata.get("name") or metadata.get("generateName") or ""
            raise errors.forbidden(rt, name, str(denied)) from denied

    def _admit_quota(self, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        namespace = get_path(obj, "metadata", "namespace")
        if not rt.namespaced or namespace is None:
            return
        quotas = self.items(resource_for("v1", "ResourceQuota"), namespace)
        if not quotas:
            return
        new_usage = admission.usage(rt.kind, rt.plural, rt.group, obj)
        old_usage = admission.usage(rt.kind, rt.plural, rt.group, old) if old is not None else {}
        delta = {k: v - old_usage.get(k, Decimal(0)) for k, v in new_usage.items()}
        if not any(v > 0 for v in delta.values()):
            return
        used = self.namespace_usage(namespace)
        pod_spec = obj.get("spec") if rt.kind == "Pod" and old is None else None
        for quota in quotas:
            check = functools.partial(admission.check_quota, quota, rt.kind, "", delta, used, pod_spec)
            self._admission(rt, obj, check)

    def namespace_usage(self, namespace: str) -> dict[str, Decimal]:
        used: dict[str, Decimal] = {}
        for item, obj in self.namespace_objects(namespace):
            if get_path(obj, "metadata", "deletionTimestamp") and item.kind != "Pod":
                continue
            for key, value in admission.usage(item.kind, item.plural, item.group, obj).items():
                used[key] = used.get(key, Decimal(0)) + value
        return used

    def _allocate_service(self, obj: Obj, old: Obj | None) -> None:
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        old_spec = (old or {}).get("spec") or {}
        if spec.get("type") != "ExternalName":
            if not spec.get("clusterIP"):
                spec["clusterIP"] = old_spec.get("clusterIP") or self._new_cluster_ip()
            spec.setdefault("clusterIPs", [spec["clusterIP"]])
        old_ports = {
            (p.get("port"), p.get("protocol", "TCP")): p.get("nodePort") for p in old_spec.get("ports") or []
        }
        mine = {p for p in old_ports.values() if p}
        for port in spec.get("ports") or []:
            if spec.get("type") not in ("NodePort", "LoadBalancer"):
                continue
            wanted = port.get("nodePort")
            if wanted:
                if wanted in self.node_ports and wanted not in mine:
                    raise errors.invalid(
                        resource_for("v1", "Service"),
                        get_path(obj, "metadata", "name") or "",
                        [
                            Cause(
                                "FieldValueInvalid",
                                f"Invalid value: {wanted}: provided port is already allocated",
                                "spec.ports[].nodePort",
                            )
                        ],
                    )
                continue
            previous = old_ports.get((port.get("port"), port.get("protocol", "TCP")))
            port["nodePort"] = previous or self._free_node_port()

    def _new_cluster_ip(self) -> str:
        self._next_ip += 1
        return f"10.96.{self._next_ip // 250}.{self._next_ip % 250 + 1}"

    def _free_node_port(self) -> int:
        for port in range(30000, 32768):
            if port not in self.node_ports:
                self.node_ports.add(port)
                return port
        raise ApiError(500, "range is full: no free node port in 30000-32767")

    def _release_service(self, obj: Obj) -> None:
        for port in get_path(obj, "spec", "ports") or []:
            self.node_ports.discard(port.get("nodePort"))

    def _claim_node_ports(self, obj: Obj) -> None:
        for port in get_path(obj, "spec", "ports") or []:
            if port.get("nodePort"):
                self.node_ports.add(port["nodePort"])

    def _validate(self, rt: ResourceType, obj: Obj, old: Obj | None) -> None:
        causes = validation.validate(rt, obj, old)
        if causes:
            raise errors.invalid(rt, get_path(obj, "metadata", "name") or "", causes)
