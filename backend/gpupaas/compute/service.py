"""The rules of compute instances: launch from the catalog (with a snapshot of the profile),
save changes, deploy, destroy, delete, share; and the steps of a run that the workers take.

Every status change writes, in the same transaction, the instance, its DeploymentRun and outbox
rows (a command for the workers, a status event for subscribers): an accepted request is never
lost, whatever restarts afterwards. Concurrent requests on one instance cannot both win: the row
is locked on PostgreSQL, and on every database the write is conditional on the version read.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from tortoise.exceptions import IntegrityError
from tortoise.expressions import F, Q, Subquery
from tortoise.transactions import in_transaction

from gpupaas.accounts import sharing
from gpupaas.accounts.models import Project
from gpupaas.accounts.service import project_by_name, require_project
from gpupaas.accounts.sharing import SharingMode
from gpupaas.catalog.models import ComputeProfile, ComputeProfileShare
from gpupaas.catalog.service import SENSITIVE_MASK, OverridePolicy, definition_from_json, output_from_json
from gpupaas.clusters.models import Cluster
from gpupaas.compute import states
from gpupaas.compute.models import ComputeInstance, ComputeInstanceShare, DeploymentRun
from gpupaas.compute.states import DeploymentStatus, Request, RunAction, RunStatus
from gpupaas.core import validation
from gpupaas.core.actor import Actor
from gpupaas.core.errors import Collector, ErrorCode, Forbidden, NotFound, UserErrors
from gpupaas.core.ids import parse_id
from gpupaas.core.pagination import Page, paginate
from gpupaas.core.search import matching
from gpupaas.events import outbox
from gpupaas.provisioning.inputs import check_value
from gpupaas.provisioning.plan import PermanentError, Plan, build_plan
from gpupaas.service_instances.models import ServiceInstance


def now() -> datetime:
    return datetime.now(UTC)


# ---------------------------------------------------------------- visibility


async def _instance_for(actor: Actor, instance_id: str) -> ComputeInstance | None:
    """The instance when the caller may see it: its project's members, or a project it is shared with."""
    actor.require_user()
    iid = parse_id(instance_id)
    if iid is None:
        return None
    instance = await ComputeInstance.get_or_none(id=iid).select_related("project")
    if instance is None:
        return None

    async def shared_with_any(project_ids: list[uuid.UUID]) -> bool:
        return await ComputeInstanceShare.exists(instance_id=iid, project_id__in=project_ids)

    return (
        instance
        if await sharing.visible_to(actor, instance.project, instance.sharing_mode, shared_with_any)
        else None
    )


async def get_instance(actor: Actor, instance_id: str) -> ComputeInstance | None:
    return await _instance_for(actor, instance_id)


READ_ONLY = "This instance is shared with your project read-only: only its own project may change it."


def _may_change(actor: Actor, instance: ComputeInstance) -> bool:
    """Only members of its own project change an instance (projects it is shared with read it)."""
    return actor.is_platform_admin or instance.project_id in actor.roles  # type: ignore[attr-defined]


async def _require_own(actor: Actor, instance_id: str, field: tuple[str, ...]) -> ComputeInstance:
    """The instance, for a change: only members of its own project (shared ones are read-only)."""
    instance = await _instance_for(actor, instance_id)
    if instance is None:
        raise UserErrors.one(field, "No such compute instance.", ErrorCode.NOT_FOUND)
    if not _may_change(actor, instance):
        raise Forbidden(READ_ONLY)
    return instance


def shared_filter(project: Project) -> Q:
    """The project's instances and those shared with it. The shares are a subquery, not a join:
    no row comes twice, so the list needs no DISTINCT over every column (bench/scale.py)."""
    shared_with = ComputeInstanceShare.filter(project_id=project.id).values("instance_id")
    return (
        Q(project_id=project.id)
        | Q(sharing_mode=SharingMode.ALL_PROJECTS)
        | Q(sharing_mode=SharingMode.SELECTED_PROJECTS, id__in=Subquery(shared_with))
    )


