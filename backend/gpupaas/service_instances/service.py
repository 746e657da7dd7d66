"""The rules of GPU service instances: create one from an instance template inside a compute
instance, start, stop, restart, delete; and the steps of their runs that the workers take.

They follow compute instances' pattern (compute/service.py): every status change writes, in one
transaction, the service instance, its run (a DeploymentRun with `service` set) and outbox rows (a
"service-run" command for the workers, a status event with kind "service" for subscribers), so an
accepted request is never lost; concurrent requests on one service instance cannot both win (row
lock on PostgreSQL, a version-conditional write everywhere).

Who: the members of the service instance's project (any role) create and operate them, in a
compute instance of that project that is SUCCESS; the project's members read them; nobody else
sees they exist. GPUs: a service instance's GPUs must fit what its compute instance has left,
counting every service instance of it that is not STOPPED (QUOTA_EXCEEDED otherwise), at creation
(when it starts) and at every start.

`{{generated_*}}` values are generated once at creation, kept encrypted (core.crypto), and filled
into the spec only where it is used: the plan (a worker) and the connect links.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Any

from tortoise.exceptions import IntegrityError
from tortoise.functions import Sum
from tortoise.transactions import in_transaction

from gpupaas.accounts.models import Project
from gpupaas.accounts.service import project_by_name, require_project
from gpupaas.clusters.models import Cluster
from gpupaas.compute import service as compute
from gpupaas.compute.models import ComputeInstance, DeploymentRun
from gpupaas.compute.states import DeploymentStatus, RunAction, RunStatus
from gpupaas.core import crypto, validation
from gpupaas.core.actor import Actor
from gpupaas.core.errors import Collector, ErrorCode, Forbidden, NotFound, UserErrors
from gpupaas.core.ids import parse_id
from gpupaas.core.pagination import Page, paginate
from gpupaas.events import outbox
from gpupaas.instance_templates.models import InstanceTemplate
from gpupaas.instance_templates.placeholders import find_placeholders, generate_values, resolve
from gpupaas.instance_templates.spec import Port, ServiceSpec, check_spec, spec_to_json
from gpupaas.provisioning.plan import PermanentError, Plan
from gpupaas.service_instances import states
from gpupaas.service_instances.connect import ConnectLink, connect_links
from gpupaas.service_instances.models import ServiceInstance
from gpupaas.service_instances.plan import build_service_plan, node_ports_of
from gpupaas.service_instances.states import Request, ServiceStatus

__all__ = [
    "SERVICE_RUN",
    "ClaimedServiceRun",
    "ServiceIn",
    "claim_service_run",
    "connect",
    "create_service",
    "delete_service",
    "finish_service_run",
    "get_service",
    "list_services",
    "plan_for",
    "report_service_drift",
    "request",
    "requeue_stale_service_runs",
]

SERVICE_RUN = "service-run"
# The objects are named "<name>" and "<name>-workspace": Kubernetes names are at most 63 characters.
MAX_NAME_LENGTH = 53
MAX_GPUS = 64


# ---------------------------------------------------------------- visibility


async def _service_for(actor: Actor, service_id: str) -> ServiceInstance | None:
    """The service instance when the caller may see it: its project's members, platform admins."""
    actor.require_user()
    sid = parse_id(service_id)
    if sid is None:
        return None
    found = await ServiceInstance.get_or_none(id=sid).select_related("project")
    if found is None or not actor.can_see(found.project):
        return None
    return found


async def get_service(actor: Actor, service_id: str) -> ServiceInstance | None:
    return await _service_for(actor, service_id)


def _require_member(actor: Actor, project: Project) -> None:
    if not (actor.is_platform_admin or project.id in actor.roles):
        raise Forbidden(f'Only members of project "{project.name}" may run service instances in it.')


async def _require_own(actor: Actor, service_id: str, field: tuple[str, ...]) -> ServiceInstance:
    found = await _service_for(actor, service_id)
    if found is None:
        raise UserErrors.one(field, "No such service instance.", ErrorCode.NOT_FOUND)
    _require_member(actor, found.project)
    return found


