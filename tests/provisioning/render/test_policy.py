"""The tenant confinement (provisioning/render/policy.py) on rendered templates: what a project's
template may create, checked by check_version when a version is added, one rule at a time."""

from __future__ import annotations

from typing import Any

import pytest

from gpupaas.instance_templates.builtins import BUILTIN_INSTANCE_TEMPLATES
from gpupaas.instance_templates.spec import resolve
from gpupaas.provisioning import plan
from gpupaas.provisioning.builtins import BUILTIN_TEMPLATES
from gpupaas.provisioning.render.checks import check_version, confinement_check, sample_context
from gpupaas.provisioning.render.policy import (
    CONFINED_NAMESPACE_LABELS,
    SERVICE_IDENTITY_LABELS,
    TemplatePolicy,
    TemplateScope,
    confinement_problems,
    is_confined,
    quota_problems,
)
from gpupaas.provisioning.render.problems import Problem
from gpupaas.service_instances.plan import build_service_plan
from tests.service_instances.ssh_setup import ssh_setup
from tests.ssh_keys.keygen import key_pair

NS = '"{{ instance.namespace }}"'


def problems_of(resources: str, scope: TemplateScope = TemplateScope.PROJECT) -> list[str]:
    return [str(problem) for problem in check_version(resources, [], [], scope=scope)]


def only(resources: str) -> str:
    found = problems_of(resources)
    assert len(found) == 1, found
    return found[0]


def pod(spec: str, kind: str = "Pod", container: str = "") -> str:
    """A workload of `kind` whose pod spec holds the one container `main` (with the YAML lines
    `container` of its own) plus `spec` (YAML lines of the pod spec)."""
    body = "containers:\n- name: main\n  image: busybox\n" + _indent(container, 2) + spec
    if kind == "Pod":
        return "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n" + _indent(body, 2)
    template = "metadata: {labels: {app: w}}\nspec:\n" + _indent(body, 2)
    if kind == "CronJob":
        return (
            "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: w}\nspec:\n  schedule: '@daily'\n"
            "  jobTemplate:\n    spec:\n      template:\n" + _indent(template + "  restartPolicy: Never\n", 8)
        )
    if kind == "Job":
        return "apiVersion: batch/v1\nkind: Job\nmetadata: {name: w}\nspec:\n  template:\n" + _indent(
            template + "  restartPolicy: Never\n", 4
        )
    return (
        f"apiVersion: apps/v1\nkind: {kind}\nmetadata: {{name: w}}\nspec:\n  selector: {{matchLabels: {{app: w}}}}\n"
        + ("  serviceName: w\n" if kind == "StatefulSet" else "")
        + "  template:\n"
        + _indent(template, 4)
    )


def _indent(text: str, spaces: int) -> str:
    return "".join(" " * spaces + line + "\n" for line in text.splitlines())


# -------------------------------------------------------------------------------- the two attacks


def test_a_config_map_in_kube_system_is_refused_naming_the_document_and_field() -> None:
    resources = f"""\
apiVersion: v1
kind: Namespace
metadata: {{name: {NS}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: leak, namespace: kube-system}}
data: {{a: b}}
"""
    assert only(resources) == (
        'document 2 (ConfigMap leak), metadata.namespace: is "kube-system": a confined template creates '
        "objects only in its instance's namespace (leave metadata.namespace out, or write "
        '"{{ instance.namespace }}")'
    )


def test_a_role_binding_of_a_user_to_cluster_admin_is_refused() -> None:
    resources = f"""\
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: root, namespace: {NS}}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}}
subjects:
- {{kind: User, name: mallory, apiGroup: rbac.authorization.k8s.io}}
"""
    assert problems_of(resources) == [
        'document 1 (RoleBinding root), roleRef.kind: is "ClusterRole": a confined template may bind only '
        'a Role of its own namespace, never a ClusterRole (such as "cluster-admin")',
        'document 1 (RoleBinding root), subjects[0].kind: is "User": a confined template may bind only '
        "ServiceAccounts of its own namespace",
    ]


