"""The plan of one run: everything a driver needs to apply or destroy an instance, built by a pure
function from the instance's snapshot, so that a redelivered command builds the same plan."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from gpupaas.core import gpu_resources
from gpupaas.provisioning.inputs import InputDefinition, typed_value
from gpupaas.provisioning.render.policy import (
    CONFINED_NAMESPACE_LABELS,
    TemplatePolicy,
    TemplateScope,
    confinement_problems,
    is_confined,
    label_problems,
    quota_problems,
)
from gpupaas.provisioning.render.problems import Problem, TemplateError
from gpupaas.provisioning.render.rendering import OutputDefinition, RenderContext, render

# The extended resource each vendor's device plugin advertises, when the GPU model says nothing more
# (core/gpu_resources.py: Ascend's is per chip).
GPU_RESOURCE_NAMES: dict[str, str] = dict(gpu_resources.DEFAULT_RESOURCE_NAMES)

MANAGED_BY = "app.kubernetes.io/managed-by"
# The objects of a compute instance carry its id in INSTANCE_LABEL; those of a GPU service
# instance carry the service's id in SERVICE_LABEL and its compute instance's in
# COMPUTE_INSTANCE_LABEL (not INSTANCE_LABEL: a service's pods are not the compute instance's,
# whose drift watch and destroy sweep go by INSTANCE_LABEL).
INSTANCE_LABEL = "gpupaas.io/instance"
SERVICE_LABEL = "gpupaas.io/service"
COMPUTE_INSTANCE_LABEL = "gpupaas.io/compute-instance"
# On an object a delete must leave in place (a service's workspace claim with reclaim KEEP): the
# drivers take the instance's labels off it instead of deleting it, and annotate whose it was.
RECLAIM_ANNOTATION = "gpupaas.io/reclaim"
RECLAIM_KEEP = "Keep"
KEPT_FROM_ANNOTATION = "gpupaas.io/kept-from"


class DriverError(Exception):
    """A run failed. `permanent`: retrying cannot help (FAILED with this message a person can act on)."""

    def __init__(self, message: str, *, permanent: bool) -> None:
        super().__init__(message)
        self.permanent = permanent


class PermanentError(DriverError):
    def __init__(self, message: str) -> None:
        super().__init__(message, permanent=True)


class TemporaryError(DriverError):
    def __init__(self, message: str) -> None:
        super().__init__(message, permanent=False)


@dataclass(frozen=True)
class Plan:
    """One instance's desired state: rendered manifests plus what admission and outputs need."""

    instance_id: str
    instance_name: str
    project: str
    namespace: str
    allocation: str  # "DEDICATED" | "SHARED"
    cpu: str
    memory: str
    storage: str
    gpu_count: int
    gpu_vendor: str
    gpu_model: str | None
    gpu_resource_name: str
    manifests: tuple[dict[str, Any], ...]
    outputs: tuple[OutputDefinition, ...]
    context: RenderContext
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    # The label whose value is `instance_id` on every object of the plan: drivers find, watch and
    # sweep the plan's objects by it.
    owner_label: str = INSTANCE_LABEL
    # A GPU service instance's plan: the id of the compute instance it runs in. Its objects go into
    # that instance's namespace and use its quota; no capacity of its own is admitted.
    within: str | None = None
    # Why the plan may not be applied (the tenant confinement, decided when it was built: see
    # build_plan), or None. Drivers refuse to apply such a plan; destroying it is allowed, so
    # that whatever an older gpupaas applied can still go.
    refused: str | None = None

    def check_admissible(self) -> None:
        """Raises PermanentError when the plan may not be applied (`refused`)."""
        if self.refused is not None:
            raise PermanentError(self.refused)


def namespace_for(project: str, instance_name: str, instance_id: str) -> str:
    """The instance's namespace: readable (project and instance name) and unique (a digest of the
    instance's id), a DNS-1123 label of at most 63 characters. The digest matters: "a" + "b-c"
    and "a-b" + "c" would otherwise share a namespace across projects, and an instance made again
    under a deleted one's name would meet its namespace still terminating."""
    digest = hashlib.sha256(instance_id.encode()).hexdigest()[:8]
    return f"{f'{project}-{instance_name}'[:54].rstrip('-')}-{digest}"


