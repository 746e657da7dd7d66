"""The rules of the catalog: environment templates, their versions, compute profiles and sharing.

Project ADMINs manage their project's templates and profiles; MEMBERs read them (template
internals hidden) and see the catalog; anything in a project the caller cannot see is reported
as not existing. Built-in templates live in the system project: every project may pin them,
only platform admins change them.
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tortoise.exceptions import IntegrityError
from tortoise.expressions import Q
from tortoise.transactions import in_transaction

from gpupaas.accounts import sharing
from gpupaas.accounts.models import Project
from gpupaas.accounts.service import ensure_system_project, project_by_name, require_project
from gpupaas.accounts.sharing import SharingMode
from gpupaas.catalog import readme as readme_mod
from gpupaas.catalog import reads
from gpupaas.catalog.models import (
    AllocationType,
    ComputeProfile,
    ComputeProfileShare,
    EnvironmentTemplate,
    EnvironmentTemplateVersion,
    VersionState,
)
from gpupaas.clusters.models import Cluster
from gpupaas.clusters.service import cluster_for_profile
from gpupaas.core import quantities, validation
from gpupaas.core.actor import Actor
from gpupaas.core.errors import Collector, ErrorCode, Forbidden, NotFound, UserErrors
from gpupaas.core.gpus import Vendor
from gpupaas.core.ids import parse_id
from gpupaas.core.pagination import Page
from gpupaas.core.search import matching
from gpupaas.provisioning import builtins
from gpupaas.provisioning.inputs import InputDefinition, check_value
from gpupaas.provisioning.render.checks import check_version
from gpupaas.provisioning.render.rendering import OutputDefinition

_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,62}$")
MAX_RESOURCES_LENGTH = 512 * 1024
MAX_GPU_COUNT = 1024


class OverridePolicy:
    NOT_ALLOWED = "NOT_ALLOWED"
    ALLOWED = "ALLOWED"
    RESTRICTED = "RESTRICTED"
    ALL = (NOT_ALLOWED, ALLOWED, RESTRICTED)


# ---------------------------------------------------------------- plain inputs from the API layer


@dataclass
class InputDefinitionIn:
    name: str
    type: str
    description: str | None = None
    required: bool | None = None
    default: str | None = None
    options: list[str] | None = None
    pattern: str | None = None
    min: float | None = None
    max: float | None = None
    sensitive: bool | None = None


@dataclass
class OutputDefinitionIn:
    name: str
    value: str
    description: str | None = None


@dataclass
class ResourcesIn:
    cpu: str
    memory: str
    storage: str
    gpu_count: int
    gpu_vendor: Vendor
    gpu_model: str | None = None


@dataclass
class InputSettingIn:
    name: str
    value: str | None = None
    required: bool | None = None
    override: str | None = None
    allowed_values: list[str] | None = None


@dataclass
class OutputSettingIn:
    name: str
    display_name: str | None = None
    visible: bool | None = None


@dataclass
class ProfileIn:
    """Create: every required field set. Update: None means "leave as it is"."""

    name: str | None = None
    display_name: str | None = None
    description: str | None = None
    allocation_type: AllocationType | None = None
    template_version_id: str | None = None
    resources: ResourcesIn | None = None
    labels: list[tuple[str, str]] | None = None
    annotations: list[tuple[str, str]] | None = None
    icon_url: str | None = None
    readme: str | None = None
    input_settings: list[InputSettingIn] | None = None
    output_settings: list[OutputSettingIn] | None = None
    cluster_id: str | None = None


# ---------------------------------------------------------------- definitions as stored


def definition_from_json(data: dict[str, Any]) -> InputDefinition:
    return InputDefinition(
        name=data["name"],
        type=data["type"],
        description=data.get("description"),
        required=bool(data.get("required", False)),
        default=data.get("default"),
        options=tuple(data.get("options") or ()),
        pattern=data.get("pattern"),
        min=data.get("min"),
        max=data.get("max"),
        sensitive=bool(data.get("sensitive", False)),
    )


def definition_to_json(defn: InputDefinition) -> dict[str, Any]:
    return {
        "name": defn.name,
        "type": defn.type,
        "description": defn.description,
        "required": defn.required,
        "default": defn.default,
        "options": list(defn.options),
        "pattern": defn.pattern,
        "min": defn.min,
        "max": defn.max,
        "sensitive": defn.sensitive,
    }


def output_from_json(data: dict[str, Any]) -> OutputDefinition:
    return OutputDefinition(name=data["name"], description=data.get("description"), value=data["value"])


def output_to_json(out: OutputDefinition) -> dict[str, Any]:
    return {"name": out.name, "description": out.description, "value": out.value}


# ---------------------------------------------------------------- visibility


def can_see_internals(actor: Actor, template: EnvironmentTemplate, owner: Project) -> bool:
    """Template YAML is for the owning project's admins; built-in YAML for any project admin."""
    if actor.is_admin_of(owner.id):
        return True
    return owner.is_system and any(actor.is_admin_of(pid) for pid in actor.roles)


