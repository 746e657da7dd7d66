"""The namespace controller: defaults in new namespaces, content deletion of Terminating ones."""

from __future__ import annotations

import contextlib
import time

from tests.fake_kube.controllers.base import (
    CONFIGMAP,
    CONTROLLER_MANAGER,
    NAMESPACE,
    SERVICE_ACCOUNT,
    ControllerBase,
    _condition,
    _set_condition,
)
from tests.fake_kube.errors import ApiError
from tests.fake_kube.resources import ResourceType
from tests.fake_kube.util import Obj, get_path

FAKE_CA = "-----BEGIN CERTIFICATE-----\nZmFrZS1rdWJlLWNh\n-----END CERTIFICATE-----\n"


class Namespaces(ControllerBase):
    # Namespaces ------------------------------------------------------------------------------

    def _reconcile_namespace_defaults(self, _namespace: str, name: str) -> None:
        ns = self.store.find(NAMESPACE, None, name)
        if ns is None or get_path(ns, "metadata", "deletionTimestamp"):
            return
        defaults: list[tuple[ResourceType, Obj]] = [
            (
                SERVICE_ACCOUNT,
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}},
            ),
            (
                CONFIGMAP,
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "kube-root-ca.crt"},
                    "data": {"ca.crt": FAKE_CA},
                },
            ),
        ]
        for item, body in defaults:
            if self.store.find(item, name, body["metadata"]["name"]) is None:
                with contextlib.suppress(ApiError):
                    self.store.create(item, name, body, manager=CONTROLLER_MANAGER)

    def _reconcile_namespace(self, _namespace: str, name: str) -> None:
        ns = self.store.find(NAMESPACE, None, name)
        if ns is None or not get_path(ns, "metadata", "deletionTimestamp"):
            self._ns_terminating.pop(name, None)
            return
        started = self._ns_terminating.setdefault(name, time.monotonic())
        waited = time.monotonic() - started
        if waited < self.namespace_deletion_delay:
            self.later(
                self.namespace_deletion_delay - waited + 0.001, lambda: self.enqueue("namespace", "", name)
            )
            return
        for item, obj in self.store.namespace_objects(name):
            if not get_path(obj, "metadata", "deletionTimestamp"):
                self.store.delete_object(item, obj)
        remaining = self.store.namespace_objects(name)
        if remaining:
            counts: dict[str, int] = {}
            finalizers: dict[str, int] = {}
            for item, obj in remaining:
                counts[item.qualified] = counts.get(item.qualified, 0) + 1
                for finalizer in get_path(obj, "metadata", "finalizers") or []:
                    finalizers[finalizer] = finalizers.get(finalizer, 0) + 1
            content = ", ".join(f"{k} has {v} resource instances" for k, v in sorted(counts.items()))

            def terminating(new: Obj) -> None:
                conditions = get_path(new, "status", "conditions") or []
                conditions = _set_condition(
                    conditions,
                    _condition(
                        "NamespaceContentRemaining",
                        "True",
                        "SomeResourcesRemain",
                        f"Some resources are remaining: {content}",
                    ),
                )
                if finalizers:
                    text = ", ".join(f"{k} in {v} resource instances" for k, v in sorted(finalizers.items()))
                    conditions = _set_condition(
                        conditions,
                        _condition(
                            "NamespaceFinalizersRemaining",
                            "True",
                            "SomeFinalizersRemain",
                            f"Some content in the namespace has finalizers remaining: {text}",
                        ),
                    )
                new["status"]["conditions"] = conditions

            self.store.internal_update(
                NAMESPACE, ns, terminating, manager=CONTROLLER_MANAGER, subresource="status"
            )
            self.later(0.05, lambda: self.enqueue("namespace", "", name))
            return

        def finalize(new: Obj) -> None:
            kept = [f for f in new["metadata"].get("finalizers") or [] if f != "foregroundDeletion"]
            if kept:
                new["metadata"]["finalizers"] = kept
            else:
                new["metadata"].pop("finalizers", None)
            spec = new.setdefault("spec", {})
            spec["finalizers"] = [f for f in spec.get("finalizers") or [] if f != "kubernetes"]
            if not spec["finalizers"]:
                spec.pop("finalizers")

        self.store.internal_update(
            NAMESPACE, ns, finalize, manager=CONTROLLER_MANAGER, subresource="finalize"
        )
