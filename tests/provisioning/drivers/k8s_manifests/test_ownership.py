"""Whose an object is: the owner label decides; pruning also asks who applied it."""

from __future__ import annotations

from typing import Any

from gpupaas.provisioning.drivers.k8s_manifests.ownership import applied_by, ownership_problem, refusal

INSTANCE = "8f0c4c1e-0000-4000-8000-000000000001"


def configmap(
    labels: dict[str, str] | None = None, managers: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "settings", "namespace": "team-a"}
    if labels is not None:
        metadata["labels"] = labels
    if managers is not None:
        metadata["managedFields"] = managers
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}


def test_an_object_with_the_instances_label_is_its_own() -> None:
    assert (
        ownership_problem(configmap({"gpupaas.io/instance": INSTANCE}), INSTANCE, "gpupaas.io/instance")
        is None
    )


def test_an_object_without_gpupaas_labels_is_not_managed_by_gpupaas() -> None:
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}

    assert ownership_problem(namespace, INSTANCE, "gpupaas.io/instance") == (
        "namespace team-a exists and is not managed by gpupaas"
    )


def test_another_instances_object_names_its_owner() -> None:
    problem = ownership_problem(configmap({"gpupaas.io/instance": "other"}), INSTANCE, "gpupaas.io/instance")

    assert problem == (
        "configmap settings in namespace team-a exists and belongs to another gpupaas instance "
        "(gpupaas.io/instance=other)"
    )


def test_an_object_gpupaas_manages_under_another_owner_label_is_someone_elses() -> None:
    labels = {"app.kubernetes.io/managed-by": "gpupaas", "gpupaas.io/instance": INSTANCE}

    problem = ownership_problem(configmap(labels), INSTANCE, "gpupaas.io/service")

    assert problem == (
        "configmap settings in namespace team-a exists and is managed by gpupaas for something else "
        "(it has no label gpupaas.io/service)"
    )


def test_the_refusal_says_what_to_do() -> None:
    message = refusal(["namespace team-a exists and is not managed by gpupaas"])

    assert message.startswith("namespace team-a exists and is not managed by gpupaas. ")
    assert "metadata.name" in message


def test_only_an_apply_by_the_field_manager_counts_as_applied_by_it() -> None:
    applied = {"manager": "gpupaas", "operation": "Apply", "apiVersion": "v1"}
    updated = {"manager": "gpupaas", "operation": "Update", "apiVersion": "v1"}
    controller = {"manager": "kube-controller-manager", "operation": "Apply", "apiVersion": "v1"}

    assert applied_by(configmap(managers=[controller, applied]), "gpupaas")
    assert not applied_by(configmap(managers=[updated, controller]), "gpupaas")
    assert not applied_by(configmap(), "gpupaas")
