"""Usage reports and GPU prices through the API: UTC-day buckets, groupings, who sees whose usage,
the CSV, costs from prices, the checks of a period and of a price, and a constant number of
statements however many intervals a report reads."""

from __future__ import annotations

import csv
import io
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gpupaas.core.actor import Role
from gpupaas.metering import meter
from gpupaas.metering import service as usage
from gpupaas.metering.meter import Holding
from tests.conftest import GraphQLClient, QueryCounter
from tests.factories import Person, make_project, make_user

USAGE = """
query Usage($from: Date!, $to: Date!, $groupBy: UsageGrouping!, $project: String, $user: String) {
  usage(from: $from, to: $to, groupBy: $groupBy, project: $project, user: $user) {
    from to groupBy until csv
    days { day group gpuHours cpuCoreHours memoryGibHours cost }
    groups { group gpuHours cost }
    total { gpuHours cpuCoreHours memoryGibHours cost }
  }
}
"""
SET_PRICE = """
mutation Set($input: SetGpuPriceInput!) {
  setGpuPrice(input: $input) { gpuPrice { id vendor model pricePerGpuHour } userErrors { field message code } }
}
"""
NOW = datetime(2026, 3, 10, 12, 0, tzinfo=UTC)


def at(day: int, hour: int = 0) -> datetime:
    return datetime(2026, 3, day, hour, tzinfo=UTC)


async def metered(
    name: str,
    project_id: uuid.UUID,
    owner: Person | None,
    start: datetime,
    end: datetime | None,
    *,
    gpus: int = 1,
    model: str = "H100",
    cpu_millicores: int = 2000,
    memory_bytes: int = 8 * 1024**3,
) -> None:
    """An interval as the meter writes one (the meter itself is tested in test_meter.py)."""
    subject = uuid.uuid4()
    holding = Holding(
        kind="compute_instance",
        name=name,
        project_id=project_id,
        owner_id=owner.user.id if owner else None,
        gpu_count=gpus,
        gpu_vendor="NVIDIA",
        gpu_model=model,
        cpu_millicores=cpu_millicores,
        memory_bytes=memory_bytes,
    )
    await meter.hold(subject, holding, start)
    if end is not None:
        await meter.release(subject, end)


class People:
    def __init__(self, **people: Person) -> None:
        self.__dict__.update(people)

    alice: Person  # ADMIN of ml
    bob: Person  # MEMBER of ml
    olivia: Person  # MEMBER of ml
    carol: Person  # ADMIN of other
    root: Person  # platform admin


@pytest.fixture
async def people(db: object, monkeypatch: pytest.MonkeyPatch) -> People:
    monkeypatch.setattr(usage, "now", lambda: NOW)
    found = People(
        alice=await make_user("alice"),
        bob=await make_user("bob"),
        olivia=await make_user("olivia"),
        carol=await make_user("carol"),
        root=await make_user("root", platform_admin=True),
    )
    ml = await make_project("ml", alice=Role.ADMIN, bob=Role.MEMBER, olivia=Role.MEMBER)
    other = await make_project("other", carol=Role.ADMIN)
    # bob: 22:00 on the 1st to 02:00 on the 3rd (2 h, 24 h, 2 h), 2 GPUs
    await metered("train", ml.id, found.bob, at(1, 22), at(3, 2), gpus=2)
    # olivia: the 2nd, 10:00 to 13:00, 1 GPU of another model
    await metered("notebook", ml.id, found.olivia, at(2, 10), at(2, 13), model="A100")
    # carol, in her project: still running since the 9th 12:00 (counted up to NOW: 24 h)
    await metered("serve", other.id, found.carol, at(9, 12), None, gpus=4)
    return found


async def report(gql: GraphQLClient, who: Person | None, **variables: Any) -> dict[str, Any]:
    values = {"from": "2026-03-01", "to": "2026-03-31", "groupBy": "PROJECT", **variables}
    return await gql(USAGE, values, token=who.token if who else None)


def days(body: dict[str, Any]) -> list[tuple[str, str, float]]:
    return [(d["day"], d["group"], d["gpuHours"]) for d in body["data"]["usage"]["days"]]


