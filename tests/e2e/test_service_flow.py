"""Instance templates and service instances in a real browser: the built-in templates, a template
made with every field, a JupyterLab service launched into a deployed compute instance whose Connect
link signs in at the simulated endpoint, stopped, started and deleted; and a compute profile whose
readme is a corpus of XSS payloads, shown as text and running nothing."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

from playwright.async_api import expect

from gpupaas.catalog.readme import ALLOWED_TAGS, MAX_README_LENGTH, readme_problem
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from tests.catalog.test_readme import XSS_PAYLOADS
from tests.conftest import GraphQLClient
from tests.e2e.conftest import Watched, new_page, screenshot, sign_in
from tests.factories import make_instance, make_profile, make_project, make_user
from tests.workers.conftest import wait_status

WAIT = 20_000  # ms: the longest any outcome may take to show
JUPYTER = "JupyterLab (PyTorch, NVIDIA)"
CONNECT = re.compile(r"^http://127\.0\.0\.1:(\d+)/\?token=([0-9a-f]{32})$")


def _cards(page: Any) -> Any:
    return page.locator('[data-testid^="template-"]')


async def _choose(page: Any, combobox: str | re.Pattern[str], option: str) -> None:
    """A Mantine Select: open it by its combobox, pick the option."""
    await page.get_by_role("combobox", name=combobox).click()
    await page.get_by_role("option", name=option, exact=True).click()


async def _port_open(port: int, timeout: float = 10.0) -> None:
    """The simulated endpoints look again within a second of a commit: wait until the node port answers."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            if time.monotonic() > deadline:
                raise AssertionError(f"nothing answers at 127.0.0.1:{port} after {timeout}s") from None
            await asyncio.sleep(0.05)
            continue
        writer.close()
        await writer.wait_closed()
        return