async def list_instances(
    actor: Actor,
    project: str,
    search: str | None,
    statuses: Sequence[DeploymentStatus] | None,
    first: int | None,
    after: str | None,
) -> Page[ComputeInstance]:
    """A project's instances and those shared with it, newest first."""
    owner = await project_by_name(actor, project)
    if owner is None:
        raise NotFound(f'project "{project}" not found')
    query = ComputeInstance.filter(shared_filter(owner))
    query = matching(query, search, "name", "display_name", "description")
    if statuses:
        query = query.filter(status__in=list(statuses))
    return await paginate(query, first, after)


# ---------------------------------------------------------------- the snapshot


async def _launchable_profile(owner: Project, profile_id: str) -> ComputeProfile | None:
    """A profile in the project's catalog: its own, or shared with it."""
    pid = parse_id(profile_id)
    if pid is None:
        return None
    profile = await ComputeProfile.get_or_none(id=pid).select_related("template_version__template", "project")
    if profile is None:
        return None
    if profile.project.id == owner.id or profile.sharing_mode == SharingMode.ALL_PROJECTS:
        return profile
    if profile.sharing_mode == SharingMode.SELECTED_PROJECTS and await ComputeProfileShare.exists(
        profile_id=profile.id, project_id=owner.id
    ):
        return profile
    return None


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