# -------------------------------------------------------------------------------- kinds and namespaces


@pytest.mark.parametrize(
    ("resources", "shown"),
    [
        (
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}\nrules: []\n",
            "rbac.authorization.k8s.io/ClusterRole",
        ),
        (
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata: {name: b}\n"
            "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}\n",
            "rbac.authorization.k8s.io/ClusterRoleBinding",
        ),
        (
            "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv}\n"
            "spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /}}\n",
            "PersistentVolume",
        ),
        (
            "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: fast}\nprovisioner: x\n",
            "storage.k8s.io/StorageClass",
        ),
        (
            "apiVersion: v1\nkind: Endpoints\nmetadata: {name: e}\n",
            "Endpoints",
        ),
        (
            "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {name: q}\nspec: {}\n",
            "kueue.x-k8s.io/LocalQueue",
        ),
    ],
)
def test_kinds_outside_the_allowed_list_are_refused(resources: str, shown: str) -> None:
    problem = only(resources)
    assert problem.startswith("document 1 (")
    assert f"kind: {shown} is not a kind a confined template may create" in problem
    assert "ask a platform admin for a global template" in problem


def test_another_namespace_object_is_refused_and_the_instance_s_own_is_allowed() -> None:
    other = "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-b}\n"
    assert only(other) == (
        'document 1 (Namespace team-b), metadata.name: is "team-b": the one Namespace a confined template '
        'may create is its instance\'s own (name: "{{ instance.namespace }}")'
    )
    assert problems_of(f"apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n") == []


def test_objects_without_a_namespace_or_in_the_instance_s_are_allowed() -> None:
    resources = f"""\
apiVersion: v1
kind: ConfigMap
metadata: {{name: a}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: b, namespace: {NS}}}
"""
    assert problems_of(resources) == []


def test_a_platform_template_is_not_confined_at_authoring() -> None:
    resources = (
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r}\nrules: []\n"
    )
    assert problems_of(resources, TemplateScope.PLATFORM) == []


def test_who_is_confined_where() -> None:
    assert is_confined(TemplateScope.PROJECT, TemplatePolicy.CONFINED)
    assert is_confined(TemplateScope.PROJECT, TemplatePolicy.TRUST_PLATFORM_TEMPLATES)
    assert is_confined(TemplateScope.PLATFORM, TemplatePolicy.CONFINED)
    assert not is_confined(TemplateScope.PLATFORM, TemplatePolicy.TRUST_PLATFORM_TEMPLATES)


# -------------------------------------------------------------------------------- RBAC


def test_a_role_bound_to_the_namespace_s_own_service_account_is_allowed() -> None:
    resources = f"""\
apiVersion: v1
kind: ServiceAccount
metadata: {{name: runner}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: reader}}
rules: [{{apiGroups: [""], resources: [configmaps], verbs: [get, list]}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: reader}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}}
subjects:
- {{kind: ServiceAccount, name: runner}}
- {{kind: ServiceAccount, name: runner, namespace: {NS}}}
"""
    assert problems_of(resources) == []


@pytest.mark.parametrize(
    ("subject", "message"),
    [
        (
            "{kind: ServiceAccount, name: default, namespace: kube-system}",
            'subjects[0].namespace: is "kube-system": a confined template may bind only ServiceAccounts of '
            "its own namespace",
        ),
        (
            "{kind: Group, name: 'system:authenticated', apiGroup: rbac.authorization.k8s.io}",
            'subjects[0].kind: is "Group": a confined template may bind only ServiceAccounts of its own namespace',
        ),
    ],
)
def test_subjects_outside_the_namespace_are_refused(subject: str, message: str) -> None:
    resources = (
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: b}\n"
        "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}\n"
        f"subjects:\n- {subject}\n"
    )
    assert only(resources) == f"document 1 (RoleBinding b), {message}"


def test_a_role_binding_of_a_cluster_role_to_its_own_service_account_is_refused() -> None:
    resources = (
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {name: b}\n"
        "roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: edit}\n"
        "subjects:\n- {kind: ServiceAccount, name: default}\n"
    )
    assert 'roleRef.kind: is "ClusterRole"' in only(resources)