async def test_instance_template_and_connect(db: object, studio: str, browser: Any) -> None:
    await make_user("alice")
    project = await make_project("ml", alice=Role.ADMIN)
    profile = await make_profile(project)  # 1 NVIDIA GPU
    # `studio` (a fixture) runs the worker that deploys it.
    instance = await make_instance(project, profile, "gpu-box", display_name="GPU box", deploy=True)
    await wait_status(instance.id, DeploymentStatus.SUCCESS, timeout=20)

    watched = Watched()
    page = await new_page(browser, watched)
    await sign_in(page, studio, "alice")
    nav = page.get_by_role("navigation", name="Main")

    # The built-in templates (seeded at start-up) as cards.
    await nav.get_by_role("link", name="Instance Templates").click()
    await page.get_by_role("heading", name="Instance Templates", exact=True).wait_for()
    builtins = (
        "jupyterlab-pytorch",
        "pytorch",
        "pytorch-rocm",
        "vllm-openai",
        "ubuntu",
        "cann-910b",
        "cann-310p",
    )
    for name in builtins:
        card = page.get_by_test_id(f"template-{name}")
        await expect(card).to_be_visible()
        await expect(card.get_by_text("Built-in", exact=True)).to_be_visible()
    await expect(_cards(page)).to_have_count(len(builtins))
    await screenshot(page, "instance-templates")

    # Filters: the vendor, then a search.
    vendors = page.locator('[aria-labelledby="vendor-filter-label"]')
    await vendors.get_by_text("AMD", exact=True).click()
    await page.wait_for_url(re.compile(r"[?&]vendor=AMD"))
    await expect(_cards(page)).to_have_count(1)
    await expect(page.get_by_test_id("template-pytorch-rocm")).to_be_visible()
    await vendors.get_by_text("All", exact=True).click()
    await expect(_cards(page)).to_have_count(len(builtins))
    await page.get_by_label("Search").fill("jupyter")
    await expect(_cards(page)).to_have_count(1)
    await expect(page.get_by_test_id("template-jupyterlab-pytorch")).to_contain_text(JUPYTER)
    await page.get_by_label("Search").fill("")
    await expect(_cards(page)).to_have_count(len(builtins))

    # A template of our own, every field filled.
    await page.get_by_role("link", name="Add Instance Template").first.click()
    await page.wait_for_url(re.compile(r".*/studio/instance-templates/new$"))
    await page.get_by_label(re.compile(r"^Name")).fill("e2e-lab")
    await page.get_by_label(re.compile(r"^Display name")).fill("E2E Lab")
    await page.get_by_label("Description", exact=True).fill("A JupyterLab made by the browser test.")
    await _choose(page, re.compile(r"^Vendor"), "NVIDIA")
    await page.get_by_role("textbox", name=re.compile(r"^Image")).fill("quay.io/jupyter/base-notebook:latest")
    await _choose(page, "Image pull policy", "Always")
    await page.get_by_label(re.compile(r"^Container disk")).fill("20Gi")
    await page.get_by_label(re.compile(r"^Mount path")).fill("/data")
    for index, argument in enumerate(["jupyter", "lab", "--ServerApp.token="], start=1):
        await page.get_by_role("button", name="Add argument").click()
        await page.get_by_label(f"Start command argument {index}", exact=True).fill(argument)
    # The caret is at the end of argument 3, which has the focus: the button inserts there.
    await page.get_by_role("button", name="Insert {{generated_token}} into the start command").click()
    await expect(page.get_by_label("Start command argument 3", exact=True)).to_have_value(
        "--ServerApp.token={{generated_token}}"
    )
    await page.get_by_role("button", name="Add port", exact=True).click()
    await page.get_by_label("Port 1 name", exact=True).fill("web")
    await page.get_by_label("Port 1 number", exact=True).fill("8080")
    await page.get_by_role("button", name="Add port 1 access param").click()
    await page.get_by_label("Port 1 access params 1 key", exact=True).fill("token")
    await page.get_by_label("Port 1 access params 1 value", exact=True).click()
    await page.get_by_role("button", name="Insert {{generated_token}} into port 1 access params").click()
    await expect(page.get_by_label("Port 1 access params 1 value", exact=True)).to_have_value(
        "{{generated_token}}"
    )
    await page.get_by_role("button", name="Add environment variable").click()
    await page.get_by_label("Environment variables 1 name", exact=True).fill("JUPYTER_ENABLE_LAB")
    await page.get_by_label("Environment variables 1 value", exact=True).fill("yes")
    await screenshot(page, "instance-template-form")
    await page.get_by_role("button", name="Save", exact=True).click()
    await page.wait_for_url(re.compile(r".*/studio/instance-templates$"))
    card = page.get_by_test_id("template-e2e-lab")
    await expect(card).to_contain_text("E2E Lab")
    await expect(card).to_contain_text("web 8080/TCP")
    await expect(card.get_by_text("Project", exact=True)).to_be_visible()

    # Edit it: what was saved comes back; a new display name is kept.
    await page.get_by_role("link", name="Edit E2E Lab", exact=True).click()
    await page.get_by_role("heading", name="Edit E2E Lab").wait_for()
    await expect(page.get_by_label("Start command argument 3", exact=True)).to_have_value(
        "--ServerApp.token={{generated_token}}"
    )
    await expect(page.get_by_label("Port 1 access params 1 value", exact=True)).to_have_value(
        "{{generated_token}}"
    )
    await expect(page.get_by_label(re.compile(r"^Mount path"))).to_have_value("/data")
    await page.get_by_label(re.compile(r"^Display name")).fill("E2E Lab (edited)")
    await page.get_by_role("button", name="Save Changes").click()
    await page.wait_for_url(re.compile(r".*/studio/instance-templates$"))
    await expect(page.get_by_test_id("template-e2e-lab")).to_contain_text("E2E Lab (edited)")

    # Launch a JupyterLab service into the deployed compute instance.
    await nav.get_by_role("link", name="Service Instances").click()
    await page.get_by_role("link", name="Launch service").first.click()
    await page.wait_for_url(re.compile(r".*/services/new$"))
    await _choose(page, re.compile(r"^Compute instance"), "GPU box")
    await expect(page.get_by_test_id("instance-gpus")).to_contain_text("1 × NVIDIA")
    jupyter = page.get_by_role("radio", name=f"{JUPYTER} (NVIDIA)")
    await jupyter.click()
    await expect(jupyter).to_be_checked()
    await page.get_by_role("textbox", name=re.compile(r"^Name")).fill("lab")
    await screenshot(page, "service-launch-form")
    await page.get_by_role("button", name="Launch", exact=True).click()
    await page.wait_for_url(re.compile(r".*/services/[0-9a-f-]{36}$"))

    # Running, live (the subscription: no reload), with a Connect link that signs in.
    await page.get_by_role("heading", name="lab", exact=True).wait_for()
    await page.locator('[data-status="RUNNING"]').wait_for(timeout=WAIT)
    link = page.get_by_role("link", name="Connect to jupyter (opens in a new tab)")
    href = await link.get_attribute("href", timeout=WAIT)
    match = CONNECT.match(href or "")
    assert match, href
    await screenshot(page, "service-page")
    await _port_open(int(match[1]))
    async with page.context.expect_page() as opened:
        await link.click()
    tab = await opened.value
    await expect(tab.locator("body")).to_contain_text("You are signed in", timeout=WAIT)
    await expect(tab.locator("body")).to_contain_text("Port jupyter of")
    # Without the token the endpoint refuses, as JupyterLab would.
    await tab.goto(href.split("?")[0] if href else "")
    await expect(tab.locator("body")).to_contain_text("Forbidden: wrong or missing token")
    await tab.close()

    # Stop, then start: the same link (the token is kept).
    await page.get_by_role("button", name="Stop lab", exact=True).click()
    await page.locator('[data-status="STOPPED"]').wait_for(timeout=WAIT)
    await page.get_by_role("button", name="Start lab", exact=True).click()
    await page.locator('[data-status="RUNNING"]').wait_for(timeout=WAIT)
    await expect(link).to_have_attribute("href", href or "", timeout=WAIT)

    # The list, then delete it from there (asks first): its row goes away.
    await nav.get_by_role("link", name="Service Instances").click()
    row = page.get_by_test_id("service-lab")
    await expect(row.locator('[data-status="RUNNING"]')).to_be_visible(timeout=WAIT)
    await expect(row.get_by_role("link", name="Connect to jupyter (opens in a new tab)")).to_have_attribute(
        "href", href or ""
    )
    await screenshot(page, "services-list")
    await row.get_by_role("button", name="Delete lab", exact=True).click()
    dialog = page.get_by_role("dialog", name="Delete service instance")
    await dialog.get_by_role("button", name="Delete", exact=True).click()
    await expect(row).to_have_count(0, timeout=WAIT)
    await page.get_by_text("No service instances yet").wait_for(timeout=WAIT)

    assert watched.dialogs == []
    assert watched.errors == []


# --------------------------------------------------------------------------- a readme full of XSS

# Runs before the app: any script a payload manages to run marks itself, alert & co. still open a
# dialog (which Watched records), and every element that can run or load script is noted as inserted.
MARKERS = """
window.__xss = [];
for (const name of ["alert", "confirm", "prompt", "print"]) {
  const original = window[name];
  window[name] = function (...args) {
    window.__xss.push(name + "(" + args.join(",") + ")");
    return original.apply(this, args);
  };
}
window.__inserted = [];
new MutationObserver((records) => {
  // index.html's own scripts are the parser's (while the document is loading): not counted.
  if (document.readyState === "loading") return;
  for (const record of records) {
    for (const node of record.addedNodes) {
      if (node.nodeType !== 1) continue;
      const found = [node, ...node.querySelectorAll("*")].filter((el) =>
        ["SCRIPT", "IFRAME", "FRAME", "OBJECT", "EMBED", "BASE"].includes(el.tagName)
      );
      for (const el of found) window.__inserted.push(el.outerHTML.slice(0, 200));
    }
  }
}).observe(document, { childList: true, subtree: true });
"""

# What the readme container holds: attributes that run script or point at a script URL, its tags.
INSPECT = """
(root) => {
  const bad = [];
  const tags = new Set();
  for (const el of root.querySelectorAll("*")) {
    tags.add(el.tagName.toLowerCase());
    for (const attr of el.attributes) {
      const name = attr.name.toLowerCase();
      const value = attr.value.replace(/[\\u0000-\\u0020]/g, "").toLowerCase();
      if (name.startsWith("on") || name === "style" || name === "srcdoc" || name === "formaction") {
        bad.push(el.tagName + " " + name);
      } else if (["href", "src", "xlink:href", "action", "data", "background", "poster"].includes(name)) {
        if (!/^(https?:|mailto:)/.test(value)) bad.push(el.tagName + " " + name + "=" + attr.value);
      }
    }
  }
  const inputs = [...root.querySelectorAll("input")].map((el) => el.type + (el.disabled ? " disabled" : ""));
  return { bad, tags: [...tags].sort(), inputs, text: root.textContent };
}
"""

# A 1x1 transparent PNG: what the readme's http images (example.com) get, so that nothing leaves
# the machine and no failed load shows as a console error.
PIXEL = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c6360000002"
    "0000050001e226059b0000000049454e44ae426082"
)

