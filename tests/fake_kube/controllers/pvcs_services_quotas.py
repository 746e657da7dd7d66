"""LoadBalancer ingress IPs and ResourceQuota status (claims bind in volumes.py).

A Service of type LoadBalancer gets its ingress IP `loadbalancer_delay` seconds after it is
created (a cloud load balancer being provisioned); None: not until the delay is set again (a
cluster without a load-balancer implementation leaves them without an address for ever)."""

from __future__ import annotations

from tests.fake_kube import admission
from tests.fake_kube.controllers.base import (
    CONTROLLER_MANAGER,
    QUOTA,
    SERVICE,
    ControllerBase,
)
from tests.fake_kube.store import Store
from tests.fake_kube.util import Obj, get_path


class PvcServiceQuotaControllers(ControllerBase):
    def __init__(self, store: Store) -> None:
        super().__init__(store)
        self.loadbalancer_delay: float | None = 0.0

    # Services, quotas ------------------------------------------------------------------

    def _reconcile_loadbalancer(self, namespace: str, name: str) -> None:
        if self.loadbalancer_delay is None:
            return
        if self.loadbalancer_delay > 0:
            self.later(self.loadbalancer_delay, lambda: self._provision_loadbalancer(namespace, name))
        else:
            self._provision_loadbalancer(namespace, name)

    def set_loadbalancer_delay(self, seconds: float | None) -> None:
        """Sets `loadbalancer_delay`; the LoadBalancer Services still without an address get one
        that much later."""
        self.loadbalancer_delay = seconds
        for service in self.store.items(SERVICE):
            if get_path(service, "spec", "type") == "LoadBalancer":
                self.enqueue("loadbalancer", service["metadata"]["namespace"], service["metadata"]["name"])

    def _provision_loadbalancer(self, namespace: str, name: str) -> None:
        service = self.store.find(SERVICE, namespace, name)
        if (
            service is None
            or get_path(service, "spec", "type") != "LoadBalancer"
            or get_path(service, "status", "loadBalancer", "ingress")
        ):
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
