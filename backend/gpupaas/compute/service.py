"""The rules of compute instances: who sees them, launch from the catalog (with a snapshot of the
profile), save changes, deploy, destroy, delete, share, give to another member, and what a caller
may do now. Inside its project only its owner and the project's admins manage an instance
(compute/owners.py); projects it is shared with read it.

A deploy or destroy is a run (runs/): the instance's new status, its run and the outbox rows are
written in one transaction through `runs.lifecycle`, which also carries the run's later steps.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass

from tortoise.exceptions import IntegrityError
from tortoise.expressions import F, Q, Subquery
from tortoise.functions import Count
from tortoise.transactions import in_transaction

from gpupaas.accounts import sharing
from gpupaas.accounts.models import Project, User
from gpupaas.accounts.service import project_by_name, require_project
from gpupaas.accounts.sharing import SharingMode
from gpupaas.audit import recorder as audit
from gpupaas.catalog.models import ComputeProfile, ComputeProfileShare
from gpupaas.clusters.models import Cluster
from gpupaas.compute import configuration, owners, states
from gpupaas.compute.models import ComputeInstance, ComputeInstanceShare
from gpupaas.compute.run_kind import COMPUTE
from gpupaas.compute.snapshot import take_snapshot
from gpupaas.compute.states import DeploymentStatus, Request
from gpupaas.core import validation
from gpupaas.core.actor import Actor
from gpupaas.core.errors import Collector, ErrorCode, Forbidden, NotFound, UserErrors
from gpupaas.core.hooks import Hook
from gpupaas.core.ids import parse_id
from gpupaas.core.pagination import Page, paginate
from gpupaas.core.search import matching
from gpupaas.events import outbox, rows
from gpupaas.events.broadcast import StatusEvent
from gpupaas.metering import meter
from gpupaas.provisioning.plan import PermanentError
from gpupaas.runs import lifecycle as runs
from gpupaas.runs.states import RunAction

# What the audit log leaves out of an instance's snapshots: the profile snapshot (the profile's own
# entries record its changes) and outputs (written by runs, not by callers).
_UNAUDITED = ("snapshot", "outputs", "version")

# ---------------------------------------------------------------- visibility


async def _instance_for(
    actor: Actor, instance_id: str, *, members_see_all: bool = True, lock: bool = False
) -> ComputeInstance | None:
    """The instance when the caller may see it: its project's members (only their own when members
    do not see each other's, `members_see_all`), or a project it is shared with. `lock`: its row
    locked for the caller's transaction (`runs.locked`), in the same statement."""
    actor.require_user()
    iid = parse_id(instance_id)
    if iid is None:
        return None
    query = ComputeInstance.all()
    if lock:
        query = query.select_for_update(of=(ComputeInstance._meta.db_table,))
    instance = await query.get_or_none(id=iid).select_related("project")
    if instance is None or owners.hidden_from(actor, instance.project_id, instance.owner_id, members_see_all):
        return None

    async def shared_with_any(project_ids: list[uuid.UUID]) -> bool:
        return await ComputeInstanceShare.exists(instance_id=iid, project_id__in=project_ids)

    return (
        instance
        if await sharing.visible_to(actor, instance.project, instance.sharing_mode, shared_with_any)
        else None
    )


async def get_instance(actor: Actor, instance_id: str, *, members_see_all: bool) -> ComputeInstance | None:
    return await _instance_for(actor, instance_id, members_see_all=members_see_all)


def shown_to(actor: Actor, instance: ComputeInstance, *, members_see_all: bool) -> bool:
    """Whether a status event about the instance reaches the caller, beyond its project and shares
    (which the broadcaster checked): not when it is hidden from them (compute/owners.py)."""
    return not owners.hidden_from(actor, instance.project_id, instance.owner_id, members_see_all)


READ_ONLY = "This instance is shared with your project read-only: only its own project may change it."

# The names of the GPU service instances in each of the given compute instances (bound by
# gpupaas.api.wiring: service instances sit above this package). They must be deleted before their
# compute instance is destroyed: their workspaces live in its namespace.
SERVICES_IN: Hook[Callable[[Sequence[uuid.UUID]], Awaitable[dict[uuid.UUID, list[str]]]]] = Hook(
    "the service instances in compute instances"
)


