"""The Webhooks page in a real browser: a project admin adds a webhook pointing at a real receiver
on a loopback port, copies the secret shown once, sends a test event and reads its delivery log;
a new secret replaces it; a deploy then sends COMPUTE_INSTANCE_SUCCESS, signed with the new one; the
webhook is switched off and deleted."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
from typing import Any

import pytest
from playwright.async_api import expect

from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.settings import Settings
from gpupaas.webhooks import signing
from tests.conftest import SECRET_KEY, Database, serving
from tests.e2e.conftest import Watched, new_page, screenshot, sign_in
from tests.factories import make_instance, make_profile, make_project, make_user
from tests.webhooks.conftest import Receiver
from tests.workers.conftest import wait_status

WAIT = 20_000  # ms


@pytest.fixture
def settings(db: Database) -> Settings:
    """The receiver lives on loopback: this installation allows private networks."""
    return Settings(
        database_url=db.url, secret_key=SECRET_KEY, response_cache=False, webhook_allow_private_networks=True
    )


async def _received(receiver: Receiver, event: str, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        for request in receiver.requests:
            if request.headers.get("x-gpupaas-event") == event:
                return request
        assert time.monotonic() < deadline, f"no {event} delivery: {receiver.requests}"
        receiver.arrived.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(receiver.arrived.wait(), timeout=0.5)


async def test_webhooks_page(db: object, studio: str, browser: Any) -> None:
    await make_user("alice")
    project = await make_project("ml", alice=Role.ADMIN)
    profile = await make_profile(project)
    receiver = Receiver()
    async with serving(receiver) as receiver_url:
        watched = Watched()
        page = await new_page(browser, watched)
        await sign_in(page, studio, "alice")
        await page.get_by_role("navigation", name="Main").get_by_role("link", name="Webhooks").click()
        await page.get_by_role("heading", name="Webhooks", exact=True).wait_for()
        await expect(page.get_by_text("No webhooks yet")).to_be_visible()

        # add one: a URL that is not http(s) is refused at its field, then the receiver's is taken
        await page.get_by_role("button", name="Add Webhook").first.click()
        dialog = page.get_by_role("dialog")
        url = f"{receiver_url}/hook"
        await dialog.get_by_label(re.compile("^URL")).fill("ftp://example.com/x")
        await dialog.get_by_role("button", name="Add Webhook").click()
        await expect(dialog.get_by_text(re.compile("only http:// and https://"))).to_be_visible()
        await dialog.get_by_label(re.compile("^URL")).fill(url)
        await dialog.get_by_role("checkbox", name=re.compile("Compute instance succeeded")).check()
        await dialog.get_by_role("button", name="Add Webhook").click()
        secret_box = dialog.get_by_test_id("webhook-secret")
        await expect(secret_box).to_be_visible()
        secret = (await secret_box.inner_text()).strip()
        assert secret.startswith("whsec_")
        await screenshot(page, "webhook-secret")
        await dialog.get_by_role("button", name="Done").click()
        await expect(page.get_by_test_id("webhook-secret")).to_have_count(0)
        await expect(page.get_by_role("dialog")).to_have_count(0)
        row = page.locator('[data-testid^="webhook-"]').filter(has_text=url)
        await expect(row).to_be_visible()
        await expect(row.get_by_text("Compute instance succeeded")).to_be_visible()
        await screenshot(page, "webhooks")

        # a test event reaches the receiver, signed with the secret the page showed
        await row.get_by_role("button", name=f"Send a test event to {url}").click()
        test = await _received(receiver, "TEST")
        now = int(time.time())
        assert signing.verify(
            secret,
            test.headers["x-gpupaas-timestamp"],
            test.body,
            test.headers["x-gpupaas-signature"],
            now=now,
        )

        # its delivery log shows it delivered, with the attempt
        await row.get_by_role("link", name=f"Delivery log of {url}").click()
        await expect(page.get_by_text("Delivery log (1)")).to_be_visible()
        delivery = page.locator('[data-testid^="delivery-"]').first
        await expect(delivery.get_by_text("Delivered")).to_be_visible(timeout=WAIT)
        await delivery.get_by_role("button").first.click()
        await expect(delivery.get_by_text("HTTP 200")).to_be_visible()
        await expect(delivery.get_by_text("ok", exact=True)).to_be_visible()
        await screenshot(page, "webhook-delivery-log")

        # a new secret, shown once, replaces the old one
        await page.get_by_role("button", name="New secret").click()
        await page.get_by_role("dialog").get_by_role("button", name="Make a new secret").click()
        rotated = page.get_by_test_id("webhook-secret")
        await expect(rotated).to_be_visible()
        old_secret, secret = secret, (await rotated.inner_text()).strip()
        assert secret.startswith("whsec_") and secret != old_secret
        await page.get_by_role("button", name="Done").click()
        await expect(page.get_by_role("dialog")).to_have_count(0)

        # a deploy that succeeds is announced, signed with the new secret
        instance = await make_instance(project, profile, "gpu-box", deploy=True)
        await wait_status(instance.id, DeploymentStatus.SUCCESS, timeout=20)
        success = await _received(receiver, "COMPUTE_INSTANCE_SUCCESS")
        body = json.loads(success.body)
        assert body["data"]["name"] == "gpu-box" and body["project"]["name"] == "ml"
        assert signing.verify(
            secret,
            success.headers["x-gpupaas-timestamp"],
            success.body,
            success.headers["x-gpupaas-signature"],
            now=int(time.time()),
        )
        assert not signing.verify(
            old_secret,
            success.headers["x-gpupaas-timestamp"],
            success.body,
            success.headers["x-gpupaas-signature"],
            now=int(time.time()),
        )
        await page.get_by_role("button", name="Refresh").click()
        await expect(page.get_by_text("Delivery log (2)")).to_be_visible(timeout=WAIT)

        # switched off, then deleted
        await page.get_by_role("switch", name="Enabled").click()
        await expect(page.get_by_role("switch", name="Enabled")).not_to_be_checked()
        await page.get_by_role("button", name="Delete").click()
        await page.get_by_role("dialog").get_by_role("button", name="Delete").click()
        await page.get_by_role("heading", name="Webhooks", exact=True).wait_for()
        await expect(page.get_by_text("No webhooks yet")).to_be_visible()
        assert watched.dialogs == [] and watched.csp_violations == []
