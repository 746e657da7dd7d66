"""GraphQL for webhooks. Thin: every rule lives in `webhooks.service`."""

from __future__ import annotations

from datetime import datetime

import strawberry

from gpupaas.accounts.graphql import ProjectType, project_of
from gpupaas.graphql.common import DeletePayload, UserError, attempt, delete_payload
from gpupaas.graphql.connections import Connection, cursor_of
from gpupaas.graphql.context import Info
from gpupaas.webhooks import service
from gpupaas.webhooks.models import DeliveryStatus, Webhook, WebhookAttempt, WebhookDelivery, WebhookEvent

WebhookEventEnum = strawberry.enum(
    WebhookEvent,
    name="WebhookEvent",
    description="What a webhook is told about. *_SUCCESS: a compute instance reached SUCCESS, a service "
    "instance RUNNING; *_FAILED: either turned FAILED (a run, or drift). TEST: only sendWebhookTestEvent.",
)
DeliveryStatusEnum = strawberry.enum(DeliveryStatus, name="WebhookDeliveryStatus")


@strawberry.type(name="WebhookAttempt", description="One try at sending a delivery.")
class WebhookAttemptType:
    number: int = strawberry.field(description="1 for the first attempt.")
    started_at: datetime
    duration_ms: int
    status_code: int | None = strawberry.field(description="The receiver's HTTP status; null: no answer.")
    error: str | None = strawberry.field(description="Why it failed (refused, timed out, HTTP 500, ...).")
    response_excerpt: str | None = strawberry.field(description="The start of the receiver's answer.")

    @classmethod
    def of(cls, row: WebhookAttempt) -> WebhookAttemptType:
        return cls(
            number=row.number,
            started_at=row.started_at,
            duration_ms=row.duration_ms,
            status_code=row.status_code,
            error=row.error,
            response_excerpt=row.response_excerpt,
        )


@strawberry.type(name="WebhookDelivery", description="One event sent (or to be sent) to one webhook.")
class WebhookDeliveryType:
    id: strawberry.ID
    event: WebhookEvent
    event_id: strawberry.ID = strawberry.field(
        description="The X-Gpupaas-Event-Id header: the same in every attempt."
    )
    status: DeliveryStatus
    attempt_count: int
    next_attempt_at: datetime | None = strawberry.field(description="Null once delivered or failed.")
    last_error: str | None
    created_at: datetime
    finished_at: datetime | None
    attempts: list[WebhookAttemptType] = strawberry.field(description="First attempt first.")

    @classmethod
    def of(cls, row: WebhookDelivery, attempts: list[WebhookAttempt]) -> WebhookDeliveryType:
        return cls(
            id=strawberry.ID(str(row.id)),
            event=WebhookEvent(row.event),
            event_id=strawberry.ID(str(row.event_id)),
            status=DeliveryStatus(row.status),
            attempt_count=row.attempts,
            next_attempt_at=row.next_attempt_at if row.status == DeliveryStatus.PENDING else None,
            last_error=row.last_error,
            created_at=row.created_at,
            finished_at=row.finished_at,
            attempts=[WebhookAttemptType.of(a) for a in attempts],
        )


@strawberry.type(name="Webhook")
class WebhookType:
    id: strawberry.ID
    url: str
    events: list[WebhookEvent]
    enabled: bool
    created_at: datetime
    updated_at: datetime
    _model: strawberry.Private[Webhook]

    @strawberry.field
    async def project(self, info: Info) -> ProjectType:
        return await project_of(info, self._model.project_id)

    @strawberry.field(description="The delivery log, newest first, each with its attempts.")
    async def deliveries(
        self,
        first: int | None = None,
        after: str | None = None,
        status: DeliveryStatus | None = None,
    ) -> Connection[WebhookDeliveryType]:
        page = await service.deliveries_of(self._model, first, after, status)
        attempts = await service.attempts_of(page.rows)
        return Connection.of(page, lambda d: WebhookDeliveryType.of(d, attempts[d.id]), cursor_of)

    @classmethod
    def of(cls, webhook: Webhook) -> WebhookType:
        return cls(
            id=strawberry.ID(str(webhook.id)),
            url=webhook.url,
            events=[WebhookEvent(e) for e in webhook.events],
            enabled=webhook.enabled,
            created_at=webhook.created_at,
            updated_at=webhook.updated_at,
            _model=webhook,
        )


