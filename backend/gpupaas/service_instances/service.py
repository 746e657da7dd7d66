"""The rules of GPU service instances: create one from an instance template inside a compute
instance, start, stop, restart, delete, and what a caller may do now.

A start, stop, restart or delete is a run (runs/, with the kind in run_kind.py): the new status,
its run and the outbox rows are written in one transaction through `runs.lifecycle`, which also
carries the run's later steps.

Who: its owner (its creator, or whom a project admin gave it to) and the project's admins operate
a service instance and see its connect links' access params (the token); the project's other
members read it, without them (or, with GPUPAAS_MEMBERS_SEE_ALL_INSTANCES off, do not see it);
nobody else sees it exists. Only those who manage a compute instance (compute/owners.py) run
service instances in it, and only while it is SUCCESS.

GPUs: a service instance's GPUs must fit what its compute instance has left, counting every service
instance of it that is not STOPPED (QUOTA_EXCEEDED otherwise), at creation (when it starts) and at
every start.

`{{generated_*}}` values are generated once at creation, kept encrypted (core.crypto), and filled
into the spec only where it is used: the plan (a worker) and the connect links.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from tortoise.exceptions import IntegrityError
from tortoise.functions import Count
from tortoise.transactions import in_transaction

from gpupaas.accounts.models import Project
from gpupaas.accounts.service import project_by_name, require_project
from gpupaas.audit import recorder as audit
from gpupaas.clusters.models import Cluster
from gpupaas.compute import owners
from gpupaas.compute import service as compute
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.run_kind import COMPUTE
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core import crypto, gpu_resources, validation
from gpupaas.core.actor import Actor
from gpupaas.core.errors import Collector, ErrorCode, Forbidden, NotFound, UserErrors
from gpupaas.core.ids import parse_id
from gpupaas.core.pagination import Page, paginate
from gpupaas.events import outbox
from gpupaas.instance_templates.models import InstanceTemplate
from gpupaas.instance_templates.placeholders import generate_values
from gpupaas.instance_templates.spec import (
    Port,
    Resources,
    ServiceSpec,
    Storage,
    check_spec,
    find_placeholders,
    resolve,
    spec_to_json,
    ssh_port,
)
from gpupaas.provisioning.registry import ClusterDriver
from gpupaas.pull_secrets import service as pull_secrets
from gpupaas.pull_secrets.models import ImagePullSecret
from gpupaas.runs import lifecycle as runs
from gpupaas.runs.models import DeploymentRun
from gpupaas.runs.states import RunAction
from gpupaas.service_instances import sizing, ssh, ssh_material, states
from gpupaas.service_instances.connect import ConnectLink, connect_links
from gpupaas.service_instances.models import ServiceInstance, ServiceInstanceSshKey
from gpupaas.service_instances.podspec import SshSetup, workspace_claim_name
from gpupaas.service_instances.run_kind import SERVICES, generated_values, plan_of
from gpupaas.service_instances.states import Request, ServiceStatus
from gpupaas.settings import DEFAULT_SSH_IMAGE

# The objects are named "<name>" and "<name>-workspace": Kubernetes names are at most 63 characters.
MAX_NAME_LENGTH = 53
MAX_GPUS = 64


# ---------------------------------------------------------------- visibility


# What the audit log leaves out of a service instance's snapshots: its generated values (the token,
# encrypted) and what runs write.
_UNAUDITED = ("generated", "ssh_host_key", "node_ports", "version", "status_message")


async def _service_for(
    actor: Actor, service_id: str, *, members_see_all: bool = True
) -> ServiceInstance | None:
    """The service instance when the caller may see it: its project's members (only their own when
    members do not see each other's, `members_see_all`), platform admins."""
    actor.require_user()
    sid = parse_id(service_id)
    if sid is None:
        return None
    found = await ServiceInstance.get_or_none(id=sid).select_related("project")
    if found is None or not actor.can_see(found.project):
        return None
    if owners.hidden_from(actor, found.project_id, found.owner_id, members_see_all):
        return None
    return found


async def get_service(actor: Actor, service_id: str, *, members_see_all: bool) -> ServiceInstance | None:
    return await _service_for(actor, service_id, members_see_all=members_see_all)


