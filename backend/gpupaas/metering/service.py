"""Usage reports and GPU prices: the rules (who sees whose usage, what a period may be) and the
arithmetic (intervals cut into UTC days, GPU-hours, CPU core-hours, memory GiB-hours, cost).

Who sees what: platform admins every project's usage; a project's admins all of their project's;
everyone else their own (the intervals charged to them), in any project. A report asked for one
project or one user narrows that further, and asking for someone else's usage where the caller
may not see it is FORBIDDEN.

Days are UTC days, `start` and `end` both included. An interval still open counts up to `until`
(the moment of the query). Cost is GPU-hours times the price of the GPU's model as it is set now
(else the vendor's price for any model, a price with an empty model); a row that used GPUs with no
price has no cost (None) rather than a cost that leaves them out.

Arithmetic is exact: each interval's share of a day is an integer number of microseconds times
an integer size; hours are only made at the end.
"""

from __future__ import annotations

import csv
import io
import uuid
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal, InvalidOperation
from enum import Enum

from tortoise.expressions import Q
from tortoise.transactions import in_transaction

from gpupaas.accounts.models import FormerName, Project, User
from gpupaas.accounts.service import project_by_name
from gpupaas.audit import recorder as audit
from gpupaas.core.actor import Actor
from gpupaas.core.errors import Collector, ErrorCode, Forbidden, InvalidArgument, NotFound, UserErrors
from gpupaas.core.gpus import Vendor
from gpupaas.core.ids import parse_id
from gpupaas.metering.models import GpuPrice, UsageInterval

MAX_DAYS = 366
MAX_PRICE = Decimal(1_000_000)
MODEL_MAX = 128
_US_PER_HOUR = 3_600_000_000
_GIB = 1024**3
NO_OWNER = "(no owner)"


def now() -> datetime:
    """The moment a report counts open intervals up to (tests replace it: a controllable clock)."""
    return datetime.now(UTC)


class Grouping(str, Enum):
    PROJECT = "PROJECT"
    USER = "USER"
    INSTANCE = "INSTANCE"
    GPU_MODEL = "GPU_MODEL"


@dataclass(frozen=True)
class UsageQuery:
    start: date
    end: date
    group_by: Grouping = Grouping.PROJECT
    project: str | None = None
    user: str | None = None


@dataclass
class Amount:
    """Usage summed exactly: GPU-, millicore- and byte-microseconds, and GPU-microseconds per
    (vendor, model) for the cost."""

    gpu_us: int = 0
    millicore_us: int = 0
    byte_us: int = 0
    gpu_us_by_model: dict[tuple[str, str], int] = field(default_factory=dict)

    def add(self, row: UsageInterval, micros: int) -> None:
        self.gpu_us += row.gpu_count * micros
        self.millicore_us += row.cpu_millicores * micros
        self.byte_us += row.memory_bytes * micros
        if row.gpu_count:
            key = (row.gpu_vendor, row.gpu_model)
            self.gpu_us_by_model[key] = self.gpu_us_by_model.get(key, 0) + row.gpu_count * micros

    def merge(self, other: Amount) -> None:
        self.gpu_us += other.gpu_us
        self.millicore_us += other.millicore_us
        self.byte_us += other.byte_us
        for key, value in other.gpu_us_by_model.items():
            self.gpu_us_by_model[key] = self.gpu_us_by_model.get(key, 0) + value

    @property
    def gpu_hours(self) -> Decimal:
        return Decimal(self.gpu_us) / _US_PER_HOUR

    @property
    def cpu_core_hours(self) -> Decimal:
        return Decimal(self.millicore_us) / 1000 / _US_PER_HOUR

    @property
    def memory_gib_hours(self) -> Decimal:
        return Decimal(self.byte_us) / _GIB / _US_PER_HOUR

    def cost(self, prices: Prices) -> Decimal | None:
        total = Decimal(0)
        for (vendor, model), micros in self.gpu_us_by_model.items():
            price = prices.of(vendor, model)
            if price is None:
                return None
            total += price * Decimal(micros) / _US_PER_HOUR
        return total


@dataclass(frozen=True)
class Prices:
    by_model: dict[tuple[str, str], Decimal]

    def of(self, vendor: str, model: str) -> Decimal | None:
        found = self.by_model.get((vendor, model))
        return found if found is not None else self.by_model.get((vendor, ""))

    @classmethod
    async def load(cls) -> Prices:
        return cls({(p.gpu_vendor, p.gpu_model): p.price_per_gpu_hour for p in await GpuPrice.all()})


@dataclass(frozen=True)
class UsageLine:
    """One group's usage on one day (`day`), or over the whole period (`day` None)."""

    day: date | None
    group: str
    amount: Amount
    cost: Decimal | None


