"""The pure functions behind the kubernetes driver: order, requests, readiness, failures, errors,
nodes. The objects are shaped as the Kubernetes API serves them (see the API reference)."""

from __future__ import annotations

import copy
import json
import uuid
from typing import Any

import pytest

from gpupaas.provisioning.builtins import builtin_template
from gpupaas.provisioning.drivers import k8s_manifests as km
from gpupaas.provisioning.drivers.base import ClusterInfo, NodeInfo, Observed, Owner, Phase
from gpupaas.provisioning.plan import INSTANCE_LABEL, MANAGED_BY, PermanentError, TemporaryError, build_plan

INSTANCE = "6f1d2c3b-0000-4000-8000-000000000001"
LABELS = {MANAGED_BY: "gpupaas", INSTANCE_LABEL: INSTANCE}

CORE = km.ApiResource("v1", "Pod", "pods", namespaced=True, verbs=frozenset({"get", "list"}))
NAMESPACES = km.ApiResource("v1", "Namespace", "namespaces", namespaced=False)
DEPLOYMENTS = km.ApiResource("apps/v1", "Deployment", "deployments", namespaced=True)
CLUSTER_ROLES = km.ApiResource(
    "rbac.authorization.k8s.io/v1", "ClusterRole", "clusterroles", namespaced=False
)


def obj(kind: str, name: str, api_version: str = "v1", **fields: Any) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name}, **fields}


def pod(
    name: str = "nb-0",
    *,
    phase: str = "Running",
    ready: bool = True,
    containers: list[dict[str, Any]] | None = None,
    init_containers: list[dict[str, Any]] | None = None,
    conditions: list[dict[str, Any]] | None = None,
    owner: str | None = None,
    reason: str | None = None,
    message: str | None = None,
) -> dict[str, Any]:
    """A pod as GET /api/v1/namespaces/<ns>/pods/<name> serves it."""
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": "team-a-nb",
        "uid": str(uuid.uuid4()),
        "resourceVersion": "1234",
        "labels": dict(LABELS),
    }
    if owner:
        metadata["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": owner, "name": "web-5d4f", "uid": "u", "controller": True}
        ]
    if conditions is None:
        conditions = [
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
            {"type": "Initialized", "status": "True"},
            {"type": "ContainersReady", "status": "True" if ready else "False"},
            {"type": "Ready", "status": "True" if ready else "False"},
        ]
    status: dict[str, Any] = {"phase": phase, "conditions": conditions}
    if containers is None:
        containers = [
            {
                "name": "main",
                "image": "jupyter/base-notebook:latest",
                "ready": ready,
                "restartCount": 0,
                "state": {"running": {"startedAt": "2026-01-01T00:00:05Z"}},
            }
        ]
    status["containerStatuses"] = containers
    if init_containers is not None:
        status["initContainerStatuses"] = init_containers
    if reason:
        status["reason"] = reason
    if message:
        status["message"] = message
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": {"containers": [{"name": "main", "image": "jupyter/base-notebook:latest"}]},
        "status": status,
    }


def waiting(reason: str, message: str | None = None, last: dict[str, Any] | None = None) -> dict[str, Any]:
    state: dict[str, Any] = {"reason": reason}
    if message:
        state["message"] = message
    return {
        "name": "main",
        "ready": False,
        "restartCount": 3 if last else 0,
        "state": {"waiting": state},
        "lastState": {"terminated": last} if last else {},
    }


def plan_manifests() -> list[dict[str, Any]]:
    builtin = builtin_template("gpu-namespace")
    assert builtin is not None
    plan = build_plan(
        instance_id=INSTANCE,
        instance_name="nb",
        project="team-a",
        profile_name="h100",
        allocation="SHARED",
        resources={
            "cpu": "8",
            "memory": "64Gi",
            "storage": "100Gi",
            "gpuCount": 4,
            "gpuVendor": "NVIDIA",
            "gpuModel": "H100",
        },
        template_resources=builtin.resources,
        input_definitions=builtin.inputs,
        input_values={d.name: d.default for d in builtin.inputs if d.default is not None},
        outputs=builtin.outputs,
        labels={"team": "ml"},
        annotations={},
    )
    return list(plan.manifests)


# ------------------------------------------------------------------------------------------- order


