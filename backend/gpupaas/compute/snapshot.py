"""The snapshot a compute instance takes of its profile at launch (ARCHITECTURE: "Compute
instances"): the template version and its YAML, resources, allocation, input definitions and
settings, outputs and output settings, labels and annotations, and the cluster. Editing the profile
later changes new instances only; an instance deploys from its snapshot even when the template is
deleted.

`Snapshot` is the typed form of the JSON kept in `compute_instances.snapshot` (camelCase keys, as
written since the first release; `snapshotVersion` says which form a row holds, 1 when absent). The
input and output definitions and settings stay in the catalog's JSON form
(catalog/service/definitions.py): a sensitive input's default and the profile's value of it are
copied sealed, as the catalog stores them. `effective_inputs` gives the values a deploy uses.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from gpupaas.catalog.models import AllocationType, ComputeProfile
from gpupaas.catalog.service.definitions import OverridePolicy, Unseal, definition_from_json
from gpupaas.core.errors import Collector, ErrorCode
from gpupaas.provisioning.inputs import check_value
from gpupaas.provisioning.render.policy import TemplateScope

JsonObject = dict[str, Any]


def _pairs(raw: Any) -> tuple[tuple[str, str], ...]:
    return tuple((str(pair[0]), str(pair[1])) for pair in raw or ())


@dataclass(frozen=True)
class SnapshotResources:
    cpu: str
    memory: str
    storage: str
    gpu_count: int
    gpu_vendor: str
    gpu_model: str | None

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SnapshotResources:
        return cls(
            cpu=str(data["cpu"]),
            memory=str(data["memory"]),
            storage=str(data["storage"]),
            gpu_count=int(data["gpuCount"]),
            gpu_vendor=str(data["gpuVendor"]),
            gpu_model=data.get("gpuModel"),
        )

    def to_json(self) -> JsonObject:
        return {
            "cpu": self.cpu,
            "memory": self.memory,
            "storage": self.storage,
            "gpuCount": self.gpu_count,
            "gpuVendor": self.gpu_vendor,
            "gpuModel": self.gpu_model,
        }


@dataclass(frozen=True)
class Snapshot:
    VERSION: ClassVar[int] = 1

    # The cluster is part of the snapshot: editing the profile later moves new instances only.
    cluster_id: str | None
    profile_id: str
    profile_name: str
    profile_revision: int
    template_version_id: str
    template_name: str
    template_version: str
    # The version's YAML, copied: the instance must still deploy if the template is deleted.
    template_resources: str
    allocation_type: AllocationType
    resources: SnapshotResources
    input_definitions: tuple[JsonObject, ...]
    input_settings: tuple[JsonObject, ...]
    outputs: tuple[JsonObject, ...]
    output_settings: tuple[JsonObject, ...]
    labels: tuple[tuple[str, str], ...]
    annotations: tuple[tuple[str, str], ...]
    # Who may write the template: a PLATFORM one may go beyond the tenant confinement on a cluster
    # that trusts platform templates. Snapshots taken before it was kept read as PROJECT (confined).
    template_scope: TemplateScope = TemplateScope.PROJECT

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Snapshot:
        version = int(data.get("snapshotVersion", 1))
        if version != cls.VERSION:
            raise ValueError(f"snapshot version {version} is not one this gpupaas reads ({cls.VERSION})")
        return cls(
            cluster_id=data.get("clusterId"),
            profile_id=str(data["profileId"]),
            profile_name=str(data["profileName"]),
            profile_revision=int(data["profileRevision"]),
            template_version_id=str(data["templateVersionId"]),
            template_name=str(data["templateName"]),
            template_version=str(data["templateVersion"]),
            template_resources=str(data["templateResources"]),
            allocation_type=AllocationType(data["allocationType"]),
            resources=SnapshotResources.from_json(data["resources"]),
            input_definitions=tuple(data.get("inputDefinitions") or ()),
            input_settings=tuple(data.get("inputSettings") or ()),
            outputs=tuple(data.get("outputs") or ()),
            output_settings=tuple(data.get("outputSettings") or ()),
            labels=_pairs(data.get("labels")),
            annotations=_pairs(data.get("annotations")),
            template_scope=TemplateScope(data.get("templateScope", TemplateScope.PROJECT.value)),
        )

    def to_json(self) -> JsonObject:
        return {
            "snapshotVersion": self.VERSION,
            "clusterId": self.cluster_id,
            "profileId": self.profile_id,
            "profileName": self.profile_name,
            "profileRevision": self.profile_revision,
            "templateVersionId": self.template_version_id,
            "templateName": self.template_name,
            "templateVersion": self.template_version,
            "templateResources": self.template_resources,
            "allocationType": self.allocation_type.value,
            "resources": self.resources.to_json(),
            "inputDefinitions": list(self.input_definitions),
            "inputSettings": list(self.input_settings),
            "outputs": list(self.outputs),
            "outputSettings": list(self.output_settings),
            "labels": [list(pair) for pair in self.labels],
            "annotations": [list(pair) for pair in self.annotations],
            "templateScope": self.template_scope.value,
        }

    @property
    def sensitive_inputs(self) -> frozenset[str]:
        return frozenset(d["name"] for d in self.input_definitions if d.get("sensitive"))


def take_snapshot(profile: ComputeProfile, cluster_id: uuid.UUID | None) -> Snapshot:
    """The profile as an instance launched from it now keeps it (its version, template and the
    template's project loaded)."""
    version = profile.template_version
    return Snapshot(
        cluster_id=str(cluster_id) if cluster_id else None,
        profile_id=str(profile.id),
        profile_name=profile.name,
        profile_revision=profile.revision,
        template_version_id=str(version.id),
        template_name=version.template.name,
        template_version=version.version,
        template_resources=version.resources,
        allocation_type=profile.allocation_type,
        resources=SnapshotResources(
            cpu=profile.cpu,
            memory=profile.memory,
            storage=profile.storage,
            gpu_count=profile.gpu_count,
            gpu_vendor=profile.gpu_vendor.value,
            gpu_model=profile.gpu_model,
        ),
        input_definitions=tuple(version.inputs),
        input_settings=tuple(profile.input_settings),
        outputs=tuple(version.outputs),
        output_settings=tuple(profile.output_settings),
        labels=_pairs(profile.labels),
        annotations=_pairs(profile.annotations),
        template_scope=TemplateScope.PLATFORM
        if version.template.project.is_system
        else TemplateScope.PROJECT,
    )


def effective_inputs(
    problems: Collector, snapshot: Snapshot, given: Sequence[tuple[str, str]], unseal: Unseal
) -> dict[str, str]:
    """The profile's values, then the user's where the override policy allows; checks each.

    `given` holds plain values (what a caller sends, an instance's own values unsealed); `unseal`
    turns the snapshot's sealed ones (sensitive defaults and values) into what the result holds."""
    definitions = {d["name"]: definition_from_json(d, unseal) for d in snapshot.input_definitions}
    settings = {s["name"]: s for s in snapshot.input_settings}
    values: dict[str, str] = {}
    for name, known in definitions.items():
        default = settings.get(name, {}).get("value")
        if default is not None and known.sensitive:
            default = unseal(default)
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
