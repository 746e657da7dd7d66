"""People management in a real browser: a platform admin adds a user and makes them a member of a
project from its Members page; the user signs in, creates an API token (its secret shown once, and
it works) and changes their password; the admin disables them: their token stops and their open
page goes back to the sign-in page; enabled again, the admin resets their password and deletes them. The admin then deletes a project that has instances (refused,
the reason shown) and one without (gone)."""

from __future__ import annotations

import asyncio
import contextlib
import re
from typing import Any

import httpx
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import expect

from gpupaas.accounts.models import User
from tests.e2e.conftest import Watched, new_page, screenshot, sign_in
from tests.factories import make_instance, make_profile, make_project, make_user

ME = "{ me { username } }"
FIRST_PASSWORD = "dana's first password"
NEW_PASSWORD = "dana's second password"
RESET_PASSWORD = "set by the admin"


async def _me_with_token(url: str, token: str) -> Any:
    async with httpx.AsyncClient(base_url=url) as client:
        response = await client.post(
            "/graphql", json={"query": ME}, headers={"Authorization": f"Bearer {token}"}
        )
    return response.json()


async def _disabled_at(username: str) -> object:
    """When the user was disabled, as the database has it: the test's own reads share the app's
    connection, so this waits (a few seconds at most) until the admin's change is there to read,
    and the token is then checked against what is committed."""
    for _ in range(50):
        user = await User.get(username=username)
        if user.disabled_at is not None:
            return user.disabled_at
        await asyncio.sleep(0.1)
    raise AssertionError(f"{username} is shown Disabled but the database has them enabled")


async def _goes_to_sign_in(page: Any) -> None:
    """The open page of a user whose session ended leaves for the sign-in page: by itself when its
    live updates are refused (the server closed its socket, the reconnect is anonymous), else at
    its next request (opening the Catalog). Without the studio's UNAUTHENTICATED handling it stays."""
    catalog = page.get_by_role("navigation", name="Main").get_by_role("link", name="Catalog")
    sign_in_button = page.get_by_role("button", name="Sign in")
    await expect(catalog.or_(sign_in_button)).to_be_visible()
    if await catalog.is_visible():
        with contextlib.suppress(PlaywrightError):  # the page may leave while this clicks
            await catalog.click(timeout=5_000)
    await page.wait_for_url(re.compile(r".*/login\?next="))
    await expect(sign_in_button).to_be_visible()


