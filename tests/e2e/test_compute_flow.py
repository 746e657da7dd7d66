"""The compute flow in a real browser: a project admin writes an environment template and publishes
a compute profile through the studio, a member of another project launches it from the catalog and
follows the instance live through deploy, redeploy, destroy and delete; the studio on a phone-sized
screen; and the banner shown while the live-status websocket is lost."""

from __future__ import annotations

import asyncio
import base64
import re
from typing import Any

from playwright.async_api import WebSocketRoute, expect

from gpupaas.catalog.models import ComputeProfile
from gpupaas.compute import service as compute
from gpupaas.core.actor import Role
from tests.e2e.conftest import Watched, new_page, screenshot, sign_in
from tests.factories import make_instance, make_profile, make_project, make_user, platform_actor

TIMEOUT = 20_000

TEMPLATE_YAML = """\
apiVersion: v1
kind: Namespace
metadata:
  name: "{{ instance.namespace }}"
  labels:
    team: "{{ inputs.team }}"
---
apiVersion: v1
kind: ResourceQuota
metadata:
  name: quota
  namespace: "{{ instance.namespace }}"
spec:
  hard:
    requests.cpu: "{{ resources.cpu }}"
    requests.memory: "{{ resources.memory }}"
    requests.nvidia.com/gpu: "{{ resources.gpuCount }}"
"""

ICON_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="64" height="64" viewBox="0 0 64 64">'
    '<rect width="64" height="64" rx="12" fill="#2f9e44"/>'
    '<text x="32" y="42" font-size="26" text-anchor="middle" fill="#fff">GPU</text></svg>'
)
ICON_URL = "data:image/svg+xml;base64," + base64.b64encode(ICON_SVG.encode()).decode()

README = """\
# Getting started

This SKU gives you **one NVIDIA GPU** in a namespace of your own.

- CPU: 4 cores
- Memory: 16Gi
"""

# Records every status the instance page's badge shows, in order (a MutationObserver, so statuses that
# last only a moment are caught too).
WATCH_STATUSES = """() => {
  window.__seen = [];
  const note = () => {
    const badge = document.querySelector('[data-testid="instance-status"] [data-status]');
    const status = badge && badge.getAttribute("data-status");
    if (status && window.__seen[window.__seen.length - 1] !== status) window.__seen.push(status);
  };
  note();
  new MutationObserver(note).observe(document.body, {subtree: true, childList: true, attributes: true});
}"""


def assert_clean(watched: Watched) -> None:
    assert watched.dialogs == []
    assert watched.errors == []


async def choose(page: Any, combobox: str | re.Pattern[str], option: str | re.Pattern[str]) -> None:
    """Picks an option of a Mantine Select (the listbox shares the label: go through the combobox)."""
    await page.get_by_role("combobox", name=combobox).click()
    await page.get_by_role("option", name=option).click()


async def status_is(page: Any, status: str) -> None:
    badge = page.get_by_test_id("instance-status").locator("[data-status]")
    await expect(badge).to_have_attribute("data-status", status, timeout=TIMEOUT)


async def admin_publishes_profile(page: Any, studio: str) -> None:
    """As "admin" (ml-platform): a template and its version, a profile through the wizard, shared."""
    await sign_in(page, studio, "admin")
    if not page.url.endswith("/p/ml-platform/dashboard"):
        await choose(page, "Project", "ml-platform")
        await page.wait_for_url(re.compile(r".*/p/ml-platform/dashboard$"))
    nav = page.get_by_role("navigation", name="Main")

    # Studio > Environment Templates: the template, then its first version.
    await nav.get_by_role("link", name="Environment Templates").click()
    await page.get_by_role("heading", name="Environment Templates", level=2).wait_for()
    await page.get_by_role("button", name="Add Environment Template").first.click()
    dialog = page.get_by_role("dialog", name="Add Environment Template")
    await dialog.get_by_role("textbox", name=re.compile(r"^Unique Name")).fill("team-namespace")
    await dialog.get_by_role("textbox", name="Display Name").fill("Team Namespace")
    await dialog.get_by_role("textbox", name="Description").fill("A namespace with a GPU quota.")
    await dialog.get_by_role("button", name="Add Environment Template").click()
    await page.wait_for_url(re.compile(r".*/studio/templates/[^/]+$"))
    await page.get_by_role("heading", name="Team Namespace", exact=True).wait_for()
    await page.get_by_role("link", name="Add Version").first.click()
    await page.wait_for_url(re.compile(r".*/studio/templates/[^/]+/versions/new$"))
    await page.get_by_role("textbox", name=re.compile(r"^Version")).fill("1.0.0")
    await choose(page, re.compile(r"^State"), "Active")
    await page.get_by_role("textbox", name="Resources (YAML)").fill(TEMPLATE_YAML)
    await page.get_by_role("button", name="Add input").click()
    await page.get_by_role("textbox", name="Input 1 name").fill("team")
    await expect(page.get_by_role("combobox", name="Input 1 type")).to_have_value("String")
    await page.get_by_role("textbox", name="Input 1 default").fill("ml")
    await page.get_by_role("textbox", name="Input 1 description").fill("The team that owns the namespace.")
    await page.get_by_role("button", name="Add output").click()
    await page.get_by_role("textbox", name="Output 1 name").fill("namespace")
    await page.get_by_role("textbox", name="Output 1 value").fill("{{ instance.namespace }}")
    await screenshot(page, "template-version-form")
    await page.get_by_role("button", name="Add Version").click()
    await page.wait_for_url(re.compile(r".*/studio/templates/[^/]+$"))
    # The page the app lands on lists the first version (a stale cached "No versions yet" once).
    await expect(page.locator('[data-state="ACTIVE"]')).to_have_count(1)
    await screenshot(page, "template-detail")
    await nav.get_by_role("link", name="Environment Templates").click()
    row = page.get_by_role("row").filter(has_text="team-namespace")
    await expect(row.locator('[data-state="ACTIVE"]')).to_have_text("1.0.0 · Active")
    await screenshot(page, "templates-list")

    # Studio > Compute Profiles > Add Compute Profile: the four steps of the wizard.
    await nav.get_by_role("link", name="Compute Profiles").click()
    await page.get_by_role("heading", name="No compute profiles yet").wait_for()
    await page.get_by_role("link", name="Add Compute Profile").first.click()
    await page.wait_for_url(re.compile(r".*/studio/profiles/new$"))
    await page.get_by_role("textbox", name=re.compile(r"^Unique Name")).fill("gpu-small")
    await page.get_by_role("textbox", name=re.compile(r"^Display Name")).fill("Small GPU")
    await page.get_by_role("textbox", name="Description").fill("One NVIDIA GPU for experiments.")
    await choose(page, re.compile(r"^Allocation Type"), "Dedicated")
    await choose(page, re.compile(r"^Environment Template( \*)?$"), "Team Namespace (team-namespace)")
    # The template's active version is chosen for you.
    await expect(
        page.get_by_role("combobox", name=re.compile(r"^Environment Template Version"))
    ).to_have_value("1.0.0 (Active)")
    await page.get_by_role("textbox", name=re.compile(r"^CPU")).fill("4")
    await page.get_by_role("textbox", name=re.compile(r"^Memory")).fill("16Gi")
    await page.get_by_role("textbox", name=re.compile(r"^Storage")).fill("100Gi")
    await page.get_by_role("textbox", name=re.compile(r"^GPU Count")).fill("1")
    await expect(page.get_by_role("combobox", name=re.compile(r"^GPU Vendor"))).to_have_value("NVIDIA")
    await screenshot(page, "profile-wizard-general")
    await page.get_by_role("button", name="Next").click()

    icon = page.get_by_role("textbox", name="Icon URL")
    await icon.fill(ICON_URL)
    preview_icon = page.get_by_role("img", name="Small GPU icon")
    await expect(preview_icon).to_be_visible()
    await page.wait_for_function(
        "() => { const i = document.querySelector('img[alt=\"Small GPU icon\"]');"
        " return i && i.complete && i.naturalWidth > 0; }"
    )
    await page.get_by_role("textbox", name="Readme").fill(README)
    preview = page.get_by_test_id("readme-preview")
    await expect(preview.get_by_role("heading", name="Getting started", level=1)).to_be_visible(
        timeout=TIMEOUT
    )
    await expect(preview.locator("strong")).to_have_text("one NVIDIA GPU")
    await expect(page.get_by_text("The image could not be loaded")).to_have_count(0)
    await screenshot(page, "profile-wizard-end-user-configuration")
    await page.get_by_role("button", name="Next").click()

    await page.get_by_test_id("input-setting-team").wait_for()
    await choose(page, "Override policy of team", "Allowed: users may change the value")
    await expect(page.get_by_role("combobox", name="Override policy of team")).to_have_value(
        "Allowed: users may change the value"
    )
    await screenshot(page, "profile-wizard-input-settings")
    await page.get_by_role("button", name="Next").click()

    await expect(page.get_by_role("switch", name="Show namespace to users")).to_be_checked()
    await screenshot(page, "profile-wizard-output-settings")
    await page.get_by_role("button", name="Add Compute Profile").click()
    await page.wait_for_url(re.compile(r".*/studio/profiles/(?!new)[^/]+$"))
    await page.get_by_role("heading", name="Small GPU", level=2).wait_for()
    await expect(page.get_by_role("heading", name="Getting started")).to_be_visible()
    await screenshot(page, "profile-detail")

    # Manage Sharing: the "research" project.
    await page.get_by_role("button", name="Manage Sharing").first.click()
    dialog = page.get_by_role("dialog", name="Manage Sharing")
    await dialog.get_by_role("radio", name="Selected Projects").check()
    projects = dialog.get_by_role("combobox", name=re.compile(r"^Projects"))
    await projects.click()
    await dialog.get_by_role("option", name="research").click()
    await projects.press("Escape")  # closes the dropdown (it stays open to pick more), not the dialog
    await expect(dialog.get_by_role("option", name="research")).to_have_count(0)
    await dialog.get_by_role("button", name="Save").click()
    await expect(dialog).to_have_count(0)
    # The list was empty when last seen: it shows the new profile (it once stayed empty, from the cache).
    await nav.get_by_role("link", name="Compute Profiles").click()
    row = page.get_by_role("row").filter(has_text="gpu-small")
    await expect(row).to_contain_text("research")
    await screenshot(page, "profiles-list")

    # Sign out through the account menu.
    await page.get_by_role("button", name="Account").click()
    await page.get_by_role("menuitem", name="Sign out").click()
    await page.wait_for_url(re.compile(r".*/login$"))