def manages(actor: Actor, instance: ComputeInstance) -> bool:
    """Whether the caller manages the instance (its owner, its project's admins): changes it and
    sees its secrets (sensitive outputs)."""
    return owners.manages(actor, instance.project_id, instance.owner_id)


def _refusal(actor: Actor, instance: ComputeInstance, request: Request) -> str | None:
    """Why the caller may not ask `request` of the instance by its rights, or None: projects it is
    shared with read it only; in its project, only its owner and the project's admins manage it."""
    if not actor.is_member_of(instance.project_id):
        return READ_ONLY
    if not manages(actor, instance):
        return owners.not_manager("compute instance", instance.name, request.value, instance.owner_id)
    return None


async def _require_own(
    actor: Actor, instance_id: str, field: tuple[str, ...], request: Request, *, lock: bool = False
) -> ComputeInstance:
    """The instance, for a change: only its owner and its project's admins (shared ones are
    read-only). `lock`: locked for the caller's transaction."""
    instance = await _instance_for(actor, instance_id, lock=lock)
    if instance is None:
        raise UserErrors.one(field, "No such compute instance.", ErrorCode.NOT_FOUND)
    refusal = _refusal(actor, instance, request)
    if refusal is not None:
        raise Forbidden(refusal)
    return instance


def share_targets_shown(
    actor: Actor, instance: ComputeInstance, shared: Sequence[uuid.UUID]
) -> list[uuid.UUID]:
    """The projects the instance is shared with, as the caller may see them: all of them for its
    own project's members, only their own projects for the others."""
    return sharing.visible_targets(actor, instance.project_id, shared)


def shared_filter(project: Project) -> Q:
    """The project's instances and those shared with it. The shares are a subquery, not a join:
    no row comes twice, so the list needs no DISTINCT over every column (bench/scale.py)."""
    shared_with = ComputeInstanceShare.filter(project_id=project.id).values("instance_id")
    return (
        Q(project_id=project.id)
        | Q(sharing_mode=SharingMode.ALL_PROJECTS)
        | Q(sharing_mode=SharingMode.SELECTED_PROJECTS, id__in=Subquery(shared_with))
    )


async def instance_of_event(event: StatusEvent) -> ComputeInstance | None:
    """The instance a status event is about, as the event's transaction wrote it (its row is in the
    event), or as it is now for an event without one (written before events carried it). Who may
    see it goes by the event's project and shares, which the broadcaster checked."""
    if event.row is not None:
        with contextlib.suppress(KeyError, TypeError, ValueError):  # not a row of this release's
            return rows.load(ComputeInstance, event.row)
    iid = parse_id(event.instance_id)
    return await ComputeInstance.get_or_none(id=iid) if iid is not None else None


SNAPSHOT_LIMIT = 1000


async def current_instances(
    actor: Actor, owner: Project, *, shared_only: bool, members_see_all: bool
) -> list[ComputeInstance]:
    """For a project-wide status subscription's snapshot: the instances the caller sees in the
    project (the first SNAPSHOT_LIMIT by name), or only those shared with it from other projects."""
    query = ComputeInstance.filter(shared_filter(owner))
    if shared_only:
        query = query.exclude(project_id=owner.id)
    hidden = owners.visible_filter(actor, members_see_all)
    if hidden is not None:
        query = query.filter(hidden)
    return await query.order_by("name", "id").limit(SNAPSHOT_LIMIT)


async def list_instances(
    actor: Actor,
    project: str,
    search: str | None,
    statuses: Sequence[DeploymentStatus] | None,
    first: int | None,
    after: str | None,
    *,
    mine: bool = False,
    members_see_all: bool,
) -> Page[ComputeInstance]:
    """A project's instances and those shared with it, newest first; `mine`: only the caller's own.
    Without `members_see_all`, a MEMBER's list leaves out what other members own."""
    owner = await project_by_name(actor, project)
    if owner is None:
        raise NotFound(f'project "{project}" not found')
    query = ComputeInstance.filter(shared_filter(owner))
    hidden = owners.visible_filter(actor, members_see_all)
    if hidden is not None:
        query = query.filter(hidden)
    if mine:
        query = query.filter(owners.mine_filter(actor))
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
    profile = await ComputeProfile.get_or_none(id=pid).select_related(
        "template_version__template__project", "project"
    )
    if profile is None:
        return None
    if profile.project.id == owner.id or profile.sharing_mode == SharingMode.ALL_PROJECTS:
        return profile
    if profile.sharing_mode == SharingMode.SELECTED_PROJECTS and await ComputeProfileShare.exists(
        profile_id=profile.id, project_id=owner.id
    ):
        return profile
    return None


