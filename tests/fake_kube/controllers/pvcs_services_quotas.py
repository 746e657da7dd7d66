"""LoadBalancer ingress IPs and ResourceQuota status (claims bind in volumes.py)."""

from __future__ import annotations

from tests.fake_kube import admission
from tests.fake_kube.controllers.base import (
    CONTROLLER_MANAGER,
    QUOTA,
    SERVICE,
    ControllerBase,
)
from tests.fake_kube.util import Obj, get_path


class PvcServiceQuotaControllers(ControllerBase):
    # Services, quotas ------------------------------------------------------------------

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