async def test_admin_publishes_a_profile_and_a_member_launches_it(
    db: object, studio: str, browser: Any
) -> None:
    await make_user("admin")
    await make_user("bob")
    carol = await make_user("carol")  # another member of "research"
    await make_project("ml-platform", admin=Role.ADMIN)
    # Sharing names projects the caller can see (core/sharing.targets): a project admin shares with the
    # projects they belong to, so the admin is also a member of "research".
    research = await make_project("research", bob=Role.MEMBER, admin=Role.MEMBER, carol=Role.MEMBER)
    watched = Watched()
    page = await new_page(browser, watched)
    await admin_publishes_profile(page, studio)

    # As bob (research): the SKU in the catalog, its readme, then Launch and Deploy.
    await sign_in(page, studio, "bob")
    await page.wait_for_url(re.compile(r".*/p/research/dashboard$"))
    await page.evaluate("window.__marker = 1")  # gone if the page reloads from here on
    nav = page.get_by_role("navigation", name="Main")
    await nav.get_by_role("link", name="Catalog").click()
    card = page.get_by_role("article", name="Small GPU")
    await expect(card).to_be_visible()
    await expect(card).to_contain_text("Shared by ml-platform")
    await expect(card.locator("img")).to_have_attribute("src", ICON_URL)
    await page.wait_for_function(
        "() => [...document.querySelectorAll('article img')].some(i => i.complete && i.naturalWidth > 0)"
    )
    await expect(card.get_by_test_id("sku-icon-fallback")).to_have_count(0)
    await screenshot(page, "catalog")
    await card.get_by_role("link", name="Details of Small GPU").click()
    readme = page.get_by_test_id("sku-readme")
    await expect(readme.get_by_role("heading", name="Getting started", level=1)).to_be_visible()
    await expect(readme.locator("strong")).to_have_text("one NVIDIA GPU")
    await expect(readme).not_to_contain_text("**")
    await screenshot(page, "sku")
    await page.get_by_role("link", name="Launch").click()
    await page.wait_for_url(re.compile(r".*/catalog/[^/]+/launch$"))
    await page.get_by_role("textbox", name=re.compile(r"^Name")).fill("bobs-gpu")
    await page.get_by_role("textbox", name="team").fill("vision")
    await screenshot(page, "launch-form")
    await page.get_by_role("button", name="Deploy").click()
    await page.wait_for_url(re.compile(r".*/p/research/instances/[^/]+$"))
    await page.get_by_test_id("instance-status").wait_for()
    await page.evaluate(WATCH_STATUSES)
    await status_is(page, "SUCCESS")
    seen = await page.evaluate("window.__seen")
    # The worker's phases take 0.2 s: the page usually shows "In Progress" on the way; not always.
    assert seen[-1] == "SUCCESS", seen
    assert set(seen) <= {"WAITING", "IN_PROGRESS", "SUCCESS"}, seen
    outputs = page.get_by_role("table", name="Outputs")
    await expect(outputs.get_by_role("row", name=re.compile(r"^namespace"))).to_contain_text(
        re.compile(r"research-bobs-gpu-[0-9a-f]{8}")
    )
    await expect(page.get_by_role("table", name="Inputs")).to_contain_text("vision")
    await screenshot(page, "instance-overview")
    assert await page.evaluate("window.__marker") == 1

    # Edit Configuration: a label, saved; then Deploy from the overview, live to Success again.
    await page.get_by_role("link", name="Edit Configuration").click()
    await page.wait_for_url(re.compile(r".*/instances/[^/]+/edit$"))
    await page.get_by_role("button", name="Add label").click()
    await page.get_by_role("textbox", name="Labels 1 key").fill("stage")
    await page.get_by_role("textbox", name="Labels 1 value").fill("test")
    await page.get_by_role("button", name="Save Changes").click()
    await page.wait_for_url(re.compile(r".*/p/research/instances/[^/]+$"))
    await expect(page.get_by_role("table", name="Labels")).to_contain_text("stage")
    await page.evaluate(WATCH_STATUSES)
    await page.get_by_role("button", name="Deploy").click()
    runs = page.get_by_role("table", name="Runs").locator("tbody tr")
    deploys = runs.filter(has_text="Deploy")
    await expect(deploys).to_have_count(2, timeout=TIMEOUT)
    await expect(deploys.locator('[data-status="SUCCEEDED"]')).to_have_count(2, timeout=TIMEOUT)
    await status_is(page, "SUCCESS")
    seen = await page.evaluate("window.__seen")
    assert seen[-1] == "SUCCESS" and {"WAITING", "IN_PROGRESS"} & set(seen), seen
    assert await page.evaluate("window.__marker") == 1

    # The instances list and the dashboard, then back to the instance. Carol's instance is listed
    # with its owner, with nothing bob may do to it; "Mine" leaves it out.
    profile = await ComputeProfile.get(name="gpu-small")
    await make_instance(research, profile, name="carols-gpu", by=carol)
    await nav.get_by_role("link", name="Compute Instances").click()
    await expect(page.get_by_test_id("instance-row-bobs-gpu")).to_contain_text("Success")
    await expect(page.get_by_test_id("instance-row-bobs-gpu")).to_contain_text("bob (you)")
    carols = page.get_by_test_id("instance-row-carols-gpu")
    await expect(carols).to_contain_text("carol")
    await screenshot(page, "instances-list")
    await carols.get_by_role("button", name=re.compile(r"^Actions for")).click()
    refused = 'Only the owner or a project admin may deploy compute instance "carols-gpu".'
    await expect(page.get_by_role("menuitem", name=re.compile(r"^Deploy"))).to_be_disabled()
    await expect(page.get_by_role("menuitem", name=re.compile(r"^Deploy"))).to_contain_text(refused)
    await page.keyboard.press("Escape")
    show = page.get_by_role("radiogroup", name="Show compute instances")
    await show.locator("label", has_text="Mine").click()  # Mantine hides the radio under its label
    await expect(carols).to_have_count(0)
    await expect(page.get_by_test_id("instance-row-bobs-gpu")).to_be_visible()
    await show.locator("label", has_text="All").click()
    await expect(carols).to_be_visible()
    await nav.get_by_role("link", name="Dashboard").click()
    await page.get_by_role("heading", name="Compute instances", exact=True).wait_for()
    await screenshot(page, "dashboard")
    await nav.get_by_role("link", name="Compute Instances").click()
    await page.get_by_test_id("instance-row-bobs-gpu").get_by_role("link", name="bobs-gpu").click()
    await status_is(page, "SUCCESS")

    # Destroy (confirmed): Not Deployed, live.
    await page.get_by_role("button", name="Destroy").click()
    await (
        page.get_by_role("dialog", name="Destroy compute instance")
        .get_by_role("button", name="Destroy")
        .click()
    )
    await status_is(page, "NOT_DEPLOYED")
    await expect(page.get_by_role("table", name="Runs").locator("tbody tr")).to_have_count(3)

    # Delete (confirmed): back on the list, without it.
    await page.get_by_role("button", name="Delete").click()
    await (
        page.get_by_role("dialog", name="Delete compute instance")
        .get_by_role("button", name="Delete")
        .click()
    )
    await page.wait_for_url(re.compile(r".*/p/research/instances$"))
    await page.get_by_role("heading", name="Compute Instances", exact=True).wait_for()
    await expect(page.get_by_test_id("instance-row-bobs-gpu")).to_have_count(0)
    assert await page.evaluate("window.__marker") == 1
    assert_clean(watched)


