"""The snapshot a compute instance takes of its profile at launch, and what follows from it: the
effective input values (the profile's, then the user's where the profile allows), what users see
of inputs and outputs, and the plan the drivers apply. Editing the profile later changes new
instances only."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from gpupaas.catalog.models import ComputeProfile
from gpupaas.catalog.service import SENSITIVE_MASK, OverridePolicy, definition_from_json, output_from_json
from gpupaas.compute.models import ComputeInstance
from gpupaas.core.errors import Collector, ErrorCode
from gpupaas.provisioning.inputs import check_value
from gpupaas.provisioning.plan import Plan, build_plan


def take_snapshot(profile: ComputeProfile, cluster_id: uuid.UUID | None) -> dict[str, Any]:
    version = profile.template_version
    return {
        # The cluster is part of the snapshot: editing the profile later moves new instances only.
        "clusterId": str(cluster_id) if cluster_id else None,
        "profileId": str(profile.id),
        "profileName": profile.name,
        "profileRevision": profile.revision,
        "templateVersionId": str(version.id),
        "templateName": version.template.name,
        "templateVersion": version.version,
        # Copied: the instance must still deploy if the template is deleted later.
        "templateResources": version.resources,
        "allocationType": profile.allocation_type.value,
        "resources": {
            "cpu": profile.cpu,
            "memory": profile.memory,
            "storage": profile.storage,
            "gpuCount": profile.gpu_count,
            "gpuVendor": profile.gpu_vendor.value,
            "gpuModel": profile.gpu_model,
        },
        "inputDefinitions": list(version.inputs),
        "inputSettings": list(profile.input_settings),
        "outputs": list(version.outputs),
        "outputSettings": list(profile.output_settings),
        "labels": list(profile.labels),
        "annotations": list(profile.annotations),
    }


def effective_inputs(
    problems: Collector, snapshot: dict[str, Any], given: Sequence[tuple[str, str]]
) -> dict[str, str]:
    """The profile's values, then the user's where the override policy allows; checks each."""
    definitions = {d["name"]: definition_from_json(d) for d in snapshot["inputDefinitions"]}
    settings = {s["name"]: s for s in snapshot["inputSettings"]}
    values: dict[str, str] = {}
    for name, known in definitions.items():
        default = settings.get(name, {}).get("value")
        if default is None:
            default = known.default
        if default is not None:
            values[name] = default
    seen: set[str] = set()
    for index, (name, value) in enumerate(given):
        path = ("input", "inputs", index)
        definition = definitions.get(name)
        if definition is None:
            problems.add(
                (*path, "key"),
                f'the profile has no input "{name}" (inputs: {", ".join(definitions) or "none"})',
            )
            continue
        if name in seen:
            problems.add((*path, "key"), f'input "{name}" is given twice')
            continue
        seen.add(name)
        setting = settings.get(name, {})
        policy = setting.get("override", OverridePolicy.ALLOWED)
        if policy == OverridePolicy.NOT_ALLOWED and value != values.get(name):
            problems.add(
                (*path, "value"),
                f'input "{name}" is set by the profile and cannot be changed',
                ErrorCode.FORBIDDEN,
            )
            continue
        allowed = setting.get("allowedValues") or []
        if policy == OverridePolicy.RESTRICTED and value not in allowed:
            problems.add((*path, "value"), f'input "{name}" must be one of: {", ".join(allowed)}')
            continue
        message = check_value(definition, value)
        if message is not None:
            problems.add((*path, "value"), f'input "{name}" {message}')
            continue
        values[name] = value
    for name, known in definitions.items():
        required = settings.get(name, {}).get("required", known.required)
        if required and not values.get(name):
            problems.add(("input", "inputs"), f'input "{name}" is required', ErrorCode.REQUIRED)
    return values


def unmasked(instance: ComputeInstance, given: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """The given inputs with a sensitive input's mask (what the API showed) read as "keep it": the
    instance's own value, or left out (the profile's value stands) when it has none."""
    sensitive = {d["name"] for d in instance.snapshot.get("inputDefinitions", []) if d.get("sensitive")}
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
    snapshot = instance.snapshot
    values = effective_inputs(Collector(), snapshot, [(k, v) for k, v in instance.inputs])
    sensitive = {d["name"] for d in snapshot["inputDefinitions"] if d.get("sensitive")}
    return [(name, SENSITIVE_MASK if name in sensitive else value) for name, value in values.items()]


def visible_outputs(instance: ComputeInstance) -> list[tuple[str, str]]:
    settings = {s["name"]: s for s in instance.snapshot.get("outputSettings", [])}
    shown = []
    for output in instance.snapshot.get("outputs", []):
        name = output["name"]
        setting = settings.get(name, {})
        if not setting.get("visible", True) or name not in instance.outputs:
            continue
        shown.append((setting.get("displayName") or name, instance.outputs[name]))
    return shown


def _merged_pairs(base: Sequence[Sequence[str]], own: Sequence[Sequence[str]]) -> dict[str, str]:
    merged = {pair[0]: pair[1] for pair in base}
    merged.update({pair[0]: pair[1] for pair in own})
    return merged


def plan_for(
    instance: ComputeInstance, project_name: str, gpu_resource_names: dict[str, str] | None = None
) -> Plan:
    """The plan of the instance as it is saved now (raises PermanentError when it cannot render)."""
    snapshot = instance.snapshot
    inputs = effective_inputs(Collector(), snapshot, [(k, v) for k, v in instance.inputs])
    return build_plan(
        instance_id=str(instance.id),
        instance_name=instance.name,
        project=project_name,
        profile_name=snapshot["profileName"],
        allocation=snapshot["allocationType"],
        resources=snapshot["resources"],
        template_resources=snapshot["templateResources"],
        input_definitions=[definition_from_json(d) for d in snapshot["inputDefinitions"]],
        input_values=inputs,
        outputs=[output_from_json(o) for o in snapshot["outputs"]],
        labels=_merged_pairs(snapshot.get("labels", []), instance.labels),
        annotations=_merged_pairs(snapshot.get("annotations", []), instance.annotations),
        gpu_resource_names=gpu_resource_names,
    )