async def _template_for(actor: Actor, template_id: str) -> tuple[EnvironmentTemplate, Project] | None:
    actor.require_user()
    tid = parse_id(template_id)
    if tid is None:
        return None
    template = await EnvironmentTemplate.get_or_none(id=tid).select_related("project")
    if template is None or not actor.can_see(template.project):
        return None
    return template, template.project


async def get_template(actor: Actor, template_id: str) -> EnvironmentTemplate | None:
    found = await _template_for(actor, template_id)
    return found[0] if found else None


async def _require_template(actor: Actor, template_id: str, field: tuple[str, ...]) -> EnvironmentTemplate:
    found = await _template_for(actor, template_id)
    if found is None:
        raise UserErrors.one(field, "No such environment template.", ErrorCode.NOT_FOUND)
    template, owner = found
    actor.require_admin_of(owner)
    return template


async def _project_for_listing(actor: Actor, project: str) -> Project:
    found = await project_by_name(actor, project)
    if found is None:
        raise NotFound(f'project "{project}" not found')
    return found


# ---------------------------------------------------------------- environment templates


async def list_templates(actor: Actor, project: str, search: str | None) -> list[EnvironmentTemplate]:
    """The project's templates and the built-in ones, by name."""
    owner = await _project_for_listing(actor, project)
    query = EnvironmentTemplate.filter(Q(project_id=owner.id) | Q(project__is_system=True))
    rows: list[EnvironmentTemplate] = await matching(
        query, search, "name", "display_name", "description"
    ).order_by("-built_in", "name")
    return rows


async def create_template(
    actor: Actor, project: str, name: str, display_name: str | None, description: str | None
) -> EnvironmentTemplate:
    owner = await require_project(actor, project, ("input", "project"))
    actor.require_admin_of(owner)
    problems = Collector()
    problems.check(("input", "name"), validation.dns_label(name))
    display = (display_name or "").strip() or name
    problems.check(("input", "displayName"), validation.display_name(display))
    if description is not None:
        problems.check(("input", "description"), validation.description(description))
    if not problems and await EnvironmentTemplate.exists(project_id=owner.id, name=name):
        problems.add(
            ("input", "name"), f'a template named "{name}" already exists in this project', ErrorCode.TAKEN
        )
    problems.raise_if_any()
    try:
        template = await EnvironmentTemplate.create(
            project=owner, name=name, display_name=display, description=description or None
        )
    except IntegrityError:
        raise UserErrors.one(
            ("input", "name"), f'a template named "{name}" already exists in this project', ErrorCode.TAKEN
        ) from None
    return template


async def update_template(
    actor: Actor, template_id: str, name: str | None, display_name: str | None, description: str | None
) -> EnvironmentTemplate:
    template = await _require_template(actor, template_id, ("input", "id"))
    problems = Collector()
    if name is not None and name != template.name:
        problems.add(("input", "name"), "the name of a template cannot change", ErrorCode.IMMUTABLE)
    if display_name is not None:
        problems.check(("input", "displayName"), validation.display_name(display_name.strip()))
    if description is not None:
        problems.check(("input", "description"), validation.description(description))
    problems.raise_if_any()
    if display_name is not None:
        template.display_name = display_name.strip()
    if description is not None:
        template.description = description or None
    await template.save()
    return template


