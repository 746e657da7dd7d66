"""build_plan and the tenant confinement: gpupaas's identity labels win over a template's, a
confined plan is refused (and says why) when its objects reach outside the instance, its namespace
gets gpupaas's Pod Security level, and a platform template goes further only on a cluster that
trusts platform templates."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from gpupaas.provisioning.builtins import BUILTIN_TEMPLATES
from gpupaas.provisioning.plan import INSTANCE_LABEL, MANAGED_BY, PermanentError, Plan, build_plan
from gpupaas.provisioning.render.policy import TemplatePolicy, TemplateScope

INSTANCE = str(uuid.uuid4())
RESOURCES = {
    "cpu": "8",
    "memory": "64Gi",
    "storage": "100Gi",
    "gpuCount": 4,
    "gpuVendor": "NVIDIA",
    "gpuModel": "H100",
}

NAMESPACE = 'apiVersion: v1\nkind: Namespace\nmetadata: {name: "{{ instance.namespace }}"}\n'
KUBE_SYSTEM = (
    NAMESPACE + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: pwned, namespace: kube-system}\n"
)
CLUSTER_ROLE = (
    "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: reader}\nrules: []\n"
)


def plan_of(
    resources: str,
    *,
    scope: TemplateScope = TemplateScope.PROJECT,
    policy: TemplatePolicy = TemplatePolicy.CONFINED,
    profile: dict[str, Any] | None = None,
) -> Plan:
    return build_plan(
        instance_id=INSTANCE,
        instance_name="nb",
        project="ml",
        profile_name="h100",
        allocation="SHARED",
        resources={**RESOURCES, **(profile or {})},
        template_resources=resources,
        input_definitions=(),
        input_values={},
        outputs=(),
        labels={"team": "ml", INSTANCE_LABEL: "from-the-profile"},
        annotations={},
        template_scope=scope,
        template_policy=policy,
    )


def test_gpupaas_s_identity_labels_win_over_the_template_s_and_the_profile_s() -> None:
    other = str(uuid.uuid4())
    resources = f"""\
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  labels: {{team: research, {MANAGED_BY}: helm, {INSTANCE_LABEL}: "{other}"}}
"""
    [config_map] = plan_of(resources).manifests
    assert config_map["metadata"]["labels"] == {
        "team": "research",
        MANAGED_BY: "gpupaas",
        INSTANCE_LABEL: INSTANCE,
    }


def test_a_confined_plan_that_reaches_outside_is_refused_and_cannot_be_applied() -> None:
    plan = plan_of(KUBE_SYSTEM)
    assert plan.refused == (
        "the project's template breaks the tenant confinement, so nothing was applied: document 2 "
        '(ConfigMap pwned), metadata.namespace: is "kube-system": a confined template creates objects '
        "only in its instance's namespace (leave metadata.namespace out, or write "
        '"{{ instance.namespace }}")'
    )
    with pytest.raises(PermanentError) as error:
        plan.check_admissible()
    assert str(error.value) == plan.refused


def test_a_project_s_template_is_confined_even_on_a_cluster_that_trusts_platform_templates() -> None:
    plan = plan_of(CLUSTER_ROLE, policy=TemplatePolicy.TRUST_PLATFORM_TEMPLATES)
    assert plan.refused is not None and "rbac.authorization.k8s.io/ClusterRole is not a kind" in plan.refused


def test_a_platform_template_goes_further_only_where_platform_templates_are_trusted() -> None:
    confined = plan_of(CLUSTER_ROLE, scope=TemplateScope.PLATFORM)
    assert confined.refused is not None
    assert confined.refused.startswith(
        "the platform template breaks the tenant confinement of this cluster (its templatePolicy is "
        "CONFINED; a platform admin may set TRUST_PLATFORM_TEMPLATES), so nothing was applied: document 1 "
        "(ClusterRole reader), kind: "
    )

    trusted = plan_of(
        CLUSTER_ROLE, scope=TemplateScope.PLATFORM, policy=TemplatePolicy.TRUST_PLATFORM_TEMPLATES
    )
    assert trusted.refused is None
    trusted.check_admissible()


def test_no_template_may_label_its_objects_as_a_gpu_service_s_even_where_trusted() -> None:
    resources = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels: {gpupaas.io/service: x}\n"
    plan = plan_of(resources, scope=TemplateScope.PLATFORM, policy=TemplatePolicy.TRUST_PLATFORM_TEMPLATES)
    assert plan.refused == (
        "the template sets labels gpupaas reserves, so nothing was applied: document 1 (ConfigMap c), "
        "metadata.labels.gpupaas.io/service: is a label by which gpupaas finds a GPU service's objects; "
        "a template may not set it"
    )


def test_a_confined_instance_s_namespace_gets_gpupaas_s_pod_security_level() -> None:
    [namespace] = plan_of(NAMESPACE).manifests
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"
    [trusted] = plan_of(
        NAMESPACE, scope=TemplateScope.PLATFORM, policy=TemplatePolicy.TRUST_PLATFORM_TEMPLATES
    ).manifests
    assert "pod-security.kubernetes.io/enforce" not in trusted["metadata"]["labels"]


def test_a_confined_quota_may_not_give_more_than_the_profile() -> None:
    quota = (
        NAMESPACE
        + "---\napiVersion: v1\nkind: ResourceQuota\nmetadata: {name: q}\nspec:\n  hard:\n"
        + '    requests.nvidia.com/gpu: "{{ resources.gpuCount }}"\n    limits.cpu: "64"\n'
    )
    refused = plan_of(quota).refused
    assert refused is not None
    assert refused.endswith(
        "document 2 (ResourceQuota q), spec.hard.limits.cpu: 64 is more than the profile's cpu (8): a "
        "confined template may not give an instance more than its profile"
    )
    assert plan_of(quota, profile={"cpu": "64"}).refused is None


@pytest.mark.parametrize("template", BUILTIN_TEMPLATES, ids=lambda t: t.name)
@pytest.mark.parametrize("scope", list(TemplateScope))
def test_the_built_in_templates_are_never_refused(template: Any, scope: TemplateScope) -> None:
    plan = build_plan(
        instance_id=INSTANCE,
        instance_name="nb",
        project="ml",
        profile_name="h100",
        allocation="DEDICATED",
        resources=RESOURCES,
        template_resources=template.resources,
        input_definitions=template.inputs,
        input_values={d.name: d.default for d in template.inputs if d.default is not None},
        outputs=template.outputs,
        labels={},
        annotations={},
        template_scope=scope,
    )
    assert plan.refused is None
