"""Objects: the order they are applied in, their namespace, and the identity labels they carry."""

from __future__ import annotations

import copy

from gpupaas.provisioning.drivers.k8s_manifests.objects import (
    apply_order,
    label_problem,
    stamp_pod_templates,
    with_namespace,
)
from gpupaas.provisioning.plan import INSTANCE_LABEL, MANAGED_BY
from tests.provisioning.drivers.k8s_manifests.kube_objects import INSTANCE, LABELS, obj, plan_manifests


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

    ordered = apply_order(stream)

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

    ordered = apply_order([first, obj("Secret", "s"), second, other_group])

    assert [(o["kind"], o.get("data")) for o in ordered] == [
        ("ConfigMap", {"a": "2"}),
        ("Secret", None),
        ("Deployment", None),
    ]
    assert first["data"] == {"a": "1"}  # the input is not changed


def test_the_built_in_template_applies_namespace_then_quota_then_limits() -> None:
    ordered = apply_order(plan_manifests())

    assert [o["kind"] for o in ordered] == ["Namespace", "ResourceQuota", "LimitRange"]


def test_a_namespaced_object_without_a_namespace_goes_into_the_plans() -> None:
    config = obj("ConfigMap", "settings")
    elsewhere = obj("ConfigMap", "settings", metadata={"name": "settings", "namespace": "shared"})
    cluster_scoped = obj("ClusterRole", "reader", "rbac.authorization.k8s.io/v1")
    cluster_scoped["metadata"]["namespace"] = "team-a-nb"

    assert with_namespace(config, "team-a-nb", namespaced=True)["metadata"]["namespace"] == "team-a-nb"
    assert "namespace" not in config["metadata"]
    assert with_namespace(elsewhere, "team-a-nb", namespaced=True)["metadata"]["namespace"] == "shared"
    assert "namespace" not in with_namespace(cluster_scoped, "team-a-nb", namespaced=False)["metadata"]


# ------------------------------------------------------------------------------------------ labels


def test_the_plans_objects_carry_the_identity_labels() -> None:
    manifests = plan_manifests()

    assert [label_problem(m, INSTANCE) for m in manifests] == [None, None, None]
    assert manifests[0]["metadata"]["labels"]["team"] == "ml"


def test_an_object_whose_template_overrode_an_identity_label_is_refused() -> None:
    overridden = obj("ConfigMap", "settings")
    overridden["metadata"]["labels"] = {**LABELS, MANAGED_BY: "helm"}
    missing = obj("ConfigMap", "settings")

    assert label_problem(overridden, INSTANCE) == (
        'configmap settings: label app.kubernetes.io/managed-by is "helm", it must be "gpupaas": '
        "the driver finds the objects of an instance by it (remove it from the template)"
    )
    assert "label app.kubernetes.io/managed-by is missing" in str(label_problem(missing, INSTANCE))
    other = {**LABELS, INSTANCE_LABEL: "someone-else"}
    assert 'gpupaas.io/instance is "someone-else"' in str(
        label_problem({**missing, "metadata": {"name": "x", "labels": other}}, INSTANCE)
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

    stamped = stamp_pod_templates(deployment, INSTANCE)

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

    stamped_cron = stamp_pod_templates(cron, INSTANCE)
    stamped_set = stamp_pod_templates(statefulset, INSTANCE)

    assert stamped_cron["spec"]["jobTemplate"]["metadata"]["labels"] == LABELS
    assert stamped_cron["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"] == LABELS
    assert stamped_set["spec"]["template"]["metadata"]["labels"] == {"app": "db", **LABELS}
    assert stamped_set["spec"]["volumeClaimTemplates"][0]["metadata"]["labels"] == LABELS
    assert stamp_pod_templates(config, INSTANCE) == config
