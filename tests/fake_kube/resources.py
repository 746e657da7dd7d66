"""The kinds the fake Kubernetes API server serves, and what discovery says about them.

One `ResourceType` per kind: its group, version, plural and singular names, whether it is
namespaced, its verbs and subresources, and how the server treats it (status subresource,
metadata.generation, read-only). Discovery documents (/api, /apis, /api/v1, /apis/{g}/{v}) are
built from this table.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

KUBERNETES_VERSION = "1.37.0"

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
READ_VERBS = ("get", "list", "watch")


@dataclass(frozen=True)
class ResourceType:
    group: str  # "" for the core group
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    has_status: bool = False  # a status subresource: the main resource ignores status writes
    generation: bool = False  # the server keeps metadata.generation (bumped on spec changes)
    read_only: bool = False  # only get, list and watch (Nodes: the test sets the inventory)
    create_only: bool = False  # nothing is stored: a POST answers the evaluated object (reviews)
    subresources: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def id(self) -> str:
        """The storage key of the kind: "apps/v1/deployments"."""
        return f"{self.api_version}/{self.plural}"

    @property
    def qualified(self) -> str:
        """The group-qualified resource, as error messages name it: "deployments.apps"."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def qualified_kind(self) -> str:
        """The group-qualified kind, as Invalid errors name it: "Deployment.apps"."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    @property
    def verbs(self) -> tuple[str, ...]:
        if self.create_only:
            return ("create",)
        return READ_VERBS if self.read_only else ALL_VERBS

    @property
    def all_subresources(self) -> tuple[tuple[str, tuple[str, ...]], ...]:
        status = (("status", ("get", "patch", "update")),) if self.has_status else ()
        return status + self.subresources

    def discovery(self) -> list[dict[str, Any]]:
        """The APIResource entries of this kind and its subresources."""
        entry: dict[str, Any] = {
            "name": self.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": list(self.verbs),
            "storageVersionHash": hashlib.sha256(self.id.encode()).hexdigest()[:11],
        }
        if self.short_names:
            entry["shortNames"] = list(self.short_names)
        if self.categories:
            entry["categories"] = list(self.categories)
        entries = [entry]
        for name, verbs in self.all_subresources:
            sub_kind = {"scale": "Scale"}.get(name, self.kind)
            sub: dict[str, Any] = {
                "name": f"{self.plural}/{name}",
                "singularName": "",
                "namespaced": self.namespaced,
                "kind": sub_kind,
                "verbs": list(verbs),
            }
            if name == "scale":
                sub["group"], sub["version"] = "autoscaling", "v1"
            entries.append(sub)
        return entries


def _core(kind: str, plural: str, namespaced: bool = True, **kwargs: Any) -> ResourceType:
    return ResourceType("", "v1", kind, plural, kind.lower(), namespaced, **kwargs)


def _apps(kind: str, plural: str, **kwargs: Any) -> ResourceType:
    return ResourceType("apps", "v1", kind, plural, kind.lower(), True, **kwargs)


RESOURCE_TYPES: tuple[ResourceType, ...] = (
    _core(
        "Namespace",
        "namespaces",
        namespaced=False,
        short_names=("ns",),
        has_status=True,
        subresources=(("finalize", ("update",)),),
    ),
    _core("Node", "nodes", namespaced=False, short_names=("no",), has_status=True, read_only=True),
    _core(
        "Pod",
        "pods",
        short_names=("po",),
        categories=("all",),
        has_status=True,
        generation=True,
        subresources=(("log", ("get",)),),
    ),
    _core("Service", "services", short_names=("svc",), categories=("all",), has_status=True),
    _core("ConfigMap", "configmaps", short_names=("cm",)),
    _core("Secret", "secrets"),
    _core("ServiceAccount", "serviceaccounts", short_names=("sa",)),
    _core("PersistentVolumeClaim", "persistentvolumeclaims", short_names=("pvc",), has_status=True),
    _core("PersistentVolume", "persistentvolumes", namespaced=False, short_names=("pv",), has_status=True),
    _core("ResourceQuota", "resourcequotas", short_names=("quota",), has_status=True),
    _core("LimitRange", "limitranges", short_names=("limits",)),
    _core("Event", "events", short_names=("ev",)),
    _apps(
        "Deployment",
        "deployments",
        short_names=("deploy",),
        categories=("all",),
        has_status=True,
        generation=True,
        subresources=(("scale", ("get", "patch", "update")),),
    ),
    _apps(
        "StatefulSet",
        "statefulsets",
        short_names=("sts",),
        categories=("all",),
        has_status=True,
        generation=True,
        subresources=(("scale", ("get", "patch", "update")),),
    ),
    _apps(
        "DaemonSet",
        "daemonsets",
        short_names=("ds",),
        categories=("all",),
        has_status=True,
        generation=True,
    ),
    _apps(
        "ReplicaSet",
        "replicasets",
        short_names=("rs",),
        categories=("all",),
        has_status=True,
        generation=True,
    ),
    ResourceType(
        "batch", "v1", "Job", "jobs", "job", True, categories=("all",), has_status=True, generation=True
    ),
    ResourceType(
        "batch",
        "v1",
        "CronJob",
        "cronjobs",
        "cronjob",
        True,
        short_names=("cj",),
        categories=("all",),
        has_status=True,
        generation=True,
    ),
    ResourceType(
        "storage.k8s.io", "v1", "StorageClass", "storageclasses", "storageclass", False, short_names=("sc",)
    ),
    ResourceType("rbac.authorization.k8s.io", "v1", "Role", "roles", "role", True),
    ResourceType("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", "rolebinding", True),
    ResourceType("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", "clusterrole", False),
    ResourceType(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
        "clusterrolebinding",
        False,
    ),
    ResourceType(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        "selfsubjectaccessreview",
        False,
        create_only=True,
    ),
    ResourceType(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectRulesReview",
        "selfsubjectrulesreviews",
        "selfsubjectrulesreview",
        False,
        create_only=True,
    ),
    ResourceType(
        "networking.k8s.io",
        "v1",
        "NetworkPolicy",
        "networkpolicies",
        "networkpolicy",
        True,
        short_names=("netpol",),
        generation=True,
    ),
    # Stored only (no eviction API): the installation's manifests (infra/kubernetes) carry them.
    ResourceType(
        "policy",
        "v1",
        "PodDisruptionBudget",
        "poddisruptionbudgets",
        "poddisruptionbudget",
        True,
        short_names=("pdb",),
        has_status=True,
        generation=True,
    ),
)

BY_ID: dict[str, ResourceType] = {rt.id: rt for rt in RESOURCE_TYPES}
BY_KIND: dict[tuple[str, str], ResourceType] = {(rt.api_version, rt.kind): rt for rt in RESOURCE_TYPES}


def by_path(group: str, version: str, plural: str) -> ResourceType | None:
    api_version = f"{group}/{version}" if group else version
    return BY_ID.get(f"{api_version}/{plural}")


def by_kind(api_version: str, kind: str) -> ResourceType | None:
    return BY_KIND.get((api_version, kind))


def resource_for(api_version: str, kind: str) -> ResourceType:
    found = by_kind(api_version, kind)
    if found is None:
        raise KeyError(f"the fake API server has no kind {kind} in {api_version}")
    return found


def groups() -> dict[str, list[str]]:
    """Named API groups and their versions (the core group is served under /api)."""
    found: dict[str, list[str]] = {}
    for item in RESOURCE_TYPES:
        if item.group and item.version not in found.setdefault(item.group, []):
            found[item.group].append(item.version)
    return found


def api_group(name: str) -> dict[str, Any]:
    versions = [{"groupVersion": f"{name}/{v}", "version": v} for v in groups()[name]]
    return {"name": name, "versions": versions, "preferredVersion": dict(versions[0])}


def api_group_list() -> dict[str, Any]:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [api_group(name) for name in groups()],
    }


def api_resource_list(group: str, version: str) -> dict[str, Any] | None:
    group_version = f"{group}/{version}" if group else version
    items = [item for item in RESOURCE_TYPES if item.api_version == group_version]
    if not items:
        return None
    return {
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": [entry for item in items for entry in item.discovery()],
    }


def version_info() -> dict[str, str]:
    major, minor, _ = KUBERNETES_VERSION.split(".")
    return {
        "major": major,
        "minor": minor,
        "emulationMajor": major,
        "emulationMinor": minor,
        "minCompatibilityMajor": major,
        "minCompatibilityMinor": str(int(minor) - 1),
        "gitVersion": f"v{KUBERNETES_VERSION}",
        "gitCommit": "0" * 40,
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.26.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }
