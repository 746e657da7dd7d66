"""The rules of compute profiles (the SKUs): create and update (resources, labels and annotations,
icon, readme, the cluster, the template version pinned and the settings of its inputs and
outputs), sharing with other projects, delete, the profile list and the catalog, the readme's
preview, and what keeps a cluster in use.

A project's ADMINs manage its profiles; its MEMBERs, and those of the projects a profile is
shared with, see it in their catalog. A profile the caller may not see is reported as not existing.

A profile binds a template version to a cluster (its own, or the default one): when the cluster
confines the template (a project's own template anywhere, a platform template on a CONFINED
cluster), the version is rendered with the profile's resources and must keep to the tenant
confinement (provisioning/render/policy.py), or the profile is not saved. The worker checks again
at every deploy, with the cluster as it is then.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from tortoise.exceptions import IntegrityError
from tortoise.expressions import Q
from tortoise.transactions import in_transaction

from gpupaas.accounts import sharing
from gpupaas.accounts.models import Project
from gpupaas.accounts.service import require_project
from gpupaas.accounts.sharing import SharingMode
from gpupaas.audit import recorder as audit
from gpupaas.catalog import readme as readme_mod
from gpupaas.catalog import reads
from gpupaas.catalog.models import (
    AllocationType,
    ComputeProfile,
    ComputeProfileShare,
    EnvironmentTemplateVersion,
    VersionState,
)
from gpupaas.catalog.service.definitions import (
    definition_from_json,
    output_from_json,
    sensitive_names,
    settings_with_values,
    unsealing,
)
from gpupaas.catalog.service.profile_settings import (
    InputSettingIn,
    OutputSettingIn,
    resolve_input_settings,
    resolve_output_settings,
)
from gpupaas.catalog.service.templates import template_scope
from gpupaas.catalog.service.visibility import ShownProfile, profiles_shown, project_for_listing
from gpupaas.clusters.models import Cluster
from gpupaas.clusters.service import cluster_for_profile, default_cluster, gpu_models, gpu_resource_names
from gpupaas.core import gpu_resources, quantities, validation
from gpupaas.core.actor import Actor
from gpupaas.core.crypto import Sealer
from gpupaas.core.errors import Collector, ErrorCode, Forbidden, InvalidArgument, Problem, UserErrors
from gpupaas.core.gpus import Vendor
from gpupaas.core.ids import parse_id
from gpupaas.core.pagination import Page
from gpupaas.core.time_limits import Limits, check_limits
from gpupaas.provisioning.registry import ClusterDriver
from gpupaas.provisioning.render.checks import confinement_check, sample_context
from gpupaas.provisioning.render.policy import TemplateScope, is_confined

MAX_GPU_COUNT = 1024


@dataclass
class ResourcesIn:
    cpu: str
    memory: str
    storage: str
    gpu_count: int
    gpu_vendor: Vendor
    gpu_model: str | None = None


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
    # Both values at once (None inside: no limit); None: leave them as they are.
    time_limits: Limits | None = None


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
) -> Page[ShownProfile]:
    """The profiles a project owns, newest first (its admins' view); search matches name, display
    name and description. Each with its version, template and share targets (catalog.reads), as
    the caller may see them (visibility.profiles_shown)."""
    owner = await project_for_listing(actor, project)
    if not actor.is_admin_of(owner.id):
        raise Forbidden(
            f'Only admins of project "{owner.name}" manage its compute profiles; members use the catalog.'
        )
    page = await reads.profile_page(owner.id, search, first, after)
    return Page(
        rows=profiles_shown(actor, page.rows),
        has_next=page.has_next,
        has_previous=page.has_previous,
        total=page.total,
    )


async def catalog(actor: Actor, project: str, search: str | None) -> list[ShownProfile]:
    """What the project's users may launch: its own profiles and those shared with it, by display
    name. Each with its version, template and share targets (catalog.reads), as the caller may see
    them (visibility.profiles_shown)."""
    owner = await project_for_listing(actor, project)
    return profiles_shown(actor, await reads.catalog(owner.id, search))


def readme_preview(actor: Actor, markdown: str) -> str | None:
    """A readme as the catalog would show it (the profile form's live preview): None when empty;
    one that could not be stored is an InvalidArgument saying why."""
    actor.require_user()
    problem = readme_mod.readme_problem(markdown)
    if problem is not None:
        raise InvalidArgument(f"markdown: {problem}")
    return readme_mod.render_readme(markdown)


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
    if data.time_limits is not None:
        for field, message in check_limits(data.time_limits, None, "the profile"):
            problems.add(("input", "timeLimits", field), message)
        profile.auto_stop_minutes = data.time_limits.auto_stop_minutes
        profile.max_lifetime_minutes = data.time_limits.max_lifetime_minutes
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


async def _check_confinement(
    problems: Collector, profile: ComputeProfile, version: EnvironmentTemplateVersion, sealer: Sealer
) -> None:
    """The version, rendered with the profile's resources, keeps to the tenant confinement of the
    profile's cluster (its own or the default one), when that cluster confines it."""
    if profile.cluster_id is not None:
        cluster = await Cluster.get_or_none(id=profile.cluster_id)
    else:
        cluster = await default_cluster()
    if cluster is None:
        return
    scope = template_scope(version.template.project)
    if not is_confined(scope, cluster.template_policy):
        return
    defs = [definition_from_json(d, unsealing(sealer, "template version")) for d in version.inputs]
    names = gpu_resource_names(cluster)
    context = replace(
        sample_context(defs),
        profile_name=profile.name,
        cpu=profile.cpu,
        memory=profile.memory,
        storage=profile.storage,
        gpu_count=profile.gpu_count,
        gpu_vendor=profile.gpu_vendor.value,
        gpu_model=profile.gpu_model,
        gpu_resource_name=gpu_resources.resource_name(profile.gpu_vendor.value, profile.gpu_model, names),
    )
    found = confinement_check(version.resources, defs, context)
    if not found:
        return
    what = f'template "{version.template.name}" version "{version.version}"'
    if scope == TemplateScope.PLATFORM:
        why = (
            f'{what} goes beyond the tenant confinement of cluster "{cluster.name}" (its templatePolicy '
            "is CONFINED; a platform admin may set TRUST_PLATFORM_TEMPLATES, or choose another cluster)"
        )
    else:
        why = f"{what} breaks the tenant confinement"
    problems.add(
        ("input", "environmentTemplateVersion"),
        f"{why}: " + "; ".join(str(problem) for problem in found),
        ErrorCode.FORBIDDEN,
    )


def _resolve_settings(
    problems: Collector,
    profile: ComputeProfile,
    version: EnvironmentTemplateVersion,
    data: ProfileIn,
    previous: list[dict[str, Any]],
    sealer: Sealer,
) -> None:
    """The profile's settings of the version's inputs and outputs, checked with the values they
    hold (sensitive ones unsealed) and stored with sensitive values sealed."""
    unseal = unsealing(sealer, "compute profile")
    defs = [definition_from_json(d, unseal) for d in version.inputs]
    outs = [output_from_json(o) for o in version.outputs]
    # Every stored value unsealed: the previous version may have marked other inputs sensitive.
    opened = settings_with_values(previous, frozenset(s["name"] for s in previous), unseal)
    settings = resolve_input_settings(problems, defs, data.input_settings, opened)
    profile.input_settings = settings_with_values(settings, sensitive_names(version.inputs), sealer.seal)
    profile.output_settings = resolve_output_settings(
        problems, outs, data.output_settings, profile.output_settings
    )


async def create_profile(actor: Actor, project: str, data: ProfileIn, *, secret_key: str) -> ComputeProfile:
    """A new profile; the values of its sensitive inputs are stored sealed with `secret_key`."""
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
        profile.output_settings = []
        _resolve_settings(problems, profile, version, data, [], Sealer(secret_key))
        if not problems:
            await _check_confinement(problems, profile, version, Sealer(secret_key))
    if not problems and await ComputeProfile.exists(project_id=owner.id, name=name):
        problems.add(
            ("input", "name"),
            f'a compute profile named "{name}" already exists in this project',
            ErrorCode.TAKEN,
        )
    problems.raise_if_any()
    try:
        async with in_transaction():
            await profile.save()
            await audit.record(
                "ComputeProfile", profile.id, name, project=owner, after=audit.fields_of(profile)
            )
    except IntegrityError:
        raise UserErrors.one(
            ("input", "name"),
            f'a compute profile named "{name}" already exists in this project',
            ErrorCode.TAKEN,
        ) from None
    return profile


async def update_profile(
    actor: Actor, profile_id: str, data: ProfileIn, *, secret_key: str
) -> ComputeProfile:
    """Changes the profile; the values of its sensitive inputs are stored sealed with `secret_key`."""
    profile = await _require_profile_admin(actor, profile_id, ("input", "id"))
    before = audit.fields_of(profile)
    problems = Collector()
    if data.name is not None and data.name != profile.name:
        problems.add(
            ("input", "name"), "the unique name of a compute profile cannot change", ErrorCode.IMMUTABLE
        )
    version = await EnvironmentTemplateVersion.get(id=profile.template_version_id).select_related(
        "template__project"
    )
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
    sealer = Sealer(secret_key)
    _resolve_settings(problems, profile, version, data, profile.input_settings, sealer)
    if not problems:
        await _check_confinement(problems, profile, version, sealer)
    problems.raise_if_any()
    profile.revision += 1
    async with in_transaction():
        await profile.save()
        await audit.record(
            "ComputeProfile",
            profile.id,
            profile.name,
            project=profile.project,
            before=before,
            after=audit.fields_of(profile),
        )
    return profile


async def delete_profile(actor: Actor, profile_id: str) -> str:
    profile = await _require_profile_admin(actor, profile_id, ("id",))
    async with in_transaction():
        await profile.delete()
        await audit.record(
            "ComputeProfile",
            profile.id,
            profile.name,
            project=profile.project,
            before=audit.fields_of(profile),
        )
    return profile_id


async def set_profile_sharing(
    actor: Actor, profile_id: str, mode: SharingMode, projects: Sequence[str] | None
) -> ComputeProfile:
    profile = await _require_profile_admin(actor, profile_id, ("id",))
    chosen = await sharing.targets(actor, profile.project, mode, projects, what="a profile")
    async with in_transaction():
        shared_before = await ComputeProfileShare.filter(profile_id=profile.id).values_list(
            "project__name", flat=True
        )
        before = {"sharing_mode": profile.sharing_mode, "shared_with": sorted(str(n) for n in shared_before)}
        await ComputeProfileShare.filter(profile_id=profile.id).delete()
        for target in chosen:
            await ComputeProfileShare.create(profile=profile, project=target)
        profile.sharing_mode = mode
        await profile.save(update_fields=["sharing_mode", "updated_at"])
        await audit.record(
            "ComputeProfile",
            profile.id,
            profile.name,
            project=profile.project,
            before=before,
            after={"sharing_mode": mode, "shared_with": sorted(t.name for t in chosen)},
        )
    return profile


async def gpu_model_warnings(profile: ComputeProfile) -> list[Problem]:
    """What a saved profile may want fixed without it being refused: its GPU model is on no
    registered cluster (as each cluster's last check saw its nodes), so its deploys would fail to
    schedule. The message names the models the clusters have."""
    model = profile.gpu_model
    if not model or profile.gpu_count == 0:
        return []
    clusters = await Cluster.all().only("id", "driver", "nodes")
    known = sorted({found for cluster in clusters for found in gpu_models(cluster)})

    def has(cluster: Cluster) -> bool:
        # A Kubernetes node label must equal the model; the simulated admission takes a part of
        # the node's model ("H100" of "H100 80GB"), as it schedules.
        if cluster.driver == ClusterDriver.SIMULATED:
            return any(model.lower() in found.lower() for found in gpu_models(cluster))
        return model in gpu_models(cluster)

    if any(has(cluster) for cluster in clusters):
        return []
    return [
        Problem(
            ("input", "resources", "gpuModel"),
            f'no registered cluster has GPU model "{model}" (as their last check saw their nodes): the '
            "profile is saved, but its instances cannot be scheduled until a cluster has it. "
            + (f"The clusters have: {', '.join(known)}." if known else "The clusters report no GPU model."),
            ErrorCode.NOT_FOUND,
        )
    ]


async def gpu_models_on(cluster: Cluster) -> dict[str, list[str]]:
    """The GPU models the profiles deploying to the cluster ask for (those naming it, and those
    naming none when it is the default), each with the profiles ("project/name") that ask."""
    where = Q(cluster_id=cluster.id)
    if cluster.is_default:
        where |= Q(cluster_id__isnull=True)
    rows = await (
        ComputeProfile.filter(where)
        .exclude(gpu_vendor=Vendor.CPU)
        .filter(gpu_model__isnull=False)
        .values_list("project__name", "name", "gpu_model")
    )
    models: dict[str, list[str]] = {}
    for project, name, model in sorted(rows, key=lambda row: (str(row[2]), str(row[0]), str(row[1]))):
        if str(model).strip():
            models.setdefault(str(model).strip(), []).append(f"{project}/{name}")
    return models


async def profiles_on(cluster: Cluster) -> str | None:
    """Why the cluster may not be deleted: the profiles that deploy to it (the clusters domain asks
    through its hook), or None."""
    profiles = await ComputeProfile.filter(cluster_id=cluster.id).values_list("name", flat=True)
    if not profiles:
        return None
    shown = ", ".join(sorted(str(p) for p in profiles)[:10])
    return f"compute profiles deploy to this cluster ({shown}): move them to another cluster first"
