"""What the kubernetes driver itself must be allowed to do on a cluster, and how to ask the API
server whether a kubeconfig's user may (SelfSubjectAccessReview, which every authenticated user may
create): so that the cluster check names every missing permission at once, before a deploy or the
drift watch runs into one of them.

These are the driver's own requests, cluster-wide, because every instance gets a namespace of its
own: its namespaces, the nodes (the check), pods (readiness and the drift watch, in every
namespace), ReplicaSets (a Deployment's current pods), storage classes (claims that bind on first
use), and the GPU services' claim, Deployment and Service. What templates create beyond these is
for infra/rbac/gpupaas-worker.yaml to grant; a template's object the user may not write fails its
run with the API server's 403.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DRIVER_PERMISSIONS",
    "SELF_SUBJECT_ACCESS_REVIEWS",
    "Permission",
    "access_review",
    "allowed",
    "missing_text",
]

SELF_SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


@dataclass(frozen=True)
class Permission:
    """A verb on a resource of an API group ("" is the core group), in every namespace."""

    verb: str
    group: str
    resource: str
    why: str

    def describe(self) -> str:
        return f"{self.verb} {self.resource}" + (f".{self.group}" if self.group else "")


def _writes(group: str, resource: str, why: str) -> tuple[Permission, ...]:
    return tuple(Permission(verb, group, resource, why) for verb in ("get", "create", "patch", "delete"))


DRIVER_PERMISSIONS: tuple[Permission, ...] = (
    Permission("list", "", "nodes", "the cluster check"),
    *_writes("", "namespaces", "each instance's namespace"),
    Permission("list", "", "pods", "readiness and the drift watch"),
    Permission("watch", "", "pods", "the drift watch"),
    Permission("list", "apps", "replicasets", "the readiness of Deployments"),
    Permission("get", "storage.k8s.io", "storageclasses", "claims that bind on first use"),
    *_writes("", "persistentvolumeclaims", "GPU services' workspaces"),
    Permission("list", "", "persistentvolumeclaims", "a compute instance's volume claims"),
    Permission("list", "", "resourcequotas", "a compute instance's quota usage"),
    *_writes("apps", "deployments", "GPU services"),
    *_writes("", "services", "GPU services' ports"),
)


def access_review(permission: Permission) -> dict[str, Any]:
    """The body of a SelfSubjectAccessReview of the permission in every namespace."""
    return {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {
            "resourceAttributes": {
                "verb": permission.verb,
                "group": permission.group,
                "resource": permission.resource,
            }
        },
    }


def allowed(answer: Mapping[str, Any]) -> bool:
    status = answer.get("status")
    return isinstance(status, Mapping) and status.get("allowed") is True


def missing_text(missing: Sequence[Permission]) -> str:
    """What a check says when the user lacks some of the driver's permissions."""
    by_why: dict[str, list[str]] = {}
    for permission in missing:
        by_why.setdefault(permission.why, []).append(permission.describe())
    parts = [f"{', '.join(verbs)} ({why})" for why, verbs in by_why.items()]
    return (
        "the kubeconfig's user may not " + "; ".join(parts) + " in every namespace; grant them (RBAC), as "
        "infra/rbac/gpupaas-worker.yaml does"
    )
