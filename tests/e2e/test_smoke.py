"""The studio loads in a real browser, signs in with the session cookie and keeps working across a
reload of a deep link (the history fallback)."""

from __future__ import annotations

import re
from typing import Any

from gpupaas.core.actor import Role
from tests.e2e.conftest import Watched, new_page, screenshot, sign_in
from tests.factories import make_project, make_user


async def test_sign_in_switch_projects_and_reload_a_deep_link(db: object, studio: str, browser: Any) -> None:
    await make_user("alice")
    await make_project("ml", alice=Role.MEMBER)
    await make_project("research", alice=Role.ADMIN)
    watched = Watched()
    page = await new_page(browser, watched)
    await page.goto(f"{studio}/p/ml/instances")
    await page.wait_for_url(re.compile(r".*/login\?next="))
    await screenshot(page, "sign-in")
    await page.get_by_label("Username").fill("alice")
    await page.get_by_label(re.compile(r"^Password")).fill("wrong password")
    await page.get_by_role("button", name="Sign in").click()
    await page.get_by_role("alert").wait_for()
    await sign_in(page, studio, "alice")
    # A member sees no studio; the admin of "research" does.
    nav = page.get_by_role("navigation", name="Main")
    await page.get_by_role("combobox", name="Project").click()
    await page.get_by_role("option", name="ml").click()
    await page.wait_for_url(re.compile(r".*/p/ml/dashboard$"))
    assert await nav.get_by_role("link", name="Compute Profiles").count() == 0
    await page.get_by_role("combobox", name="Project").click()
    await page.get_by_role("option", name="research").click()
    await page.wait_for_url(re.compile(r".*/p/research/dashboard$"))
    await nav.get_by_role("link", name="Compute Profiles").wait_for()
    await page.goto(f"{studio}/p/research/studio/profiles")  # a reload of a deep link
    await nav.get_by_role("link", name="Compute Profiles").wait_for()
    assert watched.dialogs == []
    assert [e for e in watched.errors if "401" not in e] == []
    assert watched.csp_violations == []


async def test_the_studio_runs_under_its_content_security_policy(
    db: object, studio: str, browser: Any
) -> None:
    # given the studio as a browser loads it
    await make_user("alice")
    await make_project("ml", alice=Role.MEMBER)
    watched = Watched()
    page = await new_page(browser, watched)
    response = await page.goto(f"{studio}/login")
    headers = await response.all_headers()
    assert "script-src 'self';" in headers["content-security-policy"]
    assert headers["x-frame-options"] == "DENY" and headers["x-content-type-options"] == "nosniff"
    # when it signs in and loads its pages: nothing it needs is refused
    await sign_in(page, studio, "alice")
    await page.get_by_role("navigation", name="Main").wait_for()
    assert watched.csp_violations == []
    # and a script injected into the page (what a stored XSS would be) does not run
    await page.evaluate(
        """() => {
          const script = document.createElement("script");
          script.textContent = "window.injected = true";
          document.head.appendChild(script);
        }"""
    )
    assert await page.evaluate("window.injected === undefined")
    await page.wait_for_function("true")  # one more round trip: the console message has arrived
    assert any("script-src" in violation for violation in watched.csp_violations), watched.csp_violations
