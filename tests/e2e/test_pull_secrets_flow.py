"""The Pull Secrets page in a real browser: a project admin adds an image pull secret (a bad
registry refused at its field), sees it listed without its password, changes its user keeping the
password (the database still holds the first one, encrypted), and deletes it."""

from __future__ import annotations

import re
from typing import Any

from playwright.async_api import expect

from gpupaas.core import crypto
from gpupaas.core.actor import Role
from gpupaas.pull_secrets.models import ImagePullSecret
from tests.conftest import SECRET_KEY
from tests.e2e.conftest import Watched, new_page, screenshot, sign_in
from tests.factories import make_project, make_user

PASSWORD = "ngc-Key-e2e-4471"


async def test_pull_secrets_page(db: object, studio: str, browser: Any) -> None:
    await make_user("alice")
    await make_project("ml", alice=Role.ADMIN)
    watched = Watched()
    page = await new_page(browser, watched)
    await sign_in(page, studio, "alice")
    await page.get_by_role("navigation", name="Main").get_by_role("link", name="Pull Secrets").click()
    await page.get_by_role("heading", name="Image Pull Secrets", exact=True).wait_for()
    await expect(page.get_by_text("No pull secrets yet")).to_be_visible()

    # add one: a registry that is no host is refused at its field, then it is added
    await page.get_by_role("button", name="Add Pull Secret").first.click()
    dialog = page.get_by_role("dialog")
    await dialog.get_by_label(re.compile("^Name")).fill("ngc")
    await dialog.get_by_label(re.compile("^Registry")).fill("bad_host")
    await dialog.get_by_label(re.compile("^User")).fill("$oauthtoken")
    await dialog.get_by_label(re.compile("^Password")).fill(PASSWORD)
    await dialog.get_by_role("button", name="Add Pull Secret").click()
    await expect(dialog.get_by_text(re.compile("must be a registry host"))).to_be_visible()
    await dialog.get_by_label(re.compile("^Registry")).fill("nvcr.io")
    await dialog.get_by_role("button", name="Add Pull Secret").click()
    await expect(page.get_by_role("dialog")).to_have_count(0)
    row = page.get_by_test_id("pull-secret-ngc")
    await expect(row.get_by_text("nvcr.io")).to_be_visible()
    await expect(row.get_by_text("$oauthtoken")).to_be_visible()
    assert PASSWORD not in await page.content()
    await screenshot(page, "pull-secrets")

    # change its user: the password field opens empty, and left empty keeps the password
    await row.get_by_role("button", name="Change ngc").click()
    dialog = page.get_by_role("dialog")
    await expect(dialog.get_by_label(re.compile("^Password"))).to_have_value("")
    await dialog.get_by_label(re.compile("^User")).fill("robot")
    await dialog.get_by_role("button", name="Save").click()
    await expect(page.get_by_role("dialog")).to_have_count(0)
    await expect(row.get_by_text("robot")).to_be_visible()
    stored = await ImagePullSecret.get(name="ngc")
    assert PASSWORD not in stored.password_encrypted
    assert crypto.decrypt(SECRET_KEY, stored.password_encrypted) == PASSWORD

    # delete it
    await row.get_by_role("button", name="Delete").click()
    await page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    await expect(page.get_by_text("No pull secrets yet")).to_be_visible()
    assert watched.dialogs == [] and watched.csp_violations == []
