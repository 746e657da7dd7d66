"""Discovery and the requests the driver sends, as plain data."""

from __future__ import annotations

import copy
import json

import pytest

from gpupaas.provisioning.drivers.k8s_manifests.api import (
    ApiResource,
    apply_request,
    delete_request,
    list_request,
    parse_resource_list,
    preferred_group_versions,
    watch_request,
)
from tests.provisioning.drivers.k8s_manifests.kube_objects import obj

CORE = ApiResource("v1", "Pod", "pods", namespaced=True, verbs=frozenset({"get", "list"}))


NAMESPACES = ApiResource("v1", "Namespace", "namespaces", namespaced=False)


DEPLOYMENTS = ApiResource("apps/v1", "Deployment", "deployments", namespaced=True)


CLUSTER_ROLES = ApiResource("rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", namespaced=False)


# --------------------------------------------------------------------------------------- discovery


CORE_V1 = {
    "kind": "APIResourceList",
    "groupVersion": "v1",
    "resources": [
        {
            "name": "bindings",
            "singularName": "binding",
            "namespaced": True,
            "kind": "Binding",
            "verbs": ["create"],
        },
        {
            "name": "namespaces",
            "singularName": "namespace",
            "namespaced": False,
            "kind": "Namespace",
            "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"],
            "shortNames": ["ns"],
        },
        {
            "name": "namespaces/finalize",
            "singularName": "",
            "namespaced": False,
            "kind": "Namespace",
            "verbs": ["update"],
        },
        {
            "name": "pods",
            "singularName": "pod",
            "namespaced": True,
            "kind": "Pod",
            "verbs": ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
            "shortNames": ["po"],
            "categories": ["all"],
        },
        {"name": "pods/log", "singularName": "", "namespaced": True, "kind": "Pod", "verbs": ["get"]},
    ],
}


def test_discovery_maps_kinds_to_plurals_and_scope_without_subresources() -> None:
    resources = parse_resource_list(CORE_V1)

    assert [(r.kind, r.plural, r.namespaced) for r in resources] == [
        ("Binding", "bindings", True),
        ("Namespace", "namespaces", False),
        ("Pod", "pods", True),
    ]
    assert "watch" in resources[2].verbs
    assert resources[2].group == ""


def test_paths_follow_the_api_conventions() -> None:
    assert CORE.path("nb-0", "team-a-nb") == "/api/v1/namespaces/team-a-nb/pods/nb-0"
    assert CORE.path(None, "team-a-nb") == "/api/v1/namespaces/team-a-nb/pods"
    assert CORE.path() == "/api/v1/pods"
    assert NAMESPACES.path("team-a-nb", "ignored") == "/api/v1/namespaces/team-a-nb"
    assert DEPLOYMENTS.path("web", "ns") == "/apis/apps/v1/namespaces/ns/deployments/web"
    assert (
        CLUSTER_ROLES.path("system:aggregate-to-edit")
        == "/apis/rbac.authorization.k8s.io/v1/clusterroles/system%3Aaggregate-to-edit"
    )


def test_the_preferred_version_of_each_group_is_used() -> None:
    groups = {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [
            {
                "name": "apps",
                "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
                "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"},
            },
            {
                "name": "autoscaling",
                "versions": [
                    {"groupVersion": "autoscaling/v2", "version": "v2"},
                    {"groupVersion": "autoscaling/v1", "version": "v1"},
                ],
                "preferredVersion": {"groupVersion": "autoscaling/v2", "version": "v2"},
            },
            {
                "name": "legacy",
                "versions": [{"groupVersion": "legacy.example.com/v1beta1", "version": "v1beta1"}],
            },
        ],
    }

    assert preferred_group_versions(groups) == ["apps/v1", "autoscaling/v2", "legacy.example.com/v1beta1"]


# ---------------------------------------------------------------------------------------- requests


def test_an_apply_is_a_server_side_apply_patch_owned_by_the_field_manager() -> None:
    manifest = obj(
        "Deployment",
        "web",
        "apps/v1",
        spec={"replicas": 1},
        status={"replicas": 1},
    )
    manifest["metadata"].update(
        namespace="team-a-nb", resourceVersion="99", uid="u-1", managedFields=[{"manager": "kubectl"}]
    )
    original = copy.deepcopy(manifest)

    request = apply_request(manifest, DEPLOYMENTS, field_manager="gpupaas")

    assert request.method == "PATCH"
    assert request.path == "/apis/apps/v1/namespaces/team-a-nb/deployments/web"
    assert request.query == (("fieldManager", "gpupaas"), ("force", "true"))
    assert request.content_type == "application/apply-patch+yaml"
    assert request.body == {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "team-a-nb"},
        "spec": {"replicas": 1},
    }
    assert manifest == original
    json.dumps(request.body)  # it travels as JSON, which is YAML


def test_a_cluster_scoped_apply_has_no_namespace_in_its_path_and_force_can_be_off() -> None:
    request = apply_request(obj("Namespace", "team-a-nb"), NAMESPACES, field_manager="me", force=False)

    assert request.path == "/api/v1/namespaces/team-a-nb"
    assert request.query == (("fieldManager", "me"),)


def test_a_namespaced_apply_without_a_namespace_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match=r"needs metadata\.namespace"):
        apply_request(obj("Pod", "nb-0"), CORE, field_manager="gpupaas")


def test_delete_list_and_watch_requests() -> None:
    delete = delete_request(DEPLOYMENTS, "web", "ns")
    listing = list_request(CORE, label_selector="gpupaas.io/instance=abc", limit=500, continue_token="t")
    watch = watch_request(CORE, label_selector="app.kubernetes.io/managed-by=gpupaas", resource_version="42")

    assert (delete.method, delete.path, delete.content_type) == (
        "DELETE",
        "/apis/apps/v1/namespaces/ns/deployments/web",
        "application/json",
    )
    assert delete.body == {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Foreground"}
    assert listing.path == "/api/v1/pods"
    assert listing.query == (
        ("labelSelector", "gpupaas.io/instance=abc"),
        ("limit", "500"),
        ("continue", "t"),
    )
    assert dict(watch.query) == {
        "watch": "true",
        "allowWatchBookmarks": "true",
        "labelSelector": "app.kubernetes.io/managed-by=gpupaas",
        "resourceVersion": "42",
        "timeoutSeconds": "300",
    }
