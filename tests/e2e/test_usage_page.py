"""The Usage page in a real browser: an instance deployed by the worker on the simulated cluster is
metered, and its project's admin sees it in the chart and the table and downloads the CSV; a
platform admin sets a GPU price and the report gets a cost; a member who launched nothing sees no
usage."""

from __future__ import annotations

import asyncio
import csv
import io
import re
from pathlib import Path
from typing import Any

from gpupaas.compute.models import ComputeInstance
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.metering.models import UsageInterval
from tests.e2e.conftest import Watched, new_page, screenshot, sign_in
from tests.factories import make_instance, make_profile, make_project, make_user


async def _deployed(instance_id: object, timeout: float = 30) -> None:
    """Until the worker has deployed the instance (its status, as the database says)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while (await ComputeInstance.get(id=instance_id)).status != DeploymentStatus.SUCCESS:
        assert asyncio.get_running_loop().time() < deadline, "the instance was not deployed"
        await asyncio.sleep(0.1)


async def test_the_usage_page_charts_and_downloads_what_was_metered(
    db: object, studio: str, browser: Any, tmp_path: Path
) -> None:
    alice = await make_user("alice")
    await make_user("bob")
    ml = await make_project("ml", alice=Role.ADMIN, bob=Role.MEMBER)
    box = await make_instance(ml, await make_profile(ml), name="box", by=alice, deploy=True)
    await _deployed(box.id)
    assert await UsageInterval.filter(subject_id=box.id, ended_at__isnull=True).count() == 1

    watched = Watched()
    page = await new_page(browser, watched)
    await sign_in(page, studio, "alice")
    await page.get_by_role("navigation", name="Main").get_by_role("link", name="Usage").click()
    await page.wait_for_url(re.compile(r".*/p/ml/usage$"))
    table = page.get_by_role("table", name="Usage per group")
    await table.get_by_role("cell", name="alice", exact=True).wait_for()
    chart = page.get_by_role("img", name="GPU-hours per day")
    await chart.wait_for()
    # by instance: the chart has today's bar of ml/box (a few seconds of one GPU)
    await page.get_by_role("combobox", name="Group by").click()
    await page.get_by_role("option", name="Instance").click()
    await table.get_by_role("cell", name="ml/box", exact=True).wait_for()
    assert await page.locator("[data-testid^='bar-'][data-testid$='-ml/box']").count() == 1
    await screenshot(page, "usage")

    async with page.expect_download() as waiting:
        await page.get_by_role("button", name="Download CSV").click()
    download = await waiting.value
    assert re.fullmatch(r"usage-\d{4}-\d{2}-\d{2}-\d{4}-\d{2}-\d{2}\.csv", download.suggested_filename)
    saved = tmp_path / "usage.csv"
    await download.save_as(str(saved))
    rows = list(csv.reader(io.StringIO(saved.read_text())))
    assert rows[0] == ["day_utc", "instance", "gpu_hours", "cpu_core_hours", "memory_gib_hours", "cost"]
    assert [row[1] for row in rows[1:]] == ["ml/box"]

    # a platform admin sets a price: the report gets a cost
    await make_user("root", platform_admin=True)
    admin = await new_page(browser, watched)
    await sign_in(admin, studio, "root")
    await admin.goto(f"{studio}/p/ml/usage")
    form = admin.get_by_role("form", name="Set a GPU price")
    await form.get_by_role("textbox", name="GPU model").fill("")
    await form.get_by_role("textbox", name=re.compile(r"^Price per GPU-hour")).fill("2.5")
    await form.get_by_role("button", name="Set price").click()
    await admin.get_by_role("table", name="GPU prices").get_by_role("cell", name="2.5000").wait_for()
    await (
        admin.get_by_role("table", name="Usage per group").get_by_role("columnheader", name="Cost").wait_for()
    )

    # a member who launched nothing: no usage of theirs
    other = await new_page(browser, watched)
    await sign_in(other, studio, "bob")
    await other.goto(f"{studio}/p/ml/usage")
    await other.get_by_text("No usage in this period").wait_for()
    assert watched.dialogs == [] and watched.csp_violations == []
    assert [e for e in watched.errors if "401" not in e] == []