# -------------------------------------------------------------------------------- pod settings

WORKLOADS = ["Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob"]

PRIVILEGED = [
    ("hostNetwork: true\n", "hostNetwork", "shares the node's namespaces"),
    ("hostPID: true\n", "hostPID", "shares the node's namespaces"),
    ("hostIPC: true\n", "hostIPC", "shares the node's namespaces"),
    ("nodeName: gpu-0\n", "nodeName", "would bypass the scheduler"),
    ("priorityClassName: system-node-critical\n", "priorityClassName", "for the cluster's own components"),
    (
        "volumes:\n- name: root\n  hostPath: {path: /}\n",
        "volumes[0].hostPath",
        "mounts the node's file system",
    ),
    ("tolerations:\n- operator: Exists\n", "tolerations[0]", "tolerates every taint"),
    (
        "tolerations:\n- {key: node-role.kubernetes.io/control-plane, operator: Exists, effect: NoSchedule}\n",
        "tolerations[0].key",
        "would put the pods on the control plane",
    ),
    (
        "securityContext:\n  sysctls: [{name: kernel.msgmax, value: '65536'}]\n",
        "securityContext.sysctls[0].name",
        '"kernel.msgmax" is not a safe sysctl',
    ),
    (
        "securityContext:\n  seccompProfile: {type: Unconfined}\n",
        "securityContext.seccompProfile.type",
        "turns the kernel's confinement off",
    ),
    (
        "securityContext:\n  windowsOptions: {hostProcess: true}\n",
        "securityContext.windowsOptions.hostProcess",
        "runs on the Windows node itself",
    ),
]

CONTAINER = [
    ("ports: [{containerPort: 80, hostPort: 80}]", "ports[0].hostPort", "opens a port on the node itself"),
    ("securityContext: {privileged: true}", "securityContext.privileged", "gives the container the node"),
    (
        "securityContext: {allowPrivilegeEscalation: true}",
        "securityContext.allowPrivilegeEscalation",
        "lets a process gain more rights",
    ),
    (
        "securityContext: {capabilities: {add: [SYS_ADMIN]}}",
        "securityContext.capabilities.add",
        "adds Linux capabilities (SYS_ADMIN)",
    ),
    ("securityContext: {procMount: Unmasked}", "securityContext.procMount", "unmasks the node's /proc"),
    (
        "securityContext: {appArmorProfile: {type: Unconfined}}",
        "securityContext.appArmorProfile.type",
        "turns the kernel's confinement off",
    ),
]

SPEC_PATH = {
    "Pod": "spec",
    "Deployment": "spec.template.spec",
    "StatefulSet": "spec.template.spec",
    "DaemonSet": "spec.template.spec",
    "ReplicaSet": "spec.template.spec",
    "Job": "spec.template.spec",
    "CronJob": "spec.jobTemplate.spec.template.spec",
}


@pytest.mark.parametrize("kind", WORKLOADS)
@pytest.mark.parametrize(("spec", "field", "message"), PRIVILEGED, ids=[p[1] for p in PRIVILEGED])
def test_privileged_pod_settings_are_refused_in_every_workload(
    kind: str, spec: str, field: str, message: str
) -> None:
    problem = only(pod(spec, kind))
    assert problem.startswith(
        f"document 1 ({kind} {'p' if kind == 'Pod' else 'w'}), {SPEC_PATH[kind]}.{field}: "
    )
    assert message in problem


# Only a Pod has ephemeral containers (kubectl debug adds them); the schema refuses them elsewhere.
CONTAINER_PLACES = [(kind, "containers") for kind in WORKLOADS] + [
    (kind, "initContainers") for kind in WORKLOADS
]
CONTAINER_PLACES.append(("Pod", "ephemeralContainers"))


