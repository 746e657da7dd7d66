"""An instance's configuration: its profile's snapshot with the user's own values. What users see
of inputs (sensitive ones masked) and outputs, how a masked value given back is read, and the plan
the drivers apply."""

from __future__ import annotations

from collections.abc import Sequence

from gpupaas.catalog.service.definitions import SENSITIVE_MASK, definition_from_json, output_from_json
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.snapshot import effective_inputs
from gpupaas.core.errors import Collector
from gpupaas.provisioning.plan import Plan, build_plan
from gpupaas.provisioning.registry import ClusterTarget, resource_names
from gpupaas.provisioning.render.placeholders import PLACEHOLDER
from gpupaas.provisioning.render.policy import TemplatePolicy


def unmasked(instance: ComputeInstance, given: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The given inputs with a sensitive input's mask (what the API showed) read as "keep it": the
    instance's own value, or left out (the profile's value stands) when it has none."""
    sensitive = instance.profile_snapshot.sensitive_inputs
    own = {pair[0]: pair[1] for pair in instance.inputs}
    kept: list[tuple[str, str]] = []
    for name, value in given:
        if name in sensitive and value == SENSITIVE_MASK:
            if name in own:
                kept.append((name, own[name]))
            continue
        kept.append((name, value))
    return kept


def masked_inputs(instance: ComputeInstance) -> list[tuple[str, str]]:
    """The effective input values as users see them: sensitive ones masked."""
    snapshot = instance.profile_snapshot
    values = effective_inputs(Collector(), snapshot, [(k, v) for k, v in instance.inputs])
    sensitive = snapshot.sensitive_inputs
    return [(name, SENSITIVE_MASK if name in sensitive else value) for name, value in values.items()]


def visible_outputs(instance: ComputeInstance, *, reveal_sensitive: bool) -> list[tuple[str, str]]:
    """The outputs the profile shows, by their display names; a sensitive one's value masked unless
    `reveal_sensitive` (for the instance's owner and project admins)."""
    snapshot = instance.profile_snapshot
    settings = {s["name"]: s for s in snapshot.output_settings}
    secret = set() if reveal_sensitive else sensitive_outputs(instance)
    shown = []
    for output in snapshot.outputs:
        name = output["name"]
        setting = settings.get(name, {})
        if not setting.get("visible", True) or name not in instance.outputs:
            continue
        value = SENSITIVE_MASK if name in secret else instance.outputs[name]
        shown.append((setting.get("displayName") or name, value))
    return shown


def sensitive_outputs(instance: ComputeInstance) -> frozenset[str]:
    """The outputs whose value carries a secret: those that read a sensitive input, the generated
    token or a Secret among the applied objects (`objects.Secret.<path>`)."""
    snapshot = instance.profile_snapshot
    secret_variables = {f"inputs.{name}" for name in snapshot.sensitive_inputs} | {"generated.token"}
    found = set()
    for output in snapshot.outputs:
        for match in PLACEHOLDER.finditer(output["value"]):
            expression = match.group(1).strip()
            if expression in secret_variables or expression.startswith("objects.Secret."):
                found.add(output["name"])
    return frozenset(found)


def _merged_pairs(base: Sequence[Sequence[str]], own: Sequence[Sequence[str]]) -> dict[str, str]:
    merged = {pair[0]: pair[1] for pair in base}
    merged.update({pair[0]: pair[1] for pair in own})
    return merged


def plan_for(instance: ComputeInstance, project_name: str, target: ClusterTarget | None = None) -> Plan:
    """The plan of the instance as it is saved now, for the cluster `target` (its GPU resource names
    and template policy; None: the defaults, CONFINED). Raises PermanentError when it cannot
    render; a plan the tenant confinement refuses says so in `Plan.refused`."""
    snapshot = instance.profile_snapshot
    inputs = effective_inputs(Collector(), snapshot, [(k, v) for k, v in instance.inputs])
    return build_plan(
        instance_id=str(instance.id),
        instance_name=instance.name,
        project=project_name,
        profile_name=snapshot.profile_name,
        allocation=snapshot.allocation_type.value,
        resources=snapshot.resources.to_json(),
        template_resources=snapshot.template_resources,
        input_definitions=[definition_from_json(d) for d in snapshot.input_definitions],
        input_values=inputs,
        outputs=[output_from_json(o) for o in snapshot.outputs],
        labels=_merged_pairs(snapshot.labels, instance.labels),
        annotations=_merged_pairs(snapshot.annotations, instance.annotations),
        gpu_resource_names=resource_names(target),
        template_scope=snapshot.template_scope,
        template_policy=target.template_policy if target is not None else TemplatePolicy.CONFINED,
    )