def manages(actor: Actor, service: ServiceInstance) -> bool:
    """Whether the caller manages the service instance (its owner, its project's admins): runs it and
    sees its connect links' access params."""
    return owners.manages(actor, service.project_id, service.owner_id)


def shown_to(actor: Actor, service: ServiceInstance, *, members_see_all: bool) -> bool:
    """Whether the caller sees the service instance among those of a compute instance it sees."""
    return not owners.hidden_from(actor, service.project_id, service.owner_id, members_see_all)


def may_see_services_of(actor: Actor, instance: ComputeInstance) -> bool:
    """Only the members of a compute instance's own project see its service instances (a project
    it is shared with sees the compute instance, not what runs in it)."""
    return actor.is_member_of(instance.project_id)


async def counts_by_project(project_ids: list[uuid.UUID]) -> dict[uuid.UUID, int]:
    """How many service instances each project holds (accounts asks through its hook), in one
    statement."""
    rows = (
        await ServiceInstance.filter(project_id__in=project_ids)
        .annotate(count=Count("id"))
        .group_by("project_id")
        .values_list("project_id", "count")
    )
    return {project_id: int(count) for project_id, count in rows}


async def names_in(instance_ids: Sequence[uuid.UUID]) -> dict[uuid.UUID, list[str]]:
    """The names of the service instances in each compute instance (compute's hook asks: they must
    be deleted before it is destroyed)."""
    found: dict[uuid.UUID, list[str]] = {}
    rows = await ServiceInstance.filter(compute_instance_id__in=list(instance_ids)).values_list(
        "compute_instance_id", "name"
    )
    for instance_id, name in rows:
        found.setdefault(instance_id, []).append(str(name))
    return found


def _require_member(actor: Actor, project: Project) -> None:
    if not (actor.is_platform_admin or project.id in actor.roles):
        raise Forbidden(f'Only members of project "{project.name}" may run service instances in it.')


def _refusal(actor: Actor, service: ServiceInstance, what: Request) -> str | None:
    """Why the caller may not ask `what` of the service instance by its rights, or None."""
    if not actor.is_member_of(service.project_id):
        return "Only members of the service instance's project may run it."
    if not manages(actor, service):
        return owners.not_manager("service instance", service.name, what.value, service.owner_id)
    return None


async def _require_own(
    actor: Actor, service_id: str, field: tuple[str, ...], what: Request
) -> ServiceInstance:
    """The service instance, for a request: only its owner and its project's admins."""
    found = await _service_for(actor, service_id)
    if found is None:
        raise UserErrors.one(field, "No such service instance.", ErrorCode.NOT_FOUND)
    refusal = _refusal(actor, found, what)
    if refusal is not None:
        raise Forbidden(refusal)
    return found


SNAPSHOT_LIMIT = 1000


async def service_of_event(service_id: str) -> ServiceInstance | None:
    """The service instance a status event is about, as it is now."""
    sid = parse_id(service_id)
    return await ServiceInstance.get_or_none(id=sid) if sid is not None else None


async def current_services(actor: Actor, owner: Project, *, members_see_all: bool) -> list[ServiceInstance]:
    """For a project-wide status subscription's snapshot: the project's service instances the
    caller sees (the first SNAPSHOT_LIMIT by name)."""
    query = ServiceInstance.filter(project_id=owner.id)
    hidden = owners.visible_filter(actor, members_see_all)
    if hidden is not None:
        query = query.filter(hidden)
    return await query.order_by("name", "id").limit(SNAPSHOT_LIMIT)


async def list_services(
    actor: Actor,
    project: str,
    compute_instance: str | None,
    first: int | None,
    after: str | None,
    *,
    mine: bool = False,
    members_see_all: bool,
) -> Page[ServiceInstance]:
    """A project's service instances (of one compute instance when given), newest first; `mine`:
    only the caller's own. Without `members_see_all`, a MEMBER's list leaves out other members'."""
    owner = await project_by_name(actor, project)
    if owner is None:
        raise NotFound(f'project "{project}" not found')
    query = ServiceInstance.filter(project_id=owner.id)
    hidden = owners.visible_filter(actor, members_see_all)
    if hidden is not None:
        query = query.filter(hidden)
    if mine:
        query = query.filter(owners.mine_filter(actor))
    if compute_instance is not None:
        cid = parse_id(compute_instance)
        if cid is None:
            raise NotFound(f'compute instance "{compute_instance}" not found')
        query = query.filter(compute_instance_id=cid)
    return await paginate(query, first, after)