async def test_usage_is_cut_into_utc_days_per_group(gql: GraphQLClient, people: People) -> None:
    body = await report(gql, people.root, groupBy="USER")
    assert days(body) == [
        ("2026-03-01", "bob", 4.0),
        ("2026-03-02", "bob", 48.0),
        ("2026-03-02", "olivia", 3.0),
        ("2026-03-03", "bob", 4.0),
        ("2026-03-09", "carol", 48.0),
        ("2026-03-10", "carol", 48.0),
    ]
    result = body["data"]["usage"]
    assert result["until"].startswith("2026-03-10T12:00:00")
    assert result["total"]["gpuHours"] == 155.0
    # bob's 28 h at 2 cores and 8 GiB, olivia's 3 h, carol's 24 h
    assert result["total"]["cpuCoreHours"] == 2 * (28 + 3 + 24)
    assert result["total"]["memoryGibHours"] == 8 * (28 + 3 + 24)
    assert [(g["group"], g["gpuHours"]) for g in result["groups"]] == [
        ("bob", 56.0),
        ("carol", 96.0),
        ("olivia", 3.0),
    ]


async def test_a_period_takes_only_its_days(gql: GraphQLClient, people: People) -> None:
    body = await report(gql, people.root, **{"from": "2026-03-02", "to": "2026-03-02"}, groupBy="INSTANCE")
    assert days(body) == [("2026-03-02", "ml/notebook", 3.0), ("2026-03-02", "ml/train", 48.0)]
    by_model = await report(gql, people.root, groupBy="GPU_MODEL", project="ml")
    assert [(g["group"], g["gpuHours"]) for g in by_model["data"]["usage"]["groups"]] == [
        ("NVIDIA A100", 3.0),
        ("NVIDIA H100", 56.0),
    ]