async def delete_template(actor: Actor, template_id: str) -> str:
    template = await _require_template(actor, template_id, ("id",))

    async def profiles_using() -> list[str]:
        names = await ComputeProfile.filter(template_version__template_id=template.id).values_list(
            "name", flat=True
        )
        return [str(n) for n in names]

    used = await profiles_using()
    if not used:
        try:
            await template.delete()
            return template_id
        except IntegrityError:  # a profile pinned one of its versions since we looked (the FK restricts)
            used = await profiles_using()
    names = ", ".join(sorted(str(n) for n in used)[:10])
    raise UserErrors.one(
        ("id",),
        f"this template is in use by compute profiles ({names}): move them to another template first",
        ErrorCode.INVALID_STATE,
    )


def _version_problems(
    version: str,
    resources: str,
    inputs: Sequence[InputDefinitionIn],
    outputs: Sequence[OutputDefinitionIn],
) -> tuple[Collector, list[InputDefinition], list[OutputDefinition]]:
    problems = Collector()
    if not _VERSION.match(version):
        problems.add(
            ("input", "version"),
            'must be 1-63 characters: letters, digits, ".", "_", "+" or "-", starting with a letter or digit '
            '(for example "1.0.0")',
        )
    definitions: list[InputDefinition] = []
    for index, item in enumerate(inputs):
        if item.type not in ("STRING", "NUMBER", "BOOLEAN", "QUANTITY"):
            problems.add(("input", "inputs", index, "type"), "must be STRING, NUMBER, BOOLEAN or QUANTITY")
            continue
        definitions.append(
            InputDefinition(
                name=item.name,
                type=item.type,  # type: ignore[arg-type]
                description=item.description,
                required=bool(item.required),
                default=item.default,
                options=tuple(item.options or ()),
                pattern=item.pattern,
                min=item.min,
                max=item.max,
                sensitive=bool(item.sensitive),
            )
        )
    outs = [OutputDefinition(name=o.name, description=o.description, value=o.value) for o in outputs]
    if len(resources) > MAX_RESOURCES_LENGTH:
        problems.add(("input", "resources"), f"must be at most {MAX_RESOURCES_LENGTH // 1024} KiB")
    elif not resources.strip():
        problems.add(("input", "resources"), "must hold at least one Kubernetes manifest", ErrorCode.REQUIRED)
    else:
        for problem in check_version(resources, definitions, outs):
            if problem.field == "resources" or not problem.path:
                problems.add(("input", problem.field), str(problem))
            else:
                problems.add(("input", problem.field, *problem.path), problem.message)
    return problems, definitions, outs


async def add_version(
    actor: Actor,
    template_id: str,
    version: str,
    resources: str,
    inputs: Sequence[InputDefinitionIn],
    outputs: Sequence[OutputDefinitionIn],
    state: VersionState | None,
) -> EnvironmentTemplateVersion:
    template = await _require_template(actor, template_id, ("input", "template"))
    problems, definitions, outs = _version_problems(version, resources, inputs, outputs)
    if not problems and await EnvironmentTemplateVersion.exists(template_id=template.id, version=version):
        problems.add(("input", "version"), f'version "{version}" already exists', ErrorCode.TAKEN)
    problems.raise_if_any()
    try:
        async with in_transaction():
            created = await EnvironmentTemplateVersion.create(
                template=template,
                version=version,
                state=state or VersionState.DRAFT,
                resources=resources,
                inputs=[definition_to_json(d) for d in definitions],
                outputs=[output_to_json(o) for o in outs],
            )
            await template.save(update_fields=["updated_at"])
    except IntegrityError:
        raise UserErrors.one(
            ("input", "version"), f'version "{version}" already exists', ErrorCode.TAKEN
        ) from None
    return created


async def _version_for(actor: Actor, version_id: str) -> tuple[EnvironmentTemplateVersion, Project] | None:
    actor.require_user()
    vid = parse_id(version_id)
    if vid is None:
        return None
    version = await EnvironmentTemplateVersion.get_or_none(id=vid).select_related("template__project")
    if version is None or not actor.can_see(version.template.project):
        return None
    return version, version.template.project