async def list_services(
    actor: Actor, project: str, compute_instance: str | None, first: int | None, after: str | None
) -> Page[ServiceInstance]:
    """A project's service instances (of one compute instance when given), newest first."""
    owner = await project_by_name(actor, project)
    if owner is None:
        raise NotFound(f'project "{project}" not found')
    query = ServiceInstance.filter(project_id=owner.id)
    if compute_instance is not None:
        cid = parse_id(compute_instance)
        if cid is None:
            raise NotFound(f'compute instance "{compute_instance}" not found')
        query = query.filter(compute_instance_id=cid)
    return await paginate(query, first, after)


# ---------------------------------------------------------------- generated values and the spec


def _generated(secret_key: str, service: ServiceInstance) -> dict[str, str]:
    if not service.generated:
        return {}
    values = json.loads(crypto.decrypt(secret_key, service.generated))
    return {str(k): str(v) for k, v in values.items()}


def resolved_spec(secret_key: str, service: ServiceInstance) -> ServiceSpec:
    """The service's spec with its generated values filled in (a secret: not for logs)."""
    return resolve(service.spec_model(), _generated(secret_key, service))


async def connect(secret_key: str, service: ServiceInstance, cluster: Cluster | None) -> list[ConnectLink]:
    """The links to the service's ports: the cluster's access address and the node ports. None
    before its first start (no node ports yet) or without an access address."""
    if not service.node_ports or cluster is None or not cluster.access_address:
        return []
    try:
        spec = resolved_spec(secret_key, service)
    except (crypto.DecryptionError, ValueError):
        return []  # written with another secret key: no link is better than a wrong one
    return connect_links(spec, access_address=cluster.access_address, node_ports=service.node_ports)


# ---------------------------------------------------------------- events and runs


async def _announce(service: ServiceInstance, *, deleted: bool = False) -> None:
    await outbox.add_status(
        str(service.id),
        {
            "type": "status",
            "kind": "service",
            "instanceId": str(service.id),
            "projectId": str(service.project_id),  # type: ignore[attr-defined]
            "computeInstanceId": str(service.compute_instance_id),  # type: ignore[attr-defined]
            "sharedWith": [],
            "status": service.status.value,
            "message": service.status_message,
            "version": service.version,
            "deleted": deleted,
            "at": compute.now().isoformat(),
        },
    )


def _command(run: DeploymentRun, service_id: uuid.UUID) -> dict[str, Any]:
    return {
        "type": SERVICE_RUN,
        "runId": str(run.id),
        "serviceId": str(service_id),
        "action": run.action.value,
    }


async def _queue_run(service: ServiceInstance, action: RunAction, *, delete_after: bool = False) -> None:
    run: DeploymentRun = await DeploymentRun.create(
        instance_id=service.compute_instance_id,  # type: ignore[attr-defined]
        service_id=service.id,
        action=action,
        delete_after=delete_after,
        queued_at=compute.now(),
    )
    await outbox.add_command(str(service.id), _command(run, service.id))


async def _write_status(service: ServiceInstance, status: ServiceStatus, message: str | None) -> None:
    changed = await ServiceInstance.filter(id=service.id, version=service.version).update(
        status=status,
        status_message=message,
        version=service.version + 1,
        updated_at=compute.now(),
        drifted=False,
    )
    if not changed:
        raise UserErrors.one(
            ("id",),
            "the service instance was changed by another request at the same moment: look again and retry",
            ErrorCode.CONFLICT,
        )
    service.status, service.status_message, service.version = status, message, service.version + 1
    service.drifted = False


async def _locked(service_id: uuid.UUID) -> ServiceInstance:
    found: ServiceInstance = await ServiceInstance.select_for_update().get(id=service_id)
    return found


async def _remove(service: ServiceInstance) -> None:
    service.version += 1
    await _announce(service, deleted=True)
    await service.delete()


# ---------------------------------------------------------------- GPUs


async def _gpus_used(compute_instance_id: uuid.UUID, *, besides: uuid.UUID | None = None) -> int:
    query = ServiceInstance.filter(
        compute_instance_id=compute_instance_id, status__in=list(states.HOLDS_GPUS), gpu_count__gt=0
    )
    if besides is not None:
        query = query.exclude(id=besides)
    rows = await query.annotate(total=Sum("gpu_count")).values("total")
    return int((rows[0]["total"] if rows else 0) or 0)


def _gpus_of(instance: ComputeInstance) -> tuple[int, str]:
    resources = instance.snapshot["resources"]
    return int(resources["gpuCount"]), str(resources["gpuVendor"])


