"""Tenant confinement: what an environment template may ask of a shared cluster, decided on its
rendered manifests before anything is applied (README, "Rights").

A template's *scope* says who may write it: a project's ADMINs (PROJECT), or platform admins (the
built-in and global templates of the system project, PLATFORM). A cluster's *template policy*
says whom it trusts: CONFINED (the default) confines every template; TRUST_PLATFORM_TEMPLATES
lets PLATFORM templates create anything the worker's rights allow. A *confined* template:

- creates only namespaced objects of `ALLOWED_KINDS`, in its instance's namespace; the one
  cluster-scoped object it may name is that namespace itself;
- binds no ClusterRole and no subject outside that namespace (a RoleBinding's roleRef is a Role,
  its subjects are the namespace's ServiceAccounts);
- asks for nothing privileged in any pod template (Pod, Deployment, StatefulSet, DaemonSet,
  ReplicaSet, Job, CronJob, ...; containers, init and ephemeral containers alike): no hostPath
  volumes, hostNetwork, hostPID, hostIPC, hostPort, privileged, allowPrivilegeEscalation, added
  capabilities, unmasked /proc, Windows host processes, unconfined seccomp or AppArmor, or
  sysctls outside Kubernetes' safe set; no nodeName, no toleration of every taint or of the
  control plane's, no system-* priority class (they would get around placement and evict others);
- loosens nothing gpupaas sets: not the Pod Security level gpupaas gives its namespace
  (`CONFINED_NAMESPACE_LABELS`), not the tolerations the cluster allows, and its ResourceQuotas
  give no more than the profile does (`quota_problems`, at render, when the profile is known).

Whatever its scope, no template sets the labels that say whose an object is: a GPU service's are
refused (`label_problems`), an instance's own are overwritten by build_plan.

Everything here is a pure function of plain dicts that returns `Problem`s naming the document, the
object and the field: check_version (authoring) shows them to the template's author, build_plan
(render) refuses the run with them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from decimal import Decimal
from enum import Enum
from typing import Any

from gpupaas.core.quantities import parse_quantity
from gpupaas.provisioning.render.problems import Path, Problem, object_ref

__all__ = [
    "ALLOWED_KINDS",
    "CONFINED_NAMESPACE_LABELS",
    "POD_SPEC_PATHS",
    "SAFE_SYSCTLS",
    "SERVICE_IDENTITY_LABELS",
    "TemplatePolicy",
    "TemplateScope",
    "confinement_problems",
    "is_confined",
    "label_problems",
    "pod_specs",
    "quota_problems",
]


class TemplatePolicy(str, Enum):
    """What a cluster lets templates do (its `templatePolicy`)."""

    CONFINED = "CONFINED"
    TRUST_PLATFORM_TEMPLATES = "TRUST_PLATFORM_TEMPLATES"


class TemplateScope(str, Enum):
    """Who may write a template: a project's ADMINs, or platform admins only."""

    PROJECT = "PROJECT"
    PLATFORM = "PLATFORM"


def is_confined(scope: TemplateScope, policy: TemplatePolicy) -> bool:
    """Whether a template of `scope` is confined on a cluster with `policy`."""
    return scope == TemplateScope.PROJECT or policy == TemplatePolicy.CONFINED


# What a confined template may create, by API group ("" is the core group), whatever the version:
# what an instance's namespace needs to run GPU workloads, and nothing that reaches outside it.
# Left out on purpose, among others: Endpoints and EndpointSlices (they point a Service anywhere),
# Ingress and Gateway routes (they claim host names other tenants use), and every cluster-scoped
# kind but the instance's own Namespace.
ALLOWED_KINDS: Mapping[str, frozenset[str]] = {
    "": frozenset(
        {
            "Namespace",
            "ResourceQuota",
            "LimitRange",
            "ServiceAccount",
            "ConfigMap",
            "Secret",
            "PersistentVolumeClaim",
            "Pod",
            "Service",
        }
    ),
    "apps": frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"}),
    "batch": frozenset({"Job", "CronJob"}),
    "rbac.authorization.k8s.io": frozenset({"Role", "RoleBinding"}),
    "networking.k8s.io": frozenset({"NetworkPolicy"}),
    "policy": frozenset({"PodDisruptionBudget"}),
    "autoscaling": frozenset({"HorizontalPodAutoscaler"}),
}