async def _default_cluster_id() -> uuid.UUID | None:
    default = await Cluster.get_or_none(is_default=True).only("id")
    return default.id if default else None


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


def _apply_fields(problems: Collector, instance: ComputeInstance, data: InstanceIn, secret_key: str) -> None:
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
        configuration.set_inputs(problems, instance, data.inputs, secret_key)


def _check_renders(
    problems: Collector, instance: ComputeInstance, project_name: str, secret_key: str
) -> None:
    """A trial render of what the next deploy would apply: found at launch, not at deploy."""
    try:
        configuration.plan_for(instance, project_name, secret_key=secret_key)
    except PermanentError as error:
        problems.add(("input", "inputs"), str(error))


async def create_instance(
    actor: Actor, project: str, profile_id: str, data: InstanceIn, deploy: bool, *, secret_key: str
) -> ComputeInstance:
    """A new instance; its own sensitive input values are stored sealed with `secret_key`."""
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
        owner_id=actor.require_user().id,
        profile=profile,
        profile_name=profile.name,
        profile_revision=profile.revision,
        name=name,
        display_name=name,
        snapshot=take_snapshot(profile, profile.cluster_id or await _default_cluster_id()).to_json(),
        labels=[],
        annotations=[],
        inputs=[],
        outputs={},
        # Its time limits start as the profile's (the owner may change them within its maximum).
        auto_stop_minutes=profile.auto_stop_minutes,
        max_lifetime_minutes=profile.max_lifetime_minutes,
    )
    _apply_fields(problems, instance, data, secret_key)
    if data.inputs is None:
        configuration.check_inputs(problems, instance, secret_key)
    if not problems:
        _check_renders(problems, instance, owner.name, secret_key)
    if not problems and await ComputeInstance.exists(project_id=owner.id, name=name):
        problems.add(
            ("input", "name"), f'an instance named "{name}" already exists in this project', ErrorCode.TAKEN
        )
    problems.raise_if_any()
    try:
        async with _reporting_quota_refusals(), in_transaction():
            if deploy:
                await QUOTA_CHECK()(instance)
                instance.status = states.after_request(Request.DEPLOY, instance.status)
            await instance.save()
            if deploy:
                await runs.queue(COMPUTE, instance, RunAction.DEPLOY)
            await runs.announce(COMPUTE, instance)
            await audit.record(
                "ComputeInstance",
                instance.id,
                name,
                project=owner,
                after=audit.fields_of(instance, omit=_UNAUDITED),
            )
    except IntegrityError:
        raise UserErrors.one(
            ("input", "name"), f'an instance named "{name}" already exists in this project', ErrorCode.TAKEN
        ) from None
    outbox.notify()
    return instance


async def update_instance(
    actor: Actor, instance_id: str, data: InstanceIn, *, secret_key: str
) -> ComputeInstance:
    """ "Save Changes": labels, annotations, description, display name and inputs (sensitive ones
    sealed with `secret_key`); the status stays."""
    instance = await _require_own(actor, instance_id, ("input", "id"), Request.UPDATE)
    before = audit.fields_of(instance, omit=_UNAUDITED)
    problems = Collector()
    if data.name is not None and data.name != instance.name:
        problems.add(("input", "name"), "the name of an instance cannot change", ErrorCode.IMMUTABLE)
    _apply_fields(problems, instance, data, secret_key)
    if not problems:
        _check_renders(problems, instance, instance.project.name, secret_key)
    problems.raise_if_any()
    # Not conditional on the version: saving changes must not collide with a run's status changes.
    async with in_transaction():
        await ComputeInstance.filter(id=instance.id).update(
            display_name=instance.display_name,
            description=instance.description,
            labels=instance.labels,
            annotations=instance.annotations,
            inputs=instance.inputs,
            version=F("version") + 1,
            updated_at=runs.now(),
        )
        saved = await ComputeInstance.get(id=instance.id)
        await audit.record(
            "ComputeInstance",
            instance.id,
            instance.name,
            project=instance.project,
            before=before,
            after=audit.fields_of(saved, omit=_UNAUDITED),
        )
    return saved


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
    names = (await SERVICES_IN()([instance.id])).get(instance.id, [])
    problem = _services_problem(request, names)
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
    shown: list[tuple[Request, str | None]] = []
    for request in ACTIONS:
        refusal = _refusal(actor, instance, request)
        if refusal is not None:
            shown.append((request, refusal))
            continue
        try:
            states.check(request, instance.status)
        except states.TransitionError as error:
            shown.append((request, str(error)))
            continue
        shown.append((request, _services_problem(request, service_names)))
    return shown