@strawberry.input
class CreateWebhookInput:
    project: str
    url: str = strawberry.field(
        description="http(s) only; loopback, private and link-local destinations are refused unless "
        "GPUPAAS_WEBHOOK_ALLOW_PRIVATE_NETWORKS is set."
    )
    events: list[WebhookEvent]
    enabled: bool | None = strawberry.field(default=None, description="Defaults to true.")


@strawberry.input(description="Fields left out stay as they are; `events` given replaces the old ones.")
class UpdateWebhookInput:
    id: strawberry.ID
    url: str | None = None
    events: list[WebhookEvent] | None = None
    enabled: bool | None = None


@strawberry.type
class WebhookPayload:
    webhook: WebhookType | None
    user_errors: list[UserError]


@strawberry.type
class CreateWebhookPayload:
    webhook: WebhookType | None
    secret: str | None = strawberry.field(
        description="The signing secret (X-Gpupaas-Signature): shown this once, never again."
    )
    user_errors: list[UserError]


@strawberry.type
class RotateWebhookSecretPayload:
    webhook: WebhookType | None
    secret: str | None = strawberry.field(description="The new signing secret: shown this once, never again.")
    user_errors: list[UserError]


@strawberry.type
class WebhookDeliveryPayload:
    delivery: WebhookDeliveryType | None
    user_errors: list[UserError]


@strawberry.type
class WebhooksQuery:
    @strawberry.field(description="The project's webhooks, oldest first (its admins only).")
    async def webhooks(self, info: Info, project: str) -> list[WebhookType]:
        return [WebhookType.of(w) for w in await service.list_webhooks(info.context.actor, project)]

    @strawberry.field
    async def webhook(self, info: Info, id: strawberry.ID) -> WebhookType | None:
        webhook = await service.get_webhook(info.context.actor, id)
        return WebhookType.of(webhook) if webhook else None


@strawberry.type
class WebhooksMutation:
    @strawberry.mutation
    async def create_webhook(self, info: Info, input: CreateWebhookInput) -> CreateWebhookPayload:
        settings = info.context.settings
        made, errors = await attempt(
            service.create_webhook(
                info.context.actor,
                input.project,
                service.WebhookIn(url=input.url, events=input.events, enabled=input.enabled),
                secret_key=settings.secret_key,
                allow_private=settings.webhook_allow_private_networks,
            )
        )
        if made is None:
            return CreateWebhookPayload(webhook=None, secret=None, user_errors=errors)
        webhook, secret = made
        return CreateWebhookPayload(webhook=WebhookType.of(webhook), secret=secret, user_errors=[])

    @strawberry.mutation
    async def update_webhook(self, info: Info, input: UpdateWebhookInput) -> WebhookPayload:
        webhook, errors = await attempt(
            service.update_webhook(
                info.context.actor,
                input.id,
                service.WebhookIn(url=input.url, events=input.events, enabled=input.enabled),
                allow_private=info.context.settings.webhook_allow_private_networks,
            )
        )
        return WebhookPayload(webhook=WebhookType.of(webhook) if webhook else None, user_errors=errors)

    @strawberry.mutation(
        description="A new signing secret for the webhook (the old one stops signing at once), shown once."
    )
    async def rotate_webhook_secret(self, info: Info, id: strawberry.ID) -> RotateWebhookSecretPayload:
        made, errors = await attempt(
            service.rotate_secret(info.context.actor, id, secret_key=info.context.settings.secret_key)
        )
        if made is None:
            return RotateWebhookSecretPayload(webhook=None, secret=None, user_errors=errors)
        webhook, secret = made
        return RotateWebhookSecretPayload(webhook=WebhookType.of(webhook), secret=secret, user_errors=[])

    @strawberry.mutation(description="Its delivery log goes with it; deliveries not yet sent never are.")
    async def delete_webhook(self, info: Info, id: strawberry.ID) -> DeletePayload:
        return await delete_payload(service.delete_webhook(info.context.actor, id))

    @strawberry.mutation(
        description="Queues a TEST event for this webhook (enabled or not); its delivery log shows "
        "how it went."
    )
    async def send_webhook_test_event(self, info: Info, id: strawberry.ID) -> WebhookDeliveryPayload:
        delivery, errors = await attempt(service.send_test_event(info.context.actor, id))
        return WebhookDeliveryPayload(
            delivery=WebhookDeliveryType.of(delivery, []) if delivery else None, user_errors=errors
        )
