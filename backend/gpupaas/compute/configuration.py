"""An instance's configuration: its profile's snapshot with the user's own values. What users see
of inputs (sensitive ones masked) and outputs, how a masked value given back is read, how the
user's values are kept (sensitive ones sealed, as the snapshot keeps the profile's), and the plan
the drivers apply (the only place sensitive values are unsealed: the worker's, and the trial
render of a save)."""

from __future__ import annotations

from collections.abc import Sequence

from gpupaas.catalog.service.definitions import (
    SENSITIVE_MASK,
    Unseal,
    definition_from_json,
    output_from_json,
    unsealing,
)
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.snapshot import effective_inputs
from gpupaas.core.crypto import DecryptionError, Sealer
from gpupaas.core.errors import Collector
from gpupaas.provisioning.plan import PermanentError, Plan, build_plan
from gpupaas.provisioning.registry import ClusterTarget, resource_names
from gpupaas.provisioning.render.placeholders import PLACEHOLDER
from gpupaas.provisioning.render.policy import TemplatePolicy


def unmasked(
    instance: ComputeInstance, given: Sequence[tuple[str, str]], unseal: Unseal
) -> list[tuple[str, str]]:
    """The given inputs with a sensitive input's mask (what the API showed) read as "keep it": the
    instance's own value (unsealed), or left out (the profile's value stands) when it has none."""
    sensitive = instance.profile_snapshot.sensitive_inputs
    own = {pair[0]: pair[1] for pair in instance.inputs}
    kept: list[tuple[str, str]] = []
    for name, value in given:
        if name in sensitive and value == SENSITIVE_MASK:
            if name in own:
                kept.append((name, unseal(own[name])))
            continue
        kept.append((name, value))
    return kept


def set_inputs(
    problems: Collector, instance: ComputeInstance, given: Sequence[tuple[str, str]], secret_key: str
) -> None:
    """The caller's own input values (a sensitive input's mask keeps the value it stands for),
    checked against the snapshot, kept on the instance with the sensitive ones sealed."""
    sealer = Sealer(secret_key)
    unseal = unsealing(sealer, "compute instance")
    plain = unmasked(instance, given, unseal)
    effective_inputs(problems, instance.profile_snapshot, plain, unseal)
    sensitive = instance.profile_snapshot.sensitive_inputs
    instance.inputs = [[name, sealer.seal(value) if name in sensitive else value] for name, value in plain]


def check_inputs(problems: Collector, instance: ComputeInstance, secret_key: str) -> None:
    """Whether the instance's inputs as they are satisfy the snapshot (a required one has a value)."""
    unseal = unsealing(Sealer(secret_key), "compute instance")
    effective_inputs(problems, instance.profile_snapshot, _own_inputs(instance, unseal), unseal)


def _own_inputs(instance: ComputeInstance, unseal: Unseal) -> list[tuple[str, str]]:
    """The instance's own values, the sensitive ones unsealed."""
    sensitive = instance.profile_snapshot.sensitive_inputs
    return [(name, unseal(value) if name in sensitive else value) for name, value in instance.inputs]


def _masked(value: str) -> str:
    return SENSITIVE_MASK


def masked_inputs(instance: ComputeInstance) -> list[tuple[str, str]]:
    """The effective input values as users see them: sensitive ones masked (and never unsealed)."""
    snapshot = instance.profile_snapshot
    sensitive = snapshot.sensitive_inputs
    own = [(name, SENSITIVE_MASK if name in sensitive else value) for name, value in instance.inputs]
    # A kept sensitive value was checked when it was saved: its mask stands for it, unchecked.
    plain = [(name, value) for name, value in own if name not in sensitive]
    values = effective_inputs(Collector(), snapshot, plain, _masked)
    for name, value in own:
        if name in sensitive:
            values.setdefault(name, value)
    return [(name, SENSITIVE_MASK if name in sensitive else value) for name, value in values.items()]


def visible_outputs(
    instance: ComputeInstance, *, reveal_sensitive: bool, sealer: Sealer
) -> list[tuple[str, str]]:
    """The outputs the profile shows, by their display names; a sensitive one's value (kept sealed)
    masked unless `reveal_sensitive` (for the instance's owner and project admins), then unsealed."""
    snapshot = instance.profile_snapshot
    settings = {s["name"]: s for s in snapshot.output_settings}
    secret = set() if reveal_sensitive else sensitive_outputs(instance)
    shown = []
    for output in snapshot.outputs:
        name = output["name"]
        setting = settings.get(name, {})
        if not setting.get("visible", True) or name not in instance.outputs:
            continue
        value = SENSITIVE_MASK if name in secret else sealer.unseal(instance.outputs[name])
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


def sealed_outputs(instance: ComputeInstance, outputs: dict[str, str], sealer: Sealer) -> dict[str, str]:
    """The outputs of a run as the instance keeps them: the sensitive ones sealed, as its own
    sensitive inputs are (an output that echoes a password must not hold it in plain text)."""
    secret = sensitive_outputs(instance)
    return {name: sealer.seal(value) if name in secret else value for name, value in outputs.items()}


def _merged_pairs(base: Sequence[Sequence[str]], own: Sequence[Sequence[str]]) -> dict[str, str]:
    merged = {pair[0]: pair[1] for pair in base}
    merged.update({pair[0]: pair[1] for pair in own})
    return merged


def _plan_unsealing(secret_key: str) -> Unseal:
    sealer = Sealer(secret_key)

    def unseal(stored: str) -> str:
        try:
            return sealer.unseal(stored)
        except DecryptionError:
            raise PermanentError(
                "a sensitive input value of the instance cannot be read: it was sealed with another "
                "GPUPAAS_SECRET_KEY (start gpupaas with that key again, or set the value again)"
            ) from None

    return unseal


def plan_for(
    instance: ComputeInstance, project_name: str, target: ClusterTarget | None = None, *, secret_key: str
) -> Plan:
    """The plan of the instance as it is saved now, for the cluster `target` (its GPU resource names
    and template policy; None: the defaults, CONFINED), its sensitive values unsealed with
    `secret_key`. Raises PermanentError when it cannot render; a plan the tenant confinement
    refuses says so in `Plan.refused`."""
    snapshot = instance.profile_snapshot
    unseal = _plan_unsealing(secret_key)
    inputs = effective_inputs(Collector(), snapshot, _own_inputs(instance, unseal), unseal)
    return build_plan(
        instance_id=str(instance.id),
        instance_name=instance.name,
        project=project_name,
        profile_name=snapshot.profile_name,
        allocation=snapshot.allocation_type.value,
        resources=snapshot.resources.to_json(),
        template_resources=snapshot.template_resources,
        input_definitions=[definition_from_json(d, unseal) for d in snapshot.input_definitions],
        input_values=inputs,
        outputs=[output_from_json(o) for o in snapshot.outputs],
        labels=_merged_pairs(snapshot.labels, instance.labels),
        annotations=_merged_pairs(snapshot.annotations, instance.annotations),
        gpu_resource_names=resource_names(target),
        template_scope=snapshot.template_scope,
        template_policy=target.template_policy if target is not None else TemplatePolicy.CONFINED,
    )