@pytest.mark.parametrize(("kind", "containers"), CONTAINER_PLACES)
@pytest.mark.parametrize(("setting", "field", "message"), CONTAINER, ids=[c[1] for c in CONTAINER])
def test_privileged_container_settings_are_refused_in_every_kind_of_container(
    kind: str, containers: str, setting: str, field: str, message: str
) -> None:
    if containers == "containers":
        resources = pod("", kind, container=setting)
    else:
        resources = pod(f"{containers}:\n- name: extra\n  image: busybox\n  {setting}\n", kind)
    found = problems_of(resources)
    wanted = f"{SPEC_PATH[kind]}.{containers}[0].{field}: "
    assert [p for p in found if wanted in p and message in p], found
    assert len(found) == 1, found


def test_an_ordinary_gpu_workload_passes() -> None:
    spec = """\
tolerations:
- {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}
securityContext:
  runAsUser: 1000
  fsGroup: 100
  sysctls: [{name: net.ipv4.tcp_keepalive_time, value: '600'}]
volumes:
- name: shm
  emptyDir: {medium: Memory}
"""
    container = """\
ports: [{containerPort: 8888}]
securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
resources: {limits: {"{{ resources.gpuResourceName }}": 1}}
"""
    resources = pod(spec, "Deployment", container=container)
    assert problems_of(resources) == []


# -------------------------------------------------------------------------------- the namespace and Services


@pytest.mark.parametrize(
    ("metadata", "field", "message"),
    [
        (
            "labels: {pod-security.kubernetes.io/enforce: privileged}",
            "metadata.labels.pod-security.kubernetes.io/enforce",
            "sets the namespace's Pod Security level, which gpupaas sets "
            "(pod-security.kubernetes.io/enforce=baseline)",
        ),
        (
            "annotations: {scheduler.alpha.kubernetes.io/tolerationsWhitelist: '[]'}",
            "metadata.annotations.scheduler.alpha.kubernetes.io/tolerationsWhitelist",
            "would change which tolerations the cluster allows the namespace's pods",
        ),
        (
            """annotations: {scheduler.alpha.kubernetes.io/defaultTolerations: '[{"operator": "Exists"}]'}""",
            "metadata.annotations.scheduler.alpha.kubernetes.io/defaultTolerations[0]",
            "tolerates every taint",
        ),
    ],
)
def test_a_template_may_not_loosen_what_the_namespace_allows(metadata: str, field: str, message: str) -> None:
    resources = f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {NS}\n  {metadata}\n"
    problem = only(resources)
    assert problem.startswith(f"document 1 (Namespace {{{{ instance.namespace }}}}), {field}: ")
    assert message in problem


def test_the_built_in_templates_would_pass_as_a_project_s_own() -> None:
    # The dedicated one's PodNodeSelector and PodTolerationRestriction annotations included.
    for template in BUILTIN_TEMPLATES:
        found = check_version(
            template.resources, template.inputs, template.outputs, scope=TemplateScope.PROJECT
        )
        assert found == [], template.name


def test_service_external_ips_and_claims_of_given_volumes_are_refused() -> None:
    service = "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec:\n  ports: [{port: 80}]\n  externalIPs: [1.2.3.4]\n"
    assert "spec.externalIPs: would take over traffic" in only(service)
    claim = (
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c}\nspec:\n  accessModes: [ReadWriteOnce]\n"
        "  resources: {requests: {storage: 1Gi}}\n  volumeName: someone-elses\n"
    )
    assert "spec.volumeName: would claim a given PersistentVolume" in only(claim)


@pytest.mark.parametrize("label", sorted(SERVICE_IDENTITY_LABELS))
@pytest.mark.parametrize("scope", list(TemplateScope))
def test_no_template_may_label_its_objects_as_a_gpu_service_s(label: str, scope: TemplateScope) -> None:
    config_map = f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels: {{{label}: x}}\n"
    assert problems_of(config_map, scope) == [
        f"document 1 (ConfigMap c), metadata.labels.{label}: is a label by which gpupaas finds a GPU "
        "service's objects; a template may not set it"
    ]
    deployment = pod("", "Deployment").replace("labels: {app: w}", f"labels: {{app: w, {label}: x}}")
    assert problems_of(deployment, scope) == [
        f"document 1 (Deployment w), spec.template.metadata.labels.{label}: is a label by which gpupaas "
        "finds a GPU service's objects; a template may not set it"
    ]