def test_objects_are_applied_dependencies_first_keeping_the_template_order_within_a_kind() -> None:
    stream = [
        obj("Service", "web"),
        obj("Deployment", "web", "apps/v1"),
        obj("Certificate", "tls", "cert-manager.io/v1"),
        obj("ConfigMap", "settings"),
        obj("RoleBinding", "edit", "rbac.authorization.k8s.io/v1"),
        obj("Namespace", "team-a-nb"),
        obj("Role", "edit", "rbac.authorization.k8s.io/v1"),
        obj("Job", "warmup", "batch/v1"),
        obj("LimitRange", "defaults"),
        obj("PersistentVolumeClaim", "data"),
        obj("ResourceQuota", "compute"),
        obj("Secret", "token"),
        obj("ServiceAccount", "runner"),
        obj("StatefulSet", "db", "apps/v1"),
        obj("Pod", "nb-0"),
        obj("ConfigMap", "more"),
    ]

    ordered = km.apply_order(stream)

    assert [(o["kind"], o["metadata"]["name"]) for o in ordered] == [
        ("Namespace", "team-a-nb"),
        ("LimitRange", "defaults"),
        ("ResourceQuota", "compute"),
        ("ServiceAccount", "runner"),
        ("Role", "edit"),
        ("RoleBinding", "edit"),
        ("ConfigMap", "settings"),
        ("Secret", "token"),
        ("ConfigMap", "more"),
        ("PersistentVolumeClaim", "data"),
        ("Deployment", "web"),
        ("Job", "warmup"),
        ("StatefulSet", "db"),
        ("Pod", "nb-0"),
        ("Service", "web"),
        ("Certificate", "tls"),
    ]


def test_an_object_named_twice_is_applied_once_where_it_first_appears_as_it_last_reads() -> None:
    first = obj("ConfigMap", "settings", data={"a": "1"})
    second = obj("ConfigMap", "settings", data={"a": "2"})
    other_group = obj("Deployment", "settings", "apps/v1")

    ordered = km.apply_order([first, obj("Secret", "s"), second, other_group])

    assert [(o["kind"], o.get("data")) for o in ordered] == [
        ("ConfigMap", {"a": "2"}),
        ("Secret", None),
        ("Deployment", None),
    ]
    assert first["data"] == {"a": "1"}  # the input is not changed


def test_the_built_in_template_applies_namespace_then_quota_then_limits() -> None:
    ordered = km.apply_order(plan_manifests())

    assert [o["kind"] for o in ordered] == ["Namespace", "ResourceQuota", "LimitRange"]


def test_a_namespaced_object_without_a_namespace_goes_into_the_plans() -> None:
    config = obj("ConfigMap", "settings")
    elsewhere = obj("ConfigMap", "settings", metadata={"name": "settings", "namespace": "shared"})
    cluster_scoped = obj("ClusterRole", "reader", "rbac.authorization.k8s.io/v1")
    cluster_scoped["metadata"]["namespace"] = "team-a-nb"

    assert km.with_namespace(config, "team-a-nb", namespaced=True)["metadata"]["namespace"] == "team-a-nb"
    assert "namespace" not in config["metadata"]
    assert km.with_namespace(elsewhere, "team-a-nb", namespaced=True)["metadata"]["namespace"] == "shared"
    assert "namespace" not in km.with_namespace(cluster_scoped, "team-a-nb", namespaced=False)["metadata"]


# ------------------------------------------------------------------------------------------ labels


def test_the_plans_objects_carry_the_identity_labels() -> None:
    manifests = plan_manifests()

    assert [km.label_problem(m, INSTANCE) for m in manifests] == [None, None, None]
    assert manifests[0]["metadata"]["labels"]["team"] == "ml"


def test_an_object_whose_template_overrode_an_identity_label_is_refused() -> None:
    overridden = obj("ConfigMap", "settings")
    overridden["metadata"]["labels"] = {**LABELS, MANAGED_BY: "helm"}
    missing = obj("ConfigMap", "settings")

    assert km.label_problem(overridden, INSTANCE) == (
        'configmap settings: label app.kubernetes.io/managed-by is "helm", it must be "gpupaas": '
        "the driver finds the objects of an instance by it (remove it from the template)"
    )
    assert "label app.kubernetes.io/managed-by is missing" in str(km.label_problem(missing, INSTANCE))
    other = {**LABELS, INSTANCE_LABEL: "someone-else"}
    assert 'gpupaas.io/instance is "someone-else"' in str(
        km.label_problem({**missing, "metadata": {"name": "x", "labels": other}}, INSTANCE)
    )


