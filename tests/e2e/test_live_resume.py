"""Live status resumes in a real browser: the dashboard and an instance page lose their websocket
while an instance deploys; once it is back, both show the new status without a reload, and what
happened meanwhile comes replayed (the page subscribed again with `after:` its last cursor)."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from playwright.async_api import WebSocketRoute, expect

from gpupaas.compute import service as compute
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from tests.e2e.conftest import Watched, new_page, screenshot, sign_in
from tests.factories import make_instance, make_profile, make_project, make_user, platform_actor
from tests.workers.conftest import wait_status

TIMEOUT = 20_000


class Cuttable:
    """Every /graphql websocket of a browser context goes through this route: online it is passed
    to the server (and what the page sends is recorded); offline it is held open without an
    answer, like a network that swallows packets."""

    def __init__(self) -> None:
        self.online = True
        self.routes: list[tuple[WebSocketRoute, WebSocketRoute | None]] = []
        self.subscribes: list[dict[str, Any]] = []
        self.acks = 0
        self.events = 0  # status events the server sent to the pages

    def route(self, ws: WebSocketRoute) -> None:
        if not self.online:
            self.routes.append((ws, None))
            return
        server = ws.connect_to_server()

        def to_server(message: str | bytes) -> None:
            if isinstance(message, str):
                sent = json.loads(message)
                if sent.get("type") == "subscribe":
                    self.subscribes.append(sent["payload"])
            server.send(message)

        def to_page(message: str | bytes) -> None:
            if isinstance(message, str):
                kind = json.loads(message).get("type")
                self.acks += kind == "connection_ack"
                self.events += kind == "next"
            ws.send(message)

        async def page_closed(code: int | None, reason: str | None) -> None:
            await server.close(code=code, reason=reason)

        ws.on_message(to_server)
        server.on_message(to_page)
        ws.on_close(page_closed)
        self.routes.append((ws, server))

    async def cut(self) -> None:
        for ws, server in list(self.routes):
            self.routes.remove((ws, server))
            # 1001 (going away): graphql-ws reconnects
            await ws.close(code=1001, reason="test: network lost")
            if server is not None:
                await server.close(code=1001, reason="test: network lost")


async def until(check: Any, what: str) -> None:
    for _ in range(TIMEOUT // 50):
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def titles(page: Any) -> Any:
    return page.get_by_role("region", name="Status updates").locator(".mantine-Timeline-itemTitle")


async def test_dashboard_and_instance_page_show_what_changed_while_the_socket_was_cut(
    db: object, studio: str, browser: Any
) -> None:
    await make_user("dana")
    project = await make_project("ml", dana=Role.MEMBER)
    instance = await make_instance(project, await make_profile(project), "steady")
    watched = Watched()
    dashboard = await new_page(browser, watched)
    network = Cuttable()
    await dashboard.context.route_web_socket(re.compile(r"/graphql$"), network.route)
    await sign_in(dashboard, studio, "dana")
    detail = await dashboard.context.new_page()
    detail.on("console", watched.on_console)
    detail.on("pageerror", lambda e: watched.errors.append(str(e)))
    await detail.goto(f"{studio}/p/ml/instances/{instance.id}")
    await expect(detail.get_by_test_id("instance-status").locator("[data-status]")).to_have_attribute(
        "data-status", "NOT_DEPLOYED"
    )
    row = dashboard.get_by_test_id("recent-steady")
    await expect(row).to_contain_text("Not Deployed")
    # each page has its snapshot (and so a cursor): the instance page's timeline starts with it
    await until(lambda: network.acks >= 2 and network.events >= 2, "both pages' snapshots")
    await expect(titles(detail)).to_have_text(["Not Deployed"])
    for page in (dashboard, detail):
        await page.evaluate("window.__marker = 1")
    first = len(network.subscribes)

    # the network goes; meanwhile the instance deploys and succeeds
    network.online = False
    await network.cut()
    for page in (dashboard, detail):
        await expect(page.get_by_test_id("connection-lost")).to_be_visible(timeout=TIMEOUT)
    await compute.deploy(await platform_actor(), str(instance.id))
    await wait_status(instance.id, DeploymentStatus.SUCCESS)
    await expect(row).to_contain_text("Not Deployed")  # nothing reached the pages

    # it comes back: the held attempts fail, the next ones reach the server
    network.online = True
    await network.cut()
    for page in (dashboard, detail):
        await expect(page.get_by_test_id("connection-lost")).to_have_count(0, timeout=TIMEOUT)

    # both pages show the new status, without a reload
    await expect(detail.get_by_test_id("instance-status").locator("[data-status]")).to_have_attribute(
        "data-status", "SUCCESS", timeout=TIMEOUT
    )
    await expect(row).to_contain_text("Success", timeout=TIMEOUT)
    await expect(dashboard.get_by_test_id("count-SUCCESS")).to_contain_text("1")
    await expect(dashboard.get_by_test_id("count-NOT_DEPLOYED")).to_contain_text("0")
    # and what happened meanwhile, in order: replayed from the cursor each page had, not a snapshot
    await expect(titles(detail)).to_have_text(["Not Deployed", "Waiting", "In Progress", "Success"])
    feed = dashboard.get_by_role("region", name="Recent changes").get_by_role("listitem")
    await expect(feed).to_have_count(3)  # newest first: the snapshot the page opened with is no change
    for item, status in zip(await feed.all(), ("Success", "In Progress", "Waiting"), strict=True):
        await expect(item).to_contain_text(status)
    again = network.subscribes[first:]
    assert len(again) >= 2, again
    assert all(payload["variables"].get("after", "").isdigit() for payload in again), again
    assert {next(iter(re.findall(r"(computeInstance\w+)\(", p["query"])), "") for p in again} == {
        "computeInstanceEvents",
        "computeInstanceStatus",
    }
    await screenshot(detail, "instance-after-reconnect")
    for page in (dashboard, detail):
        assert await page.evaluate("window.__marker") == 1
    assert watched.dialogs == []
    # the lost socket itself is the only error the console may show
    assert [e for e in watched.errors if "WebSocket" not in e] == []
