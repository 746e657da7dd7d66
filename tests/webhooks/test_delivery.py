"""Sending deliveries to a real receiver on a loopback port: signed as documented, retried after
failures with exponential backoff on a clock the test moves, given up after the last attempt, no
redirect followed, deadlines, short excerpts, and destinations checked again at delivery time."""

from __future__ import annotations

import asyncio
import json
import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from gpupaas.events import outbox
from gpupaas.runtime import Runtime
from gpupaas.settings import Settings
from gpupaas.webhooks import service, signing
from gpupaas.webhooks.dispatch import DeliveryPolicy
from gpupaas.webhooks.models import DeliveryStatus, Webhook, WebhookAttempt, WebhookDelivery, WebhookEvent
from tests.conftest import QueryCounter
from tests.factories import make_webhook, platform_actor
from tests.webhooks.conftest import Answer, Clock, DispatcherFactory, Receiver

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()
EVENTS = [WebhookEvent.COMPUTE_INSTANCE_FAILED, WebhookEvent.QUOTA_REACHED]


async def hook_to(url: str, *, allow_private: bool = True, **fields: Any) -> tuple[Webhook, str]:
    from tests.factories import make_project

    project = await make_project()
    data = service.WebhookIn(url=url, events=fields.pop("events", EVENTS), **fields)
    return await service.create_webhook(
        await platform_actor(), project.name, data, secret_key="k" * 64, allow_private=allow_private
    )


async def publish(webhook: Webhook, event: WebhookEvent = WebhookEvent.QUOTA_REACHED) -> WebhookDelivery:
    [delivery] = await service.publish(webhook.project_id, event, {"quota": "gpus", "used": 8, "limit": 8})
    return delivery


async def attempts(delivery: WebhookDelivery) -> list[WebhookAttempt]:
    return await WebhookAttempt.filter(delivery_id=delivery.id).order_by("number")


async def test_a_delivery_is_signed_as_the_readme_says(
    db: object, receiver: Receiver, dispatcher: DispatcherFactory, clock: Clock
) -> None:
    webhook, secret = await hook_to(f"{receiver.url}/in?team=ml")
    delivery = await publish(webhook)
    assert await dispatcher().dispatch_due() == 1
    [got] = receiver.requests
    assert got.path == "/in?team=ml"
    headers = got.headers
    # the documented check: HMAC-SHA256 of "<timestamp>.<body>" with the secret, a recent timestamp
    assert signing.verify(
        secret,
        headers["x-gpupaas-timestamp"],
        got.body,
        headers["x-gpupaas-signature"],
        now=int(clock().timestamp()),
    )
    assert headers["x-gpupaas-timestamp"] == str(int(clock().timestamp()))
    assert headers["x-gpupaas-signature"].startswith("v1=")
    # ... and a changed body, another secret or an old timestamp fail it
    now = int(clock().timestamp())
    signature = headers["x-gpupaas-signature"]
    assert not signing.verify(secret, headers["x-gpupaas-timestamp"], got.body + b" ", signature, now=now)
    assert not signing.verify("whsec_other", headers["x-gpupaas-timestamp"], got.body, signature, now=now)
    assert not signing.verify(secret, headers["x-gpupaas-timestamp"], got.body, signature, now=now + 301)
    # the other headers, and the body
    assert headers["x-gpupaas-event"] == "QUOTA_REACHED"
    assert headers["x-gpupaas-event-id"] == str(delivery.event_id)
    assert headers["x-gpupaas-delivery"] == str(delivery.id)
    assert headers["content-type"] == "application/json"
    assert headers["host"] == receiver.url.removeprefix("http://")
    assert headers["user-agent"].startswith("gpupaas-webhooks/")
    body = json.loads(got.body)
    assert body["id"] == str(delivery.event_id) and body["type"] == "QUOTA_REACHED"
    assert body["data"] == {"quota": "gpus", "used": 8, "limit": 8}
    assert body["project"]["id"] == str(webhook.project_id)
    done = await WebhookDelivery.get(id=delivery.id)
    assert (done.status, done.attempts, done.last_error) == (DeliveryStatus.DELIVERED, 1, None)
    assert done.finished_at == clock()
    # delivered: never sent again
    clock.advance(3600)
    assert await dispatcher().dispatch_due() == 0 and len(receiver.requests) == 1