async def _check_quota(
    field: tuple[str, ...], instance: ComputeInstance, gpu_count: int, besides: uuid.UUID | None
) -> None:
    """QUOTA_EXCEEDED when `gpu_count` more GPUs do not fit what the compute instance has left."""
    if gpu_count <= 0:
        return
    total, _ = _gpus_of(instance)
    used = await _gpus_used(instance.id, besides=besides)
    if used + gpu_count > total:
        free = max(total - used, 0)
        raise UserErrors.one(
            field,
            f'compute instance "{instance.name}" has {total} GPU{"" if total == 1 else "s"}, '
            f"{used} of them used by its other service instances: {gpu_count} requested, {free} free "
            "(stop another service instance, or ask for fewer)",
            ErrorCode.QUOTA_EXCEEDED,
        )


def _check_gpu_count(
    problems: Collector, spec: ServiceSpec, instance: ComputeInstance, gpu_count: int
) -> None:
    field = ("input", "gpuCount")
    total, vendor = _gpus_of(instance)
    if gpu_count < 0 or gpu_count > MAX_GPUS:
        problems.add(field, f"must be between 0 and {MAX_GPUS}")
    elif gpu_count and spec.vendor == "CPU":
        problems.add(field, "the template runs on CPU only: set gpuCount to 0 (or leave it out)")
    elif gpu_count and spec.vendor != vendor:
        problems.add(
            field,
            f'the template is for {spec.vendor} GPUs but compute instance "{instance.name}" has '
            f"{'no GPUs' if vendor == 'CPU' or not total else vendor + ' GPUs'}: choose a {vendor} template, "
            "or set gpuCount to 0 to run it without GPUs",
        )
    elif gpu_count > total:
        problems.add(
            field,
            f'compute instance "{instance.name}" has {total} GPU{"" if total == 1 else "s"}: '
            f"{gpu_count} can never fit (set gpuCount to {total} or less)",
            ErrorCode.QUOTA_EXCEEDED,
        )


def _undeployed(instance: ComputeInstance, what: str) -> str | None:
    if instance.status == DeploymentStatus.SUCCESS:
        return None
    return (
        f'cannot {what}: compute instance "{instance.name}" is {instance.status.value}; '
        "service instances run only in a deployed (SUCCESS) compute instance"
    )


def _require_deployed(instance: ComputeInstance, field: tuple[str, ...], what: str) -> None:
    problem = _undeployed(instance, what)
    if problem is not None:
        raise UserErrors.one(field, problem, ErrorCode.INVALID_STATE)


# ---------------------------------------------------------------- create


@dataclass
class ServiceIn:
    project: str
    compute_instance: str
    template: str
    name: str
    display_name: str | None = None
    gpu_count: int | None = None
    command: Sequence[str] | None = None
    env: Sequence[tuple[str, str]] | None = None
    ports: Sequence[Port] | None = None
    start: bool = True


async def _template_of(actor: Actor, owner: Project, template_id: str) -> InstanceTemplate | None:
    """A template the project may use: a global one or its own."""
    tid = parse_id(template_id)
    if tid is None:
        return None
    template = await InstanceTemplate.get_or_none(id=tid).select_related("project")
    if template is None or not (template.project.is_system or template.project.id == owner.id):
        return None
    return template


async def _compute_of(owner: Project, compute_id: str) -> ComputeInstance | None:
    cid = parse_id(compute_id)
    if cid is None:
        return None
    return await ComputeInstance.get_or_none(id=cid, project_id=owner.id)


def _taken(name: str, instance: ComputeInstance) -> UserErrors:
    return UserErrors.one(
        ("input", "name"),
        f'compute instance "{instance.name}" already has a service instance named "{name}"',
        ErrorCode.TAKEN,
    )