UPDATE_ICON = """
mutation($input: UpdateComputeProfileInput!) {
  updateComputeProfile(input: $input) { computeProfile { iconUrl } userErrors { field message } }
}"""


async def _readme_is_inert(page: Any, container: Any) -> str:
    """Checks the readme container; returns its text."""
    await expect(container).to_be_visible()
    found = await container.evaluate(INSPECT)
    assert found["bad"] == [], found["bad"]
    assert set(found["tags"]) <= ALLOWED_TAGS, found["tags"]
    assert "script" not in found["tags"]
    # The only inputs a readme may have: task-list checkboxes, forced disabled.
    assert found["inputs"] == ["checkbox disabled"] * len(found["inputs"]), found["inputs"]
    assert "<script>alert(1)</script>" in found["text"]
    assert "<img src=x onerror=alert(1)>" in found["text"]
    assert "<svg onload=alert(1)>" in found["text"]
    text: str = found["text"]
    return text


async def test_a_readme_full_of_xss_shows_as_text_and_runs_nothing(
    db: object, studio: str, browser: Any, gql: GraphQLClient
) -> None:
    root = await make_user("root", platform_admin=True)
    await make_user("alice")
    project = await make_project("ml", alice=Role.ADMIN)
    # Two payloads carry a NUL, which a readme may not hold at all (refused when stored): the rest.
    payloads = [payload for payload, _ in XSS_PAYLOADS if readme_problem(payload) is None]
    assert len(XSS_PAYLOADS) - len(payloads) <= 2
    readme = "# Readme\n\n" + "\n\n".join(payloads)
    assert len(readme) < MAX_README_LENGTH
    assert readme_problem(readme) is None
    icon = f"{studio}/favicon.svg"
    profile = await make_profile(
        project, name="xss-sku", display_name="XSS SKU", readme=readme, icon_url=icon
    )

    # A javascript: icon URL is refused by the API (the icon stays as it was).
    answer = await gql.data(
        UPDATE_ICON, {"input": {"id": str(profile.id), "iconUrl": "javascript:alert(1)"}}, token=root.token
    )
    payload = answer["updateComputeProfile"]
    assert payload["computeProfile"] is None
    assert [e["field"] for e in payload["userErrors"]] == [["input", "iconUrl"]]
    assert "javascript:" in payload["userErrors"][0]["message"]

    watched = Watched()
    page = await new_page(browser, watched)
    external: list[str] = []

    async def offline(route: Any) -> None:
        external.append(route.request.url)
        await route.fulfill(status=200, content_type="image/png", body=PIXEL)

    await page.context.route(re.compile(r"^(?!https?://127\.0\.0\.1:)"), offline)
    await page.add_init_script(MARKERS)
    await sign_in(page, studio, "alice")
    scripts = await page.evaluate("document.querySelectorAll('script').length")

    # The catalog card (its icon is the normal URL).
    await page.get_by_role("navigation", name="Main").get_by_role("link", name="Catalog").click()
    card = page.get_by_role("article", name="XSS SKU")
    await expect(card).to_be_visible()
    await expect(card.locator("img")).to_have_attribute("src", icon)

    # The SKU page: the readme shows the payloads as text.
    await card.get_by_role("link", name="Details of XSS SKU").click()
    await page.get_by_role("heading", name="XSS SKU").wait_for()
    text = await _readme_is_inert(page, page.get_by_test_id("sku-readme"))
    assert "xss.rocks/xss.js" in text
    await screenshot(page, "sku-readme-xss")
    assert await page.evaluate("document.querySelectorAll('script').length") == scripts

    # The studio's profile page shows the same readme.
    await page.get_by_role("navigation", name="Main").get_by_role("link", name="Compute Profiles").click()
    await page.get_by_role("link", name="xss-sku", exact=True).click()
    await page.get_by_role("heading", name="XSS SKU").wait_for()
    await _readme_is_inert(page, page.get_by_role("region", name="Readme"))
    assert await page.evaluate("document.querySelectorAll('script').length") == scripts

    assert await page.evaluate("window.__xss") == []
    assert await page.evaluate("window.__inserted") == []
    # Only the readme's two http images were asked for (answered here): no script from anywhere.
    assert all(url.startswith("http://example.com/") for url in external), external
    assert watched.dialogs == []
    assert watched.errors == []