async def _request_run(
    actor: Actor, instance_id: str, request: Request, action: RunAction, reason: str | None = None
) -> ComputeInstance:
    async with _reporting_quota_refusals(), outbox.transaction():  # rows to the relay, claim-free
        # Read, checked and locked in one statement (a refusal rolls back what is not yet written).
        instance = await _require_own(actor, instance_id, ("id",), request, lock=True)
        before = instance.status
        try:
            status = states.after_request(request, instance.status)
        except states.TransitionError as error:
            raise _state_error(error) from None
        if request == Request.DESTROY:
            await _refuse_with_services(instance, request)
        if request == Request.DEPLOY and instance.status == DeploymentStatus.NOT_DEPLOYED:
            # A redeploy of what is deployed asks nothing new: it already holds its quota.
            await QUOTA_CHECK()(instance)
        await runs.write_status(COMPUTE, instance, status, reason)
        await runs.queue(COMPUTE, instance, action, reason=reason, announced=True)
        await audit.record(
            "ComputeInstance",
            instance.id,
            instance.name,
            project=instance.project,
            before={"status": before},
            after={"status": instance.status},
        )
    return instance


async def deploy(actor: Actor, instance_id: str) -> ComputeInstance:
    return await _request_run(actor, instance_id, Request.DEPLOY, RunAction.DEPLOY)


async def destroy(actor: Actor, instance_id: str, *, reason: str | None = None) -> ComputeInstance:
    """`reason`: why, when the scheduler asks ("maximum lifetime 24h reached"): the status message
    and the run's reason say it."""
    return await _request_run(actor, instance_id, Request.DESTROY, RunAction.DESTROY, reason)


async def delete(actor: Actor, instance_id: str) -> str:
    """Removes a NOT_DEPLOYED instance at once; a deployed one is destroyed first, then removed."""
    found = await _require_own(actor, instance_id, ("id",), Request.DELETE)
    async with in_transaction():
        instance = await runs.locked(COMPUTE, found.id)
        await audit.record(
            "ComputeInstance",
            instance.id,
            instance.name,
            project=found.project,
            before=audit.fields_of(instance, omit=_UNAUDITED),
        )
        try:
            states.check(Request.DELETE, instance.status)
        except states.TransitionError as error:
            raise _state_error(error) from None
        await _refuse_with_services(instance, Request.DELETE)
        if states.needs_destroy_before_delete(instance.status):
            await runs.write_status(
                COMPUTE, instance, DeploymentStatus.DESTROYING, "deleting: destroying its resources first"
            )
            await runs.queue(COMPUTE, instance, RunAction.DESTROY, delete_after=True, announced=True)
        else:
            await runs.remove(COMPUTE, instance)
    outbox.notify()
    return instance_id


async def set_sharing(
    actor: Actor, instance_id: str, mode: SharingMode, projects: Sequence[str] | None
) -> ComputeInstance:
    instance = await _require_own(actor, instance_id, ("id",), Request.SHARE)
    chosen = await sharing.targets(actor, instance.project, mode, projects, what="an instance")
    async with in_transaction():
        shared_before = await ComputeInstanceShare.filter(instance_id=instance.id).values_list(
            "project__name", flat=True
        )
        before = {"sharing_mode": instance.sharing_mode, "shared_with": sorted(str(n) for n in shared_before)}
        await ComputeInstanceShare.filter(instance_id=instance.id).delete()
        for target in chosen:
            await ComputeInstanceShare.create(instance=instance, project=target)
        instance.sharing_mode = mode
        await ComputeInstance.filter(id=instance.id).update(sharing_mode=mode, updated_at=runs.now())
        await audit.record(
            "ComputeInstance",
            instance.id,
            instance.name,
            project=instance.project,
            before=before,
            after={"sharing_mode": mode, "shared_with": sorted(t.name for t in chosen)},
        )
    return instance