async def create_service(actor: Actor, data: ServiceIn, *, secret_key: str) -> ServiceInstance:
    owner = await require_project(actor, data.project, ("input", "project"))
    _require_member(actor, owner)
    instance = await _compute_of(owner, data.compute_instance)
    if instance is None:
        raise UserErrors.one(
            ("input", "computeInstance"), "No such compute instance in this project.", ErrorCode.NOT_FOUND
        )
    template = await _template_of(actor, owner, data.template)
    if template is None:
        raise UserErrors.one(("input", "template"), "No such instance template.", ErrorCode.NOT_FOUND)
    problems = Collector()
    name = data.name
    problems.check(("input", "name"), validation.dns_label(name))
    if not problems and len(name) > MAX_NAME_LENGTH:
        problems.add(("input", "name"), f"must be at most {MAX_NAME_LENGTH} characters (not {len(name)})")
    display = (data.display_name or "").strip() or name
    problems.check(("input", "displayName"), validation.display_name(display))
    spec = template.spec()
    changes: dict[str, Any] = {}
    if data.command is not None:
        changes["command"] = tuple(data.command)
    if data.env is not None:
        changes["env"] = tuple((key, value) for key, value in data.env)
    if data.ports is not None:
        changes["ports"] = tuple(data.ports)
    spec = replace(spec, **changes)
    for path, message in check_spec(spec):
        problems.add(("input", *path), message)
    gpu_count = data.gpu_count if data.gpu_count is not None else (0 if spec.vendor == "CPU" else 1)
    _check_gpu_count(problems, spec, instance, gpu_count)
    problems.raise_if_any()
    _require_deployed(instance, ("input", "computeInstance"), "create a service instance")
    values = generate_values(sorted(find_placeholders(spec)))
    service = ServiceInstance(
        project=owner,
        compute_instance=instance,
        template=template,
        template_name=template.name,
        name=name,
        display_name=display,
        spec=spec_to_json(spec),
        generated=crypto.encrypt(secret_key, json.dumps(values)) if values else "",
        gpu_count=gpu_count,
        status=ServiceStatus.PENDING if data.start else ServiceStatus.STOPPED,
        node_ports={},
    )
    # A trial plan: what the workers will build must build (found now, not at start).
    try:
        _plan(service, instance, owner.name, {}, values=values, running=True, restart=None)
    except ValueError as error:
        raise UserErrors.one(("input",), f"these settings cannot run: {error}") from None
    if await ServiceInstance.exists(compute_instance_id=instance.id, name=name):
        raise _taken(name, instance)
    try:
        async with in_transaction():
            locked = await compute._locked(instance.id)
            _require_deployed(locked, ("input", "computeInstance"), "create a service instance")
            if data.start:
                await _check_quota(("input", "gpuCount"), locked, gpu_count, None)
            await service.save()
            if data.start:
                await _queue_run(service, RunAction.START)
            await _announce(service)
    except IntegrityError:
        raise _taken(name, instance) from None
    outbox.notify()
    return service


# ---------------------------------------------------------------- start, stop, restart, delete


async def request(actor: Actor, service_id: str, what: Request) -> ServiceInstance:
    """start, stop or restart (delete: `delete_service`)."""
    service = await _require_own(actor, service_id, ("id",))
    async with in_transaction():
        service = await _locked(service.id)
        try:
            status = states.after_request(what, service.status)
        except states.TransitionError as error:
            raise UserErrors.one(("id",), str(error), ErrorCode.INVALID_STATE) from None
        if what in (Request.START, Request.RESTART):
            instance = await compute._locked(service.compute_instance_id)  # type: ignore[attr-defined]
            _require_deployed(instance, ("id",), f"{what.value} it")
            if what == Request.START:
                await _check_quota(("id",), instance, service.gpu_count, service.id)
        await _write_status(service, status, None)
        await _queue_run(service, states.action_of(what))
        await _announce(service)
    outbox.notify()
    return service


# What the studio offers, in its order.
ACTIONS = (Request.START, Request.STOP, Request.RESTART, Request.DELETE)


def actions(
    actor: Actor, service: ServiceInstance, instance: ComputeInstance
) -> list[tuple[Request, str | None]]:
    """What the caller may do with the service instance now: each request with None, or why not
    (the message the request itself would answer): rights, then its status, then whether its
    compute instance (`instance`) is deployed, for a start or restart."""
    if not (actor.is_platform_admin or service.project_id in actor.roles):  # type: ignore[attr-defined]
        denied = "Only members of the service instance's project may run it."
        return [(what, denied) for what in ACTIONS]
    shown: list[tuple[Request, str | None]] = []
    for what in ACTIONS:
        try:
            states.check(what, service.status)
        except states.TransitionError as error:
            shown.append((what, str(error)))
            continue
        needs_deployed = what in (Request.START, Request.RESTART)
        shown.append((what, _undeployed(instance, f"{what.value} it") if needs_deployed else None))
    return shown


