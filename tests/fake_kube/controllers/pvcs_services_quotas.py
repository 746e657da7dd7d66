"""PVC binding, LoadBalancer ingress IPs and ResourceQuota status."""

from __future__ import annotations

from tests.fake_kube import admission
from tests.fake_kube.controllers.base import (
    CONTROLLER_MANAGER,
    PVC,
    QUOTA,
    SERVICE,
    ControllerBase,
)
from tests.fake_kube.util import Obj, get_path


class PvcServiceQuotaControllers(ControllerBase):
    # PVCs, Services, quotas ------------------------------------------------------------------

    def _reconcile_pvc(self, namespace: str, name: str) -> None:
        if self.pvc_delay is None:
            return
        self.later(self.pvc_delay, lambda: self._bind_pvc(namespace, name))

    def _bind_pvc(self, namespace: str, name: str) -> None:
        pvc = self.store.find(PVC, namespace, name)
        if pvc is None or get_path(pvc, "status", "phase") == "Bound":
            return

        def bind(new: Obj) -> None:
            new["spec"]["volumeName"] = f"pvc-{new['metadata']['uid']}"
            annotations = new["metadata"].setdefault("annotations", {})
            annotations["pv.kubernetes.io/bind-completed"] = "yes"
            annotations["pv.kubernetes.io/bound-by-controller"] = "yes"

        bound = self.store.internal_update(PVC, pvc, bind, manager=CONTROLLER_MANAGER)
        if bound is None:
            return

        def status(new: Obj) -> None:
            spec = new.get("spec") or {}
            new["status"] = {
                "phase": "Bound",
                "accessModes": list(spec.get("accessModes") or []),
                "capacity": {"storage": get_path(spec, "resources", "requests", "storage", default="0")},
            }

        self.store.internal_update(PVC, bound, status, manager=CONTROLLER_MANAGER, subresource="status")

    def bind_pending_pvcs(self) -> None:
        for pvc in self.store.items(PVC):
            if get_path(pvc, "status", "phase") != "Bound":
                self._bind_pvc(pvc["metadata"]["namespace"], pvc["metadata"]["name"])

    def _reconcile_loadbalancer(self, namespace: str, name: str) -> None:
        service = self.store.find(SERVICE, namespace, name)
        if service is None or get_path(service, "status", "loadBalancer", "ingress"):
            return
        self._ip += 1
        address = f"203.0.113.{self._ip % 250 + 2}"

        def ingress(new: Obj) -> None:
            new["status"] = {"loadBalancer": {"ingress": [{"ip": address, "ipMode": "VIP"}]}}

        self.store.internal_update(
            SERVICE, service, ingress, manager=CONTROLLER_MANAGER, subresource="status"
        )

    def _reconcile_quota(self, namespace: str, _name: str) -> None:
        used = self.store.namespace_usage(namespace)
        for quota in self.store.items(QUOTA, namespace):
            wanted = admission.quota_status(quota, used)

            def status(new: Obj, wanted: Obj = wanted) -> None:
                new["status"] = wanted

            self.store.internal_update(QUOTA, quota, status, manager=CONTROLLER_MANAGER, subresource="status")