async def test_failures_are_retried_with_exponential_backoff(
    db: object, receiver: Receiver, dispatcher: DispatcherFactory, clock: Clock
) -> None:
    # given a receiver that fails twice (500, then 503) and then takes it
    webhook, secret = await hook_to(f"{receiver.url}/hook")
    receiver.answers = [Answer(500, b"database down"), Answer(503, b"busy")]
    delivery = await publish(webhook)
    sender = dispatcher(backoff_seconds=10.0, max_backoff_seconds=60.0, max_attempts=5)
    start = clock()
    # the first attempt fails: the next is due 10 s later, not before
    assert await sender.dispatch_due() == 1
    row = await WebhookDelivery.get(id=delivery.id)
    assert (row.status, row.attempts, row.last_error) == (DeliveryStatus.PENDING, 1, "HTTP 500")
    assert (row.next_attempt_at - start).total_seconds() == 10
    clock.advance(9.9)
    assert await sender.dispatch_due() == 0
    clock.advance(0.1)
    assert await sender.dispatch_due() == 1
    # the second fails too: the wait doubles
    row = await WebhookDelivery.get(id=delivery.id)
    assert (row.attempts, row.last_error) == (2, "HTTP 503")
    assert (row.next_attempt_at - clock()).total_seconds() == 20
    clock.advance(19)
    assert await sender.dispatch_due() == 0
    clock.advance(1)
    assert await sender.dispatch_due() == 1
    # the third is taken
    row = await WebhookDelivery.get(id=delivery.id)
    assert (row.status, row.attempts, row.last_error) == (DeliveryStatus.DELIVERED, 3, None)
    assert [(a.number, a.status_code, a.error) for a in await attempts(delivery)] == [
        (1, 500, "HTTP 500"),
        (2, 503, "HTTP 503"),
        (3, 200, None),
    ]
    # every attempt carried the same event id and body, each signed with its own timestamp
    assert len({r.headers["x-gpupaas-event-id"] for r in receiver.requests}) == 1
    assert len({r.body for r in receiver.requests}) == 1
    stamps = [r.headers["x-gpupaas-timestamp"] for r in receiver.requests]
    assert [int(s) - int(stamps[0]) for s in stamps] == [0, 10, 30]
    for r in receiver.requests:
        now = int(r.headers["x-gpupaas-timestamp"])
        assert signing.verify(
            secret, r.headers["x-gpupaas-timestamp"], r.body, r.headers["x-gpupaas-signature"], now=now
        )


def test_the_backoff_doubles_up_to_its_cap() -> None:
    policy = DeliveryPolicy(backoff_seconds=10, max_backoff_seconds=300)
    assert [policy.backoff(n).total_seconds() for n in range(1, 8)] == [10, 20, 40, 80, 160, 300, 300]
    assert policy.backoff(10_000).total_seconds() == 300  # no overflow


async def test_a_delivery_is_given_up_after_its_last_attempt(
    db: object, receiver: Receiver, dispatcher: DispatcherFactory, clock: Clock
) -> None:
    webhook, _ = await hook_to(f"{receiver.url}/hook")
    receiver.answers = [Answer(500)] * 10
    delivery = await publish(webhook)
    sender = dispatcher(max_attempts=3, backoff_seconds=1.0)
    for _ in range(3):
        assert await sender.dispatch_due() == 1
        clock.advance(3600)
    row = await WebhookDelivery.get(id=delivery.id)
    assert (row.status, row.attempts, row.finished_at is not None) == (DeliveryStatus.FAILED, 3, True)
    clock.advance(86400)
    assert await sender.dispatch_due() == 0
    assert len(receiver.requests) == 3


async def test_redirects_are_not_followed(
    db: object, receiver: Receiver, dispatcher: DispatcherFactory
) -> None:
    webhook, _ = await hook_to(f"{receiver.url}/hook")
    receiver.answers = [Answer(302, b"", {"location": "http://169.254.169.254/latest/meta-data/"})]
    delivery = await publish(webhook)
    await dispatcher().dispatch_due()
    [attempt] = await attempts(delivery)
    assert attempt.status_code == 302
    assert (
        attempt.error
        == "HTTP 302: redirects are not followed (to 'http://169.254.169.254/latest/meta-data/')"
    )
    assert [r.path for r in receiver.requests] == ["/hook"]
    assert (await WebhookDelivery.get(id=delivery.id)).status == DeliveryStatus.PENDING  # retried later


async def test_only_an_excerpt_of_the_answer_is_kept(
    db: object, receiver: Receiver, dispatcher: DispatcherFactory
) -> None:
    webhook, _ = await hook_to(f"{receiver.url}/hook")
    receiver.answers = [Answer(200, b"x" * 1_000_000)]
    delivery = await publish(webhook)
    await dispatcher().dispatch_due()
    [attempt] = await attempts(delivery)
    assert attempt.status_code == 200 and attempt.response_excerpt == "x" * 500