async def delete_service(actor: Actor, service_id: str) -> str:
    """From any status. Never started: removed at once. Otherwise DELETING: its objects and workspace
    are deleted from the cluster, then it is removed (after the run under way, if any). Deleting a
    service instance that is already being deleted changes nothing."""
    service = await _require_own(actor, service_id, ("id",))
    async with in_transaction():
        service = await _locked(service.id)
        if service.status == ServiceStatus.DELETING:
            return service_id
        if not await DeploymentRun.exists(service_id=service.id):
            await _remove(service)
        else:
            await _write_status(service, ServiceStatus.DELETING, "deleting: removing its pod and workspace")
            await _queue_run(service, RunAction.DESTROY, delete_after=True)
            await _announce(service)
    outbox.notify()
    return service_id


# ---------------------------------------------------------------- plans


def _plan(
    service: ServiceInstance,
    instance: ComputeInstance,
    project_name: str,
    resource_names: dict[str, str],
    *,
    values: dict[str, str],
    running: bool,
    restart: str | None,
) -> Plan:
    snapshot = instance.snapshot
    annotations = {
        **{pair[0]: pair[1] for pair in snapshot.get("annotations", [])},
        **{pair[0]: pair[1] for pair in instance.annotations},
    }
    return build_service_plan(
        service_id=str(service.id),
        name=service.name,
        spec=resolve(service.spec_model(), values),
        gpu_count=service.gpu_count,
        compute_id=str(instance.id),
        compute_name=instance.name,
        project=project_name,
        compute_resources=snapshot["resources"],
        profile_name=snapshot["profileName"],
        gpu_resource_names=resource_names,
        running=running,
        restart=restart,
        annotations=annotations,
    )


def plan_for(
    claimed: ClaimedServiceRun, secret_key: str, resource_names: dict[str, str] | None = None
) -> Plan:
    """The plan of the claimed run (PermanentError when it cannot be built)."""
    action = claimed.run.action
    try:
        values = _generated(secret_key, claimed.service)
        return _plan(
            claimed.service,
            claimed.instance,
            claimed.project_name,
            resource_names or {},
            values=values,
            running=action in (RunAction.START, RunAction.RESTART),
            restart=str(claimed.run.id) if action == RunAction.RESTART else None,
        )
    except crypto.DecryptionError as error:
        raise PermanentError(f"the service instance's generated values: {error}") from None
    except ValueError as error:
        raise PermanentError(f"the service instance cannot run: {error}") from None


# ---------------------------------------------------------------- the steps of a run (workers)


@dataclass
class ClaimedServiceRun:
    run: DeploymentRun
    service: ServiceInstance
    instance: ComputeInstance
    project_name: str

    @property
    def superseded(self) -> bool:
        """A start, stop or restart of a service instance that is being deleted: nothing to do."""
        return self.service.status == ServiceStatus.DELETING and self.run.action != RunAction.DESTROY


async def claim_service_run(run_id: str, worker: str, lease: timedelta) -> ClaimedServiceRun | None:
    """Takes a queued run of a service instance (see compute.take_run). None as well while another
    run of the same service instance is under way: a delete waits for the start before it, and is
    published again when that run ends."""
    rid = parse_id(run_id)
    if rid is None:
        return None
    async with in_transaction():
        queued = await DeploymentRun.get_or_none(id=rid).only("id", "service_id")
        if queued is None or queued.service_id is None:  # type: ignore[attr-defined]
            return None
        busy = await DeploymentRun.filter(
            service_id=queued.service_id,  # type: ignore[attr-defined]
            status=RunStatus.RUNNING,
            lease_expires_at__gt=compute.now(),
        ).exclude(id=rid)
        if busy:
            return None
        run = await compute.take_run(rid, worker, lease, service=True)
        if run is None:
            return None
        service = await _locked(run.service_id)  # type: ignore[attr-defined]
        instance = await ComputeInstance.get(id=service.compute_instance_id)  # type: ignore[attr-defined]
        project = await Project.get(id=service.project_id)  # type: ignore[attr-defined]
        started = states.run_started(run.action)
        superseded = service.status == ServiceStatus.DELETING and run.action != RunAction.DESTROY
        if not superseded and service.status != started:
            await _write_status(service, started, None)
            await _announce(service)
    outbox.notify()
    return ClaimedServiceRun(run=run, service=service, instance=instance, project_name=project.name)