def test_pod_templates_get_the_identity_labels_and_selectors_stay() -> None:
    deployment = obj(
        "Deployment",
        "web",
        "apps/v1",
        spec={
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
            },
        },
    )
    original = copy.deepcopy(deployment)

    stamped = km.stamp_pod_templates(deployment, INSTANCE)

    assert stamped["spec"]["template"]["metadata"]["labels"] == {"app": "web", **LABELS}
    assert stamped["spec"]["selector"] == {"matchLabels": {"app": "web"}}
    assert deployment == original


def test_cron_jobs_and_volume_claim_templates_are_stamped_too() -> None:
    cron = obj(
        "CronJob",
        "nightly",
        "batch/v1",
        spec={
            "schedule": "0 3 * * *",
            "jobTemplate": {"spec": {"template": {"spec": {"containers": [], "restartPolicy": "Never"}}}},
        },
    )
    statefulset = obj(
        "StatefulSet",
        "db",
        "apps/v1",
        spec={
            "selector": {"matchLabels": {"app": "db"}},
            "serviceName": "db",
            "template": {"metadata": {"labels": {"app": "db"}}, "spec": {"containers": []}},
            "volumeClaimTemplates": [
                {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}
            ],
        },
    )
    config = obj("ConfigMap", "settings", data={"a": "1"})

    stamped_cron = km.stamp_pod_templates(cron, INSTANCE)
    stamped_set = km.stamp_pod_templates(statefulset, INSTANCE)

    assert stamped_cron["spec"]["jobTemplate"]["metadata"]["labels"] == LABELS
    assert stamped_cron["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"] == LABELS
    assert stamped_set["spec"]["template"]["metadata"]["labels"] == {"app": "db", **LABELS}
    assert stamped_set["spec"]["volumeClaimTemplates"][0]["metadata"]["labels"] == LABELS
    assert km.stamp_pod_templates(config, INSTANCE) == config


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
    resources = km.parse_resource_list(CORE_V1)

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

    assert km.preferred_group_versions(groups) == ["apps/v1", "autoscaling/v2", "legacy.example.com/v1beta1"]


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

    request = km.apply_request(manifest, DEPLOYMENTS, field_manager="gpupaas")

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
    request = km.apply_request(obj("Namespace", "team-a-nb"), NAMESPACES, field_manager="me", force=False)

    assert request.path == "/api/v1/namespaces/team-a-nb"
    assert request.query == (("fieldManager", "me"),)


def test_a_namespaced_apply_without_a_namespace_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match=r"needs metadata\.namespace"):
        km.apply_request(obj("Pod", "nb-0"), CORE, field_manager="gpupaas")


def test_delete_list_and_watch_requests() -> None:
    delete = km.delete_request(DEPLOYMENTS, "web", "ns")
    listing = km.list_request(CORE, label_selector="gpupaas.io/instance=abc", limit=500, continue_token="t")
    watch = km.watch_request(
        CORE, label_selector="app.kubernetes.io/managed-by=gpupaas", resource_version="42"
    )

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


# --------------------------------------------------------------------------------------- readiness


def test_namespace_readiness() -> None:
    assert km.readiness({**obj("Namespace", "ns"), "status": {"phase": "Active"}}) == km.Readiness(True)
    terminating = km.readiness({**obj("Namespace", "ns"), "status": {"phase": "Terminating"}})
    assert terminating == km.Readiness(False, "namespace ns is terminating")
    assert not km.readiness(obj("Namespace", "ns")).ready


def test_claim_readiness() -> None:
    claim = obj("PersistentVolumeClaim", "data", spec={"storageClassName": "local-path"})

    assert km.readiness({**claim, "status": {"phase": "Bound"}}).ready
    assert km.readiness({**claim, "status": {"phase": "Pending"}}) == km.Readiness(
        False, "persistentvolumeclaim data: Pending (waiting for a volume)"
    )
    assert km.readiness({**claim, "status": {"phase": "Pending"}}, wait_for_first_consumer=True).ready
    lost = km.readiness({**claim, "status": {"phase": "Lost"}})
    assert lost.failed
    assert not lost.ready