async def test_a_receiver_that_does_not_answer_in_time_fails_the_attempt(
    db: object, receiver: Receiver, dispatcher: DispatcherFactory
) -> None:
    webhook, _ = await hook_to(f"{receiver.url}/hook")
    receiver.hold = asyncio.Event()  # it never answers (released at the end of the test)
    delivery = await publish(webhook)
    await dispatcher(timeout_seconds=0.2).dispatch_due()
    [attempt] = await attempts(delivery)
    assert (attempt.status_code, attempt.error) == (None, "timed out after 0.2 s")
    assert len(receiver.requests) == 1


async def test_a_receiver_that_is_gone_fails_the_attempt(db: object, dispatcher: DispatcherFactory) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    webhook, _ = await hook_to(f"http://127.0.0.1:{port}/hook")
    delivery = await publish(webhook)
    await dispatcher().dispatch_due()
    [attempt] = await attempts(delivery)
    assert attempt.status_code is None and attempt.error is not None and "ConnectError" in attempt.error


@pytest.mark.parametrize(
    ("resolved", "says"),
    [
        (["127.0.0.1"], "hooks.example resolves to 127.0.0.1, a loopback address"),
        (
            ["169.254.169.254"],
            "hooks.example resolves to 169.254.169.254, a link-local address (cloud metadata services live there)",
        ),
        (["93.184.216.34", "10.0.0.1"], "hooks.example resolves to 10.0.0.1, a private address"),
        (["::1"], "hooks.example resolves to ::1, a loopback address"),
    ],
)
async def test_the_address_is_checked_again_when_sending(
    db: object,
    receiver: Receiver,
    dispatcher: DispatcherFactory,
    monkeypatch: pytest.MonkeyPatch,
    resolved: list[str],
    says: str,
) -> None:
    """DNS rebinding: the name was public when saved and resolves to a private address later."""

    async def public(host: str, port: int) -> list[str]:
        return ["93.184.216.34"]

    async def rebound(host: str, port: int) -> list[str]:
        return resolved

    monkeypatch.setattr(service, "RESOLVE", public)
    port = receiver.url.rsplit(":", 1)[1]
    webhook, _ = await hook_to(f"http://hooks.example:{port}/hook", allow_private=False)
    delivery = await publish(webhook)
    await dispatcher(allow_private_networks=False, resolve=rebound).dispatch_due()
    [attempt] = await attempts(delivery)
    assert attempt.status_code is None
    assert (
        attempt.error
        == f"refused: {says}: not allowed (set GPUPAAS_WEBHOOK_ALLOW_PRIVATE_NETWORKS=true for receivers on private networks)"
    )
    assert receiver.requests == []  # nothing was sent


async def test_a_literal_private_address_saved_while_allowed_is_refused_once_not(
    db: object, receiver: Receiver, dispatcher: DispatcherFactory
) -> None:
    webhook, _ = await hook_to(f"{receiver.url}/hook")  # saved while private networks were allowed
    delivery = await publish(webhook)
    await dispatcher(allow_private_networks=False).dispatch_due()
    [attempt] = await attempts(delivery)
    assert (
        attempt.error is not None and "refused: 127.0.0.1 is a loopback address: not allowed" in attempt.error
    )
    assert receiver.requests == []