@dataclass(frozen=True)
class UsageReport:
    query: UsageQuery
    until: datetime
    days: list[UsageLine]
    groups: list[UsageLine]
    total: UsageLine


# ---------------------------------------------------------------- the arithmetic


def day_start(day: date) -> datetime:
    return datetime.combine(day, time(0), tzinfo=UTC)


def micros(delta: timedelta) -> int:
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def split_by_day(start: datetime, end: datetime) -> Iterator[tuple[date, int]]:
    """[start, end) cut at UTC midnights: (day, microseconds of it)."""
    moment = start.astimezone(UTC)
    end = end.astimezone(UTC)
    while moment < end:
        following = day_start(moment.date() + timedelta(days=1))
        piece_end = min(following, end)
        yield moment.date(), micros(piece_end - moment)
        moment = piece_end


def bucket(
    rows: Iterable[UsageInterval],
    start: datetime,
    end: datetime,
    label: dict[uuid.UUID, str] | None,
    by: Grouping,
) -> dict[tuple[date, str], Amount]:
    """Each interval's usage within [start, end) (an open one up to `end`), per UTC day and group."""
    buckets: dict[tuple[date, str], Amount] = defaultdict(Amount)
    for row in rows:
        begin = max(row.started_at, start)
        finish = min(row.ended_at or end, end)
        group = group_of(row, by, label or {})
        for day, amount in split_by_day(begin, finish):
            buckets[(day, group)].add(row, amount)
    return buckets


def group_of(row: UsageInterval, by: Grouping, label: dict[uuid.UUID, str]) -> str:
    if by == Grouping.PROJECT:
        return label.get(row.project_id, str(row.project_id))
    if by == Grouping.USER:
        return label.get(row.owner_id, str(row.owner_id)) if row.owner_id else NO_OWNER
    if by == Grouping.INSTANCE:
        return f"{label.get(row.project_id, str(row.project_id))}/{row.subject_name}"
    if row.gpu_count == 0:
        return "no GPU"
    return f"{row.gpu_vendor} {row.gpu_model}".strip()


# ---------------------------------------------------------------- reports


def _check_period(query: UsageQuery) -> None:
    if query.end < query.start:
        raise InvalidArgument(
            f"to: {query.end} is before from ({query.start}): pick an end on or after the start"
        )
    days = (query.end - query.start).days + 1
    if days > MAX_DAYS:
        raise InvalidArgument(f"the period is {days} days long: ask for at most {MAX_DAYS} days at a time")


async def _scope(actor: Actor, query: UsageQuery) -> Q:
    """The intervals the caller may see that the query asks for."""
    user = actor.require_user()
    if query.project is not None:
        project = await project_by_name(actor, query.project)
        if project is None:
            raise NotFound(f'project "{query.project}" not found')
        sees_all = actor.is_admin_of(project.id)
        scope = Q(project_id=project.id) if sees_all else Q(project_id=project.id, owner_id=user.id)
    elif actor.is_platform_admin:
        sees_all, scope = True, Q()
    else:
        administered = [pid for pid in actor.roles if actor.is_admin_of(pid)]
        sees_all = bool(administered)
        scope = Q(project_id__in=administered) | Q(owner_id=user.id) if administered else Q(owner_id=user.id)
    if query.user is not None and query.user != user.username:
        if not sees_all:
            raise Forbidden(
                "Only platform admins and a project's admins see another user's usage: "
                "leave the user out to see your own."
            )
        other = await User.get_or_none(username=query.user) if len(query.user) <= 64 else None
        # A deleted user's usage stays, under the name they had.
        former = (
            await FormerName.filter(kind="user", name=query.user).values_list("id", flat=True)
            if len(query.user) <= 64
            else []
        )
        if other is None and not former:
            raise NotFound(f'user "{query.user}" not found')
        scope &= Q(owner_id__in=[*([other.id] if other else []), *former])
    elif query.user is not None:
        scope &= Q(owner_id=user.id)
    return scope


async def _labels(rows: list[UsageInterval], by: Grouping) -> dict[uuid.UUID, str]:
    if by in (Grouping.PROJECT, Grouping.INSTANCE):
        ids = {r.project_id for r in rows}
        found = {p.id: p.name for p in await Project.filter(id__in=ids).only("id", "name")} if ids else {}
    elif by == Grouping.USER:
        ids = {r.owner_id for r in rows if r.owner_id}
        found = (
            {u.id: u.username for u in await User.filter(id__in=ids).only("id", "username")} if ids else {}
        )
    else:
        return {}
    gone = ids - set(found)
    if gone:  # deleted users and projects keep their usage, under the name they had
        found.update({f.id: f.name for f in await FormerName.filter(id__in=gone).only("id", "name")})
    return found


