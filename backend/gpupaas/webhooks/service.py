"""The rules of webhooks: who manages them, what a webhook may be, and `publish`, which queues
an event's deliveries in the caller's transaction.

A project's webhooks are its ADMINs' (and platform admins'): members get FORBIDDEN, other projects
find nothing. The signing secret is made here, returned once by `create_webhook`, and kept sealed.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tortoise.transactions import in_transaction

from gpupaas.accounts.models import Project
from gpupaas.accounts.service import project_by_name
from gpupaas.audit import recorder as audit
from gpupaas.core.actor import Actor
from gpupaas.core.crypto import Sealer
from gpupaas.core.errors import Collector, ErrorCode, NotFound, UserErrors
from gpupaas.core.ids import parse_id
from gpupaas.core.pagination import Page, paginate
from gpupaas.events import outbox
from gpupaas.webhooks import netguard
from gpupaas.webhooks.models import (
    DeliveryStatus,
    Webhook,
    WebhookAttempt,
    WebhookDelivery,
    WebhookEvent,
)
from gpupaas.webhooks.signing import new_secret

__all__ = [
    "WebhookIn",
    "attempts_of",
    "create_webhook",
    "delete_webhook",
    "deliveries_of",
    "get_webhook",
    "list_webhooks",
    "publish",
    "rotate_secret",
    "send_test_event",
    "update_webhook",
]

MAX_PER_PROJECT = 20
# How long saving a webhook waits for DNS before it says the name does not resolve.
RESOLVE_SECONDS = 5.0
SUBSCRIBABLE = frozenset(WebhookEvent) - {WebhookEvent.TEST}
# How the save-time check resolves names (DNS is the boundary tests replace).
RESOLVE: netguard.Resolver = netguard.system_resolve


def now() -> datetime:
    return datetime.now(UTC)


@dataclass
class WebhookIn:
    """Create: url and events are required. Update: None means "leave as it is"."""

    url: str | None = None
    events: Sequence[WebhookEvent] | None = None
    enabled: bool | None = None


# ---------------------------------------------------------------- rights


async def _webhook_for(actor: Actor, webhook_id: str) -> Webhook | None:
    """The webhook when its project exists for the caller (rights are checked after)."""
    actor.require_user()
    wid = parse_id(webhook_id)
    if wid is None:
        return None
    webhook = await Webhook.get_or_none(id=wid).select_related("project")
    if webhook is None or not actor.can_see(webhook.project):
        return None
    return webhook


async def _require_webhook(actor: Actor, webhook_id: str, field: tuple[str, ...]) -> Webhook:
    webhook = await _webhook_for(actor, webhook_id)
    if webhook is None:
        raise UserErrors.one(field, "No such webhook.", ErrorCode.NOT_FOUND)
    actor.require_admin_of(webhook.project)
    return webhook


async def get_webhook(actor: Actor, webhook_id: str) -> Webhook | None:
    webhook = await _webhook_for(actor, webhook_id)
    if webhook is not None:
        actor.require_admin_of(webhook.project)
    return webhook


async def list_webhooks(actor: Actor, project: str) -> list[Webhook]:
    owner = await project_by_name(actor, project)
    if owner is None:
        raise NotFound(f'project "{project}" not found')
    actor.require_admin_of(owner)
    rows: list[Webhook] = await Webhook.filter(project_id=owner.id).order_by("created_at", "id")
    for row in rows:
        row.project = owner
    return rows


# ---------------------------------------------------------------- checks


async def _check_url(
    problems: Collector, url: str, allow_private: bool, resolve: netguard.Resolver | None
) -> None:
    field = ("input", "url")
    try:
        target = netguard.parse_url(url)
        await asyncio.wait_for(
            netguard.resolve_checked(target, allow_private, resolve or RESOLVE), RESOLVE_SECONDS
        )
    except netguard.DestinationRefused as error:
        problems.add(field, str(error))
    except TimeoutError:
        problems.add(field, "the host name did not resolve in time (DNS): check it and save again")


def _check_events(problems: Collector, events: Sequence[WebhookEvent]) -> list[str]:
    field = ("input", "events")
    if not events:
        problems.add(field, "choose at least one event", ErrorCode.REQUIRED)
    if WebhookEvent.TEST in events:
        problems.add(field, "TEST is sent only by sendWebhookTestEvent: choose the events to receive")
    return sorted({WebhookEvent(e).value for e in events})


# ---------------------------------------------------------------- writing


async def create_webhook(
    actor: Actor,
    project: str,
    data: WebhookIn,
    *,
    secret_key: str,
    allow_private: bool,
    resolve: netguard.Resolver | None = None,
) -> tuple[Webhook, str]:
    """The new webhook and its signing secret, which is never shown again."""
    owner = await project_by_name(actor, project)
    if owner is None:
        raise UserErrors.one(("input", "project"), f'project "{project}" not found', ErrorCode.NOT_FOUND)
    actor.require_admin_of(owner)
    problems = Collector()
    if not data.url:
        problems.add(
            ("input", "url"), "a URL is required, like https://hooks.example.com/gpupaas", ErrorCode.REQUIRED
        )
    else:
        await _check_url(problems, data.url, allow_private, resolve)
    events = _check_events(problems, data.events or ())
    if await Webhook.filter(project_id=owner.id).count() >= MAX_PER_PROJECT:
        problems.add(
            ("input", "project"),
            f"a project has at most {MAX_PER_PROJECT} webhooks: delete one first",
            ErrorCode.INVALID_STATE,
        )
    problems.raise_if_any()
    secret = new_secret()
    async with in_transaction():
        webhook = await Webhook.create(
            project=owner,
            url=data.url,
            events=events,
            secret_sealed=Sealer(secret_key).seal(secret),
            enabled=True if data.enabled is None else data.enabled,
        )
        await audit.record("Webhook", webhook.id, webhook.url, project=owner, after=audit.fields_of(webhook))
    return webhook, secret


async def update_webhook(
    actor: Actor,
    webhook_id: str,
    data: WebhookIn,
    *,
    allow_private: bool,
    resolve: netguard.Resolver | None = None,
) -> Webhook:
    webhook = await _require_webhook(actor, webhook_id, ("input", "id"))
    problems = Collector()
    if data.url is not None:
        await _check_url(problems, data.url, allow_private, resolve)
    events = _check_events(problems, data.events) if data.events is not None else None
    problems.raise_if_any()
    before = audit.fields_of(webhook)
    if data.url is not None:
        webhook.url = data.url
    if events is not None:
        webhook.events = events
    if data.enabled is not None:
        webhook.enabled = data.enabled
    async with in_transaction():
        await webhook.save()
        await audit.record(
            "Webhook",
            webhook.id,
            webhook.url,
            project=webhook.project,
            before=before,
            after=audit.fields_of(webhook),
        )
    return webhook


async def rotate_secret(actor: Actor, webhook_id: str, *, secret_key: str) -> tuple[Webhook, str]:
    """A new signing secret, shown this once; the old one signs nothing from now on (attempts
    still waiting are signed with the new one)."""
    webhook = await _require_webhook(actor, webhook_id, ("id",))
    secret = new_secret()
    before = {"secret_sealed": webhook.secret_sealed}
    webhook.secret_sealed = Sealer(secret_key).seal(secret)
    async with in_transaction():
        await webhook.save(update_fields=["secret_sealed", "updated_at"])
        await audit.record(
            "Webhook",
            webhook.id,
            webhook.url,
            project=webhook.project,
            before=before,
            after={"secret_sealed": webhook.secret_sealed},
            secret=["secret_sealed"],
        )
    return webhook, secret


async def delete_webhook(actor: Actor, webhook_id: str) -> str:
    """Its deliveries and their log go with it: those not yet sent are never sent."""
    webhook = await _require_webhook(actor, webhook_id, ("id",))
    async with in_transaction():
        await webhook.delete()
        await audit.record(
            "Webhook", webhook.id, webhook.url, project=webhook.project, before=audit.fields_of(webhook)
        )
    return webhook_id


async def send_test_event(actor: Actor, webhook_id: str) -> WebhookDelivery:
    """A TEST delivery to this webhook (enabled or not), sent like any other."""
    webhook = await _require_webhook(actor, webhook_id, ("id",))
    data = {"message": "a test event sent from the studio or the API (sendWebhookTestEvent)"}
    async with in_transaction():
        delivery = await _queue(webhook, webhook.project, WebhookEvent.TEST, uuid.uuid4(), now(), data)
        await audit.record(
            "Webhook",
            webhook.id,
            webhook.url,
            project=webhook.project,
            after={"testDelivery": str(delivery.id)},
        )
    outbox.notify()
    return delivery


# ---------------------------------------------------------------- events


def _body(event_id: uuid.UUID, event: WebhookEvent, at: datetime, project: Project, data: Any) -> str:
    return json.dumps(
        {
            "id": str(event_id),
            "type": event.value,
            "createdAt": at.isoformat(),
            "project": {"id": str(project.id), "name": project.name},
            "data": data,
        },
        separators=(",", ":"),
        sort_keys=True,
    )


# How many deliveries this process has queued: a dispatcher woken by `outbox.notify()` (after any
# commit) looks for due deliveries only when it grew; those other processes queue, or that are due
# again after a backoff, it finds when it polls.
_queued = 0


def queued_here() -> int:
    return _queued


async def _queue(
    webhook: Webhook, project: Project, event: WebhookEvent, event_id: uuid.UUID, at: datetime, data: Any
) -> WebhookDelivery:
    delivery: WebhookDelivery = await WebhookDelivery.create(
        webhook=webhook,
        event=event,
        event_id=event_id,
        body=_body(event_id, event, at, project, data),
        next_attempt_at=at,
    )
    global _queued
    _queued += 1
    return delivery


def any_enabled_sql(table: str) -> str:
    """SQL true when the project of a row of `table` (a table with a `project_id`) has an enabled
    webhook: a statement that writes the row can say it too, and `publish` then reads nothing when
    it has none (`any_enabled=False`)."""
    return (
        "EXISTS (SELECT 1 FROM webhooks "  # noqa: S608  # a table name of ours, no input
        f'WHERE webhooks.project_id = "{table}".project_id AND webhooks.enabled)'
    )


async def publish(
    project_id: uuid.UUID, event: WebhookEvent, data: dict[str, Any], *, any_enabled: bool = True
) -> list[WebhookDelivery]:
    """Queues the event for every enabled webhook of the project that wants it, in the caller's
    transaction: the deliveries exist exactly when what they announce was committed. The caller
    calls `events.outbox.notify()` after its commit to wake the dispatchers of this process.
    One query when no webhook wants the event; none when the caller knows, from `any_enabled_sql`
    in the same transaction, that the project has no enabled webhook."""
    if not any_enabled:
        return []
    wanted = [w for w in await Webhook.filter(project_id=project_id, enabled=True) if event.value in w.events]
    if not wanted:
        return []
    project = await Project.get(id=project_id)
    event_id, at = uuid.uuid4(), now()
    return [await _queue(w, project, event, event_id, at, data) for w in wanted]


# ---------------------------------------------------------------- the log


async def deliveries_of(
    webhook: Webhook, first: int | None, after: str | None, status: DeliveryStatus | None
) -> Page[WebhookDelivery]:
    """A page of the webhook's deliveries, newest first (the caller was allowed the webhook)."""
    query = WebhookDelivery.filter(webhook_id=webhook.id)
    if status is not None:
        query = query.filter(status=status)
    return await paginate(query, first, after)


async def attempts_of(deliveries: Sequence[WebhookDelivery]) -> dict[uuid.UUID, list[WebhookAttempt]]:
    """The attempts of each delivery, first one first, in one query."""
    found: dict[uuid.UUID, list[WebhookAttempt]] = {d.id: [] for d in deliveries}
    if found:
        for attempt in await WebhookAttempt.filter(delivery_id__in=list(found)).order_by("number"):
            found[attempt.delivery_id].append(attempt)
    return found