# Where each kind keeps the spec of the pods its controller makes (a Pod is its own).
POD_SPEC_PATHS: Mapping[str, Path] = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "ReplicationController": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
    "PodTemplate": ("template", "spec"),
}

# Labels by which gpupaas tells whose an object is that a compute instance's objects never carry
# (plan.SERVICE_LABEL, plan.COMPUTE_INSTANCE_LABEL: a GPU service's). A template that set them could
# make its pods count as another project's service (its drift, its destroy). The compute instance's
# own (plan.MANAGED_BY, plan.INSTANCE_LABEL) are not refused: build_plan overwrites them.
SERVICE_IDENTITY_LABELS = frozenset({"gpupaas.io/service", "gpupaas.io/compute-instance"})

# The Pod Security level gpupaas gives the namespace of a confined instance, so that pods made later
# by the instance itself (through a ServiceAccount it was given rights with) are held to the same
# rules as the template's own; "baseline" forbids what the rules here forbid in pod specs.
CONFINED_NAMESPACE_LABELS: Mapping[str, str] = {"pod-security.kubernetes.io/enforce": "baseline"}
_POD_SECURITY_PREFIX = "pod-security.kubernetes.io/"
# Namespace annotations of the PodTolerationRestriction admission plugin.
_TOLERATIONS_WHITELIST = "scheduler.alpha.kubernetes.io/tolerationsWhitelist"
_DEFAULT_TOLERATIONS = "scheduler.alpha.kubernetes.io/defaultTolerations"

# The sysctls Kubernetes' Pod Security Standards (baseline) allow: namespaced per pod, isolated from
# the node and the other pods.
SAFE_SYSCTLS = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.ip_unprivileged_port_start",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_local_reserved_ports",
        "net.ipv4.tcp_keepalive_time",
        "net.ipv4.tcp_fin_timeout",
        "net.ipv4.tcp_keepalive_intvl",
        "net.ipv4.tcp_keepalive_probes",
    }
)

_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
_ASK = "ask a platform admin for a global template"


def _group(manifest: Mapping[str, Any]) -> str:
    return str(manifest.get("apiVersion") or "").rpartition("/")[0]


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _at(obj: object, path: Path) -> object:
    for part in path:
        if isinstance(part, int):
            obj = obj[part] if isinstance(obj, list) and 0 <= part < len(obj) else None
        else:
            obj = obj.get(part) if isinstance(obj, Mapping) else None
    return obj


def pod_specs(manifest: Mapping[str, Any]) -> Iterator[tuple[Path, Mapping[str, Any]]]:
    """The pod spec of a workload (path, spec), when it has one (see POD_SPEC_PATHS)."""
    path = POD_SPEC_PATHS.get(str(manifest.get("kind") or ""))
    if path is None:
        return
    spec = _at(manifest, path)
    if isinstance(spec, Mapping):
        yield path, spec