def _unmasked(instance: ComputeInstance, given: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
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


async def _default_cluster_id() -> uuid.UUID | None:
    default = await Cluster.get_or_none(is_default=True).only("id")
    return default.id if default else None


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


# ---------------------------------------------------------------- events


async def _shared_with(instance: ComputeInstance) -> list[str] | str:
    if instance.sharing_mode == SharingMode.ALL_PROJECTS:
        return "ALL"
    if instance.sharing_mode == SharingMode.SELECTED_PROJECTS:
        ids = await ComputeInstanceShare.filter(instance_id=instance.id).values_list("project_id", flat=True)
        return [str(i) for i in ids]
    return []


async def _announce(instance: ComputeInstance, *, deleted: bool = False) -> None:
    """A status event for subscribers (inside the caller's transaction)."""
    await outbox.add_status(
        str(instance.id),
        {
            "type": "status",
            "instanceId": str(instance.id),
            "projectId": str(instance.project_id),  # type: ignore[attr-defined]
            "sharedWith": await _shared_with(instance),
            "status": instance.status.value,
            "message": instance.status_message,
            "version": instance.version,
            "deleted": deleted,
            "at": now().isoformat(),
        },
    )


async def _queue_run(
    instance: ComputeInstance, action: RunAction, *, delete_after: bool = False
) -> DeploymentRun:
    run: DeploymentRun = await DeploymentRun.create(
        instance_id=instance.id, action=action, delete_after=delete_after, queued_at=now()
    )
    await outbox.add_command(
        str(instance.id),
        {"type": "run", "runId": str(run.id), "instanceId": str(instance.id), "action": action.value},
    )
    return run


async def _write_status(
    instance: ComputeInstance,
    status: DeploymentStatus,
    message: str | None,
    outputs: dict[str, str] | None = None,
) -> None:
    """Conditional on the version this request read: a concurrent change makes it a CONFLICT.
    `outputs`, when given, are written in the same statement."""
    extra: dict[str, Any] = {} if outputs is None else {"outputs": outputs}
    changed = await ComputeInstance.filter(id=instance.id, version=instance.version).update(
        status=status,
        status_message=message,
        version=instance.version + 1,
        updated_at=now(),
        drifted=False,
        **extra,
    )
    if not changed:
        raise UserErrors.one(
            ("id",),
            "the instance was changed by another request at the same moment: look again and retry",
            ErrorCode.CONFLICT,
        )
    instance.status, instance.status_message, instance.version = status, message, instance.version + 1
    if outputs is not None:
        instance.outputs = outputs


async def _locked(instance_id: uuid.UUID) -> ComputeInstance:
    """The instance row, locked for this transaction on PostgreSQL (SQLite has one writer anyway)."""
    instance: ComputeInstance = await ComputeInstance.select_for_update().get(id=instance_id)
    return instance


def _state_error(error: states.TransitionError) -> UserErrors:
    return UserErrors.one(("id",), str(error), ErrorCode.INVALID_STATE)


# ---------------------------------------------------------------- requests


@dataclass
class InstanceIn:
    name: str | None = None
    display_name: str | None = None
    description: str | None = None
    labels: list[tuple[str, str]] | None = None
    annotations: list[tuple[str, str]] | None = None
    inputs: list[tuple[str, str]] | None = None


def _check_pairs(problems: Collector, field: str, pairs: Sequence[tuple[str, str]], kind: str) -> None:
    for index, part, message in validation.key_values(pairs, kind=kind):  # type: ignore[arg-type]
        problems.add(("input", field, index, part), message)


def _apply_fields(problems: Collector, instance: ComputeInstance, data: InstanceIn) -> None:
    if data.display_name is not None:
        display = data.display_name.strip() or instance.name
        problems.check(("input", "displayName"), validation.display_name(display))
        instance.display_name = display
    if data.description is not None:
        problems.check(("input", "description"), validation.description(data.description))
        instance.description = data.description or None
    if data.labels is not None:
        _check_pairs(problems, "labels", data.labels, "label")
        instance.labels = [list(p) for p in data.labels]
    if data.annotations is not None:
        _check_pairs(problems, "annotations", data.annotations, "annotation")
        problems.check(("input", "annotations"), validation.annotations_size(dict(data.annotations)))
        instance.annotations = [list(p) for p in data.annotations]
    if data.inputs is not None:
        given = _unmasked(instance, data.inputs)
        effective_inputs(problems, instance.snapshot, given)
        instance.inputs = [list(p) for p in given]


def _check_renders(problems: Collector, instance: ComputeInstance, project_name: str) -> None:
    """A trial render of what the next deploy would apply: found at launch, not at deploy."""
    try:
        plan_for(instance, project_name)
    except PermanentError as error:
        problems.add(("input", "inputs"), str(error))


async def create_instance(
    actor: Actor, project: str, profile_id: str, data: InstanceIn, deploy: bool
) -> ComputeInstance:
    owner = await require_project(actor, project, ("input", "project"))
    if not (actor.is_platform_admin or owner.id in actor.roles):
        raise Forbidden(f'Only members of project "{owner.name}" may launch compute instances in it.')
    problems = Collector()
    name = data.name or ""
    problems.check(("input", "name"), validation.dns_label(name))
    profile = await _launchable_profile(owner, profile_id)
    if profile is None:
        raise UserErrors.one(
            ("input", "profile"), "No such compute profile in this project's catalog.", ErrorCode.NOT_FOUND
        )
    instance = ComputeInstance(
        project=owner,
        profile=profile,
        profile_name=profile.name,
        profile_revision=profile.revision,
        name=name,
        display_name=name,
        snapshot=take_snapshot(profile, profile.cluster_id or await _default_cluster_id()),  # type: ignore[attr-defined]
        labels=[],
        annotations=[],
        inputs=[],
        outputs={},
    )
    _apply_fields(problems, instance, data)
    if data.inputs is None:
        effective_inputs(problems, instance.snapshot, [])
    if not problems:
        _check_renders(problems, instance, owner.name)
    if not problems and await ComputeInstance.exists(project_id=owner.id, name=name):
        problems.add(
            ("input", "name"), f'an instance named "{name}" already exists in this project', ErrorCode.TAKEN
        )
    problems.raise_if_any()
    try:
        async with in_transaction():
            if deploy:
                instance.status = states.after_request(Request.DEPLOY, instance.status)
            await instance.save()
            if deploy:
                await _queue_run(instance, RunAction.DEPLOY)
            await _announce(instance)
    except IntegrityError:
        raise UserErrors.one(
            ("input", "name"), f'an instance named "{name}" already exists in this project', ErrorCode.TAKEN
        ) from None
    outbox.notify()
    return instance


async def update_instance(actor: Actor, instance_id: str, data: InstanceIn) -> ComputeInstance:
    """ "Save Changes": labels, annotations, description, display name and inputs; the status stays."""
    instance = await _require_own(actor, instance_id, ("input", "id"))
    problems = Collector()
    if data.name is not None and data.name != instance.name:
        problems.add(("input", "name"), "the name of an instance cannot change", ErrorCode.IMMUTABLE)
    _apply_fields(problems, instance, data)
    if not problems:
        _check_renders(problems, instance, instance.project.name)
    problems.raise_if_any()
    # Not conditional on the version: saving changes must not collide with a run's status changes.
    await ComputeInstance.filter(id=instance.id).update(
        display_name=instance.display_name,
        description=instance.description,
        labels=instance.labels,
        annotations=instance.annotations,
        inputs=instance.inputs,
        version=F("version") + 1,
        updated_at=now(),
    )
    return await ComputeInstance.get(id=instance.id)


def _services_problem(request: Request, names: Sequence[str]) -> str | None:
    """A compute instance's GPU service instances (and their workspaces) live in its namespace:
    destroying it would take them along, so they are deleted first, on purpose."""
    if request not in (Request.DESTROY, Request.DELETE) or not names:
        return None
    ordered = sorted(names)
    shown = ", ".join(ordered[:5]) + (f" and {len(ordered) - 5} more" if len(ordered) > 5 else "")
    return (
        f"cannot {request.value} an instance that runs service instances ({shown}): "
        "delete them first (their workspaces would be lost with the instance)"
    )


async def _refuse_with_services(instance: ComputeInstance, request: Request) -> None:
    names = await ServiceInstance.filter(compute_instance_id=instance.id).values_list("name", flat=True)
    problem = _services_problem(request, [str(n) for n in names])
    if problem is not None:
        raise UserErrors.one(("id",), problem, ErrorCode.INVALID_STATE)


# What the studio offers, in its order.
ACTIONS = (Request.UPDATE, Request.DEPLOY, Request.DESTROY, Request.DELETE, Request.SHARE)


def actions(
    actor: Actor, instance: ComputeInstance, service_names: Sequence[str]
) -> list[tuple[Request, str | None]]:
    """What the caller may do with the instance now: each request with None, or why not (the
    message the request itself would answer). The same rules as the requests: rights first, then
    the status, then its service instances (`service_names`)."""
    if not _may_change(actor, instance):
        return [(request, READ_ONLY) for request in ACTIONS]
    shown: list[tuple[Request, str | None]] = []
    for request in ACTIONS:
        try:
            states.check(request, instance.status)
        except states.TransitionError as error:
            shown.append((request, str(error)))
            continue
        shown.append((request, _services_problem(request, service_names)))
    return shown


async def _request_run(
    actor: Actor, instance_id: str, request: Request, action: RunAction
) -> ComputeInstance:
    instance = await _require_own(actor, instance_id, ("id",))
    async with in_transaction():
        instance = await _locked(instance.id)
        try:
            status = states.after_request(request, instance.status)
        except states.TransitionError as error:
            raise _state_error(error) from None
        if request == Request.DESTROY:
            await _refuse_with_services(instance, request)
        await _write_status(instance, status, None)
        await _queue_run(instance, action)
        await _announce(instance)
    outbox.notify()
    return instance


async def deploy(actor: Actor, instance_id: str) -> ComputeInstance:
    return await _request_run(actor, instance_id, Request.DEPLOY, RunAction.DEPLOY)


async def destroy(actor: Actor, instance_id: str) -> ComputeInstance:
    return await _request_run(actor, instance_id, Request.DESTROY, RunAction.DESTROY)


async def delete(actor: Actor, instance_id: str) -> str:
    """Removes a NOT_DEPLOYED instance at once; a deployed one is destroyed first, then removed."""
    instance = await _require_own(actor, instance_id, ("id",))
    async with in_transaction():
        instance = await _locked(instance.id)
        try:
            states.check(Request.DELETE, instance.status)
        except states.TransitionError as error:
            raise _state_error(error) from None
        await _refuse_with_services(instance, Request.DELETE)
        if states.needs_destroy_before_delete(instance.status):
            await _write_status(
                instance, DeploymentStatus.DESTROYING, "deleting: destroying its resources first"
            )
            await _queue_run(instance, RunAction.DESTROY, delete_after=True)
            await _announce(instance)
        else:
            await _remove(instance)
    outbox.notify()
    return instance_id


async def _remove(instance: ComputeInstance) -> None:
    instance.version += 1
    await _announce(instance, deleted=True)
    await instance.delete()


async def set_sharing(
    actor: Actor, instance_id: str, mode: SharingMode, projects: Sequence[str] | None
) -> ComputeInstance:
    instance = await _require_own(actor, instance_id, ("id",))
    chosen = await sharing.targets(actor, instance.project, mode, projects, what="an instance")
    async with in_transaction():
        await ComputeInstanceShare.filter(instance_id=instance.id).delete()
        for target in chosen:
            await ComputeInstanceShare.create(instance=instance, project=target)
        instance.sharing_mode = mode
        await ComputeInstance.filter(id=instance.id).update(sharing_mode=mode, updated_at=now())
    return instance


# ---------------------------------------------------------------- the steps of a run (workers)


@dataclass
class ClaimedRun:
    run: DeploymentRun
    instance: ComputeInstance
    project_name: str


async def take_run(
    run_id: uuid.UUID, worker: str, lease: timedelta, *, service: bool
) -> DeploymentRun | None:
    """Inside the caller's transaction: the run, now RUNNING under `worker`'s lease, when it was
    queued or its worker stopped renewing the lease; None when it is finished, unknown, held by a
    live worker, or not of the kind asked for (`service`: a GPU service instance's run)."""
    moment = now()
    run = await DeploymentRun.select_for_update().get_or_none(id=run_id)
    if run is None or run.status in states.FINISHED_RUNS:
        return None
    if (run.service_id is not None) != service:  # type: ignore[attr-defined]
        return None
    if run.status == RunStatus.RUNNING and run.lease_expires_at and run.lease_expires_at > moment:
        return None
    taken = await DeploymentRun.filter(
        Q(id=run_id)
        & (Q(status=RunStatus.QUEUED) | Q(status=RunStatus.RUNNING, lease_expires_at__lte=moment))
    ).update(
        status=RunStatus.RUNNING,
        lease_owner=worker,
        lease_expires_at=moment + lease,
        started_at=run.started_at or moment,
        attempts=run.attempts + 1,
    )
    if not taken:
        return None
    taken_run: DeploymentRun = await DeploymentRun.get(id=run_id)
    return taken_run


async def claim_run(run_id: str, worker: str, lease: timedelta) -> ClaimedRun | None:
    """Takes a queued run, or a running one whose worker stopped renewing its lease. None when the
    run is finished, unknown, or held by a live worker: redelivered commands do nothing."""
    rid = parse_id(run_id)
    if rid is None:
        return None
    async with in_transaction():
        run = await take_run(rid, worker, lease, service=False)
        if run is None:
            return None
        instance = await _locked(run.instance_id)  # type: ignore[attr-defined]
        project = await Project.get(id=instance.project_id)  # type: ignore[attr-defined]
        started = states.run_started(run.action)
        if instance.status != started:
            await _write_status(instance, started, None)
            await _announce(instance)
    outbox.notify()
    return ClaimedRun(run=run, instance=instance, project_name=project.name)


async def renew_lease(run_id: uuid.UUID, worker: str, lease: timedelta) -> bool:
    """The worker is alive: extend its lease. False when the run is no longer its own."""
    renewed = await DeploymentRun.filter(id=run_id, lease_owner=worker, status=RunStatus.RUNNING).update(
        lease_expires_at=now() + lease
    )
    return bool(renewed)


async def report_progress(run_id: uuid.UUID, worker: str, message: str) -> None:
    await DeploymentRun.filter(id=run_id, lease_owner=worker, status=RunStatus.RUNNING).update(
        message=message
    )


async def finish_run(
    run_id: uuid.UUID,
    worker: str,
    *,
    succeeded: bool,
    message: str | None,
    outputs: dict[str, str] | None = None,
    applied: list[dict[str, Any]] | None = None,
) -> bool:
    """Ends the run and moves the instance on (or removes it, for a delete), keeping the objects the
    driver applied. False when another worker took the run meanwhile (its lease had expired): that
    worker's result stands."""
    moment = now()
    async with in_transaction():
        run = await DeploymentRun.select_for_update().get_or_none(id=run_id)
        if run is None or run.status != RunStatus.RUNNING or run.lease_owner != worker:
            return False
        run.status = RunStatus.SUCCEEDED if succeeded else RunStatus.FAILED
        run.message = message
        run.finished_at = moment
        run.lease_expires_at = None
        fields = ["status", "message", "finished_at", "lease_expires_at"]
        if applied is not None:
            run.applied = applied
            fields.append("applied")
        await run.save(update_fields=fields)
        instance = await _locked(run.instance_id)  # type: ignore[attr-defined]
        if succeeded and run.delete_after:
            await _remove(instance)
        else:
            status = states.run_succeeded(run.action) if succeeded else states.run_failed(run.action)
            if outputs is None and succeeded and run.action == RunAction.DESTROY:
                outputs = {}
            await _write_status(instance, status, message, outputs)
            await _announce(instance)
    outbox.notify()
    return True


async def report_drift(instance_id: str, failed: bool, reason: str | None) -> bool:
    """The cluster changed under a deployed instance (a pod died, or came back): SUCCESS turns FAILED
    with the reason, and an instance FAILED by drift turns SUCCESS again. True when it changed."""
    iid = parse_id(instance_id)
    if iid is None:
        return False
    async with in_transaction():
        instance = await ComputeInstance.select_for_update().get_or_none(id=iid)
        if instance is None:
            return False
        if failed and instance.status == DeploymentStatus.SUCCESS:
            status, message, drifted = (
                DeploymentStatus.FAILED,
                f"drift: {reason or 'a workload failed'}",
                True,
            )
        elif not failed and instance.status == DeploymentStatus.FAILED and instance.drifted:
            status, message, drifted = DeploymentStatus.SUCCESS, None, False
        else:
            return False
        await _write_status(instance, status, message)
        await ComputeInstance.filter(id=iid).update(drifted=drifted)
        await _announce(instance)
    outbox.notify()
    return True


async def requeue_stale_runs(*, queued_for: timedelta, max_attempts: int) -> int:
    """The database is the truth: a run whose command seems lost (QUEUED too long), or whose worker
    died (RUNNING with an expired lease), is queued again; past max_attempts it fails with a reason."""

    async def fail(run: DeploymentRun) -> None:
        instance = await _locked(run.instance_id)  # type: ignore[attr-defined]
        await _write_status(instance, states.run_failed(run.action), run.message)
        await _announce(instance)

    def command(run: DeploymentRun) -> tuple[str, dict[str, Any]]:
        instance_id = str(run.instance_id)  # type: ignore[attr-defined]
        payload = {"type": "run", "runId": str(run.id), "instanceId": instance_id, "action": run.action.value}
        return instance_id, payload

    return await requeue_stale(
        queued_for=queued_for,
        max_attempts=max_attempts,
        service=False,
        fail=fail,
        command=command,
        retry="deploy again to retry",
    )


async def requeue_stale(
    *,
    queued_for: timedelta,
    max_attempts: int,
    service: bool,
    fail: Callable[[DeploymentRun], Awaitable[None]],
    command: Callable[[DeploymentRun], tuple[str, dict[str, Any]]],
    retry: str,
) -> int:
    """The reaper's work for one kind of run (`service`: GPU service instances' runs): `fail` moves
    the owner of a run that gave up on (inside the transaction), `command` is (key, payload) of
    the command that queues a run again, `retry` what a person does to try again."""
    moment = now()
    count = 0
    stale = await DeploymentRun.filter(
        Q(status=RunStatus.QUEUED, queued_at__lte=moment - queued_for)
        | Q(status=RunStatus.RUNNING, lease_expires_at__lte=moment),
        service_id__isnull=not service,
    ).limit(500)
    for run in stale:
        async with in_transaction():
            fresh = await DeploymentRun.select_for_update().get_or_none(id=run.id)
            if fresh is None or fresh.status != run.status or fresh.lease_expires_at != run.lease_expires_at:
                continue
            if fresh.status == RunStatus.RUNNING and fresh.attempts >= max_attempts:
                fresh.status = RunStatus.FAILED
                fresh.message = f"the worker stopped responding {fresh.attempts} times; gave up ({retry})"
                fresh.finished_at = moment
                await fresh.save(update_fields=["status", "message", "finished_at"])
                await fail(fresh)
            else:
                await DeploymentRun.filter(id=fresh.id).update(queued_at=moment)
                key, payload = command(fresh)
                await outbox.add_command(key, payload)
            count += 1
    if count:
        outbox.notify()
    return count