async def test_who_sees_whose_usage(gql: GraphQLClient, people: People) -> None:
    def users(body: dict[str, Any]) -> set[str]:
        return {g["group"] for g in body["data"]["usage"]["groups"]}

    assert users(await report(gql, people.root, groupBy="USER")) == {"bob", "olivia", "carol"}
    # a project's admin: the whole project, and nothing of another project
    assert users(await report(gql, people.alice, groupBy="USER")) == {"bob", "olivia"}
    assert users(await report(gql, people.alice, groupBy="USER", user="bob")) == {"bob"}
    # a member: their own, also when asking for the project
    assert users(await report(gql, people.bob, groupBy="USER")) == {"bob"}
    assert users(await report(gql, people.bob, groupBy="USER", project="ml")) == {"bob"}
    assert users(await report(gql, people.bob, groupBy="USER", user="bob")) == {"bob"}
    refused = await report(gql, people.bob, user="olivia")
    assert refused["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert "see another user's usage" in refused["errors"][0]["message"]
    # another project's admin: ml is not there
    hidden = await report(gql, people.carol, project="ml")
    assert hidden["errors"][0]["extensions"]["code"] == "NOT_FOUND"
    assert users(await report(gql, people.carol, groupBy="USER")) == {"carol"}
    assert users(await report(gql, people.carol, groupBy="USER", user="bob")) == set()
    anonymous = await report(gql, None)
    assert anonymous["errors"][0]["extensions"]["code"] == "UNAUTHENTICATED"
    unknown = await report(gql, people.root, user="nobody")
    assert unknown["errors"][0]["extensions"]["code"] == "NOT_FOUND"


async def test_the_csv_has_the_daily_lines(gql: GraphQLClient, people: People) -> None:
    body = await report(gql, people.alice, groupBy="USER", **{"from": "2026-03-02", "to": "2026-03-03"})
    rows = list(csv.reader(io.StringIO(body["data"]["usage"]["csv"])))
    assert rows == [
        ["day_utc", "user", "gpu_hours", "cpu_core_hours", "memory_gib_hours", "cost"],
        ["2026-03-02", "bob", "48.0000", "48.0000", "192.0000", ""],
        ["2026-03-02", "olivia", "3.0000", "6.0000", "24.0000", ""],
        ["2026-03-03", "bob", "4.0000", "4.0000", "16.0000", ""],
    ]


async def test_a_csv_cell_never_runs_as_a_formula() -> None:
    line = usage.UsageLine(datetime(2026, 3, 1).date(), "=HYPERLINK(1)", usage.Amount(), None)
    query = usage.UsageQuery(start=line.day, end=line.day)  # type: ignore[arg-type]
    made = usage.to_csv(usage.UsageReport(query, NOW, [line], [], line))
    assert made.splitlines()[1].startswith("2026-03-01,'=HYPERLINK(1)")


async def test_prices_give_costs(gql: GraphQLClient, people: People) -> None:
    # no price yet: GPU usage has no cost (rather than a cost that leaves GPUs out)
    body = await report(gql, people.root)
    assert body["data"]["usage"]["total"]["cost"] is None
    made = await gql.data(
        SET_PRICE,
        {"input": {"vendor": "NVIDIA", "model": "H100", "pricePerGpuHour": "2.5"}},
        token=people.root.token,
    )
    assert made["setGpuPrice"]["gpuPrice"]["pricePerGpuHour"] == "2.5000"
    groups = (await report(gql, people.root))["data"]["usage"]["groups"]
    assert [(g["group"], g["cost"]) for g in groups] == [("ml", None), ("other", 240.0)]  # A100 has none
    # a vendor's price for every model without its own
    await gql.data(
        SET_PRICE, {"input": {"vendor": "NVIDIA", "pricePerGpuHour": "1"}}, token=people.root.token
    )
    groups = (await report(gql, people.root))["data"]["usage"]["groups"]
    assert [(g["group"], g["cost"]) for g in groups] == [("ml", 56 * 2.5 + 3 * 1), ("other", 240.0)]
    # setting it again replaces it; everyone signed in reads the prices
    await gql.data(
        SET_PRICE,
        {"input": {"vendor": "NVIDIA", "model": "H100", "pricePerGpuHour": "3"}},
        token=people.root.token,
    )
    prices = await gql.data("{ gpuPrices { vendor model pricePerGpuHour } }", token=people.bob.token)
    assert prices["gpuPrices"] == [
        {"vendor": "NVIDIA", "model": "", "pricePerGpuHour": "1.0000"},
        {"vendor": "NVIDIA", "model": "H100", "pricePerGpuHour": "3.0000"},
    ]
    refused = await gql(
        SET_PRICE, {"input": {"vendor": "AMD", "pricePerGpuHour": "1"}}, token=people.alice.token
    )
    assert refused["errors"][0]["extensions"]["code"] == "FORBIDDEN"


@pytest.mark.parametrize(
    ("price", "field", "message"),
    [
        ({"vendor": "CPU", "pricePerGpuHour": "1"}, "vendor", "CPU has no GPUs to price"),
        ({"vendor": "AMD", "pricePerGpuHour": "-1"}, "pricePerGpuHour", "from 0 to 1000000"),
        ({"vendor": "AMD", "pricePerGpuHour": "1.00001"}, "pricePerGpuHour", "at most 4 decimal places"),
        ({"vendor": "AMD", "pricePerGpuHour": "NaN"}, "pricePerGpuHour", "from 0 to 1000000"),
        ({"vendor": "AMD", "model": "x" * 129, "pricePerGpuHour": "1"}, "model", "at most 128 characters"),
        ({"vendor": "AMD", "model": " MI300X", "pricePerGpuHour": "1"}, "model", "no leading or trailing"),
    ],
)
async def test_a_price_is_checked(
    gql: GraphQLClient, people: People, price: dict[str, str], field: str, message: str
) -> None:
    body = await gql.data(SET_PRICE, {"input": price}, token=people.root.token)
    [error] = body["setGpuPrice"]["userErrors"]
    assert error["field"] == [field] and message in error["message"] and error["code"] == "INVALID"


async def test_a_period_is_checked(gql: GraphQLClient, people: People) -> None:
    backwards = await report(gql, people.root, **{"from": "2026-03-05", "to": "2026-03-04"})
    assert backwards["errors"][0]["extensions"]["code"] == "INVALID"
    assert "before from" in backwards["errors"][0]["message"]
    long = await report(gql, people.root, **{"from": "2025-01-01", "to": "2026-03-04"})
    assert "at most 366 days" in long["errors"][0]["message"]


async def test_a_report_reads_in_a_constant_number_of_statements(
    gql: GraphQLClient, people: People, count_queries: QueryCounter
) -> None:
    await report(gql, people.root, groupBy="USER")  # the token's first use is written once
    count_queries.statements.clear()
    await report(gql, people.root, groupBy="USER")
    few = len(count_queries.statements)
    ml = (await gql.data('{ project(name: "ml") { id } }', token=people.root.token))["project"]["id"]
    for i in range(20):
        start = at(4) + timedelta(hours=i)
        await metered(f"batch-{i}", uuid.UUID(ml), people.bob, start, start + timedelta(minutes=30))
    count_queries.statements.clear()
    body = await report(gql, people.root, groupBy="USER")
    assert len(count_queries.statements) == few
    assert ("2026-03-04", "bob", 10.0) in days(body)