class _Checker:
    """Collects the problems of one rendered document."""

    def __init__(self, index: int, manifest: Mapping[str, Any], namespace: str, ref: str | None) -> None:
        self.index = index
        self.manifest = manifest
        self.namespace = namespace
        self.ref = ref
        self.problems: list[Problem] = []

    def add(self, path: Path, message: str) -> None:
        self.problems.append(Problem(message, self.index, path, object_ref=self.ref))

    # ------------------------------------------------------------------ the object itself

    def check(self) -> list[Problem]:
        kind = str(self.manifest.get("kind") or "")
        group = _group(self.manifest)
        allowed = ALLOWED_KINDS.get(group, frozenset())
        if kind not in allowed:
            where = f"{group}/{kind}" if group else kind
            self.add(
                ("kind",),
                f"{where} is not a kind a confined template may create (it may create: "
                + ", ".join(sorted({k for kinds in ALLOWED_KINDS.values() for k in kinds}))
                + f"); {_ASK}",
            )
            return self.problems
        metadata = _mapping(self.manifest.get("metadata"))
        if kind == "Namespace":
            self.namespace_object(metadata)
        else:
            given = metadata.get("namespace")
            if given not in (None, "", self.namespace):
                self.add(
                    ("metadata", "namespace"),
                    f'is "{given}": a confined template creates objects only in its instance\'s '
                    'namespace (leave metadata.namespace out, or write "{{ instance.namespace }}")',
                )
        if kind == "RoleBinding":
            self.role_binding()
        elif kind == "Service":
            self.service()
        elif kind == "PersistentVolumeClaim":
            self.claim()
        for path, spec in pod_specs(self.manifest):
            self.pod_spec(path, spec)
        return self.problems

    def namespace_object(self, metadata: Mapping[str, Any]) -> None:
        name = metadata.get("name")
        if name != self.namespace:
            self.add(
                ("metadata", "name"),
                f'is "{name}": the one Namespace a confined template may create is its instance\'s own '
                '(name: "{{ instance.namespace }}")',
            )
        for key in sorted(str(k) for k in _mapping(metadata.get("labels"))):
            if key.startswith(_POD_SECURITY_PREFIX):
                self.add(
                    ("metadata", "labels", key),
                    "sets the namespace's Pod Security level, which gpupaas sets "
                    f"({', '.join(f'{k}={v}' for k, v in CONFINED_NAMESPACE_LABELS.items())})",
                )
        annotations = _mapping(metadata.get("annotations"))
        if _TOLERATIONS_WHITELIST in annotations:
            self.add(
                ("metadata", "annotations", _TOLERATIONS_WHITELIST),
                "would change which tolerations the cluster allows the namespace's pods",
            )
        if _DEFAULT_TOLERATIONS in annotations:
            path: Path = ("metadata", "annotations", _DEFAULT_TOLERATIONS)
            try:
                tolerations = json.loads(str(annotations[_DEFAULT_TOLERATIONS]))
            except ValueError:
                self.add(path, "must be a JSON list of tolerations")
                return
            self.tolerations(path, tolerations)

    def role_binding(self) -> None:
        role = _mapping(self.manifest.get("roleRef"))
        if role.get("kind") != "Role":
            self.add(
                ("roleRef", "kind"),
                f'is "{role.get("kind")}": a confined template may bind only a Role of its own namespace, '
                f'never a ClusterRole (such as "{role.get("name")}")',
            )
        for index, subject in enumerate(_list(self.manifest.get("subjects"))):
            subject = _mapping(subject)
            kind = subject.get("kind")
            if kind != "ServiceAccount":
                self.add(
                    ("subjects", index, "kind"),
                    f'is "{kind}": a confined template may bind only ServiceAccounts of its own namespace',
                )
            elif subject.get("namespace") not in (None, "", self.namespace):
                self.add(
                    ("subjects", index, "namespace"),
                    f'is "{subject.get("namespace")}": a confined template may bind only ServiceAccounts '
                    "of its own namespace",
                )

    def service(self) -> None:
        if _list(_at(self.manifest, ("spec", "externalIPs"))):
            self.add(
                ("spec", "externalIPs"),
                "would take over traffic to those addresses on every node (CVE-2020-8554)",
            )

    def claim(self) -> None:
        if _at(self.manifest, ("spec", "volumeName")):
            self.add(
                ("spec", "volumeName"),
                "would claim a given PersistentVolume, perhaps another's: let the storage class make one",
            )
        source = _mapping(_at(self.manifest, ("spec", "dataSourceRef")))
        if source.get("namespace") not in (None, "", self.namespace):
            self.add(("spec", "dataSourceRef", "namespace"), "may name only the instance's own namespace")

    # ------------------------------------------------------------------ pods

    def pod_spec(self, path: Path, spec: Mapping[str, Any]) -> None:
        for field in ("hostNetwork", "hostPID", "hostIPC"):
            if spec.get(field) is True:
                self.add((*path, field), "shares the node's namespaces with the pod: not allowed")
        if spec.get("nodeName"):
            self.add(
                (*path, "nodeName"),
                "would bypass the scheduler (and the placement gpupaas adds): leave it to the scheduler",
            )
        priority = spec.get("priorityClassName")
        if isinstance(priority, str) and priority.startswith("system-"):
            self.add((*path, "priorityClassName"), f'"{priority}" is for the cluster\'s own components')
        for index, volume in enumerate(_list(spec.get("volumes"))):
            if isinstance(volume, Mapping) and "hostPath" in volume:
                self.add((*path, "volumes", index, "hostPath"), "mounts the node's file system: not allowed")
        self.tolerations((*path, "tolerations"), spec.get("tolerations"))
        context = _mapping(spec.get("securityContext"))
        self.security_context((*path, "securityContext"), context, pod=True)
        for index, sysctl in enumerate(_list(context.get("sysctls"))):
            name = _mapping(sysctl).get("name")
            if name not in SAFE_SYSCTLS:
                self.add(
                    (*path, "securityContext", "sysctls", index, "name"),
                    f'"{name}" is not a safe sysctl (safe: {", ".join(sorted(SAFE_SYSCTLS))})',
                )
        for field in _CONTAINER_LISTS:
            for index, container in enumerate(_list(spec.get(field))):
                container = _mapping(container)
                where = (*path, field, index)
                for port_index, port in enumerate(_list(container.get("ports"))):
                    if _mapping(port).get("hostPort"):
                        self.add(
                            (*where, "ports", port_index, "hostPort"),
                            "opens a port on the node itself: use a Service instead",
                        )
                self.security_context(
                    (*where, "securityContext"), _mapping(container.get("securityContext")), pod=False
                )

    def security_context(self, path: Path, context: Mapping[str, Any], *, pod: bool) -> None:
        if not pod:
            if context.get("privileged") is True:
                self.add((*path, "privileged"), "gives the container the node: not allowed")
            if context.get("allowPrivilegeEscalation") is True:
                self.add((*path, "allowPrivilegeEscalation"), "lets a process gain more rights: not allowed")
            added = _list(_mapping(context.get("capabilities")).get("add"))
            if added:
                self.add(
                    (*path, "capabilities", "add"),
                    f"adds Linux capabilities ({', '.join(str(c) for c in added)}): not allowed",
                )
            if context.get("procMount") == "Unmasked":
                self.add((*path, "procMount"), "unmasks the node's /proc: not allowed")
        if _mapping(context.get("windowsOptions")).get("hostProcess") is True:
            self.add((*path, "windowsOptions", "hostProcess"), "runs on the Windows node itself: not allowed")
        for field in ("seccompProfile", "appArmorProfile"):
            if _mapping(context.get(field)).get("type") == "Unconfined":
                self.add((*path, field, "type"), "turns the kernel's confinement off: not allowed")

    def tolerations(self, path: Path, tolerations: object) -> None:
        for index, toleration in enumerate(_list(tolerations)):
            toleration = _mapping(toleration)
            key = str(toleration.get("key") or "")
            if not key and toleration.get("operator") == "Exists":
                self.add((*path, index), "tolerates every taint, those that keep pods off reserved nodes too")
            elif key.startswith("node-role.kubernetes.io/"):
                self.add((*path, index, "key"), f'"{key}" would put the pods on the control plane')