def build_plan(
    *,
    instance_id: str,
    instance_name: str,
    project: str,
    profile_name: str,
    allocation: str,
    resources: Mapping[str, Any],
    template_resources: str,
    input_definitions: Sequence[InputDefinition],
    input_values: Mapping[str, str],
    outputs: Sequence[OutputDefinition],
    labels: Mapping[str, str],
    annotations: Mapping[str, str],
    generated_token: str = "",
    gpu_resource_names: Mapping[str, str] | None = None,
    template_scope: TemplateScope = TemplateScope.PROJECT,
    template_policy: TemplatePolicy = TemplatePolicy.CONFINED,
) -> Plan:
    """Renders the template for the instance; raises PermanentError when it cannot be rendered.

    gpupaas's labels win over the template's: every object carries MANAGED_BY and INSTANCE_LABEL
    with this instance's id, whatever the template says (else a template could claim another
    instance's objects). Unless the template is trusted (a PLATFORM one on a cluster whose
    `template_policy` is TRUST_PLATFORM_TEMPLATES), it is confined (render/policy.py): the plan
    is `refused` when the rendered objects break the confinement or give more than the profile
    (its quota), and the instance's Namespace gets gpupaas's Pod Security level."""
    vendor = str(resources["gpuVendor"])
    resource_name = gpu_resources.resource_name(vendor, resources.get("gpuModel"), gpu_resource_names)
    namespace = namespace_for(project, instance_name, instance_id)
    typed: dict[str, str | int | float | bool] = {}
    for definition in input_definitions:
        raw = input_values.get(definition.name)
        if raw is None:
            continue
        try:
            typed[definition.name] = typed_value(definition, raw)
        except ValueError as error:
            raise PermanentError(f'input "{definition.name}": {error}') from None
    context = RenderContext(
        inputs=typed,
        instance_name=instance_name,
        instance_namespace=namespace,
        instance_id=instance_id,
        profile_name=profile_name,
        cpu=str(resources["cpu"]),
        memory=str(resources["memory"]),
        storage=str(resources["storage"]),
        gpu_count=int(resources["gpuCount"]),
        gpu_vendor=vendor,
        gpu_model=resources.get("gpuModel"),
        gpu_resource_name=resource_name,
        generated_token=generated_token,
    )
    try:
        manifests = render(template_resources, context)
    except TemplateError as error:
        raise PermanentError(
            "the template cannot be rendered: " + "; ".join(str(p) for p in error.problems)
        ) from None
    confined = is_confined(template_scope, template_policy)
    problems = _policy_problems(manifests, context, namespace, confined)
    identity = {MANAGED_BY: "gpupaas", INSTANCE_LABEL: instance_id}
    for manifest in manifests:
        metadata = manifest.setdefault("metadata", {})
        own = metadata.get("labels") or {}
        metadata["labels"] = {**labels, **own, **identity}
        if confined and manifest.get("kind") == "Namespace" and metadata.get("name") == namespace:
            metadata["labels"].update(CONFINED_NAMESPACE_LABELS)
        if annotations:
            metadata["annotations"] = {**annotations, **(metadata.get("annotations") or {})}
    return Plan(
        instance_id=instance_id,
        instance_name=instance_name,
        project=project,
        namespace=namespace,
        allocation=allocation,
        cpu=context.cpu,
        memory=context.memory,
        storage=context.storage,
        gpu_count=context.gpu_count,
        gpu_vendor=vendor,
        gpu_model=context.gpu_model,
        gpu_resource_name=resource_name,
        manifests=tuple(manifests),
        outputs=tuple(outputs),
        context=context,
        labels=dict(labels),
        annotations=dict(annotations),
        refused=_refusal(problems, template_scope, template_policy) if problems else None,
    )


def _policy_problems(
    manifests: list[dict[str, Any]], context: RenderContext, namespace: str, confined: bool
) -> list[Problem]:
    problems = label_problems(manifests)
    if confined:
        problems.extend(confinement_problems(manifests, namespace))
        problems.extend(
            quota_problems(
                manifests,
                cpu=context.cpu,
                memory=context.memory,
                storage=context.storage,
                gpu_count=context.gpu_count,
                gpu_resource_name=context.gpu_resource_name,
            )
        )
    return problems


def _refusal(problems: Sequence[Problem], scope: TemplateScope, policy: TemplatePolicy) -> str:
    if scope == TemplateScope.PROJECT:
        why = "the project's template breaks the tenant confinement"
    elif policy == TemplatePolicy.CONFINED:
        why = (
            "the platform template breaks the tenant confinement of this cluster (its templatePolicy "
            "is CONFINED; a platform admin may set TRUST_PLATFORM_TEMPLATES)"
        )
    else:
        why = "the template sets labels gpupaas reserves"
    return f"{why}, so nothing was applied: " + "; ".join(str(problem) for problem in problems)