async def test_the_request_goes_to_the_checked_address_with_the_urls_host(
    db: object, receiver: Receiver, dispatcher: DispatcherFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The name is resolved once, by the check: the connection goes to that address and the
    server still sees the name the URL gives."""
    asked: list[str] = []

    async def resolve(host: str, port: int) -> list[str]:
        asked.append(host)
        return ["127.0.0.1"]

    monkeypatch.setattr(service, "RESOLVE", resolve)
    port = receiver.url.rsplit(":", 1)[1]
    webhook, _ = await hook_to(f"http://receiver.test:{port}/hook")
    await publish(webhook)
    asked.clear()
    await dispatcher(resolve=resolve).dispatch_due()
    assert asked == ["receiver.test"]
    [got] = receiver.requests
    assert got.headers["host"] == f"receiver.test:{port}"


async def test_events_go_to_the_enabled_webhooks_that_want_them(db: object, count_queries: Any) -> None:
    from tests.factories import make_project

    project = await make_project()

    async def make(events: list[WebhookEvent], enabled: bool = True) -> Webhook:
        hook: Webhook = await make_webhook(project.name, *events, enabled=enabled)
        return hook

    wants = await make([WebhookEvent.QUOTA_REACHED])
    also = await make([WebhookEvent.QUOTA_REACHED, WebhookEvent.AUTO_STOP_WARNING])
    await make([WebhookEvent.AUTO_STOP_WARNING])
    await make([WebhookEvent.QUOTA_REACHED], enabled=False)
    made = await service.publish(project.id, WebhookEvent.QUOTA_REACHED, {"x": 1})
    assert {d.webhook_id for d in made} == {wants.id, also.id}
    assert len({d.event_id for d in made}) == 1  # one event, one id
    # a project without webhooks: one query, nothing queued
    other = await make_project()
    count_queries.statements.clear()
    assert await service.publish(other.id, WebhookEvent.QUOTA_REACHED, {}) == []
    assert len(count_queries.statements) == 1


async def test_a_running_dispatcher_sends_at_once_when_woken(
    db: object, settings: Settings, receiver: Receiver
) -> None:
    """In a process's runtime: a committed delivery and outbox.notify() wake the dispatcher; the
    test waits for the receiver, not for a fixed time."""
    runtime = Runtime(replace(settings, webhook_allow_private_networks=True), run_worker=False)
    await runtime.start()
    try:
        runtime.webhooks.poll_seconds = 3600  # only a wake-up can make it send in time
        await asyncio.sleep(0)
        webhook, _ = await hook_to(f"{receiver.url}/hook")
        await publish(webhook)
        outbox.notify()
        await asyncio.wait_for(receiver.arrived.wait(), timeout=10)
        deadline = time.monotonic() + 10
        while (await WebhookDelivery.get(webhook_id=webhook.id)).status != DeliveryStatus.DELIVERED:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.01)
    finally:
        await runtime.stop()


async def test_a_running_dispatcher_retries_when_the_backoff_is_over_without_polling(
    db: object, settings: Settings, receiver: Receiver
) -> None:
    """The dispatcher polls only every `poll_seconds` (10 s), so an idle process does not query
    every second; a retry it scheduled wakes it when it is due, not at the next poll, even when
    a commit that queued nothing woke it meanwhile."""
    chosen = replace(settings, webhook_allow_private_networks=True, webhook_backoff_seconds=0.5)
    runtime = Runtime(chosen, run_worker=False)
    await runtime.start()
    try:
        runtime.webhooks.poll_seconds = 3600  # only its own retry time can make it try again
        receiver.answers = [Answer(status=503)]
        webhook, _ = await hook_to(f"{receiver.url}/hook")
        await publish(webhook)
        outbox.notify()
        deadline = time.monotonic() + 10
        while (await WebhookDelivery.get(webhook_id=webhook.id)).attempts < 1:
            assert time.monotonic() < deadline, "the first attempt was not made"
            await asyncio.sleep(0.01)
        outbox.notify()  # a commit that queued no delivery: the retry stays due
        while (await WebhookDelivery.get(webhook_id=webhook.id)).status != DeliveryStatus.DELIVERED:
            assert time.monotonic() < deadline, f"not retried: {len(receiver.requests)} request(s)"
            await asyncio.sleep(0.01)
        assert len(receiver.requests) == 2
    finally:
        await runtime.stop()


async def test_commits_that_queue_no_delivery_do_not_make_the_dispatcher_look(
    db: object, settings: Settings, receiver: Receiver, count_queries: QueryCounter
) -> None:
    """Every commit wakes the process's relays (outbox.notify()); most are status changes of
    projects without webhooks, and the dispatcher does not query for those (it polls for what
    other processes queue)."""
    runtime = Runtime(replace(settings, webhook_allow_private_networks=True), run_worker=False)
    await runtime.start()
    try:
        runtime.webhooks.poll_seconds = 3600
        webhook, _ = await hook_to(f"{receiver.url}/hook")
        for _ in range(5):
            await asyncio.sleep(0.05)  # let the dispatcher's first look and its wait happen
        count_queries.statements.clear()
        for _ in range(5):
            outbox.notify()
            await asyncio.sleep(0.02)
        assert not [s for s in count_queries.statements if "webhook_deliveries" in s]
        # a delivery queued here still wakes it at once
        await publish(webhook)
        outbox.notify()
        await asyncio.wait_for(receiver.arrived.wait(), timeout=10)
    finally:
        await runtime.stop()


async def test_a_deleted_webhooks_deliveries_are_never_sent(
    db: object, receiver: Receiver, dispatcher: DispatcherFactory
) -> None:
    webhook, _ = await hook_to(f"{receiver.url}/hook")
    await publish(webhook)
    await service.delete_webhook(await platform_actor(), str(webhook.id))
    assert await dispatcher().dispatch_due() == 0
    assert receiver.requests == []


async def test_publish_needs_no_caller(db: object) -> None:
    """publish is called by the run lifecycle and the quota and auto-stop code, with no caller."""
    from tests.factories import make_project

    project = await make_project("ml")
    hook = await make_webhook("ml", WebhookEvent.AUTO_STOP_WARNING)
    [delivery] = await service.publish(project.id, WebhookEvent.AUTO_STOP_WARNING, {"in": "15m"})
    assert delivery.webhook_id == hook.id and json.loads(delivery.body)["project"]["name"] == "ml"


async def test_the_readmes_verification_example_accepts_a_delivery(
    db: object, receiver: Receiver, dispatcher: DispatcherFactory
) -> None:
    """The README's receiver code, run as written, on a real delivery signed at the real time."""
    from gpupaas.webhooks.dispatch import Dispatcher
    from tests.conftest import SECRET_KEY
    from tests.webhooks.conftest import POLICY

    section = README.split("## Webhooks", 1)[1].split("\n## ", 1)[0]
    [code] = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    scope: dict[str, Any] = {}
    exec(compile(code, "README.md", "exec"), scope)
    verify = scope["verify_gpupaas"]
    webhook, secret = await hook_to(f"{receiver.url}/hook")
    await publish(webhook)
    sender = Dispatcher(SECRET_KEY, POLICY)  # the real clock: the example checks against time.time()
    try:
        await sender.dispatch_due()
    finally:
        await sender.aclose()
    [got] = receiver.requests
    assert verify(secret, got.headers, got.body)
    assert not verify(secret, got.headers, got.body.replace(b"gpus", b"cpus"))
    assert not verify("whsec_wrong", got.headers, got.body)


async def test_a_disabled_webhooks_waiting_deliveries_are_not_sent(
    db: object, receiver: Receiver, dispatcher: DispatcherFactory
) -> None:
    webhook, _ = await hook_to(f"{receiver.url}/hook")
    delivery = await publish(webhook)
    root = await platform_actor()
    await service.update_webhook(root, str(webhook.id), service.WebhookIn(enabled=False), allow_private=True)
    test = await service.send_test_event(root, str(webhook.id))  # a test event still goes
    assert await dispatcher().dispatch_due() == 2
    row = await WebhookDelivery.get(id=delivery.id)
    assert (row.status, row.last_error, row.attempts) == (
        DeliveryStatus.FAILED,
        "not sent: the webhook was disabled",
        0,
    )
    assert (await WebhookDelivery.get(id=test.id)).status == DeliveryStatus.DELIVERED
    assert [r.headers["x-gpupaas-event"] for r in receiver.requests] == ["TEST"]


async def test_an_answer_with_nul_bytes_is_kept_without_them(
    db: object, receiver: Receiver, dispatcher: DispatcherFactory
) -> None:
    webhook, _ = await hook_to(f"{receiver.url}/hook")
    receiver.answers = [Answer(500, b"bad\x00\xffthing")]
    delivery = await publish(webhook)
    await dispatcher().dispatch_due()
    [attempt] = await attempts(delivery)
    assert attempt.response_excerpt == "bad\ufffd\ufffdthing"


async def test_finished_deliveries_leave_the_log_after_their_days(
    db: object, receiver: Receiver, dispatcher: DispatcherFactory, clock: Clock
) -> None:
    webhook, _ = await hook_to(f"{receiver.url}/hook")
    old = await publish(webhook)
    sender = dispatcher(keep_days=2.0)
    await sender.dispatch_due()
    clock.advance(86400)
    waiting = await publish(webhook)  # queued, not yet sent: kept whatever its age
    await sender._sweep()
    assert await WebhookDelivery.filter(id=old.id).exists()
    clock.advance(86400 * 1.5)
    await sender._sweep()
    assert not await WebhookDelivery.filter(id=old.id).exists()
    assert not await WebhookAttempt.filter(delivery_id=old.id).exists()
    assert await WebhookDelivery.filter(id=waiting.id).exists()


async def test_two_dispatchers_send_each_delivery_once(
    db: object, receiver: Receiver, dispatcher: DispatcherFactory
) -> None:
    """Several processes share the deliveries through their claims (SKIP LOCKED on PostgreSQL)."""
    webhook, _ = await hook_to(f"{receiver.url}/hook")
    made = [await publish(webhook) for _ in range(6)]
    first, second = dispatcher(), dispatcher()
    tried = await asyncio.gather(first.dispatch_due(), second.dispatch_due())
    assert sum(tried) == 6
    assert sorted(r.headers["x-gpupaas-delivery"] for r in receiver.requests) == sorted(
        str(d.id) for d in made
    )
    assert await WebhookAttempt.all().count() == 6
    assert await WebhookDelivery.filter(status=DeliveryStatus.DELIVERED).count() == 6
