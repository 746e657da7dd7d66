"""The quota bars and form on the dashboard, and the GPU capacity table, in a real browser."""

from __future__ import annotations

from typing import Any

from gpupaas.core.actor import Role
from gpupaas.quotas import service as quotas
from tests.e2e.conftest import Watched, new_page, screenshot, sign_in
from tests.factories import make_instance, make_project, make_user, platform_actor
from tests.quotas.test_quotas import gpu_profile


async def test_usage_bars_and_a_member_quota_set_from_the_dashboard(
    db: object, studio: str, browser: Any
) -> None:
    # given project "ml" with a quota of 8 GPUs, of which bob's deployed instance holds 3
    await make_user("alice")
    bob = await make_user("bob")
    ml = await make_project("ml", alice=Role.ADMIN, bob=Role.MEMBER)
    await quotas.set_quota(await platform_actor(), quotas.QuotaIn(project="ml", gpus=8, memory="64Gi"))
    profile = await gpu_profile(ml, 3, model="H100")
    await make_instance(ml, profile, name="train", by=bob, deploy=True)
    watched = Watched()
    page = await new_page(browser, watched)
    # when the project's admin opens the dashboard
    await sign_in(page, studio, "alice")
    quota = page.get_by_role("region", name="Quota")
    gpus = quota.get_by_role("progressbar", name="GPUs: 3 / 8")
    await gpus.wait_for()
    assert await gpus.get_attribute("aria-valuenow") == "38"
    await quota.get_by_role("progressbar", name="memory: 16Gi / 64Gi").wait_for()
    await quota.get_by_text("4 (no limit)").wait_for()  # CPU: used, not limited
    # and gives bob a quota above the project's: the refusal shows by the field, then one within it
    await quota.get_by_role("button", name="Set quotas").click()
    form = page.get_by_role("form", name="Set a quota")
    await form.get_by_role("combobox", name="Quota of").click()
    await page.get_by_role("option", name="Member bob").click()
    await form.get_by_label("GPUs (all vendors)").fill("12")
    await form.get_by_role("button", name="Save quota").click()
    await form.get_by_text('project "ml" allows 8 GPUs: a member\'s limit cannot be more (not 12)').wait_for()
    await form.get_by_label("GPUs (all vendors)").fill("4")
    await form.get_by_role("button", name="Save quota").click()
    await form.get_by_text("The quota was saved.").wait_for()
    # then bob's bar shows what he holds of his own quota
    await page.get_by_test_id("quota-member-bob").get_by_role("progressbar", name="GPUs: 3 / 4").wait_for()
    # and the capacity table shows who holds the project's GPUs
    capacity = page.get_by_role("region", name="GPU capacity")
    await capacity.get_by_text("3 × train (ml, bob)").wait_for()
    await screenshot(page, "dashboard-quotas")
    assert watched.errors == [] and watched.dialogs == []
