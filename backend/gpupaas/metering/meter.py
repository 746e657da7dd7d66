"""The meter: opens, splits and ends usage intervals, inside the caller's transaction.

`runs.lifecycle` calls it from the very statement group that writes a subject's status, so an
interval exists exactly when the database says the subject holds its resources: what a crash,
a redelivered command or a restarted process replays finds the interval already as it should be and
changes nothing (every call here is idempotent). At most one interval of a subject is open, which
the database enforces (`UsageInterval.open_subject` is unique).

Cost: a status that starts the meter is one INSERT that does nothing when an interval is open (the
unique `open_subject` says so), then, only then, a SELECT of the open one to compare it; a status
that ends it is one UPDATE (and a SELECT when nothing was open); every other status change costs
nothing.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from gpupaas.events import sql
from gpupaas.metering.models import UsageInterval


@dataclass(frozen=True)
class Holding:
    """What a subject holds and whom it is charged to, as its own columns say at a status change."""

    kind: str
    name: str
    project_id: uuid.UUID
    owner_id: uuid.UUID | None
    gpu_count: int
    gpu_vendor: str
    gpu_model: str
    cpu_millicores: int
    memory_bytes: int

    def matches(self, row: UsageInterval) -> bool:
        """Whether the open interval meters exactly this (same size, same project and owner)."""
        return (
            row.project_id == self.project_id
            and row.owner_id == self.owner_id
            and row.gpu_count == self.gpu_count
            and row.gpu_vendor == self.gpu_vendor
            and row.gpu_model == self.gpu_model
            and row.cpu_millicores == self.cpu_millicores
            and row.memory_bytes == self.memory_bytes
        )


def _columns(subject_id: uuid.UUID, holding: Holding, at: datetime) -> dict[str, Any]:
    return {
        "subject_kind": holding.kind,
        "subject_id": subject_id,
        "subject_name": holding.name,
        "project_id": holding.project_id,
        "owner_id": holding.owner_id,
        "gpu_count": holding.gpu_count,
        "gpu_vendor": holding.gpu_vendor,
        "gpu_model": holding.gpu_model,
        "cpu_millicores": holding.cpu_millicores,
        "memory_bytes": holding.memory_bytes,
        "started_at": at,
        "open_subject": subject_id,
    }


async def _open(subject_id: uuid.UUID, holding: Holding, at: datetime) -> None:
    await UsageInterval.create(**_columns(subject_id, holding, at))


async def _open_unless_open(subject_id: uuid.UUID, holding: Holding, at: datetime) -> bool:
    """Opens an interval unless the subject has one open, in one statement (`INSERT ... ON CONFLICT
    DO NOTHING` on the unique `open_subject`, the same text on SQLite and PostgreSQL): whether it
    opened one."""
    columns = {"id": uuid.uuid4(), **_columns(subject_id, holding, at)}
    fields = UsageInterval._meta.fields_map
    names = ", ".join(f'"{name}"' for name in columns)
    marks = ", ".join("?" for _ in columns)
    values = [fields[name].to_db_value(value, UsageInterval) for name, value in columns.items()]
    opened = await sql.rows(
        UsageInterval,
        f"INSERT INTO usage_intervals ({names}) VALUES ({marks}) "  # noqa: S608  # column names are the model's own
        'ON CONFLICT ("open_subject") DO NOTHING RETURNING "id"',
        values,
    )
    return bool(opened)


async def _end(row: UsageInterval, at: datetime) -> datetime:
    """Ends the open interval at `at` (never before it started: clocks of two processes may differ
    by a little) and returns the moment it ended."""
    end = max(at, row.started_at)
    await UsageInterval.filter(id=row.id, open_subject=row.subject_id).update(ended_at=end, open_subject=None)
    return end


async def hold(subject_id: uuid.UUID, holding: Holding, at: datetime) -> None:
    """The subject holds `holding` from `at` on: an interval opens when none is open; an open one
    with another size or charge (a resize, a new owner) ends at `at` and the new one starts there;
    the same one stays as it is."""
    if await _open_unless_open(subject_id, holding, at):
        return
    current = await UsageInterval.get_or_none(open_subject=subject_id)
    if current is None:  # ended by another transaction since the INSERT saw it
        await _open(subject_id, holding, at)
    elif not holding.matches(current):
        await _open(subject_id, holding, await _end(current, at))


async def resume(subject_id: uuid.UUID, holding: Holding, at: datetime) -> None:
    """The subject holds again what it held last (its workload came back by itself after drift):
    the size of its last interval, charged as `holding` says; `holding` itself when it has none."""
    last = await UsageInterval.filter(subject_id=subject_id).order_by("-started_at").first()
    if last is not None:
        holding = replace(
            holding,
            gpu_count=last.gpu_count,
            gpu_vendor=last.gpu_vendor,
            gpu_model=last.gpu_model,
            cpu_millicores=last.cpu_millicores,
            memory_bytes=last.memory_bytes,
        )
    await hold(subject_id, holding, at)


async def release(subject_id: uuid.UUID, at: datetime) -> None:
    """The subject holds nothing from `at` on: its open interval, if any, ends there."""
    ended = await UsageInterval.filter(open_subject=subject_id, started_at__lte=at).update(
        ended_at=at, open_subject=None
    )
    if not ended:  # none open, or one that started after `at` by another process's clock
        current = await UsageInterval.get_or_none(open_subject=subject_id)
        if current is not None:
            await _end(current, at)


async def recharge(subject_id: uuid.UUID, owner_id: uuid.UUID | None, at: datetime) -> None:
    """The subject was given to another owner: an open interval charged to someone else ends at
    `at` and an interval of the same size, charged to the new owner, starts there."""
    current = await UsageInterval.get_or_none(open_subject=subject_id)
    if current is None or current.owner_id == owner_id:
        return
    end = await _end(current, at)
    await _open(
        subject_id,
        Holding(
            kind=current.subject_kind,
            name=current.subject_name,
            project_id=current.project_id,
            owner_id=owner_id,
            gpu_count=current.gpu_count,
            gpu_vendor=current.gpu_vendor,
            gpu_model=current.gpu_model,
            cpu_millicores=current.cpu_millicores,
            memory_bytes=current.memory_bytes,
        ),
        end,
    )


async def release_owner(owner_id: uuid.UUID, at: datetime) -> None:
    """The owner is gone (a deleted user): what their instances hold from `at` on is charged to no
    owner, as the instances now have none (accounts asks through its hook)."""
    held = await UsageInterval.filter(owner_id=owner_id, open_subject__isnull=False).values_list(
        "subject_id", flat=True
    )
    for subject_id in held:
        await recharge(uuid.UUID(str(subject_id)), None, at)
