"""The ClusterRole aggregation controller: a ClusterRole with an aggregationRule gets, as its
rules, the rules of every other ClusterRole that one of its clusterRoleSelectors matches (in the
order of their names, each rule once), and keeps them up to date as those change."""

from __future__ import annotations

from tests.fake_kube import selectors
from tests.fake_kube.controllers.base import ControllerBase
from tests.fake_kube.resources import ResourceType, resource_for
from tests.fake_kube.store import Store
from tests.fake_kube.util import Obj, get_path

CLUSTER_ROLE = resource_for("rbac.authorization.k8s.io/v1", "ClusterRole")
AGGREGATION_CONTROLLER = "clusterrole-aggregation-controller"


def _selected(selector: Obj, labels: dict[str, str] | None) -> bool:
    try:
        requirements = selectors.from_label_selector(selector)
    except selectors.SelectorError:
        return False
    return requirements is not None and selectors.matches(requirements, labels)


class ClusterRoleAggregation(ControllerBase):
    """Fills the rules of aggregated ClusterRoles (see the module's docstring)."""

    def __init__(self, store: Store) -> None:
        super().__init__(store)
        store.listeners.append(self._cluster_roles_changed)

    def _cluster_roles_changed(self, rt: ResourceType, kind: str, obj: Obj, old: Obj | None) -> None:
        if rt is CLUSTER_ROLE:
            self.enqueue("cluster_role_aggregation")

    def _reconcile_cluster_role_aggregation(self, _namespace: str, _name: str) -> None:
        roles = self.store.items(CLUSTER_ROLE)
        for role in roles:
            selectors_ = get_path(role, "aggregationRule", "clusterRoleSelectors") or []
            if not selectors_:
                continue
            rules: list[Obj] = []
            for other in sorted(roles, key=lambda r: str(r["metadata"]["name"])):
                if other is role:
                    continue
                labels = get_path(other, "metadata", "labels")
                if any(_selected(selector, labels) for selector in selectors_):
                    rules.extend(rule for rule in other.get("rules") or [] if rule not in rules)
            if (role.get("rules") or []) != rules:

                def aggregate(new: Obj, rules: list[Obj] = rules) -> None:
                    new["rules"] = rules

                self.store.internal_update(CLUSTER_ROLE, role, aggregate, manager=AGGREGATION_CONTROLLER)