async def report(actor: Actor, query: UsageQuery, *, until: datetime | None = None) -> UsageReport:
    """The caller's view of usage over the query's UTC days, per day and group."""
    scope = await _scope(actor, query)
    _check_period(query)
    moment = until or now()
    start = day_start(query.start)
    end = min(day_start(query.end + timedelta(days=1)), max(moment, start))
    rows = await UsageInterval.filter(scope, started_at__lt=end).filter(
        Q(ended_at__isnull=True) | Q(ended_at__gt=start)
    )
    labels = await _labels(rows, query.group_by)
    buckets = bucket(rows, start, end, labels, query.group_by)
    prices = await Prices.load()
    per_group: dict[str, Amount] = defaultdict(Amount)
    total = Amount()
    days = []
    for (day, group), amount in sorted(buckets.items()):
        days.append(UsageLine(day, group, amount, amount.cost(prices)))
        per_group[group].merge(amount)
        total.merge(amount)
    groups = [UsageLine(None, g, a, a.cost(prices)) for g, a in sorted(per_group.items())]
    return UsageReport(query, moment, days, groups, UsageLine(None, "", total, total.cost(prices)))


def _cell(text: str) -> str:
    """A text cell a spreadsheet shows as text (never runs as a formula)."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def _number(value: Decimal | None) -> str:
    return "" if value is None else f"{value:.4f}"


def to_csv(report: UsageReport) -> str:
    """The report's daily lines as CSV (RFC 4180, UTC days, hours with 4 decimals)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(
        [
            "day_utc",
            report.query.group_by.value.lower(),
            "gpu_hours",
            "cpu_core_hours",
            "memory_gib_hours",
            "cost",
        ]
    )
    for line in report.days:
        writer.writerow(
            [
                line.day.isoformat() if line.day else "",
                _cell(line.group),
                _number(line.amount.gpu_hours),
                _number(line.amount.cpu_core_hours),
                _number(line.amount.memory_gib_hours),
                _number(line.cost),
            ]
        )
    return out.getvalue()


# ---------------------------------------------------------------- prices


async def list_prices(actor: Actor) -> list[GpuPrice]:
    """Every signed-in user may see what a GPU-hour costs."""
    actor.require_user()
    return await GpuPrice.all().order_by("gpu_vendor", "gpu_model")


def _price_problems(vendor: Vendor, model: str, price: Decimal) -> Collector:
    problems = Collector()
    if vendor == Vendor.CPU:
        problems.add(("vendor",), "CPU has no GPUs to price: choose a GPU vendor")
    if len(model) > MODEL_MAX:
        problems.add(("model",), f"must be at most {MODEL_MAX} characters (it is {len(model)})")
    elif model != model.strip() or any(not ch.isprintable() for ch in model):
        problems.add(("model",), "must have no leading or trailing spaces and no control characters")
    try:
        finite = price.is_finite()
    except InvalidOperation:  # pragma: no cover - Decimal.is_finite does not raise
        finite = False
    if not finite or price < 0 or price > MAX_PRICE:
        problems.add(("pricePerGpuHour",), f"must be a number from 0 to {MAX_PRICE}")
    elif price.as_tuple().exponent < -4:  # type: ignore[operator]
        problems.add(("pricePerGpuHour",), "must have at most 4 decimal places")
    return problems


async def set_price(actor: Actor, vendor: Vendor, model: str, price: Decimal) -> GpuPrice:
    """Platform admins: the price of one GPU-hour of `model` ("": every model of the vendor with no
    price of its own). Setting it again replaces it."""
    actor.require_platform_admin()
    _price_problems(vendor, model, price).raise_if_any()
    price = price.quantize(Decimal("0.0001"))  # as the column keeps it
    name = f"{vendor.value} {model}".strip()
    async with in_transaction():
        found = await GpuPrice.get_or_none(gpu_vendor=vendor.value, gpu_model=model)
        if found is None:
            created = await GpuPrice.create(
                gpu_vendor=vendor.value, gpu_model=model, price_per_gpu_hour=price
            )
            await audit.record("GpuPrice", created.id, name, after=audit.fields_of(created))
            return created
        before = audit.fields_of(found)
        found.price_per_gpu_hour = price
        await found.save(update_fields=["price_per_gpu_hour", "updated_at"])
        await audit.record("GpuPrice", found.id, name, before=before, after=audit.fields_of(found))
    return found


async def delete_price(actor: Actor, price_id: str) -> str:
    actor.require_platform_admin()
    pid = parse_id(price_id)
    async with in_transaction():
        found = await GpuPrice.get_or_none(id=pid) if pid is not None else None
        if found is None:
            raise UserErrors.one(("id",), "No such GPU price.", ErrorCode.NOT_FOUND)
        await found.delete()
        name = f"{found.gpu_vendor} {found.gpu_model}".strip()
        await audit.record("GpuPrice", found.id, name, before=audit.fields_of(found))
    return price_id