async def test_people_flow(db: object, studio: str, browser: Any) -> None:
    await make_user("root", platform_admin=True)
    ml = await make_project("ml")
    await make_instance(ml, await make_profile(ml), "gpu-box")
    await make_project("scratch")

    watched = Watched()
    admin = await new_page(browser, watched)
    await sign_in(admin, studio, "root")
    await admin.goto(f"{studio}/p/ml/dashboard")
    nav = admin.get_by_role("navigation", name="Main")

    # Administration > Users: a short password is refused under its field, then dana is added
    await nav.get_by_role("link", name="Users").click()
    await admin.get_by_role("heading", name="Users", exact=True).wait_for()
    await expect(admin.get_by_test_id("user-root")).to_be_visible()
    await admin.get_by_role("button", name="Add User").click()
    dialog = admin.get_by_role("dialog", name="Add a user")
    await dialog.get_by_label(re.compile("^Username")).fill("dana")
    password = dialog.get_by_label(re.compile("^Password"))
    await password.fill("short")
    await dialog.get_by_role("button", name="Add User").click()
    await expect(password).to_have_accessible_description(re.compile("must be at least 8 characters"))
    await password.fill(FIRST_PASSWORD)
    await dialog.get_by_role("button", name="Add User").click()
    await expect(admin.get_by_role("dialog")).to_have_count(0)
    dana_row = admin.get_by_test_id("user-dana")
    await expect(dana_row.get_by_text("Active")).to_be_visible()
    await admin.get_by_label("Search").fill("dan")
    await expect(admin.get_by_test_id("user-root")).to_have_count(0)
    await expect(dana_row).to_be_visible()
    await screenshot(admin, "admin-users")

    # the project's Members page: an unknown user is refused under the field, dana is added
    await nav.get_by_role("link", name="Members").click()
    await admin.get_by_role("heading", name="Members", exact=True).wait_for()
    form = admin.get_by_role("form", name="Add a member")
    await form.get_by_label(re.compile("^Username")).fill("nobody")
    await form.get_by_role("button", name="Add Member").click()
    await expect(form.get_by_label(re.compile("^Username"))).to_have_attribute("aria-invalid", "true")
    await expect(form.get_by_text('user "nobody" not found')).to_be_visible()
    await form.get_by_label(re.compile("^Username")).fill("dana")
    await form.get_by_role("button", name="Add Member").click()
    member = admin.get_by_test_id("member-dana")
    await expect(member).to_be_visible()
    await expect(member.get_by_role("combobox", name="Role of dana")).to_have_value("Member")
    await screenshot(admin, "members")

    # dana signs in: a member sees neither the studio nor the administration
    user = await new_page(browser, watched)
    await sign_in(user, studio, "dana", FIRST_PASSWORD)
    user_nav = user.get_by_role("navigation", name="Main")
    await expect(user_nav.get_by_role("link", name="Catalog")).to_be_visible()
    await expect(user_nav.get_by_role("link", name="Users")).to_have_count(0)
    await expect(user_nav.get_by_role("link", name="Members")).to_have_count(0)

    # Account: an API token, its secret shown once, and it signs dana in
    await user.get_by_role("button", name="Account").click()
    await user.get_by_role("menuitem", name="Account").click()
    await user.get_by_role("heading", name="Account", exact=True).wait_for()
    await user.get_by_role("button", name="Create Token").click()
    dialog = user.get_by_role("dialog")
    await dialog.get_by_label(re.compile("^Name")).fill("laptop")
    await dialog.get_by_role("button", name="Create Token").click()
    secret_box = dialog.get_by_test_id("secret-once")
    await expect(secret_box).to_be_visible()
    await expect(dialog.get_by_text(re.compile("You will not see it again"))).to_be_visible()
    token = (await secret_box.inner_text()).strip()
    await screenshot(user, "api-token-secret")
    await dialog.get_by_role("button", name="Done").click()
    await expect(user.get_by_role("dialog")).to_have_count(0)
    await expect(user.get_by_test_id("secret-once")).to_have_count(0)
    assert token not in await user.content()
    await expect(user.get_by_test_id("token-laptop")).to_be_visible()
    assert (await _me_with_token(studio, token))["data"]["me"] == {"username": "dana"}

    # ...and changes the password: a wrong current one and a repeat that differs are shown at their fields
    current = user.get_by_label(re.compile("^Current password"))
    new = user.get_by_label(re.compile("^New password"))
    repeat = user.get_by_label(re.compile("^Repeat the new password"))
    await current.fill("not my password")
    await new.fill(NEW_PASSWORD)
    await repeat.fill(NEW_PASSWORD + "!")
    await user.get_by_role("button", name="Change password").click()
    await expect(repeat).to_have_accessible_description("The two new passwords differ.")
    await repeat.fill(NEW_PASSWORD)
    await user.get_by_role("button", name="Change password").click()
    await expect(current).to_have_accessible_description("is not your current password")
    await current.fill(FIRST_PASSWORD)
    await user.get_by_role("button", name="Change password").click()
    await expect(user.get_by_text("Password changed")).to_be_visible()
    await screenshot(user, "account")
    other = await new_page(browser, watched)
    await sign_in(other, studio, "dana", NEW_PASSWORD)
    await other.context.close()

    # the admin disables dana: the token stops, and dana's open page goes to the sign-in page
    await nav.get_by_role("link", name="Users").click()
    await admin.get_by_role("button", name="Disable dana").click()
    await expect(admin.get_by_test_id("user-dana").get_by_text("Disabled")).to_be_visible()
    disabled_at = await _disabled_at("dana")
    answer = await _me_with_token(studio, token)
    assert answer.get("data", {}).get("me") is None, (answer, disabled_at)
    await _goes_to_sign_in(user)

    # enabled again, given a new password by the admin, then deleted: gone from the list, signed out
    await admin.get_by_role("button", name="Enable dana").click()
    await expect(admin.get_by_test_id("user-dana").get_by_text("Active")).to_be_visible()
    await admin.get_by_role("button", name="Reset the password of dana").click()
    dialog = admin.get_by_role("dialog", name="Reset the password of dana")
    await dialog.get_by_label(re.compile("^New password")).fill(RESET_PASSWORD)
    await dialog.get_by_label(re.compile("^Repeat the new password")).fill(RESET_PASSWORD)
    await dialog.get_by_role("button", name="Reset password").click()
    await expect(admin.get_by_role("dialog")).to_have_count(0)
    again = await new_page(browser, watched)
    await sign_in(again, studio, "dana", RESET_PASSWORD)
    await admin.get_by_role("button", name="Delete dana").click()
    await admin.get_by_role("dialog").get_by_role("button", name="Delete").click()
    await expect(admin.get_by_test_id("user-dana")).to_have_count(0)
    await _goes_to_sign_in(again)

    # Administration > Projects: ml has an instance (refused, the reason shown); scratch goes
    await nav.get_by_role("link", name="Projects").click()
    await admin.get_by_role("heading", name="Projects", exact=True).wait_for()
    ml_row = admin.get_by_test_id("project-ml")
    await expect(ml_row.get_by_role("cell").nth(2)).to_have_text("1")
    await ml_row.get_by_role("button", name="Delete ml").click()
    await admin.get_by_role("dialog").get_by_role("button", name="Delete").click()
    refusal = admin.get_by_role("alert").filter(has_text='Project "ml" was not deleted')
    await expect(refusal).to_be_visible()
    await expect(refusal).to_contain_text(
        'project "ml" still holds 1 instance: delete its compute and service instances first'
    )
    await expect(admin.get_by_role("dialog")).to_have_count(0)
    await screenshot(admin, "admin-projects-refused")
    await expect(ml_row).to_be_visible()

    await admin.get_by_role("button", name="Rename scratch").click()
    dialog = admin.get_by_role("dialog", name="Rename scratch")
    await dialog.get_by_label(re.compile("^Display name")).fill("Scratch space")
    await dialog.get_by_role("button", name="Rename").click()
    await expect(admin.get_by_test_id("project-scratch")).to_contain_text("Scratch space")
    await admin.get_by_role("button", name="Delete scratch").click()
    await admin.get_by_role("dialog").get_by_role("button", name="Delete").click()
    await expect(admin.get_by_test_id("project-scratch")).to_have_count(0)
    await expect(admin.get_by_role("option", name="Scratch space")).to_have_count(0)
    assert watched.dialogs == [] and watched.csp_violations == []