def test_a_running_ready_pod_is_ready_and_a_creating_one_waits() -> None:
    creating = pod(phase="Pending", ready=False, containers=[waiting("ContainerCreating")])

    assert km.readiness(pod()) == km.Readiness(True)
    assert km.readiness(creating) == km.Readiness(False, "pod nb-0: Pending (ContainerCreating)")
    assert km.readiness(pod(phase="Succeeded", ready=False)).ready
    not_ready = pod(ready=False)
    not_ready["status"]["conditions"][-1]["message"] = "containers with unready status: [main]"
    assert km.readiness(not_ready) == km.Readiness(
        False, "pod nb-0: Running, not ready (containers with unready status: [main])"
    )


def test_an_unschedulable_gpu_pod_fails_with_the_schedulers_message() -> None:
    pending = pod(
        phase="Pending",
        ready=False,
        containers=[],
        conditions=[
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: 0/4 nodes "
                "are available: 4 No preemption victims found for incoming pod.",
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            }
        ],
    )

    message = km.unschedulable_message(pending)
    assert message is not None
    assert message.startswith("0/4 nodes are available: 4 Insufficient nvidia.com/gpu.")
    result = km.readiness(pending)
    assert result.failed
    assert result.message is not None
    assert result.message.startswith(
        "pod nb-0 cannot be scheduled: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu."
    )
    assert km.unschedulable_message(pod()) is None


def test_a_crash_looping_container_fails_with_what_killed_it() -> None:
    looping = pod(
        ready=False,
        containers=[
            waiting(
                "CrashLoopBackOff",
                "back-off 40s restarting failed container=main pod=nb-0_team-a-nb(uid)",
                last={"exitCode": 137, "reason": "OOMKilled", "finishedAt": "2026-01-01T00:01:00Z"},
            )
        ],
    )

    assert (
        km.pod_failure(looping)
        == "pod nb-0: OOMKilled (container main exited with code 137; CrashLoopBackOff)"
    )
    assert km.readiness(looping).failed


def test_an_image_that_cannot_be_pulled_fails_but_a_first_pull_error_waits() -> None:
    back_off = pod(
        phase="Pending",
        ready=False,
        containers=[waiting("ImagePullBackOff", 'Back-off pulling image "nope/nope:1"')],
    )
    first_error = pod(phase="Pending", ready=False, containers=[waiting("ErrImagePull", "not found")])

    assert km.pod_failure(back_off) == (
        'pod nb-0: ImagePullBackOff (container main: Back-off pulling image "nope/nope:1")'
    )
    assert km.pod_failure(first_error) is None
    assert not km.readiness(first_error).failed


def test_a_failed_pod_says_why() -> None:
    evicted = pod(
        phase="Failed",
        ready=False,
        containers=[],
        reason="Evicted",
        message="The node was low on resource: memory.",
    )
    exited = pod(
        phase="Failed",
        ready=False,
        containers=[
            {
                "name": "main",
                "ready": False,
                "restartCount": 0,
                "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}},
            }
        ],
    )

    assert km.pod_failure(evicted) == "pod nb-0: Evicted (The node was low on resource: memory.)"
    assert km.pod_failure(exited) == "pod nb-0: OOMKilled (container main exited with code 137)"


def test_a_container_that_terminated_with_an_error_fails_the_pod_and_a_clean_exit_does_not() -> None:
    crashed_init = pod(
        phase="Pending",
        ready=False,
        containers=[waiting("PodInitializing")],
        init_containers=[
            {"name": "fetch", "ready": False, "state": {"terminated": {"exitCode": 2, "reason": "Error"}}}
        ],
    )
    done_init = pod(
        init_containers=[
            {"name": "fetch", "ready": True, "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}
        ],
    )

    assert km.pod_failure(crashed_init) == "pod nb-0: Error (container fetch exited with code 2)"
    assert km.pod_failure(done_init) is None
    assert km.readiness(done_init).ready


def deployment(**status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "ns", "generation": 2},
        "spec": {"replicas": 2},
        "status": status,
    }


