"""The rules of quotas: who sets them, what counts as used, and the check that a deploy fits.

Platform admins set a project's quota; a project's admins set each member's within it (no member
limit may exceed the project's limit of the same dimension). A dimension left empty is not
limited. Dimensions: GPUs in total, GPUs of a vendor or of a vendor's model, CPU, memory and
deployed compute instances.

What counts as used: every compute instance of the project (of the member: that they own) that is
not NOT_DEPLOYED, with the resources of its snapshot. A deploy holds its quota from the moment it
is accepted (WAITING) until a destroy finishes (NOT_DEPLOYED again); a FAILED instance still counts,
since what it applied may still hold the cluster's GPUs. GPU service instances hold no quota of
their own: they run inside a compute instance, on the GPUs it holds (service_instances/service.py).

`check` is the one place a deploy is refused for a quota: it runs inside the transaction that
accepts the deploy, after locking the project's row (SELECT ... FOR UPDATE on PostgreSQL; SQLite
has one writer at a time), so two concurrent deploys cannot both take the last GPUs.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from tortoise.exceptions import DoesNotExist
from tortoise.transactions import in_transaction

from gpupaas.accounts.models import Membership, Project, User
from gpupaas.accounts.service import project_by_name, require_project
from gpupaas.audit import recorder as audit
from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Actor
from gpupaas.core.errors import Collector, ErrorCode, Forbidden, UserErrors
from gpupaas.core.gpus import Vendor
from gpupaas.core.quantities import cpu_quantity, memory_quantity, parse_quantity
from gpupaas.events import outbox, sql
from gpupaas.quotas.models import Quota
from gpupaas.webhooks import service as webhooks
from gpupaas.webhooks.models import WebhookEvent

# The statuses in which a compute instance holds its resources: all but NOT_DEPLOYED.
HOLDING = frozenset(DeploymentStatus) - {DeploymentStatus.NOT_DEPLOYED}
MAX_COUNT = 100_000
MAX_GPU_LIMITS = 32

# ---------------------------------------------------------------- what is held


@dataclass(frozen=True)
class Holding:
    """What one compute instance holds (or, for a deploy, asks)."""

    instance_id: uuid.UUID | None
    instance_name: str
    project_id: uuid.UUID
    owner_id: uuid.UUID | None
    cluster_id: str | None
    gpus: int
    vendor: str
    model: str | None
    cpu: Decimal
    memory: Decimal


def _quantity(text: str) -> Decimal:
    try:
        return parse_quantity(text)
    except ValueError:
        return Decimal(0)


def holding_of(instance: ComputeInstance) -> Holding:
    resources = instance.profile_snapshot.resources
    gpus = resources.gpu_count if resources.gpu_vendor != Vendor.CPU.value else 0
    return Holding(
        instance_id=instance.id,
        instance_name=instance.name,
        project_id=instance.project_id,
        owner_id=instance.owner_id,
        cluster_id=instance.profile_snapshot.cluster_id,
        gpus=gpus,
        vendor=resources.gpu_vendor,
        model=(resources.gpu_model or "").strip() or None,
        cpu=_quantity(resources.cpu),
        memory=_quantity(resources.memory),
    )


async def holdings(**filters: object) -> list[Holding]:
    """What the compute instances matching `filters` hold (only those that hold anything)."""
    rows = await ComputeInstance.filter(status__in=list(HOLDING), **filters).only(
        "id", "name", "project_id", "owner_id", "snapshot"
    )
    return [holding_of(row) for row in rows]


def _same_model(a: str | None, b: str | None) -> bool:
    return a is not None and b is not None and a.strip().lower() == b.strip().lower()


@dataclass(frozen=True)
class GpuLimit:
    vendor: str
    model: str | None
    count: int

    def counts(self, holding: Holding) -> int:
        """The GPUs of `holding` this limit counts."""
        if holding.gpus <= 0 or holding.vendor != self.vendor:
            return 0
        if self.model is not None and not _same_model(self.model, holding.model):
            return 0
        return holding.gpus

    @property
    def label(self) -> str:
        return f"{self.vendor} {self.model} GPUs" if self.model else f"{self.vendor} GPUs"

    @property
    def key(self) -> str:
        return f"gpus:{self.vendor}:{self.model or ''}"


@dataclass(frozen=True)
class Limits:
    gpus: int | None = None
    gpu_limits: tuple[GpuLimit, ...] = ()
    cpu: str | None = None
    memory: str | None = None
    instances: int | None = None

    @classmethod
    def of(cls, quota: Quota | None) -> Limits:
        if quota is None:
            return cls()
        return cls(
            gpus=quota.gpus,
            gpu_limits=tuple(
                GpuLimit(vendor=str(g["vendor"]), model=g.get("model"), count=int(g["count"]))
                for g in quota.gpu_limits or []
            ),
            cpu=quota.cpu,
            memory=quota.memory,
            instances=quota.instances,
        )

    @property
    def empty(self) -> bool:
        return (
            self.gpus is None
            and not self.gpu_limits
            and self.cpu is None
            and self.memory is None
            and self.instances is None
        )


# ---------------------------------------------------------------- usage against limits


@dataclass(frozen=True)
class Line:
    """One dimension: what is used of it and its limit (None: not limited)."""

    key: str  # "gpus", "gpus:<vendor>:<model>", "cpu", "memory", "instances"
    label: str
    used: Decimal
    limit: Decimal | None

    def shown(self, value: Decimal) -> str:
        return format_value(self.key, value)


def format_value(key: str, value: Decimal) -> str:
    """A value as a person reads it: memory with a binary suffix, the rest as numbers."""
    if key == "memory":
        for suffix, factor in (("Ti", 1024**4), ("Gi", 1024**3), ("Mi", 1024**2), ("Ki", 1024)):
            if value >= factor:
                scaled = value / factor
                text = f"{scaled:.2f}".rstrip("0").rstrip(".")
                return f"{text}{suffix}"
        return f"{value.normalize():f}"
    return f"{value.normalize():f}" if value == value.to_integral_value() else f"{value:.3f}".rstrip("0")


def _sum(holdings: Iterable[Holding], what: str) -> Decimal:
    return sum((Decimal(getattr(h, what)) for h in holdings), Decimal(0))


def lines(limits: Limits, held: Sequence[Holding]) -> list[Line]:
    """Usage against `limits`: total GPUs, each GPU limit, CPU, memory, instances (always, limited
    or not, so that a dashboard shows what is used)."""
    result = [Line("gpus", "GPUs", _sum(held, "gpus"), _dec(limits.gpus))]
    for limit in limits.gpu_limits:
        used = sum(limit.counts(h) for h in held)
        result.append(Line(limit.key, limit.label, Decimal(used), Decimal(limit.count)))
    result.append(Line("cpu", "CPU cores", _sum(held, "cpu"), _quantity(limits.cpu) if limits.cpu else None))
    result.append(
        Line("memory", "memory", _sum(held, "memory"), _quantity(limits.memory) if limits.memory else None)
    )
    result.append(Line("instances", "deployed instances", Decimal(len(held)), _dec(limits.instances)))
    return result


def _dec(value: int | None) -> Decimal | None:
    return None if value is None else Decimal(value)


def _asked(line: Line, ask: Holding) -> Decimal:
    if line.key == "gpus":
        return Decimal(ask.gpus if ask.gpus > 0 else 0)
    if line.key.startswith("gpus:"):
        _, vendor, model = line.key.split(":", 2)
        return Decimal(GpuLimit(vendor, model or None, 0).counts(ask))
    if line.key == "cpu":
        return ask.cpu
    if line.key == "memory":
        return ask.memory
    return Decimal(1)


# ---------------------------------------------------------------- the check


@dataclass(frozen=True)
class Refusal:
    """A deploy a quota refused: whose quota, which dimension, its limit, what is used and asked."""

    project_id: uuid.UUID
    project_name: str
    username: str | None  # None: the project's own quota
    dimension: str
    label: str
    limit: Decimal
    used: Decimal
    asked: Decimal
    instance_name: str

    @property
    def message(self) -> str:
        whose = (
            f'project "{self.project_name}" quota'
            if self.username is None
            else f'quota of {self.username} in project "{self.project_name}"'
        )
        limit, used, asked = (format_value(self.dimension, v) for v in (self.limit, self.used, self.asked))
        return f"{whose}: {limit} {self.label}; {used} in use, this deploy asks {asked}"


class QuotaExceeded(UserErrors):
    """QUOTA_EXCEEDED, with the refusal it is about (for whoever reports refusals)."""

    def __init__(self, refusal: Refusal, field: Sequence[str]) -> None:
        from gpupaas.core.errors import Problem

        super().__init__([Problem(tuple(field), refusal.message, ErrorCode.QUOTA_EXCEEDED)])
        self.refusal = refusal


async def report_refusal(refused: UserErrors) -> None:
    """Compute's hook after a deploy a quota refused: the project's webhooks that want it get a
    QUOTA_REACHED event (its own transaction: the deploy's rolled back)."""
    if not isinstance(refused, QuotaExceeded):
        return
    refusal = refused.refusal
    data = {
        "project": refusal.project_name,
        "username": refusal.username,
        "dimension": refusal.dimension,
        "limit": str(refusal.limit),
        "used": str(refusal.used),
        "asked": str(refusal.asked),
        "instance": refusal.instance_name,
        "message": refusal.message,
    }
    async with in_transaction():
        await webhooks.publish(refusal.project_id, WebhookEvent.QUOTA_REACHED, data)
    outbox.notify()


def excess(limits: Limits, held: Sequence[Holding], ask: Holding) -> tuple[Line, Decimal] | None:
    """The first dimension that `ask` would take past its limit, with what it asks of it."""
    for line in lines(limits, held):
        if line.limit is None:
            continue
        asked = _asked(line, ask)
        if asked > 0 and line.used + asked > line.limit:
            return line, asked
    return None


async def _locked_quotas(project_id: uuid.UUID, owner_id: uuid.UUID | None) -> tuple[str, list[Quota]]:
    """The project's name and the quotas that bound a deploy of `owner_id`'s in it (the project's,
    the owner's), the project's row locked on PostgreSQL, in one statement."""
    mine = "q.user_id IS NULL OR q.user_id = ?" if owner_id is not None else "q.user_id IS NULL"
    lock = " FOR UPDATE OF p" if sql.dialect(Quota) == "postgres" else ""  # SQLite: one writer anyway
    found = await sql.rows(
        Quota,
        'SELECT p.name AS "__project_name", q.* FROM projects p '  # noqa: S608  # no input in the text
        f"LEFT JOIN quotas q ON q.project_id = p.id AND ({mine}) WHERE p.id = ?{lock}",
        [owner_id, project_id] if owner_id is not None else [project_id],
    )
    if not found:
        raise DoesNotExist(Project)
    name = str(found[0]["__project_name"])
    quotas = []
    for row in found:
        row.pop("__project_name")
        if row["id"] is not None:  # no quota: the outer join's one row of NULLs
            quotas.append(Quota._init_from_db(**row))
    return name, quotas


async def check(ask: Holding, *, field: Sequence[str] = ("id",)) -> None:
    """Inside the caller's transaction: QuotaExceeded when the deploy asking `ask` does not fit the
    project's quota or its owner's quota in the project. Locks the project's row first, so that a
    concurrent deploy in the same project waits for this transaction."""
    project_name, quotas = await _locked_quotas(ask.project_id, ask.owner_id)
    if not quotas:
        return
    held = [h for h in await holdings(project_id=ask.project_id) if h.instance_id != ask.instance_id]
    # The project's quota first: it is the one a member's cannot go beyond.
    for quota in sorted(quotas, key=lambda q: q.user_id is not None):
        mine = held if quota.user_id is None else [h for h in held if h.owner_id == quota.user_id]
        found = excess(Limits.of(quota), mine, ask)
        if found is None:
            continue
        line, asked = found
        username = None
        if quota.user_id is not None:
            user = await User.get(id=quota.user_id)
            username = user.username
        assert line.limit is not None
        raise QuotaExceeded(
            Refusal(
                project_id=ask.project_id,
                project_name=project_name,
                username=username,
                dimension=line.key if not line.key.startswith("gpus:") else "gpus",
                label=line.label,
                limit=line.limit,
                used=line.used,
                asked=asked,
                instance_name=ask.instance_name,
            ),
            field,
        )


async def check_deploy(instance: ComputeInstance, *, field: Sequence[str] = ("id",)) -> None:
    """Compute's hook: a deploy of `instance` (saved or new) must fit its quotas."""
    await check(holding_of(instance), field=field)


# ---------------------------------------------------------------- reading quotas


@dataclass
class MemberUsage:
    user_id: uuid.UUID
    username: str
    limits: Limits
    has_quota: bool
    lines: list[Line]


@dataclass
class ProjectUsage:
    project: Project
    limits: Limits
    has_quota: bool
    lines: list[Line]
    members: list[MemberUsage] = field(default_factory=list)


async def project_usage(actor: Actor, project_name: str) -> ProjectUsage | None:
    """The project's quota and usage, and its members' (a MEMBER sees only their own; admins and
    platform admins every member's). None when the caller is no member of it."""
    project = await project_by_name(actor, project_name)
    if project is None or not actor.is_member_of(project.id):
        return None
    quotas = {q.user_id: q for q in await Quota.filter(project_id=project.id)}
    held = await holdings(project_id=project.id)
    own = quotas.get(None)
    usage = ProjectUsage(
        project=project, limits=Limits.of(own), has_quota=own is not None, lines=lines(Limits.of(own), held)
    )
    memberships = await Membership.filter(project_id=project.id).select_related("user")
    user = actor.require_user()
    for membership in sorted(memberships, key=lambda m: m.user.username):
        if not actor.is_admin_of(project.id) and membership.user_id != user.id:
            continue
        quota = quotas.get(membership.user_id)
        limits = Limits.of(quota)
        mine = [h for h in held if h.owner_id == membership.user_id]
        usage.members.append(
            MemberUsage(
                user_id=membership.user_id,
                username=membership.user.username,
                limits=limits,
                has_quota=quota is not None,
                lines=lines(limits, mine),
            )
        )
    return usage


# ---------------------------------------------------------------- setting quotas


@dataclass
class GpuLimitIn:
    vendor: Vendor
    model: str | None
    count: int


@dataclass
class QuotaIn:
    project: str
    username: str | None = None
    gpus: int | None = None
    gpu_limits: Sequence[GpuLimitIn] = ()
    cpu: str | None = None
    memory: str | None = None
    instances: int | None = None


def _count(problems: Collector, path: tuple[str, ...], value: int | None) -> None:
    if value is not None and not 0 <= value <= MAX_COUNT:
        problems.add(path, f"must be between 0 and {MAX_COUNT} (leave it empty for no limit)")


def _validated(problems: Collector, data: QuotaIn) -> Limits:
    _count(problems, ("input", "gpus"), data.gpus)
    _count(problems, ("input", "instances"), data.instances)
    cpu = (data.cpu or "").strip() or None
    memory = (data.memory or "").strip() or None
    if cpu is not None:
        problems.check(("input", "cpu"), cpu_quantity(cpu))
    if memory is not None:
        problems.check(("input", "memory"), memory_quantity(memory))
    if len(data.gpu_limits) > MAX_GPU_LIMITS:
        problems.add(("input", "gpuLimits"), f"at most {MAX_GPU_LIMITS} GPU limits")
    seen: set[tuple[str, str | None]] = set()
    limits: list[GpuLimit] = []
    for index, given in enumerate(data.gpu_limits[:MAX_GPU_LIMITS]):
        path = ("input", "gpuLimits", str(index))
        model = (given.model or "").strip() or None
        if given.vendor == Vendor.CPU:
            problems.add((*path, "vendor"), "CPU is not a GPU vendor: limit CPU with the cpu field")
            continue
        if model is not None and len(model) > 63:
            problems.add((*path, "model"), "must be at most 63 characters")
            continue
        key = (given.vendor.value, model.lower() if model else None)
        if key in seen:
            what = f"{given.vendor.value} {model}" if model else f"{given.vendor.value} (every model)"
            problems.add((*path, "model"), f"{what} is given twice")
            continue
        seen.add(key)
        _count(problems, (*path, "count"), given.count)
        limits.append(GpuLimit(given.vendor.value, model, given.count))
    return Limits(
        gpus=data.gpus,
        gpu_limits=tuple(limits),
        cpu=cpu,
        memory=memory,
        instances=data.instances,
    )


def _within(problems: Collector, member: Limits, project: Limits, project_name: str) -> None:
    """A member's limits may not go beyond the project's (a dimension the member's quota leaves
    empty is bound by the project's limit alone)."""

    def beyond(path: tuple[str, ...], value: Decimal | None, cap: Decimal | None, what: str) -> None:
        if cap is not None and value is not None and value > cap:
            problems.add(
                path,
                f'project "{project_name}" allows {format_value(path[-1], cap)} {what}: a member\'s '
                f"limit cannot be more (not {format_value(path[-1], value)})",
            )

    beyond(("input", "gpus"), _dec(member.gpus), _dec(project.gpus), "GPUs")
    beyond(("input", "instances"), _dec(member.instances), _dec(project.instances), "deployed instances")
    beyond(
        ("input", "cpu"),
        _quantity(member.cpu) if member.cpu else None,
        _quantity(project.cpu) if project.cpu else None,
        "CPU cores",
    )
    beyond(
        ("input", "memory"),
        _quantity(member.memory) if member.memory else None,
        _quantity(project.memory) if project.memory else None,
        "of memory",
    )
    # A project's GPU limit of a vendor (or of a vendor's model) caps the member's limits that
    # it counts; a member without such a limit is capped by the project's all the same.
    for index, limit in enumerate(member.gpu_limits):
        if project.gpus is not None and limit.count > project.gpus:
            problems.add(
                ("input", "gpuLimits", str(index), "count"),
                f'project "{project_name}" allows {project.gpus} GPUs: a member\'s limit cannot be more '
                f"(not {limit.count})",
            )
            continue
        for cap in project.gpu_limits:
            applies = cap.vendor == limit.vendor and (
                cap.model is None or _same_model(cap.model, limit.model)
            )
            if applies and limit.count > cap.count:
                problems.add(
                    ("input", "gpuLimits", str(index), "count"),
                    f'project "{project_name}" allows {cap.count} {cap.label}: a member\'s limit '
                    f"cannot be more (not {limit.count})",
                )
                break


async def _member(project: Project, username: str) -> User:
    user = await User.get_or_none(username=username) if 0 < len(username) <= 64 else None
    if user is None or not await Membership.exists(project_id=project.id, user_id=user.id):
        raise UserErrors.one(
            ("input", "username"),
            f'"{username}" is not a member of project "{project.name}"',
            ErrorCode.NOT_FOUND,
        )
    return user


async def _target(actor: Actor, project_name: str, username: str | None) -> tuple[Project, User | None]:
    """The project (and member) whose quota the caller sets: project quotas are for platform
    admins, member quotas for the project's admins."""
    project = await require_project(actor, project_name, ("input", "project"))
    if username is None:
        actor.require_platform_admin()
        return project, None
    if not actor.is_admin_of(project.id):
        raise Forbidden(f'Only admins of project "{project.name}" set its members\' quotas.')
    return project, await _member(project, username)


async def set_quota(actor: Actor, data: QuotaIn) -> ProjectUsage | None:
    project, user = await _target(actor, data.project, data.username)
    problems = Collector()
    limits = _validated(problems, data)
    problems.raise_if_any()
    async with in_transaction():
        await Project.select_for_update().get(id=project.id)
        if user is not None:
            own = await Quota.get_or_none(project_id=project.id, user_id=None)
            _within(problems, limits, Limits.of(own), project.name)
            problems.raise_if_any()
        values: dict[str, Any] = {
            "gpus": limits.gpus,
            "gpu_limits": [
                {"vendor": g.vendor, "model": g.model, "count": g.count} for g in limits.gpu_limits
            ],
            "cpu": limits.cpu,
            "memory": limits.memory,
            "instances": limits.instances,
        }
        user_id = user.id if user is not None else None
        existing = await Quota.get_or_none(project_id=project.id, user_id=user_id)
        before = audit.fields_of(existing) if existing is not None else None
        if existing is not None:
            await Quota.filter(id=existing.id).update(**values)
            quota_id = existing.id
        else:
            created = await Quota.create(project_id=project.id, user_id=user_id, **values)
            quota_id = created.id
        await audit.record(
            "Quota",
            quota_id,
            _quota_name(project, user),
            project=project,
            before=before,
            after={**(before or {}), **values, "project_id": project.id, "user_id": user_id},
        )
    return await project_usage(actor, project.name)


async def clear_quota(actor: Actor, project_name: str, username: str | None) -> ProjectUsage | None:
    """No quota any more: the project's (platform admins) or a member's (the project's admins)."""
    project, user = await _target(actor, project_name, username)
    async with in_transaction():
        existing = await Quota.get_or_none(
            project_id=project.id, user_id=user.id if user is not None else None
        )
        if existing is not None:
            await existing.delete()
        # recorded even when there was none: the call was made
        await audit.record(
            "Quota",
            existing.id if existing is not None else None,
            _quota_name(project, user),
            project=project,
            before=audit.fields_of(existing) if existing is not None else None,
        )
    return await project_usage(actor, project.name)


def _quota_name(project: Project, user: User | None) -> str:
    return project.name if user is None else f"{project.name}/{user.username}"