async def set_version_state(actor: Actor, version_id: str, state: VersionState) -> EnvironmentTemplateVersion:
    found = await _version_for(actor, version_id)
    if found is None:
        raise UserErrors.one(("id",), "No such environment template version.", ErrorCode.NOT_FOUND)
    version, owner = found
    actor.require_admin_of(owner)
    if version.state != state:
        version.state = state
        await version.save(update_fields=["state"])
    return version


async def sync_builtin_templates() -> None:
    """Insert the built-in templates and versions that are missing (idempotent; never overwrites)."""
    system = await ensure_system_project()
    for builtin in builtins.BUILTIN_TEMPLATES:
        template = await EnvironmentTemplate.get_or_none(project_id=system.id, name=builtin.name)
        if template is None:
            try:
                template = await EnvironmentTemplate.create(
                    project=system,
                    name=builtin.name,
                    display_name=builtin.display_name,
                    description=builtin.description,
                    built_in=True,
                )
            except IntegrityError:  # another process inserted it first
                template = await EnvironmentTemplate.get(project_id=system.id, name=builtin.name)
        if not await EnvironmentTemplateVersion.exists(template_id=template.id, version=builtin.version):
            with contextlib.suppress(IntegrityError):  # another process inserted it first
                await EnvironmentTemplateVersion.create(
                    template=template,
                    version=builtin.version,
                    state=VersionState.ACTIVE,
                    resources=builtin.resources,
                    inputs=[definition_to_json(d) for d in builtin.inputs],
                    outputs=[output_to_json(o) for o in builtin.outputs],
                )


# ---------------------------------------------------------------- compute profiles


async def _profile_for(actor: Actor, profile_id: str) -> ComputeProfile | None:
    """The profile when the caller may see it: its project's members, or a project it is shared with."""
    actor.require_user()
    pid = parse_id(profile_id)
    if pid is None:
        return None
    profile = await ComputeProfile.get_or_none(id=pid).select_related("project")
    if profile is None:
        return None

    async def shared_with_any(project_ids: list[uuid.UUID]) -> bool:
        return await ComputeProfileShare.exists(profile_id=pid, project_id__in=project_ids)

    return (
        profile
        if await sharing.visible_to(actor, profile.project, profile.sharing_mode, shared_with_any)
        else None
    )


async def get_profile(actor: Actor, profile_id: str) -> ComputeProfile | None:
    return await _profile_for(actor, profile_id)


async def _require_profile_admin(actor: Actor, profile_id: str, field: tuple[str, ...]) -> ComputeProfile:
    profile = await _profile_for(actor, profile_id)
    if profile is None:
        raise UserErrors.one(field, "No such compute profile.", ErrorCode.NOT_FOUND)
    actor.require_admin_of(profile.project)
    return profile


async def list_profiles(
    actor: Actor, project: str, search: str | None, first: int | None, after: str | None
) -> Page[reads.ListedProfile]:
    """The profiles a project owns, newest first (its admins' view); search matches name, display
    name and description. Each with its version, template and share targets (catalog.reads)."""
    owner = await _project_for_listing(actor, project)
    if not actor.is_admin_of(owner.id):
        raise Forbidden(
            f'Only admins of project "{owner.name}" manage its compute profiles; members use the catalog.'
        )
    return await reads.profile_page(owner.id, search, first, after)


async def catalog(actor: Actor, project: str, search: str | None) -> list[reads.ListedProfile]:
    """What the project's users may launch: its own profiles and those shared with it, by display
    name. Each with its version, template and share targets (catalog.reads)."""
    owner = await _project_for_listing(actor, project)
    return await reads.catalog(owner.id, search)


async def _pinnable_version(
    actor: Actor, owner: Project, version_id: str, *, must_be_active: bool
) -> EnvironmentTemplateVersion | None:
    vid = parse_id(version_id)
    if vid is None:
        return None
    version = await EnvironmentTemplateVersion.get_or_none(id=vid).select_related("template__project")
    if version is None:
        return None
    template_project = version.template.project
    if template_project.id != owner.id and not template_project.is_system:
        return None
    if must_be_active and version.state != VersionState.ACTIVE:
        raise UserErrors.one(
            ("input", "environmentTemplateVersion"),
            f'version "{version.version}" is {version.state.value}: only ACTIVE versions can be pinned',
            ErrorCode.INVALID_STATE,
        )
    return version