def test_deployment_readiness_follows_the_rollout() -> None:
    assert km.readiness(deployment(observedGeneration=1)).message == (
        "deployment web: waiting for its controller to observe the change"
    )
    assert km.readiness(deployment(observedGeneration=2, replicas=2, updatedReplicas=1)) == km.Readiness(
        False, "deployment web: 1 of 2 replicas updated"
    )
    assert km.readiness(deployment(observedGeneration=2, replicas=3, updatedReplicas=2)).message == (
        "deployment web: 1 old replicas are being replaced"
    )
    assert km.readiness(
        deployment(observedGeneration=2, replicas=2, updatedReplicas=2, availableReplicas=1)
    ).message == ("deployment web: 1 of 2 replicas available")
    assert km.readiness(
        deployment(observedGeneration=2, replicas=2, updatedReplicas=2, readyReplicas=2, availableReplicas=2)
    ) == km.Readiness(True)


def test_a_deployment_that_cannot_make_pods_or_progress_fails() -> None:
    quota = deployment(
        observedGeneration=2,
        conditions=[
            {
                "type": "ReplicaFailure",
                "status": "True",
                "reason": "FailedCreate",
                "message": 'pods "web-5d4f-x" is forbidden: exceeded quota: compute, requested: '
                "requests.nvidia.com/gpu=2, used: requests.nvidia.com/gpu=4, limited: requests.nvidia.com/gpu=4",
            }
        ],
    )
    stuck = deployment(
        observedGeneration=2,
        conditions=[
            {
                "type": "Progressing",
                "status": "False",
                "reason": "ProgressDeadlineExceeded",
                "message": 'ReplicaSet "web-5d4f" has timed out progressing.',
            }
        ],
    )

    assert km.readiness(quota).failed
    assert "exceeded quota: compute" in str(km.readiness(quota).message)
    assert km.readiness(stuck) == km.Readiness(
        False, 'deployment web: ReplicaSet "web-5d4f" has timed out progressing.', failed=True
    )


def statefulset(**status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "ns", "generation": 1},
        "spec": {"replicas": 2, "updateStrategy": {"type": "RollingUpdate"}},
        "status": {"observedGeneration": 1, **status},
    }


def test_statefulset_readiness() -> None:
    assert (
        km.readiness(statefulset(replicas=2, readyReplicas=1)).message
        == "statefulset db: 1 of 2 replicas ready"
    )
    rolling = statefulset(
        replicas=2, readyReplicas=2, updatedReplicas=1, currentRevision="db-1", updateRevision="db-2"
    )
    assert km.readiness(rolling).message == "statefulset db: rolling update to revision db-2: 1 of 2 updated"
    assert km.readiness(
        statefulset(
            replicas=2,
            readyReplicas=2,
            availableReplicas=2,
            updatedReplicas=2,
            currentRevision="db-2",
            updateRevision="db-2",
        )
    ).ready


def test_a_job_is_not_waited_for_but_a_failed_one_fails() -> None:
    job = obj("Job", "warmup", "batch/v1", status={"active": 1})
    failed = obj(
        "Job",
        "warmup",
        "batch/v1",
        status={
            "failed": 7,
            "conditions": [
                {
                    "type": "Failed",
                    "status": "True",
                    "reason": "BackoffLimitExceeded",
                    "message": "Job has reached the specified backoff limit",
                }
            ],
        },
    )

    assert km.readiness(job).ready
    assert km.readiness(failed) == km.Readiness(
        False,
        "job warmup failed: BackoffLimitExceeded: Job has reached the specified backoff limit",
        failed=True,
    )


def test_kinds_without_readiness_are_ready_once_they_exist() -> None:
    assert km.readiness(obj("ConfigMap", "settings")).ready
    assert km.readiness(obj("Service", "web", spec={"type": "NodePort"})).ready


# ------------------------------------------------------------------------------------------ health


def test_finished_pods_of_a_controller_and_pods_being_deleted_do_not_count() -> None:
    evicted = pod("web-5d4f-a", phase="Failed", ready=False, owner="ReplicaSet", reason="Evicted")
    bare_failed = pod("nb-0", phase="Failed", ready=False, reason="Evicted")
    deleting = pod("nb-1")
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"

    assert not km.counts(evicted)
    assert km.counts(bare_failed)
    assert not km.counts(deleting)
    assert km.counts(pod(owner="ReplicaSet"))