def _refs(manifests: Sequence[Mapping[str, Any]], refs: Sequence[str | None] | None) -> list[str | None]:
    return list(refs) if refs is not None else [object_ref(manifest) for manifest in manifests]


def confinement_problems(
    manifests: Sequence[Mapping[str, Any]], namespace: str, refs: Sequence[str | None] | None = None
) -> list[Problem]:
    """What breaks the confinement in rendered manifests (document i is manifests[i]) of an instance
    whose namespace is `namespace`; [] when nothing does. `refs` names the objects in the problems
    (as the template wrote them, at authoring); by default their rendered kind and name."""
    problems: list[Problem] = []
    for index, (manifest, ref) in enumerate(zip(manifests, _refs(manifests, refs), strict=True)):
        problems.extend(_Checker(index, manifest, namespace, ref).check())
    return problems


def label_problems(
    manifests: Sequence[Mapping[str, Any]], refs: Sequence[str | None] | None = None
) -> list[Problem]:
    """Labels of an environment template's objects or pod templates that would make them a GPU
    service's (SERVICE_IDENTITY_LABELS); refused whatever the template's scope."""
    problems: list[Problem] = []
    for index, (manifest, ref) in enumerate(zip(manifests, _refs(manifests, refs), strict=True)):
        places: list[Path] = [("metadata", "labels")]
        places.extend((*path[:-1], "metadata", "labels") for path, _ in pod_specs(manifest))
        for place in dict.fromkeys(places):
            for key in sorted(str(k) for k in _mapping(_at(manifest, place))):
                if key in SERVICE_IDENTITY_LABELS:
                    problems.append(
                        Problem(
                            "is a label by which gpupaas finds a GPU service's objects; a template "
                            "may not set it",
                            index,
                            (*place, key),
                            object_ref=ref,
                        )
                    )
    return problems