# ---------------------------------------------------------------- generated values and the spec


def resolved_spec(secret_key: str, service: ServiceInstance) -> ServiceSpec:
    """The service's spec with its generated values filled in (a secret: not for logs)."""
    return resolve(service.spec_model(), generated_values(secret_key, service))


async def connect(
    secret_key: str, service: ServiceInstance, cluster: Cluster | None, *, access_params: bool
) -> list[ConnectLink]:
    """The links to the service's ports: the cluster's access address and the node ports. None
    before its first start (no node ports yet) or without an access address. `access_params`
    (the token of a JupyterLab link): only for those who manage it (`manages`). None either while
    it is stopped, being stopped or deleted: nothing answers there (its node ports are kept for
    the next start, which gives the same links back)."""
    if service.status in states.NO_POD:
        return []
    if not service.node_ports or cluster is None or not cluster.access_address:
        return []
    try:
        spec = resolved_spec(secret_key, service)
    except (crypto.DecryptionError, ValueError):
        return []  # written with another secret key: no link is better than a wrong one
    return connect_links(
        spec,
        access_address=cluster.access_address,
        node_ports=service.node_ports,
        access_params=access_params,
    )


# ---------------------------------------------------------------- GPUs


def _gpus_asked(gpu_count: int, partition: str | None, model: str | None) -> Fraction:
    """How much of its compute instance's GPUs a service takes: its GPUs, or its partitions' share
    of a GPU each (core/gpu_resources.py: a MIG 1g device is 1/7 of a GPU)."""
    return gpu_count * gpu_resources.partition_share(partition, model) if partition else Fraction(gpu_count)


def _amount(value: Fraction) -> str:
    """A number of GPUs as people read it: "2", "3/7", "1 2/7"."""
    whole, part = divmod(value, 1)
    if not part:
        return str(whole)
    return f"{whole} {part}" if whole else str(part)


async def _gpus_used(instance: ComputeInstance, *, besides: uuid.UUID | None = None) -> Fraction:
    query = ServiceInstance.filter(
        compute_instance_id=instance.id, status__in=list(states.HOLDS_GPUS), gpu_count__gt=0
    )
    if besides is not None:
        query = query.exclude(id=besides)
    model = instance.profile_snapshot.resources.gpu_model
    rows = await query.values_list("gpu_count", "spec")
    return sum(
        (_gpus_asked(int(count), (spec or {}).get("gpuPartition"), model) for count, spec in rows),
        Fraction(0),
    )


def _gpus_of(instance: ComputeInstance) -> tuple[int, str]:
    resources = instance.profile_snapshot.resources
    return resources.gpu_count, resources.gpu_vendor


async def _check_quota(
    field: tuple[str, ...],
    instance: ComputeInstance,
    gpu_count: int,
    besides: uuid.UUID | None,
    partition: str | None = None,
) -> None:
    """QUOTA_EXCEEDED when `gpu_count` more GPUs (or devices of `partition`) do not fit what the
    compute instance has left."""
    if gpu_count <= 0:
        return
    total, _ = _gpus_of(instance)
    asked = _gpus_asked(gpu_count, partition, instance.profile_snapshot.resources.gpu_model)
    used = await _gpus_used(instance, besides=besides)
    if used + asked > total:
        free = max(total - used, Fraction(0))
        what = f"{gpu_count} {partition} ({_amount(asked)} of a GPU)" if partition else str(gpu_count)
        raise UserErrors.one(
            field,
            f'compute instance "{instance.name}" has {total} GPU{"" if total == 1 else "s"}, '
            f"{_amount(used)} of them used by its other service instances: {what} requested, "
            f"{_amount(free)} free (stop another service instance, or ask for fewer)",
            ErrorCode.QUOTA_EXCEEDED,
        )