def test_instance_health_from_its_pods() -> None:
    oom = pod(
        "nb-0",
        ready=False,
        containers=[waiting("CrashLoopBackOff", last={"exitCode": 137, "reason": "OOMKilled"})],
    )
    evicted_and_replaced = [
        pod("web-5d4f-a", phase="Failed", ready=False, owner="ReplicaSet", reason="Evicted"),
        pod("web-5d4f-b", owner="ReplicaSet"),
    ]

    assert km.instance_health([]) is None
    assert km.instance_health([pod("a"), pod("b")]) == Observed(Phase.READY)
    assert km.instance_health([pod("a"), oom]) == Observed(
        Phase.FAILED, "pod nb-0: OOMKilled (container main exited with code 137; CrashLoopBackOff)"
    )
    assert km.instance_health([pod("a", phase="Pending", ready=False, containers=[])]) == Observed(
        Phase.PROGRESSING, "pod a: Pending"
    )
    assert km.instance_health(evicted_and_replaced) == Observed(Phase.READY)


def test_many_failing_pods_are_summed_up() -> None:
    pods = [pod(f"p-{i}", phase="Failed", ready=False, containers=[], reason="Evicted") for i in range(5)]

    health = km.instance_health(pods)

    assert health == Observed(
        Phase.FAILED, "pod p-0: Evicted; pod p-1: Evicted; pod p-2: Evicted; and 2 more"
    )


# ------------------------------------------------------------------------------------------ errors


def status_body(code: int, reason: str, message: str, **details: Any) -> str:
    return json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": message,
            "reason": reason,
            "details": details,
            "code": code,
        }
    )


def test_an_invalid_object_is_permanent_with_its_causes() -> None:
    body = status_body(
        422,
        "Invalid",
        'Deployment.apps "web" is invalid: spec.template.spec.containers[0].image: Required value',
        name="web",
        group="apps",
        kind="Deployment",
        causes=[
            {
                "reason": "FieldValueRequired",
                "message": "Required value",
                "field": "spec.template.spec.containers[0].image",
            },
            {
                "reason": "FieldValueInvalid",
                "message": "Invalid value: -1: must be greater than or equal to 0",
                "field": "spec.replicas",
            },
        ],
    )

    error = km.api_error(422, body, "applying deployment web")

    assert isinstance(error, PermanentError)
    assert str(error) == (
        'applying deployment web: Deployment.apps "web" is invalid: spec.template.spec.containers[0].image: '
        "Required value; spec.replicas: Invalid value: -1: must be greater than or equal to 0 "
        "(HTTP 422 Unprocessable Entity)"
    )


def test_a_forbidden_request_names_the_missing_permission() -> None:
    body = status_body(
        403,
        "Forbidden",
        'deployments.apps "web" is forbidden: User "system:serviceaccount:gpupaas:driver" cannot patch '
        'resource "deployments" in API group "apps" in the namespace "team-a-nb"',
    )

    error = km.api_error(403, body, "applying deployment web")

    assert isinstance(error, PermanentError)
    assert 'cannot patch resource "deployments" in API group "apps"' in str(error)
    assert "needs this permission (RBAC)" in str(error)


def test_a_namespace_still_terminating_is_temporary() -> None:
    body = status_body(
        403,
        "Forbidden",
        'configmaps "settings" is forbidden: unable to create new content in namespace team-a-nb because '
        "it is being terminated",
        causes=[{"reason": "NamespaceTerminating", "message": "namespace team-a-nb is being terminated"}],
    )

    assert isinstance(km.api_error(403, body, "applying configmap settings"), TemporaryError)


@pytest.mark.parametrize(
    ("status", "temporary"),
    [
        *[(code, True) for code in (500, 502, 503, 504, 429, 410)],
        *[(code, False) for code in (400, 401, 404, 405, 409, 415)],
    ],
)
def test_server_failures_are_temporary_and_client_errors_permanent(status: int, temporary: bool) -> None:
    error = km.api_error(status, status_body(status, "X", "something happened"), "applying pod nb-0")

    assert isinstance(error, TemporaryError if temporary else PermanentError)
    assert "something happened" in str(error)
    assert f"HTTP {status}" in str(error)