def _check_resources(problems: Collector, resources: ResourcesIn) -> None:
    base = ("input", "resources")
    problems.check((*base, "cpu"), quantities.cpu_quantity(resources.cpu))
    problems.check((*base, "memory"), quantities.memory_quantity(resources.memory))
    problems.check((*base, "storage"), quantities.memory_quantity(resources.storage))
    if resources.gpu_count < 0 or resources.gpu_count > MAX_GPU_COUNT:
        problems.add((*base, "gpuCount"), f"must be between 0 and {MAX_GPU_COUNT}")
    elif resources.gpu_count == 0 and resources.gpu_vendor != Vendor.CPU:
        problems.add((*base, "gpuVendor"), "must be CPU when gpuCount is 0")
    elif resources.gpu_count > 0 and resources.gpu_vendor == Vendor.CPU:
        problems.add(
            (*base, "gpuVendor"),
            "must be a GPU vendor (NVIDIA, AMD, INTEL or ASCEND) when gpuCount is above 0",
        )
    if resources.gpu_model is not None and resources.gpu_model.strip():
        problems.check((*base, "gpuModel"), validation.display_name(resources.gpu_model.strip()))


def _check_pairs(problems: Collector, field: str, pairs: Sequence[tuple[str, str]], kind: str) -> None:
    for index, part, message in validation.key_values(pairs, kind=kind):  # type: ignore[arg-type]
        problems.add(("input", field, index, part), message)
    if kind == "annotation":
        problems.check(("input", field), validation.annotations_size(dict(pairs)))


# What the API shows instead of a sensitive input's value. Given back unchanged (a form that
# round-trips what it was shown), it means "keep the value stored".
SENSITIVE_MASK = "********"


def resolve_input_settings(
    problems: Collector,
    definitions: Sequence[InputDefinition],
    given: Sequence[InputSettingIn] | None,
    previous: Sequence[dict[str, Any]],
) -> list[dict[str, Any]]:
    """The complete settings, one per declared input: given ones checked, the rest kept or defaulted."""
    by_name = {d.name: d for d in definitions}
    settings: dict[str, dict[str, Any]] = {}
    for kept in previous:
        if kept["name"] in by_name:
            settings[kept["name"]] = dict(kept)
    seen: set[str] = set()
    for index, item in enumerate(given or ()):
        path = ("input", "inputSettings", index)
        defn = by_name.get(item.name)
        if defn is None:
            declared = ", ".join(by_name) or "none"
            problems.add(
                (*path, "name"), f'the template version has no input "{item.name}" (declared: {declared})'
            )
            continue
        if item.name in seen:
            problems.add((*path, "name"), f'input "{item.name}" is set twice')
            continue
        seen.add(item.name)
        override = item.override or OverridePolicy.ALLOWED
        allowed = list(item.allowed_values or ())
        required = defn.required if item.required is None else item.required
        if defn.required and not required:
            problems.add((*path, "required"), f'the template requires input "{item.name}"')
        value = item.value
        if defn.sensitive and value == SENSITIVE_MASK:
            value = (settings.get(item.name) or {}).get("value", defn.default)
        if value is not None:
            problems.check((*path, "value"), check_value(defn, value))
        for vindex, allowed_value in enumerate(allowed):
            problems.check((*path, "allowedValues", vindex), check_value(defn, allowed_value))
        if override == OverridePolicy.RESTRICTED:
            if not allowed:
                problems.add((*path, "allowedValues"), "RESTRICTED needs at least one allowed value")
            elif value is not None and value not in allowed:
                problems.add((*path, "value"), "must be one of the allowed values: " + ", ".join(allowed))
        elif allowed:
            problems.add((*path, "allowedValues"), "allowed values apply only with override RESTRICTED")
        if required and value is None and override == OverridePolicy.NOT_ALLOWED:
            problems.add(
                (*path, "value"),
                f'input "{item.name}" is required and users may not override it: give it a value',
                ErrorCode.REQUIRED,
            )
        settings[item.name] = {
            "name": item.name,
            # No value given: the template's default stands (users may still override it).
            "value": value if value is not None else defn.default,
            "required": required,
            "override": override,
            "allowedValues": allowed,
        }
    result = []
    for defn in definitions:
        setting = settings.get(defn.name) or {
            "name": defn.name,
            "value": defn.default,
            "required": defn.required,
            "override": OverridePolicy.ALLOWED,
            "allowedValues": [],
        }
        result.append(setting)
    return result