async def _republish_waiting(service_id: uuid.UUID) -> None:
    """The service's queued runs, published again: one may have been skipped while this one ran."""
    for run in await DeploymentRun.filter(service_id=service_id, status=RunStatus.QUEUED):
        await DeploymentRun.filter(id=run.id).update(queued_at=compute.now())
        await outbox.add_command(str(service_id), _command(run, service_id))


async def finish_service_run(
    run_id: uuid.UUID,
    worker: str,
    *,
    succeeded: bool,
    message: str | None,
    outputs: dict[str, str] | None = None,
    canceled: bool = False,
    applied: list[dict[str, Any]] | None = None,
) -> bool:
    """Ends the run and moves the service instance on (removes it after a delete). A run that a
    delete superseded ends without changing the status (`canceled`: it did nothing). False when the
    run is no longer this worker's (its lease expired and another worker took it): that worker's
    result stands."""
    async with in_transaction():
        run = await DeploymentRun.select_for_update().get_or_none(id=run_id)
        if run is None or run.status != RunStatus.RUNNING or run.lease_owner != worker:
            return False
        if canceled:
            run.status = RunStatus.CANCELED
        else:
            run.status = RunStatus.SUCCEEDED if succeeded else RunStatus.FAILED
        run.message = message
        run.finished_at = compute.now()
        run.lease_expires_at = None
        fields = ["status", "message", "finished_at", "lease_expires_at"]
        if applied is not None:  # the objects the driver applied
            run.applied = applied
            fields.append("applied")
        await run.save(update_fields=fields)
        service = await _locked(run.service_id)  # type: ignore[attr-defined]
        superseded = service.status == ServiceStatus.DELETING and run.action != RunAction.DESTROY
        if succeeded and run.delete_after:
            await _remove(service)
        elif not superseded:
            status = states.run_succeeded(run.action) if succeeded else states.run_failed(run.action)
            if outputs is not None and succeeded:
                ports = node_ports_of(outputs)
                if ports:
                    service.node_ports = ports
                    await ServiceInstance.filter(id=service.id).update(node_ports=ports)
            await _write_status(service, status, message)
            await _announce(service)
        if not (succeeded and run.delete_after):
            await _republish_waiting(service.id)
    outbox.notify()
    return True


async def report_service_drift(service_id: str, failed: bool, reason: str | None) -> bool:
    """The service's pod failed on the cluster (RUNNING -> FAILED with the reason), or recovered
    after that (FAILED by drift -> RUNNING). True when the status changed."""
    sid = parse_id(service_id)
    if sid is None:
        return False
    async with in_transaction():
        service = await ServiceInstance.select_for_update().get_or_none(id=sid)
        if service is None:
            return False
        if failed and service.status == ServiceStatus.RUNNING:
            status, message, drifted = ServiceStatus.FAILED, f"drift: {reason or 'its pod failed'}", True
        elif not failed and service.status == ServiceStatus.FAILED and service.drifted:
            status, message, drifted = ServiceStatus.RUNNING, None, False
        else:
            return False
        await _write_status(service, status, message)
        await ServiceInstance.filter(id=sid).update(drifted=drifted)
        await _announce(service)
    outbox.notify()
    return True


async def requeue_stale_service_runs(*, queued_for: timedelta, max_attempts: int) -> int:
    """compute.requeue_stale_runs for service instances' runs."""

    async def fail(run: DeploymentRun) -> None:
        service_id: uuid.UUID = run.service_id  # type: ignore[attr-defined]
        service = await _locked(service_id)
        if not (service.status == ServiceStatus.DELETING and run.action != RunAction.DESTROY):
            await _write_status(service, states.run_failed(run.action), run.message)
            await _announce(service)
        await _republish_waiting(service_id)

    def command(run: DeploymentRun) -> tuple[str, dict[str, Any]]:
        service_id: uuid.UUID = run.service_id  # type: ignore[attr-defined]
        return str(service_id), _command(run, service_id)

    return await compute.requeue_stale(
        queued_for=queued_for,
        max_attempts=max_attempts,
        service=True,
        fail=fail,
        command=command,
        retry="start it again to retry",
    )