def _quota_limits(
    cpu: str, memory: str, storage: str, gpu_count: int, gpu_resource_name: str
) -> dict[str, tuple[str, str]]:
    """Quota keys -> (the profile's amount, what it is called)."""
    limits: dict[str, tuple[str, str]] = {}
    for key in ("cpu", "requests.cpu", "limits.cpu"):
        limits[key] = (cpu, "cpu")
    for key in ("memory", "requests.memory", "limits.memory"):
        limits[key] = (memory, "memory")
    limits["requests.storage"] = (storage, "storage")
    for key in (gpu_resource_name, f"requests.{gpu_resource_name}", f"limits.{gpu_resource_name}"):
        limits[key] = (str(gpu_count), "gpuCount")
    return limits


def _amount(text: object) -> Decimal | None:
    try:
        return parse_quantity(str(text))
    except ValueError:
        return None


def quota_problems(
    manifests: Sequence[Mapping[str, Any]],
    *,
    cpu: str,
    memory: str,
    storage: str,
    gpu_count: int,
    gpu_resource_name: str,
) -> list[Problem]:
    """ResourceQuotas of a confined template that give more than the profile (cpu, memory, storage,
    GPUs of `gpu_resource_name`): the quota is what keeps an instance to what it was given."""
    limits = _quota_limits(cpu, memory, storage, gpu_count, gpu_resource_name)
    problems: list[Problem] = []
    for index, manifest in enumerate(manifests):
        if manifest.get("kind") != "ResourceQuota" or _group(manifest) != "":
            continue
        hard = _mapping(_at(manifest, ("spec", "hard")))
        for key, value in hard.items():
            if key not in limits:
                continue
            profile_value, name = limits[key]
            given, allowed = _amount(value), _amount(profile_value)
            if given is not None and allowed is not None and given > allowed:
                problems.append(
                    Problem(
                        f"{value} is more than the profile's {name} ({profile_value}): a confined "
                        "template may not give an instance more than its profile",
                        index,
                        ("spec", "hard", key),
                        object_ref=object_ref(manifest),
                    )
                )
    return problems