def resolve_output_settings(
    problems: Collector,
    outputs: Sequence[OutputDefinition],
    given: Sequence[OutputSettingIn] | None,
    previous: Sequence[dict[str, Any]],
) -> list[dict[str, Any]]:
    names = [o.name for o in outputs]
    settings = {item["name"]: dict(item) for item in previous if item["name"] in names}
    seen: set[str] = set()
    for index, item in enumerate(given or ()):
        path = ("input", "outputSettings", index)
        if item.name not in names:
            problems.add(
                (*path, "name"),
                f'the template version has no output "{item.name}" (declared: {", ".join(names) or "none"})',
            )
            continue
        if item.name in seen:
            problems.add((*path, "name"), f'output "{item.name}" is set twice')
            continue
        seen.add(item.name)
        display = item.display_name.strip() if item.display_name else None
        if display:
            problems.check((*path, "displayName"), validation.display_name(display))
        settings[item.name] = {
            "name": item.name,
            "displayName": display or None,
            "visible": True if item.visible is None else item.visible,
        }
    return [settings.get(name) or {"name": name, "displayName": None, "visible": True} for name in names]


def _apply_common_fields(problems: Collector, profile: ComputeProfile, data: ProfileIn) -> None:
    if data.display_name is not None:
        display = data.display_name.strip()
        if display:
            problems.check(("input", "displayName"), validation.display_name(display))
        else:
            problems.add(("input", "displayName"), "a display name is required", ErrorCode.REQUIRED)
        profile.display_name = display
    if data.description is not None:
        problems.check(("input", "description"), validation.description(data.description))
        profile.description = data.description or None
    if data.allocation_type is not None:
        profile.allocation_type = data.allocation_type
    if data.resources is not None:
        _check_resources(problems, data.resources)
        profile.cpu = data.resources.cpu
        profile.memory = data.resources.memory
        profile.storage = data.resources.storage
        profile.gpu_count = data.resources.gpu_count
        profile.gpu_vendor = data.resources.gpu_vendor
        profile.gpu_model = (data.resources.gpu_model or "").strip() or None
    if data.labels is not None:
        _check_pairs(problems, "labels", data.labels, "label")
        profile.labels = [list(p) for p in data.labels]
    if data.annotations is not None:
        _check_pairs(problems, "annotations", data.annotations, "annotation")
        profile.annotations = [list(p) for p in data.annotations]
    if data.icon_url is not None:
        url = data.icon_url.strip()
        if url:
            problems.check(("input", "iconUrl"), validation.http_url(url))
        profile.icon_url = url or None
    if data.readme is not None:
        profile.readme = data.readme or None
        problem = readme_mod.readme_problem(data.readme)
        problems.check(("input", "readme"), problem)
        profile.readme_html = readme_mod.render_readme(data.readme) if problem is None else None


async def _apply_cluster(problems: Collector, profile: ComputeProfile, data: ProfileIn) -> None:
    if data.cluster_id is None:
        return
    try:
        profile.cluster = await cluster_for_profile(data.cluster_id, ("input", "cluster"))
    except UserErrors as error:
        problems.problems.extend(error.problems)