def test_a_body_that_is_no_status_is_quoted_shortly() -> None:
    assert (
        km.status_text("<html>\n<h1>502 Bad Gateway</h1></html>") == "<html> <h1>502 Bad Gateway</h1></html>"
    )
    assert km.status_text("x" * 600).endswith("...")
    assert km.status_text(None) == ""
    assert "Unauthorized" in str(km.api_error(401, None, "checking the cluster"))


# ------------------------------------------------------------------------------------------- nodes


def node(
    name: str, capacity: dict[str, str], labels: dict[str, str] | None = None, ready: bool = True
) -> dict[str, Any]:
    allocatable = {**capacity, "cpu": "15500m", "memory": "62Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {
            "capacity": {
                "cpu": "16",
                "memory": "64Gi",
                "pods": "110",
                "ephemeral-storage": "500Gi",
                **capacity,
            },
            "allocatable": allocatable,
            "conditions": [
                {"type": "MemoryPressure", "status": "False"},
                {"type": "Ready", "status": "True" if ready else "False", "reason": "KubeletReady"},
            ],
        },
    }


def test_gpu_like_extended_resources() -> None:
    assert km.is_gpu_resource("nvidia.com/gpu")
    assert km.is_gpu_resource("huawei.com/Ascend910")
    assert km.is_gpu_resource("gpu.intel.com/i915")
    assert km.is_gpu_resource("nvidia.com/mig-1g.10gb")
    assert km.is_gpu_resource("nvidia.com/gpu.shared")
    assert km.is_gpu_resource("example.com/gpu-slice")
    assert not km.is_gpu_resource("ephemeral-storage")
    assert not km.is_gpu_resource("hugepages-2Mi")
    assert not km.is_gpu_resource("smarter-devices/fuse")


def test_nodes_report_allocatable_cpu_memory_their_gpus_and_model() -> None:
    h100 = km.node_info(
        node("gpu-0", {"nvidia.com/gpu": "8"}, {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"})
    )
    mi300 = km.node_info(
        node("amd-0", {"amd.com/gpu": "4"}, {"amd.com/gpu.product-name": "AMD_Instinct_MI300X"})
    )
    mig = km.node_info(node("mig-0", {"nvidia.com/mig-1g.10gb": "7", "nvidia.com/gpu": "0"}))
    cpu = km.node_info(node("cpu-0", {}, ready=False))

    assert h100 == NodeInfo(
        name="gpu-0",
        cpu="15500m",
        memory="62Gi",
        gpus={"nvidia.com/gpu": 8},
        gpu_model="NVIDIA-H100-80GB-HBM3",
        ready=True,
    )
    assert h100.to_json() == {
        "name": "gpu-0",
        "cpu": "15500m",
        "memory": "62Gi",
        "gpuResource": "nvidia.com/gpu",
        "gpuCount": 8,
        "gpuModel": "NVIDIA-H100-80GB-HBM3",
        "gpus": {"nvidia.com/gpu": 8},
        "ready": True,
    }
    assert (mi300.gpu_resource, mi300.gpu_model) == ("amd.com/gpu", "AMD_Instinct_MI300X")
    assert mig.gpus == {"nvidia.com/mig-1g.10gb": 7}
    assert (cpu.gpus, cpu.gpu_resource, cpu.ready) == ({}, None, False)
    info = ClusterInfo("v1.37.0", (h100, mi300, mig, cpu))
    assert info.gpus == {"nvidia.com/gpu": 8, "amd.com/gpu": 4, "nvidia.com/mig-1g.10gb": 7}
    assert info.to_json()["serverVersion"] == "v1.37.0"


# ----------------------------------------------------------------------------------------- rollout


def test_the_pods_of_an_older_replicaset_do_not_fail_a_rollout() -> None:
    web = deployment(observedGeneration=2)
    web["metadata"]["annotations"] = {"deployment.kubernetes.io/revision": "2"}

    def replicaset(name: str, revision: str) -> dict[str, Any]:
        return {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "namespace": "ns",
                "annotations": {"deployment.kubernetes.io/revision": revision},
                "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "controller": True}
                ],
            },
        }

    def owned(name: str, replicaset_name: str) -> dict[str, Any]:
        owned_pod = pod(name)
        owned_pod["metadata"]["namespace"] = "ns"
        owned_pod["metadata"]["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": replicaset_name, "controller": True}
        ]
        return owned_pod

    old, new, bare = owned("web-old-a", "web-old"), owned("web-new-a", "web-new"), pod("nb-0")
    bare["metadata"]["namespace"] = "ns"
    stranger = owned("x-a", "unknown-rs")

    kept = km.current_pods(
        [old, new, bare, stranger], [replicaset("web-old", "1"), replicaset("web-new", "2")], [web]
    )

    assert [p["metadata"]["name"] for p in kept] == ["web-new-a", "nb-0", "x-a"]


