"""GraphQL for usage reports and GPU prices (thin: the rules are in metering.service)."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Annotated

import strawberry

from gpupaas.core.gpus import Vendor
from gpupaas.graphql.common import DeletePayload, UserError, attempt, delete_payload
from gpupaas.graphql.context import Info
from gpupaas.metering import service
from gpupaas.metering.models import GpuPrice
from gpupaas.metering.service import Grouping

UsageGrouping = strawberry.enum(
    Grouping,
    name="UsageGrouping",
    description="What a usage report's lines are per: project, user (the owner charged), compute "
    "instance (project/name), or GPU model.",
)


def _hours(value: Decimal) -> float:
    return float(round(value, 6))


@strawberry.type(description="One group's usage on one UTC day, or over the whole period (day null).")
class UsageLine:
    day: date | None = strawberry.field(description="A UTC day; null in a report's groups and total.")
    group: str = strawberry.field(
        description="The project, user, project/instance or GPU model; empty in the total."
    )
    gpu_hours: float
    cpu_core_hours: float
    memory_gib_hours: float
    cost: float | None = strawberry.field(
        description="GPU-hours times the price of each GPU model (gpuPrices); "
        "null when GPUs without a price were used."
    )

    @classmethod
    def of(cls, line: service.UsageLine) -> UsageLine:
        return cls(
            day=line.day,
            group=line.group,
            gpu_hours=_hours(line.amount.gpu_hours),
            cpu_core_hours=_hours(line.amount.cpu_core_hours),
            memory_gib_hours=_hours(line.amount.memory_gib_hours),
            cost=None if line.cost is None else float(round(line.cost, 4)),
        )


@strawberry.type(
    description="Usage of compute instances over UTC days (both ends included), from the intervals "
    "metered at each status change. Instances still deployed count up to `until`."
)
class UsageReport:
    start: date = strawberry.field(name="from")
    end: date = strawberry.field(name="to")
    group_by: Grouping
    until: datetime = strawberry.field(description="The moment open intervals were counted up to.")
    days: list[UsageLine] = strawberry.field(description="Per UTC day and group, days ascending.")
    groups: list[UsageLine] = strawberry.field(description="Per group over the period.")
    total: UsageLine
    _report: strawberry.Private[service.UsageReport]

    @strawberry.field(description="The daily lines as CSV (header line first, UTC days).")
    def csv(self) -> str:
        return service.to_csv(self._report)

    @classmethod
    def of(cls, report: service.UsageReport) -> UsageReport:
        return cls(
            start=report.query.start,
            end=report.query.end,
            group_by=report.query.group_by,
            until=report.until,
            days=[UsageLine.of(line) for line in report.days],
            groups=[UsageLine.of(line) for line in report.groups],
            total=UsageLine.of(report.total),
            _report=report,
        )


@strawberry.type(name="GpuPrice", description="What one GPU-hour of a GPU model costs.")
class GpuPriceType:
    id: strawberry.ID
    vendor: Vendor
    model: str = strawberry.field(description="Empty: every model of the vendor with no price of its own.")
    price_per_gpu_hour: Decimal
    updated_at: datetime

    @classmethod
    def of(cls, price: GpuPrice) -> GpuPriceType:
        return cls(
            id=strawberry.ID(str(price.id)),
            vendor=Vendor(price.gpu_vendor),
            model=price.gpu_model,
            price_per_gpu_hour=price.price_per_gpu_hour,
            updated_at=price.updated_at,
        )


@strawberry.input
class SetGpuPriceInput:
    vendor: Vendor
    model: str = strawberry.field(
        default="", description="Empty: every model of the vendor with no price of its own."
    )
    price_per_gpu_hour: Decimal = strawberry.field(description="From 0 to 1000000, at most 4 decimal places.")


@strawberry.type
class GpuPricePayload:
    gpu_price: GpuPriceType | None
    user_errors: list[UserError]


@strawberry.type
class UsageQuery:
    @strawberry.field(
        description="Usage per UTC day over a period of at most 366 days. Platform admins see every "
        "project's, a project's admins all of their project's, everyone else their own. "
        "`project` and `user` (a username) narrow it."
    )
    async def usage(
        self,
        info: Info,
        start: Annotated[date, strawberry.argument(name="from")],
        end: Annotated[date, strawberry.argument(name="to")],
        group_by: Grouping = Grouping.PROJECT,
        project: str | None = None,
        user: str | None = None,
    ) -> UsageReport:
        query = service.UsageQuery(start=start, end=end, group_by=group_by, project=project, user=user)
        return UsageReport.of(await service.report(info.context.actor, query))

    @strawberry.field(description="The prices per GPU-hour (every signed-in user may read them).")
    async def gpu_prices(self, info: Info) -> list[GpuPriceType]:
        return [GpuPriceType.of(p) for p in await service.list_prices(info.context.actor)]


@strawberry.type
class UsageMutation:
    @strawberry.mutation(
        description="Platform admins: set (or replace) the price of one GPU-hour of a model."
    )
    async def set_gpu_price(self, info: Info, input: SetGpuPriceInput) -> GpuPricePayload:
        price, errors = await attempt(
            service.set_price(info.context.actor, input.vendor, input.model, input.price_per_gpu_hour)
        )
        return GpuPricePayload(gpu_price=GpuPriceType.of(price) if price else None, user_errors=errors)

    @strawberry.mutation(description="Platform admins: remove a price.")
    async def delete_gpu_price(self, info: Info, id: strawberry.ID) -> DeletePayload:
        return await delete_payload(service.delete_price(info.context.actor, id))
