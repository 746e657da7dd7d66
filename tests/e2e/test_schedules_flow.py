"""Auto-stop and schedules in a real browser: a project admin adds a schedule on the project's
Schedules page (with the server's message for a time zone that is not one), and the owner of an
instance launched from a profile with an auto-stop sees on its page when it stops and extends it."""

from __future__ import annotations

import re

from playwright.async_api import expect

from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.core.time_limits import Limits
from tests.e2e.conftest import Watched, new_page, screenshot, sign_in
from tests.factories import make_instance, make_profile, make_project, make_user
from tests.workers.conftest import wait_status

TIMEOUT = 20_000


async def test_an_admin_schedules_stops_and_an_owner_extends_an_auto_stop(
    db: object, studio: str, browser: object
) -> None:
    await make_user("alice")
    olivia = await make_user("olivia")
    ml = await make_project("ml", alice=Role.ADMIN, olivia=Role.MEMBER)
    profile = await make_profile(ml, time_limits=Limits(240, 24 * 60))
    box = await make_instance(ml, profile, "notebook", deploy=True, by=olivia)
    await wait_status(box.id, DeploymentStatus.SUCCESS)

    watched = Watched()
    page = await new_page(browser, watched)
    await sign_in(page, studio, "alice")
    await page.get_by_role("link", name="Schedules").click()
    await expect(page.get_by_role("heading", name="Schedules", exact=True)).to_be_visible()
    form = page.get_by_role("form", name="New schedule")
    await form.get_by_label(re.compile(r"^Time zone")).fill("Berlin")
    await form.get_by_role("button", name="Add Schedule").click()
    await expect(form.get_by_text('did you mean "Europe/Berlin"?', exact=False)).to_be_visible(
        timeout=TIMEOUT
    )
    await form.get_by_label(re.compile(r"^Time zone")).fill("Europe/Berlin")
    await form.get_by_role("button", name="Add Schedule").click()
    row = page.get_by_test_id("schedule-evening")
    await expect(row).to_contain_text(
        "Stop every running service instance at 20:00 Europe/Berlin on weekdays", timeout=TIMEOUT
    )
    await expect(row).to_contain_text("never")
    await screenshot(page, "schedules")

    owner = await new_page(browser, watched)
    await sign_in(owner, studio, "olivia")
    await owner.goto(f"{studio}/p/ml/instances/{box.id}")
    panel = owner.get_by_role("region", name="Auto-stop")
    await expect(panel.get_by_test_id("time-limits")).to_have_text(
        "auto-stop after 4h · maximum lifetime 1d", timeout=TIMEOUT
    )
    stops = panel.get_by_test_id("stops-at")
    await expect(stops).to_contain_text("(in 4h): auto-stop after 4h")
    await panel.get_by_role("button", name="Extend").click()  # by 1h, the default
    await expect(stops).to_contain_text("(in 5h): auto-stop extended to", timeout=TIMEOUT)
    # its own limits, within the profile's maximum lifetime
    await panel.get_by_role("button", name="Change time limits").click()
    limits = panel.get_by_role("form", name="Time limits")
    await limits.get_by_label("Maximum lifetime (minutes)").fill("2000")
    await limits.get_by_role("button", name="Save").click()
    await expect(
        limits.get_by_text("limits the lifetime to 1d (1440 minutes): 2000 is more", exact=False)
    ).to_be_visible(timeout=TIMEOUT)
    await limits.get_by_label("Auto-stop after (minutes)").fill("120")
    await limits.get_by_label("Maximum lifetime (minutes)").fill("600")
    await limits.get_by_role("button", name="Save").click()
    await expect(panel.get_by_test_id("time-limits")).to_have_text(
        "auto-stop after 2h · maximum lifetime 10h", timeout=TIMEOUT
    )
    await expect(stops).to_contain_text(": auto-stop after 2h")
    await screenshot(owner, "instance-auto-stop")
    # members read the schedules, and get no form
    await owner.get_by_role("link", name="Schedules").click()
    await expect(owner.get_by_test_id("schedule-evening")).to_be_visible(timeout=TIMEOUT)
    await expect(owner.get_by_role("form", name="New schedule")).to_have_count(0)
    assert watched.dialogs == []
    assert watched.errors == []