@pytest.mark.parametrize("template", BUILTIN_INSTANCE_TEMPLATES, ids=lambda t: t.name)
def test_gpu_service_pods_keep_to_the_confinement(template: Any) -> None:
    # Their pod specs are built by gpupaas from an instance template's fields (image, command, env,
    # ports, mount path): none of them can ask for anything privileged.
    # ... nor can the SSH server gpupaas adds to those that declare SSH access (an init container)
    spec = resolve(template.spec, {"generated_token": "t" * 32})
    plan = build_service_plan(
        service_id="5d0c7f7e-0000-4000-8000-00000000000a",
        name="svc",
        spec=spec,
        gpu_count=1 if template.spec.vendor != "CPU" else 0,
        compute_id="5d0c7f7e-0000-4000-8000-00000000000b",
        compute_name="train",
        project="ml",
        compute_resources={
            "cpu": "8",
            "memory": "64Gi",
            "storage": "100Gi",
            "gpuCount": 2,
            "gpuVendor": "NVIDIA",
        },
        profile_name="p",
        ssh=ssh_setup(spec, key_pair().public_line),
    )
    assert confinement_problems(plan.manifests, plan.namespace) == []


def test_the_label_constants_are_those_of_the_plan() -> None:
    assert {plan.SERVICE_LABEL, plan.COMPUTE_INSTANCE_LABEL} == SERVICE_IDENTITY_LABELS
    assert set(CONFINED_NAMESPACE_LABELS) == {"pod-security.kubernetes.io/enforce"}


# -------------------------------------------------------------------------------- quotas


def quota(**hard: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q"}, "spec": {"hard": hard}}


def test_a_quota_above_the_profile_is_refused_and_one_within_it_passes() -> None:
    within = quota(
        **{"requests.cpu": "8", "limits.memory": "64Gi", "requests.nvidia.com/gpu": "4", "pods": "500"}
    )
    above = quota(**{"limits.cpu": "8001m", "requests.storage": "1Ti", "requests.nvidia.com/gpu": "5"})

    def problems(manifests: list[dict[str, object]]) -> list[str]:
        found = quota_problems(
            manifests,
            cpu="8",
            memory="64Gi",
            storage="100Gi",
            gpu_count=4,
            gpu_resource_name="nvidia.com/gpu",
        )
        return [str(problem) for problem in found]

    assert problems([within]) == []
    assert problems([within, above]) == [
        "document 2 (ResourceQuota q), spec.hard.limits.cpu: 8001m is more than the profile's cpu (8): a "
        "confined template may not give an instance more than its profile",
        "document 2 (ResourceQuota q), spec.hard.requests.storage: 1Ti is more than the profile's storage "
        "(100Gi): a confined template may not give an instance more than its profile",
        "document 2 (ResourceQuota q), spec.hard.requests.nvidia.com/gpu: 5 is more than the profile's "
        "gpuCount (4): a confined template may not give an instance more than its profile",
    ]


def test_confinement_check_renders_with_the_given_resources() -> None:
    resources = """\
apiVersion: v1
kind: ResourceQuota
metadata: {name: q}
spec: {hard: {requests.cpu: "16"}}
"""
    from dataclasses import replace

    assert confinement_check(resources, [], replace(sample_context(), cpu="32")) == []
    [problem] = confinement_check(resources, [], replace(sample_context(), cpu="8"))
    assert isinstance(problem, Problem) and problem.path == ("spec", "hard", "requests.cpu")


def test_problems_locate_the_rendered_document() -> None:
    manifests = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ok"}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"}},
    ]
    [problem] = confinement_problems(manifests, "team-a-x")
    assert (problem.document, problem.path, problem.object_ref) == (1, ("metadata", "namespace"), "Secret s")