async def create_profile(actor: Actor, project: str, data: ProfileIn) -> ComputeProfile:
    owner = await require_project(actor, project, ("input", "project"))
    actor.require_admin_of(owner)
    if owner.is_system:
        raise UserErrors.one(
            ("input", "project"), "the built-in project holds templates only", ErrorCode.INVALID
        )
    problems = Collector()
    name = data.name or ""
    problems.check(("input", "name"), validation.dns_label(name))
    if data.display_name is None:
        problems.add(("input", "displayName"), "a display name is required", ErrorCode.REQUIRED)
    if data.allocation_type is None:
        problems.add(("input", "allocationType"), "choose DEDICATED or SHARED", ErrorCode.REQUIRED)
    if data.resources is None:
        problems.add(("input", "resources"), "resources are required", ErrorCode.REQUIRED)
    version = await _pinnable_version(actor, owner, data.template_version_id or "", must_be_active=True)
    if version is None:
        problems.add(
            ("input", "environmentTemplateVersion"),
            "No such environment template version.",
            ErrorCode.NOT_FOUND,
        )
    profile = ComputeProfile(
        project=owner, name=name, sharing_mode=SharingMode.NONE, labels=[], annotations=[]
    )
    _apply_common_fields(problems, profile, data)
    await _apply_cluster(problems, profile, data)
    if version is not None:
        profile.template_version = version
        defs = [definition_from_json(d) for d in version.inputs]
        outs = [output_from_json(o) for o in version.outputs]
        profile.input_settings = resolve_input_settings(problems, defs, data.input_settings, [])
        profile.output_settings = resolve_output_settings(problems, outs, data.output_settings, [])
    if not problems and await ComputeProfile.exists(project_id=owner.id, name=name):
        problems.add(
            ("input", "name"),
            f'a compute profile named "{name}" already exists in this project',
            ErrorCode.TAKEN,
        )
    problems.raise_if_any()
    try:
        await profile.save()
    except IntegrityError:
        raise UserErrors.one(
            ("input", "name"),
            f'a compute profile named "{name}" already exists in this project',
            ErrorCode.TAKEN,
        ) from None
    return profile


async def update_profile(actor: Actor, profile_id: str, data: ProfileIn) -> ComputeProfile:
    profile = await _require_profile_admin(actor, profile_id, ("input", "id"))
    problems = Collector()
    if data.name is not None and data.name != profile.name:
        problems.add(
            ("input", "name"), "the unique name of a compute profile cannot change", ErrorCode.IMMUTABLE
        )
    version = await EnvironmentTemplateVersion.get(id=profile.template_version_id)
    if data.template_version_id is not None and parse_id(data.template_version_id) != version.id:
        new_version = await _pinnable_version(
            actor, profile.project, data.template_version_id, must_be_active=True
        )
        if new_version is None:
            problems.add(
                ("input", "environmentTemplateVersion"),
                "No such environment template version.",
                ErrorCode.NOT_FOUND,
            )
        else:
            version = new_version
            profile.template_version = version
    _apply_common_fields(problems, profile, data)
    await _apply_cluster(problems, profile, data)
    defs = [definition_from_json(d) for d in version.inputs]
    outs = [output_from_json(o) for o in version.outputs]
    profile.input_settings = resolve_input_settings(
        problems, defs, data.input_settings, profile.input_settings
    )
    profile.output_settings = resolve_output_settings(
        problems, outs, data.output_settings, profile.output_settings
    )
    problems.raise_if_any()
    profile.revision += 1
    await profile.save()
    return profile


async def delete_profile(actor: Actor, profile_id: str) -> str:
    profile = await _require_profile_admin(actor, profile_id, ("id",))
    await profile.delete()
    return profile_id


async def set_profile_sharing(
    actor: Actor, profile_id: str, mode: SharingMode, projects: Sequence[str] | None
) -> ComputeProfile:
    profile = await _require_profile_admin(actor, profile_id, ("id",))
    chosen = await sharing.targets(actor, profile.project, mode, projects, what="a profile")
    async with in_transaction():
        await ComputeProfileShare.filter(profile_id=profile.id).delete()
        for target in chosen:
            await ComputeProfileShare.create(profile=profile, project=target)
        profile.sharing_mode = mode
        await profile.save(update_fields=["sharing_mode", "updated_at"])
    return profile


async def profiles_on(cluster: Cluster) -> str | None:
    """Why the cluster may not be deleted: the profiles that deploy to it (the clusters domain asks
    through its hook), or None."""
    profiles = await ComputeProfile.filter(cluster_id=cluster.id).values_list("name", flat=True)
    if not profiles:
        return None
    shown = ", ".join(sorted(str(p) for p in profiles)[:10])
    return f"compute profiles deploy to this cluster ({shown}): move them to another cluster first"