# The quota check of a deploy (bound by gpupaas.api.wiring: quotas sit above this package). Called
# inside the transaction that accepts the deploy; raises QUOTA_EXCEEDED (quotas.service.check).
QUOTA_CHECK: Hook[Callable[[ComputeInstance], Awaitable[None]]] = Hook("the quota check of a deploy")
# What a quota's refusal of a deploy tells (a webhook's QUOTA_REACHED), once the deploy's transaction
# has rolled back.
QUOTA_REFUSED: Hook[Callable[[UserErrors], Awaitable[None]]] = Hook("the report of a quota's refusal")


@contextlib.asynccontextmanager
async def _reporting_quota_refusals() -> AsyncIterator[None]:
    """Around a deploy's transaction: a QUOTA_EXCEEDED refusal is reported after the rollback
    (in a transaction of its own), then raised as it was."""
    try:
        yield
    except UserErrors as refused:
        if any(problem.code == ErrorCode.QUOTA_EXCEEDED for problem in refused.problems):
            await QUOTA_REFUSED()(refused)
        raise


# Gives the compute instance's service instances that its old owner owned to the new one too
# (bound by gpupaas.api.wiring: service instances sit above this package).
MOVE_SERVICES: Hook[Callable[[uuid.UUID, uuid.UUID | None, uuid.UUID], Awaitable[None]]] = Hook(
    "moving a compute instance's service instances to its new owner"
)


async def transfer(actor: Actor, instance_id: str, username: str) -> ComputeInstance:
    """A project admin gives the instance to another member of its project (any role), with the
    service instances in it that its old owner owned: what runs in a notebook goes with it."""
    instance = await _instance_for(actor, instance_id)
    if instance is None:
        raise UserErrors.one(("id",), "No such compute instance.", ErrorCode.NOT_FOUND)
    if not actor.is_admin_of(instance.project_id):
        raise Forbidden(
            f'Only admins of project "{instance.project.name}" may give its instances to another member.'
        )
    user: User = await owners.new_owner(instance.project, username, ("owner",))
    async with in_transaction():
        locked = await runs.locked(COMPUTE, instance.id)
        previous = locked.owner_id
        locked.owner_id = user.id
        locked.version += 1
        locked.updated_at = runs.now()
        await locked.save(update_fields=["owner_id", "version", "updated_at"])
        # Usage from now on is charged to the new owner.
        await meter.recharge(locked.id, user.id, runs.now())
        await MOVE_SERVICES()(instance.id, previous, user.id)
        await audit.record(
            "ComputeInstance",
            instance.id,
            instance.name,
            project=instance.project,
            before={"owner_id": previous},
            after={"owner_id": user.id, "owner": user.username},
        )
        # Lists and dashboards that show owners learn it live.
        await runs.announce(COMPUTE, locked)
    outbox.notify()
    return locked


async def counts_by_project(project_ids: list[uuid.UUID]) -> dict[uuid.UUID, int]:
    """How many compute instances each project holds (accounts asks through its hook: a project
    that holds any is not deleted), in one statement."""
    rows = (
        await ComputeInstance.filter(project_id__in=project_ids)
        .annotate(count=Count("id"))
        .group_by("project_id")
        .values_list("project_id", "count")
    )
    return {project_id: int(count) for project_id, count in rows}


async def instances_on(cluster: Cluster) -> str | None:
    """Why the cluster may not be deleted: the instances deployed on it (the clusters domain asks
    through its hook), or None."""
    deployed = [
        i.name
        for i in await ComputeInstance.exclude(status=DeploymentStatus.NOT_DEPLOYED).only("name", "snapshot")
        if i.profile_snapshot.cluster_id == str(cluster.id)
    ]
    if not deployed:
        return None
    return f"instances are deployed on this cluster ({', '.join(sorted(deployed)[:10])}): destroy them first"