async def _cluster_of(instance: ComputeInstance) -> Cluster | None:
    cluster_id = instance.profile_snapshot.cluster_id
    if cluster_id:
        return await Cluster.get_or_none(id=cluster_id)
    return await Cluster.get_or_none(is_default=True)


async def _check_partition(
    problems: Collector, spec: ServiceSpec, instance: ComputeInstance, gpu_count: int
) -> None:
    """A partition must be one the compute instance's cluster has for its GPU model: one that a
    node of that model advertises (the cluster's last check: checkCluster)."""
    field = ("input", "gpuPartition")
    if spec.gpu_partition is None or any(problem.field == field for problem in problems.problems):
        return
    if gpu_count < 1:
        problems.add(field, "a partition needs gpuCount 1 or more (devices of it); or clear gpuPartition")
        return
    cluster = await _cluster_of(instance)
    if cluster is None:
        problems.add(field, "no cluster is registered: there is nowhere to look for partitions")
        return
    model = instance.profile_snapshot.resources.gpu_model
    exact = cluster.driver == ClusterDriver.KUBERNETES
    offered = [
        found
        for found in gpu_resources.advertised(cluster.nodes)
        if found.partition and gpu_resources.model_matches(model, found.model, exact=exact)
    ]
    if spec.gpu_partition in {found.resource for found in offered}:
        return
    nodes = f"{model} nodes" if model else "nodes"
    listed = ", ".join(f"{found.resource} ({found.model or 'no model'}, {found.count})" for found in offered)
    problems.add(
        field,
        f'cluster "{cluster.display_name}" has no {nodes} that advertise {spec.gpu_partition}: '
        + (f"its {nodes} have {listed}" if listed else f"its {nodes} advertise no partitions")
        + " (as its last check saw them; checkCluster looks again)",
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
    elif _gpus_asked(gpu_count, spec.gpu_partition, instance.profile_snapshot.resources.gpu_model) > total:
        whole = f"{gpu_count} {spec.gpu_partition}" if spec.gpu_partition else str(gpu_count)
        problems.add(
            field,
            f'compute instance "{instance.name}" has {total} GPU{"" if total == 1 else "s"}: '
            f"{whole} can never fit (ask for fewer)",
            ErrorCode.QUOTA_EXCEEDED,
        )


async def _check_pull_secret(problems: Collector, owner: Project, spec: ServiceSpec) -> None:
    """The pull secret (the template's or the caller's) must be one of the project's: a global
    template's names each project's own secret of that name."""
    name = spec.image_pull_secret
    field = ("input", "imagePullSecret")
    if name is None or any(problem.field == field for problem in problems.problems):
        return
    if await pull_secrets.find(owner.id, name) is not None:
        return
    names = await ImagePullSecret.filter(project_id=owner.id).order_by("name").values_list("name", flat=True)
    problems.add(
        field,
        f'project "{owner.name}" has no image pull secret "{name}"; it has '
        + (
            ", ".join(str(n) for n in names)
            if names
            else "none (its admins create them: createImagePullSecret)"
        )
        + ' (or "" for none)',
        ErrorCode.NOT_FOUND,
    )


async def pull_secret_users(owner: Project, secret: str) -> str | None:
    """Which of the project's service instances name the pull secret `secret` (the pull_secrets hook)."""
    rows = await ServiceInstance.filter(project_id=owner.id).values_list("name", "spec")
    names = sorted({str(name) for name, spec in rows if (spec or {}).get("imagePullSecret") == secret})
    return f"service instances {', '.join(names)}" if names else None


def _check_spec_in(problems: Collector, spec: ServiceSpec, instance: ComputeInstance) -> None:
    """The spec's own checks, then whether its CPU, memory and storage size fit the compute
    instance (sizing.py)."""
    for path, message in check_spec(spec):
        problems.add(("input", *path), message)
    reported = {problem.field for problem in problems.problems}
    resources = instance.profile_snapshot.resources.to_json()
    for path, message in sizing.problems(resources, spec, instance.name):
        if ("input", *path) not in reported:
            problems.add(("input", *path), message, ErrorCode.QUOTA_EXCEEDED)


def _claim_of(name: str, storage: Storage) -> str | None:
    """The claim a service's workspace is (NEW_VOLUME: its own; EXISTING_CLAIM: the one it mounts)."""
    if storage.mode == "NEW_VOLUME":
        return workspace_claim_name(name, storage.claim_name)
    return storage.claim_name if storage.mode == "EXISTING_CLAIM" else None


async def _check_claim_free(
    problems: Collector, spec: ServiceSpec, instance: ComputeInstance, name: str, besides: Any = None
) -> None:
    """A NEW_VOLUME's claim must be a name no other service instance of the compute instance uses
    (as its own volume or as the claim it mounts): applying it would take that claim over, and
    deleting it would delete another's workspace."""
    wanted = _claim_of(name, spec.storage) if spec.storage.mode == "NEW_VOLUME" else None
    if wanted is None:
        return
    others = ServiceInstance.filter(compute_instance_id=instance.id)
    if besides is not None:
        others = others.exclude(id=besides)
    for other in await others.order_by("name"):
        if other.name == name:  # the name is taken: the name's check says so
            continue
        if _claim_of(other.name, other.spec_model().storage) == wanted:
            problems.add(
                ("input", "storage", "claimName"),
                f'claim "{wanted}" is already the workspace of service instance "{other.name}" in '
                f'compute instance "{instance.name}": give the new volume another name (claimName)',
                ErrorCode.TAKEN,
            )
            return


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
    # None: the template's; "": whole GPUs.
    gpu_partition: str | None = None
    # None: the template's; "": none (a public image).
    image_pull_secret: str | None = None
    # None: the template's.
    storage: Storage | None = None
    resources: Resources | None = None
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


def _trial_plan(
    service: ServiceInstance,
    instance: ComputeInstance,
    project_name: str,
    values: dict[str, str],
    host_key: str | None,
) -> None:
    """A trial plan: what the workers will build must build, found now rather than at start (with
    an SSH setup of `host_key` when the spec has SSH access)."""
    ssh = SshSetup(DEFAULT_SSH_IMAGE, "", host_key) if host_key is not None else None
    try:
        plan_of(service, instance, project_name, {}, values=values, running=True, restart=None, ssh=ssh)
    except ValueError as error:
        raise UserErrors.one(("input",), f"these settings cannot run: {error}") from None


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
    if not compute.manages(actor, instance):
        verb = "run service instances in"
        raise Forbidden(owners.not_manager("compute instance", instance.name, verb, instance.owner_id))
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
        # The template's SSH access stays: its port is kept when the caller's ports leave it out.
        declared = ssh_port(spec)
        names = {port.name.strip().casefold() for port in data.ports}
        if declared is not None and declared.name.strip().casefold() not in names:
            changes["ports"] = (*changes["ports"], declared)
    if data.gpu_partition is not None:
        changes["gpu_partition"] = data.gpu_partition.strip() or None
    if data.image_pull_secret is not None:
        changes["image_pull_secret"] = data.image_pull_secret.strip() or None
    if data.storage is not None:
        changes["storage"] = data.storage
    if data.resources is not None:
        changes["resources"] = data.resources
    spec = replace(spec, **changes)
    _check_spec_in(problems, spec, instance)
    await _check_claim_free(problems, spec, instance, name)
    gpu_count = data.gpu_count if data.gpu_count is not None else (0 if spec.vendor == "CPU" else 1)
    _check_gpu_count(problems, spec, instance, gpu_count)
    await _check_partition(problems, spec, instance, gpu_count)
    await _check_pull_secret(problems, owner, spec)
    problems.raise_if_any()
    _require_deployed(instance, ("input", "computeInstance"), "create a service instance")
    values = generate_values(sorted(find_placeholders(spec)))
    # Its SSH server's host key, made once: the same at every start (ssh_material.py).
    host_key = ssh_material.new_host_key() if spec.ssh is not None else None
    service = ServiceInstance(
        project=owner,
        owner_id=actor.require_user().id,
        compute_instance=instance,
        template=template,
        template_name=template.name,
        name=name,
        display_name=display,
        spec=spec_to_json(spec),
        generated=crypto.encrypt(secret_key, json.dumps(values)) if values else "",
        ssh_host_key=crypto.encrypt(secret_key, host_key) if host_key is not None else "",
        gpu_count=gpu_count,
        status=ServiceStatus.PENDING if data.start else ServiceStatus.STOPPED,
        node_ports={},
        # Its time limits start as its compute instance's (the owner may change them within them).
        auto_stop_minutes=instance.auto_stop_minutes,
        max_lifetime_minutes=instance.max_lifetime_minutes,
    )
    _trial_plan(service, instance, owner.name, values, host_key)
    if await ServiceInstance.exists(compute_instance_id=instance.id, name=name):
        raise _taken(name, instance)
    try:
        async with in_transaction():
            locked = await runs.locked(COMPUTE, instance.id)
            _require_deployed(locked, ("input", "computeInstance"), "create a service instance")
            if data.start:
                await _check_quota(("input", "gpuCount"), locked, gpu_count, None, spec.gpu_partition)
            await service.save()
            if data.start:
                await runs.queue(SERVICES, service, RunAction.START)
            await runs.announce(SERVICES, service)
            await audit.record(
                "ServiceInstance",
                service.id,
                name,
                project=owner,
                after=audit.fields_of(service, omit=_UNAUDITED),
            )
    except IntegrityError:
        raise _taken(name, instance) from None
    outbox.notify()
    return service


# ---------------------------------------------------------------- edit


@dataclass
class ServiceUpdate:
    """What `update_service` changes; None leaves a field as it is (lists given replace)."""

    display_name: str | None = None
    gpu_count: int | None = None
    command: Sequence[str] | None = None
    env: Sequence[tuple[str, str]] | None = None
    ports: Sequence[Port] | None = None
    storage: Storage | None = None
    resources: Resources | None = None


def _edit_refusal(actor: Actor, service: ServiceInstance) -> str | None:
    """Why the caller may not edit the service instance now (rights, then its status), or None."""
    if not actor.is_member_of(service.project_id):
        return "Only members of the service instance's project may edit it."
    if not manages(actor, service):
        return owners.not_manager("service instance", service.name, "edit", service.owner_id)
    if service.status not in states.EDITABLE:
        return (
            f"cannot edit a service instance that is {service.status.value}: stop it first "
            "(a STOPPED or FAILED one is edited, and its changes apply at its next start)"
        )
    return None


def edit_refusal(actor: Actor, service: ServiceInstance) -> str | None:
    return _edit_refusal(actor, service)


def _storage_change_problem(before: Storage, after: Storage, has_run: bool) -> tuple[str, str] | None:
    """(field, why) when a service that has run may not change its storage so: its own volume
    (a NEW_VOLUME that exists) holds its workspace, which another mode or size would lose or the
    cluster could not resize. Reclaim may always change."""
    if not has_run or before.mode != "NEW_VOLUME":
        return None
    if after.mode != "NEW_VOLUME":
        return (
            "mode",
            f"the service's own volume holds its workspace: it cannot become {after.mode} (its data "
            "would be lost); keep NEW_VOLUME, or make a new service instance",
        )
    if (after.size or None) != (before.size or None):
        return (
            "size",
            f"its volume exists already ({before.size or 'the default size'}): its size cannot change; "
            "leave size as it is",
        )
    if after.claim_name != before.claim_name:
        return (
            "claimName",
            f"its volume exists already (claim {before.claim_name or 'named after the service'}): "
            "another name would be a new, empty volume; leave claimName as it is",
        )
    if after.storage_class != before.storage_class:
        return (
            "storageClass",
            "its volume exists already: its storage class cannot change; leave storageClass as it is",
        )
    return None


async def update_service(
    actor: Actor, service_id: str, data: ServiceUpdate, *, secret_key: str
) -> ServiceInstance:
    """Edits a STOPPED or FAILED service instance's spec (command, env, ports, GPUs, CPU and memory,
    storage when its volume allows): saved now, applied at its next start. Its owner and the
    project's admins only."""
    found = await _service_for(actor, service_id)
    if found is None:
        raise UserErrors.one(("input", "id"), "No such service instance.", ErrorCode.NOT_FOUND)
    if not actor.is_member_of(found.project_id) or not manages(actor, found):
        refusal = _edit_refusal(actor, found)
        raise Forbidden(refusal or "You may not edit this service instance.")
    instance = await ComputeInstance.get(id=found.compute_instance_id)
    has_run = await DeploymentRun.exists(service_id=found.id)
    async with in_transaction():
        service = await runs.locked(SERVICES, found.id)
        refusal = _edit_refusal(actor, service)
        if refusal is not None:
            raise UserErrors.one(("input", "id"), refusal, ErrorCode.INVALID_STATE)
        before_audit = audit.fields_of(service, omit=_UNAUDITED)
        old = service.spec_model()
        changes: dict[str, Any] = {}
        if data.command is not None:
            changes["command"] = tuple(data.command)
        if data.env is not None:
            changes["env"] = tuple((key, value) for key, value in data.env)
        if data.ports is not None:
            changes["ports"] = tuple(data.ports)
        if data.storage is not None:
            changes["storage"] = data.storage
        if data.resources is not None:
            changes["resources"] = data.resources
        spec = replace(old, **changes)
        problems = Collector()
        display = None
        if data.display_name is not None:
            display = data.display_name.strip() or service.name
            problems.check(("input", "displayName"), validation.display_name(display))
        _check_spec_in(problems, spec, instance)
        await _check_claim_free(problems, spec, instance, service.name, besides=service.id)
        gpu_count = service.gpu_count if data.gpu_count is None else data.gpu_count
        _check_gpu_count(problems, spec, instance, gpu_count)
        if gpu_count != service.gpu_count:
            await _check_partition(problems, spec, instance, gpu_count)
        blocked = _storage_change_problem(old.storage, spec.storage, has_run)
        if blocked is not None:
            problems.add(("input", "storage", blocked[0]), blocked[1], ErrorCode.IMMUTABLE)
        new_values = sorted(find_placeholders(spec) - find_placeholders(old))
        problems.raise_if_any()
        values = generated_values(secret_key, service)
        if new_values:
            values = {**values, **generate_values(new_values)}
        service.spec = spec_to_json(spec)
        service.gpu_count = gpu_count
        # as at creation; the worker makes a missing host key at the next start
        host_key = None
        if spec.ssh is not None:
            host_key = ssh_material.host_key_of(secret_key, service) or ssh_material.new_host_key()
        _trial_plan(service, instance, found.project.name, values, host_key)
        if display is not None:
            service.display_name = display
        if new_values:
            service.generated = crypto.encrypt(secret_key, json.dumps(values))
        service.version += 1
        service.updated_at = runs.now()
        await service.save()
        await runs.announce(SERVICES, service)
        await audit.record(
            "ServiceInstance",
            service.id,
            service.name,
            project=found.project,
            before=before_audit,
            after=audit.fields_of(service, omit=_UNAUDITED),
        )
    outbox.notify()
    return service


# ---------------------------------------------------------------- start, stop, restart, delete


async def request(
    actor: Actor, service_id: str, what: Request, *, reason: str | None = None
) -> ServiceInstance:
    """start, stop or restart (delete: `delete_service`). `reason`: why, when the scheduler asks
    ("auto-stop after 4h"): the status message and the run's reason say it."""
    found = await _require_own(actor, service_id, ("id",), what)
    async with in_transaction():
        service = await runs.locked(SERVICES, found.id)
        before = service.status
        try:
            status = states.after_request(what, service.status)
        except states.TransitionError as error:
            raise UserErrors.one(("id",), str(error), ErrorCode.INVALID_STATE) from None
        if what in (Request.START, Request.RESTART):
            instance = await runs.locked(COMPUTE, service.compute_instance_id)
            _require_deployed(instance, ("id",), f"{what.value} it")
            if what == Request.START:
                await _check_quota(
                    ("id",), instance, service.gpu_count, service.id, service.spec_model().gpu_partition
                )
        await runs.write_status(SERVICES, service, status, reason)
        await runs.queue(SERVICES, service, states.action_of(what), reason=reason)
        await runs.announce(SERVICES, service)
        await audit.record(
            "ServiceInstance",
            service.id,
            service.name,
            project=found.project,
            before={"status": before},
            after={"status": service.status},
        )
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
    shown: list[tuple[Request, str | None]] = []
    for what in ACTIONS:
        refusal = _refusal(actor, service, what)
        if refusal is not None:
            shown.append((what, refusal))
            continue
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
    found = await _require_own(actor, service_id, ("id",), Request.DELETE)
    async with in_transaction():
        service = await runs.locked(SERVICES, found.id)
        if service.status == ServiceStatus.DELETING:
            return service_id
        await audit.record(
            "ServiceInstance",
            service.id,
            service.name,
            project=found.project,
            before=audit.fields_of(service, omit=_UNAUDITED),
        )
        if not await DeploymentRun.exists(service_id=service.id):
            await runs.remove(SERVICES, service)
        else:
            await runs.write_status(
                SERVICES, service, ServiceStatus.DELETING, "deleting: removing its pod and workspace"
            )
            await runs.queue(SERVICES, service, RunAction.DESTROY, delete_after=True)
            await runs.announce(SERVICES, service)
    outbox.notify()
    return service_id


# ---------------------------------------------------------------- owners


async def transfer(actor: Actor, service_id: str, username: str) -> ServiceInstance:
    """A project admin gives the service instance to another member of its project (any role)."""
    service = await _service_for(actor, service_id)
    if service is None:
        raise UserErrors.one(("id",), "No such service instance.", ErrorCode.NOT_FOUND)
    if not actor.is_admin_of(service.project_id):
        raise Forbidden(
            f'Only admins of project "{service.project.name}" may give its service instances to another '
            "member."
        )
    user = await owners.new_owner(service.project, username, ("owner",))
    async with in_transaction():
        locked = await runs.locked(SERVICES, service.id)
        previous = locked.owner_id
        await _give(locked, user.id)
        await audit.record(
            "ServiceInstance",
            locked.id,
            locked.name,
            project=service.project,
            before={"owner_id": previous},
            after={"owner_id": user.id, "owner": user.username},
        )
    outbox.notify()
    return locked


async def _give(service: ServiceInstance, owner_id: uuid.UUID) -> None:
    """Inside the caller's transaction: the new owner, announced (lists that show owners follow)."""
    service.owner_id = owner_id
    service.version += 1
    service.updated_at = runs.now()
    await service.save(update_fields=["owner_id", "version", "updated_at"])
    await runs.announce(SERVICES, service)
    # Its new owner's SSH keys, not the old owner's, let people in from now on.
    await ssh.owner_changed(service.id)


async def move_with(compute_instance_id: uuid.UUID, previous: uuid.UUID | None, owner_id: uuid.UUID) -> None:
    """A compute instance was given to `owner_id`: the service instances in it that its previous
    owner owned go along (compute's hook asks, inside its transaction)."""
    moved = ServiceInstance.filter(compute_instance_id=compute_instance_id, owner_id=previous)
    for service in await moved.select_for_update():
        await _give(service, owner_id)


# ---------------------------------------------------------------- SSH keys added to a service


async def _ssh_service(actor: Actor, service_id: str, field: tuple[str, ...]) -> ServiceInstance:
    found = await _service_for(actor, service_id)
    if found is None:
        raise UserErrors.one(field, "No such service instance.", ErrorCode.NOT_FOUND)
    if not actor.is_member_of(found.project_id):
        raise Forbidden("Only members of the service instance's project may change its SSH keys.")
    return found


async def add_ssh_key(
    actor: Actor, service_id: str, name: str | None, public_key: str
) -> ServiceInstanceSshKey:
    """Lets another key into the service (its owner and its project's admins; audited)."""
    found = await _ssh_service(actor, service_id, ("input", "service"))
    return await ssh.add_key(actor, found, name, public_key, manages=manages(actor, found))


async def delete_ssh_key(actor: Actor, key_id: str) -> str:
    """Removes a key added to a service (its owner and its project's admins; audited)."""
    key = await ssh.key_of(key_id)
    found = await _service_for(actor, str(key.service_id)) if key is not None else None
    if key is None or found is None:
        raise UserErrors.one(("id",), "No such SSH key.", ErrorCode.NOT_FOUND)
    if not actor.is_member_of(found.project_id):
        raise Forbidden("Only members of the service instance's project may change its SSH keys.")
    return await ssh.delete_key(actor, found, key, manages=manages(actor, found))
