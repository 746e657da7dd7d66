"""The webhook dispatcher: claims due deliveries, sends each as a signed POST, logs the attempt,
and schedules the next one with exponential backoff until it is delivered or the attempts run out.

It works like the outbox relay (events/relay.py): rows are claimed in a short transaction (FOR
UPDATE SKIP LOCKED on PostgreSQL, so several processes share the work) and sent outside it, and a
claim expires, so the rows of a dispatcher that died are taken by another. `outbox.notify()` after
a commit wakes it at once; otherwise it polls.

Sending is guarded (webhooks/netguard.py): the host is resolved, every address checked, and the
request goes to the checked address (the Host header and TLS name stay the URL's). No redirect is
followed, every attempt has one deadline for DNS, connect, send and answer, and only the start of
an answer is read and kept.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import httpx
from tortoise.expressions import Q
from tortoise.transactions import in_transaction

from gpupaas.core.crypto import DecryptionError, Sealer
from gpupaas.events import outbox
from gpupaas.webhooks import netguard, signing
from gpupaas.webhooks.models import (
    DeliveryStatus,
    Webhook,
    WebhookAttempt,
    WebhookDelivery,
    WebhookEvent,
)
from gpupaas.webhooks.service import queued_here

log = logging.getLogger("gpupaas.webhooks")

# What is kept of a receiver's answer (characters) and read of it (bytes).
RESPONSE_EXCERPT = 500
_READ_LIMIT = 2048
USER_AGENT = "gpupaas-webhooks/1"


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class DeliveryPolicy:
    """How deliveries are sent and retried (GPUPAAS_WEBHOOK_* settings)."""

    allow_private_networks: bool = False
    timeout_seconds: float = 10.0
    max_attempts: int = 8
    backoff_seconds: float = 10.0
    max_backoff_seconds: float = 3600.0
    keep_days: float = 30.0

    def backoff(self, attempts: int) -> timedelta:
        """The wait after the `attempts`-th failed attempt: backoff_seconds, doubling, capped."""
        seconds = self.backoff_seconds * 2 ** min(attempts - 1, 40)
        return timedelta(seconds=min(self.max_backoff_seconds, seconds))


@dataclass(frozen=True)
class Outcome:
    status_code: int | None
    error: str | None
    excerpt: str | None

    @property
    def delivered(self) -> bool:
        return self.status_code is not None and 200 <= self.status_code < 300


class Dispatcher:
    def __init__(
        self,
        secret_key: str,
        policy: DeliveryPolicy,
        *,
        clock: Callable[[], datetime] = _utcnow,
        resolve: netguard.Resolver = netguard.system_resolve,
        poll_seconds: float = 10.0,
        batch: int = 50,
        concurrency: int = 10,
        claim_for: timedelta | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.sealer = Sealer(secret_key)
        self.policy = policy
        self.clock = clock
        self.resolve = resolve
        self.poll_seconds = poll_seconds
        self.batch = batch
        self.concurrency = concurrency
        # Longer than any attempt can take, so that a live dispatcher never loses its claim.
        self.claim_for = claim_for or timedelta(seconds=policy.timeout_seconds * 3 + 30)
        self.name = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self._transport = transport
        self._http: httpx.AsyncClient | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._last_sweep: datetime | None = None
        # The earliest retry this dispatcher scheduled (its own clock), if it is still to come.
        self._next_retry: datetime | None = None

    # ---------------------------------------------------------------- running in the background

    async def start(self) -> None:
        outbox.register(self._wake)
        self._task = asyncio.create_task(self._run(), name="webhook-dispatcher")

    async def stop(self) -> None:
        outbox.unregister(self._wake)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self.aclose()

    async def aclose(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    @property
    def _client(self) -> httpx.AsyncClient:
        if self._http is None:
            self._http = httpx.AsyncClient(
                follow_redirects=False,
                trust_env=False,  # no proxy from the environment: the request goes to the checked address
                timeout=httpx.Timeout(self.policy.timeout_seconds),
                transport=self._transport,
                headers={"user-agent": USER_AGENT},
            )
        return self._http

    async def _run(self) -> None:
        look = True
        while True:
            self._wake.clear()
            try:
                if look:
                    seen = queued_here()
                    self._next_retry = None  # this pass finds every due one, and notes its retries
                    sent = await self.dispatch_due()
                    if sent >= self.batch:
                        continue  # more are due
                    await self._sweep()
            except Exception:
                log.exception("webhook dispatcher failed; retrying")
                await asyncio.sleep(1.0)
                continue
            try:
                await asyncio.wait_for(self._wake.wait(), timeout=self._wait_seconds())
                # woken by a commit: only one that queued deliveries here gives something to send
                # (most commits are status changes of projects without webhooks)
                look = queued_here() != seen
            except TimeoutError:
                look = True

    def _wait_seconds(self) -> float:
        """Until the next poll, or sooner the first retry this dispatcher scheduled (kept until a
        pass runs: a wake-up that makes no pass waits for it again)."""
        wait = self.poll_seconds
        if self._next_retry is not None:
            wait = min(wait, max(0.0, (self._next_retry - self.clock()).total_seconds()))
        return wait

    def _note_retry(self, at: datetime) -> None:
        if self._next_retry is None or at < self._next_retry:
            self._next_retry = at

    async def _sweep(self) -> None:
        """Finished deliveries (and their attempts) older than keep_days go, once an hour."""
        moment = self.clock()
        if self._last_sweep is not None and moment - self._last_sweep < timedelta(hours=1):
            return
        self._last_sweep = moment
        await WebhookDelivery.filter(
            status__in=[DeliveryStatus.DELIVERED, DeliveryStatus.FAILED],
            finished_at__lte=moment - timedelta(days=self.policy.keep_days),
        ).delete()

    # ---------------------------------------------------------------- one pass

    async def dispatch_due(self) -> int:
        """Sends the deliveries that are due (one attempt each); returns how many were tried."""
        rows = await self._claim()
        if not rows:
            return 0
        hooks = {w.id: w for w in await Webhook.filter(id__in={r.webhook_id for r in rows})}
        gate = asyncio.Semaphore(self.concurrency)

        async def one(row: WebhookDelivery) -> None:
            async with gate:
                await self._attempt(row, hooks.get(row.webhook_id))

        await asyncio.gather(*(one(r) for r in rows))
        return len(rows)

    async def _claim(self) -> list[WebhookDelivery]:
        moment = self.clock()
        async with in_transaction():
            rows: list[WebhookDelivery] = (
                await WebhookDelivery.filter(
                    Q(status=DeliveryStatus.PENDING, next_attempt_at__lte=moment)
                    & (Q(claimed_until=None) | Q(claimed_until__lte=moment))
                )
                .order_by("next_attempt_at", "id")
                .limit(self.batch)
                .select_for_update(skip_locked=True)
            )
            if rows:
                await WebhookDelivery.filter(id__in=[r.id for r in rows]).update(
                    claimed_by=self.name, claimed_until=moment + self.claim_for
                )
        return rows

    async def _attempt(self, row: WebhookDelivery, webhook: Webhook | None) -> None:
        started = self.clock()
        begun = time.perf_counter()
        if webhook is None:  # deleted meanwhile: its deliveries went with it
            return
        if not webhook.enabled and row.event != WebhookEvent.TEST:
            # switched off after the event: it is not sent (a test event still is)
            await WebhookDelivery.filter(id=row.id, claimed_by=self.name).update(
                status=DeliveryStatus.FAILED,
                finished_at=started,
                last_error="not sent: the webhook was disabled",
                claimed_by=None,
                claimed_until=None,
            )
            return
        number = row.attempts + 1
        try:
            outcome = await self.send(webhook, row, started)
        except Exception as bug:  # a bug must not stop the others, nor retry forever
            log.exception("webhook delivery %s failed unexpectedly", row.id)
            outcome = Outcome(None, f"internal error: {type(bug).__name__}", None)
        duration_ms = int((time.perf_counter() - begun) * 1000)
        finished = self.clock()
        if outcome.delivered:
            status, next_at, done = DeliveryStatus.DELIVERED, row.next_attempt_at, finished
        elif number >= self.policy.max_attempts:
            status, next_at, done = DeliveryStatus.FAILED, row.next_attempt_at, finished
        else:
            status, next_at, done = DeliveryStatus.PENDING, finished + self.policy.backoff(number), None
        problem = outcome.error
        if problem is None and not outcome.delivered:
            problem = f"HTTP {outcome.status_code}"
        async with in_transaction():
            changed = await WebhookDelivery.filter(
                id=row.id, claimed_by=self.name, attempts=row.attempts
            ).update(
                status=status,
                attempts=number,
                next_attempt_at=next_at,
                finished_at=done,
                last_error=None if outcome.delivered else problem,
                claimed_by=None,
                claimed_until=None,
            )
            if changed and status == DeliveryStatus.PENDING:
                self._note_retry(next_at)
            if changed:  # else another dispatcher took it over (our claim had expired)
                await WebhookAttempt.create(
                    delivery_id=row.id,
                    number=number,
                    started_at=started,
                    duration_ms=duration_ms,
                    status_code=outcome.status_code,
                    error=outcome.error,
                    response_excerpt=outcome.excerpt,
                )

    # ---------------------------------------------------------------- one request

    async def send(self, webhook: Webhook, row: WebhookDelivery, at: datetime) -> Outcome:
        """One signed POST of the delivery's body; never raises for what the receiver or the
        network does."""
        try:
            target = netguard.parse_url(webhook.url)
        except netguard.DestinationRefused as error:
            return Outcome(None, f"refused: {error}", None)
        try:
            secret = self.sealer.unseal(webhook.secret_sealed)
        except DecryptionError as error:
            return Outcome(None, f"cannot sign: {error}", None)
        body = row.body.encode()
        timestamp = int(at.timestamp())
        headers = {
            "content-type": "application/json",
            "host": target.netloc,
            "accept-encoding": "identity",  # what is read of the answer is its raw start
            signing.EVENT: row.event.value,
            signing.EVENT_ID: str(row.event_id),
            signing.DELIVERY: str(row.id),
            signing.TIMESTAMP: str(timestamp),
            signing.SIGNATURE: signing.signature(secret, timestamp, body),
        }
        try:
            async with asyncio.timeout(self.policy.timeout_seconds):
                address = await netguard.resolve_checked(
                    target, self.policy.allow_private_networks, self.resolve
                )
                return await self._post(target, address, headers, body)
        except netguard.DestinationRefused as error:
            return Outcome(None, f"refused: {error}", None)
        except TimeoutError:
            return Outcome(None, f"timed out after {self.policy.timeout_seconds:g} s", None)
        except httpx.HTTPError as error:
            return Outcome(
                None, f"{type(error).__name__}: {error}" if str(error) else type(error).__name__, None
            )

    async def _post(
        self, target: netguard.Target, address: str, headers: dict[str, str], body: bytes
    ) -> Outcome:
        host = f"[{address}]" if ":" in address else address
        url = httpx.URL(f"{target.scheme}://{host}:{target.port}{target.path}")
        extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
        request = self._client.build_request(
            "POST", url, headers=headers, content=body, extensions=extensions
        )
        response = await self._client.send(request, stream=True)
        try:
            taken = b""
            async for chunk in response.aiter_raw():
                taken += chunk
                if len(taken) >= _READ_LIMIT:
                    break
        finally:
            await response.aclose()
        # PostgreSQL keeps no NUL in text, and a log shows none either
        excerpt = taken.decode("utf-8", errors="replace").replace("\x00", "\ufffd")[:RESPONSE_EXCERPT] or None
        problem = None
        if 300 <= response.status_code < 400:
            where = response.headers.get("location", "")
            problem = f"HTTP {response.status_code}: redirects are not followed (to {where[:200]!r})"
        elif not 200 <= response.status_code < 300:
            problem = f"HTTP {response.status_code}"
        return Outcome(response.status_code, problem, excerpt)