async def test_the_studio_works_on_a_phone_sized_screen(db: object, studio: str, browser: Any) -> None:
    await make_user("carol")
    project = await make_project("ml", carol=Role.ADMIN)
    profile = await make_profile(
        project, name="gpu-large", display_name="Large GPU with a long display name", description="x " * 80
    )
    await make_instance(project, profile, "carols-instance-with-a-long-name")
    watched = Watched()
    page = await new_page(browser, watched, width=390, height=844)
    await sign_in(page, studio, "carol")
    nav = page.get_by_role("navigation", name="Main")

    async def open_from_menu(link: str, heading: str) -> None:
        await page.get_by_role("button", name="Menu").click()
        await nav.get_by_role("link", name=link).click()
        await page.get_by_role("heading", name=heading, level=2).wait_for()
        await expect(nav.get_by_role("link", name=link)).not_to_be_in_viewport()  # the menu closed

    async def fits() -> None:
        widths = await page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        assert widths[0] <= widths[1] + 1, widths

    await open_from_menu("Catalog", "Catalog")
    await expect(page.get_by_role("article", name="Large GPU with a long display name")).to_be_visible()
    await fits()
    await screenshot(page, "phone-catalog")
    await open_from_menu("Compute Instances", "Compute Instances")
    await page.get_by_test_id("instance-row-carols-instance-with-a-long-name").wait_for()
    await fits()
    await screenshot(page, "phone-instances")
    assert_clean(watched)