# ------------------------------------------------------------------------------------------- drift


def failing(name: str, instance: str = INSTANCE) -> dict[str, Any]:
    failed = pod(
        name,
        ready=False,
        containers=[waiting("CrashLoopBackOff", last={"exitCode": 137, "reason": "OOMKilled"})],
    )
    failed["metadata"]["labels"][INSTANCE_LABEL] = instance
    return failed


def healthy(name: str, instance: str = INSTANCE) -> dict[str, Any]:
    ready = pod(name)
    ready["metadata"]["labels"][INSTANCE_LABEL] = instance
    return ready


OWNER = Owner(INSTANCE_LABEL, INSTANCE)


def deliver(tracker: km.DriftTracker, changes: list[tuple[Owner, Observed]]) -> list[tuple[Owner, Phase]]:
    """Marks the changes reported, as watch_drift does once on_change took them."""
    for owner, observed in changes:
        tracker.reported[owner] = observed.phase
    return [(owner, observed.phase) for owner, observed in changes]


def test_drift_reports_a_failure_once_and_the_recovery() -> None:
    tracker = km.DriftTracker()

    assert deliver(tracker, tracker.reset([healthy("nb-0"), healthy("other-0", "other")])) == []
    assert deliver(tracker, tracker.event("MODIFIED", failing("nb-0"))) == [(OWNER, Phase.FAILED)]
    assert deliver(tracker, tracker.event("MODIFIED", failing("nb-0"))) == []
    assert deliver(tracker, tracker.event("MODIFIED", healthy("nb-0"))) == [(OWNER, Phase.READY)]
    assert deliver(tracker, tracker.event("MODIFIED", healthy("nb-0"))) == []


def test_drift_reports_what_changed_while_the_watch_was_down() -> None:
    tracker = km.DriftTracker()
    deliver(tracker, tracker.reset([healthy("nb-0"), healthy("other-0", "other")]))

    changes = tracker.reset([failing("nb-0"), healthy("other-0", "other")])

    assert [(i, o.phase, o.message) for i, o in changes] == [
        (
            OWNER,
            Phase.FAILED,
            "pod nb-0: OOMKilled (container main exited with code 137; CrashLoopBackOff)",
        )
    ]


def test_a_failure_that_was_not_delivered_is_given_again() -> None:
    tracker = km.DriftTracker()
    tracker.reset([healthy("nb-0")])

    assert tracker.event("MODIFIED", failing("nb-0"))  # not delivered: on_change raised
    assert deliver(tracker, tracker.event("MODIFIED", failing("nb-0"))) == [(OWNER, Phase.FAILED)]


def test_a_failed_pod_replaced_by_a_ready_one_is_a_recovery() -> None:
    tracker = km.DriftTracker()
    deliver(tracker, tracker.reset([failing("nb-0")]))

    assert deliver(tracker, tracker.event("DELETED", failing("nb-0"))) == []
    assert deliver(tracker, tracker.event("ADDED", healthy("nb-1"))) == [(OWNER, Phase.READY)]


def test_pods_without_an_instance_label_are_ignored() -> None:
    tracker = km.DriftTracker()
    stray = failing("stray")
    del stray["metadata"]["labels"][INSTANCE_LABEL]

    assert tracker.event("ADDED", stray) == []
    assert tracker.reset([stray]) == []


def test_a_pod_waiting_for_its_claim_to_be_provisioned_is_not_unschedulable_for_good() -> None:
    waiting_for_claim = pod(
        phase="Pending",
        ready=False,
        containers=[],
        conditions=[
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": "Unschedulable",
                "message": "0/3 nodes are available: 3 pod has unbound immediate PersistentVolumeClaims. "
                "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.",
            }
        ],
    )

    assert km.pod_problem(waiting_for_claim) is None
    assert km.readiness(waiting_for_claim) == km.Readiness(False, "pod nb-0: Pending")