async def test_the_lost_connection_banner_comes_and_goes(db: object, studio: str, browser: Any) -> None:
    await make_user("dana")
    project = await make_project("ml", dana=Role.MEMBER)
    profile = await make_profile(project)
    instance = await make_instance(project, profile, "steady")
    watched = Watched()
    page = await new_page(browser, watched)

    # Chromium's offline emulation (context.set_offline) leaves an open websocket alone (no close in
    # 8 s, measured), and graphql-ws pings only every 15 s: the test cuts the live-status socket itself.
    # Every /graphql websocket goes through this route: online it is passed to the server; offline it
    # is held open without an answer (like a network that swallows packets), until back online.
    online = True
    acked = asyncio.Event()  # the server acknowledged a connection the route passed on
    closed_by_page = asyncio.Event()  # the page closed a socket itself
    routes: list[tuple[WebSocketRoute, WebSocketRoute | None]] = []

    def route(ws: WebSocketRoute) -> None:
        if not online:
            routes.append((ws, None))
            return
        server = ws.connect_to_server()

        def to_page(message: str | bytes) -> None:
            if isinstance(message, str) and '"connection_ack"' in message:
                acked.set()
            ws.send(message)

        async def page_closed(code: int | None, reason: str | None) -> None:
            closed_by_page.set()
            await server.close(code=code, reason=reason)

        server.on_message(to_page)
        ws.on_close(page_closed)
        routes.append((ws, server))

    async def cut() -> None:
        for ws, server in list(routes):
            routes.remove((ws, server))
            # 1001 (going away): graphql-ws reconnects; the page side sees the close at once.
            await ws.close(code=1001, reason="test: network lost")
            if server is not None:
                await server.close(code=1001, reason="test: network lost")

    await page.route_web_socket(re.compile(r"/graphql$"), route)
    await sign_in(page, studio, "dana")
    await page.goto(f"{studio}/p/ml/instances/{instance.id}")
    await status_is(page, "NOT_DEPLOYED")
    await asyncio.wait_for(acked.wait(), TIMEOUT / 1000)
    await page.evaluate("window.__marker = 1")
    banner = page.get_by_test_id("connection-lost")
    await expect(banner).to_have_count(0)

    online = False
    await cut()
    await expect(banner).to_be_visible(timeout=TIMEOUT)
    await expect(banner).to_contain_text("Live updates are disconnected")
    await screenshot(page, "connection-lost")
    # Retries while offline are held: the banner stays.
    await expect(banner).to_be_visible()

    online = True
    await cut()  # the held attempts fail; the next one reaches the server
    acked.clear()
    await expect(banner).to_have_count(0, timeout=TIMEOUT)
    await asyncio.wait_for(acked.wait(), TIMEOUT / 1000)

    # A change made elsewhere (the API, as another user) still arrives live on the page.
    await compute.deploy(await platform_actor(), str(instance.id))
    await status_is(page, "SUCCESS")
    assert await page.evaluate("window.__marker") == 1

    # On a page without live updates the client closes the idle socket itself (graphql-ws is lazy):
    # no banner for that.
    closed_by_page.clear()
    await page.get_by_role("navigation", name="Main").get_by_role("link", name="Catalog").click()
    await page.get_by_role("heading", name="Catalog", level=2).wait_for()
    await asyncio.wait_for(closed_by_page.wait(), TIMEOUT / 1000)
    await page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
    await expect(banner).to_have_count(0)
    assert await page.evaluate("window.__marker") == 1
    assert_clean(watched)
