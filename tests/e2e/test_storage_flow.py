"""Storage and resources in a real browser: a JupyterLab service launched with a new volume kept on
delete and its own CPU and memory, stopped, edited (its CPU limit), started again with the change,
and the compute instance's page showing its quota's use and the volume claim."""

from __future__ import annotations

import re
from typing import Any

from playwright.async_api import expect

from gpupaas.catalog.service.profiles import ResourcesIn
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.core.gpus import Vendor
from tests.e2e.conftest import Watched, new_page, screenshot, sign_in
from tests.factories import builtin_namespace_version, make_instance, make_profile, make_project, make_user
from tests.workers.conftest import wait_status

WAIT = 20_000  # ms: the longest any outcome may take to show
JUPYTER = "JupyterLab (PyTorch, NVIDIA) (NVIDIA)"


async def test_a_kept_volume_and_cpu_memory_edited_while_stopped(
    db: object, studio: str, browser: Any
) -> None:
    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.MEMBER)
    # the built-in namespace template: a ResourceQuota of the profile's CPU, memory and storage
    builtin = await builtin_namespace_version()
    resources = ResourcesIn(cpu="8", memory="64Gi", storage="200Gi", gpu_count=2, gpu_vendor=Vendor.NVIDIA)
    profile = await make_profile(project, builtin, resources=resources)
    box = await make_instance(project, profile, "box", display_name="Box", deploy=True, by=alice)
    await wait_status(box.id, DeploymentStatus.SUCCESS, timeout=20)

    watched = Watched()
    page = await new_page(browser, watched)
    await sign_in(page, studio, "alice")

    # Launch with a new 30Gi volume kept on delete, a 2 CPU limit and an 8Gi memory limit.
    await page.goto(f"{studio}/p/ml/services/new?computeInstance={box.id}")
    await page.get_by_role("heading", name="Launch service").wait_for()
    await page.get_by_role("radio", name=JUPYTER).click()
    await page.get_by_role("textbox", name=re.compile(r"^Name")).fill("lab")
    await page.get_by_role("button", name=re.compile(r"^Advanced")).click()
    storage = page.get_by_test_id("storage-editor")
    await expect(storage.get_by_role("radio", name="New volume")).to_be_checked()
    await storage.get_by_role("textbox", name=re.compile(r"^Volume size")).fill("30Gi")
    await storage.get_by_role("radio", name=re.compile(r"^Keep the volume")).check()
    await page.get_by_role("textbox", name="CPU limit", exact=True).fill("2")
    await page.get_by_role("textbox", name="Memory limit", exact=True).fill("8Gi")
    await screenshot(page, "service-launch-storage")
    await page.get_by_role("button", name="Launch", exact=True).click()
    await page.wait_for_url(re.compile(r".*/services/[0-9a-f-]{36}$"))
    service_url = page.url

    await page.locator('[data-status="RUNNING"]').wait_for(timeout=WAIT)
    await expect(page.get_by_test_id("service-storage")).to_have_text("New volume of 30Gi, kept on delete")
    await expect(page.get_by_test_id("service-resources")).to_have_text("2 CPU, 8Gi of memory")
    # running: no Edit, and the reason says to stop it first
    await expect(page.get_by_role("button", name="Edit", exact=True)).to_be_disabled()

    # Stop it, edit it: the CPU limit goes to 3, saved for its next start.
    await page.get_by_role("button", name="Stop lab", exact=True).click()
    await page.locator('[data-status="STOPPED"]').wait_for(timeout=WAIT)
    edit = page.get_by_role("button", name="Edit", exact=True)
    await expect(edit).to_be_enabled(timeout=WAIT)
    await edit.click()
    dialog = page.get_by_role("dialog", name="Edit lab")
    await expect(dialog.get_by_role("textbox", name="CPU limit", exact=True)).to_have_value("2")
    # its volume exists: another mode is refused with the server's words
    await dialog.get_by_role("radio", name="Ephemeral").check()
    await dialog.get_by_role("button", name="Save", exact=True).click()
    await expect(dialog.get_by_text(re.compile(r"its data would be lost"))).to_be_visible(timeout=WAIT)
    await dialog.get_by_role("radio", name="New volume").check()
    await dialog.get_by_role("textbox", name="CPU limit", exact=True).fill("3")
    await dialog.get_by_role("button", name="Save", exact=True).click()
    await expect(dialog).to_have_count(0, timeout=WAIT)
    await expect(page.get_by_test_id("service-resources")).to_have_text("3 CPU, 8Gi of memory", timeout=WAIT)

    # Start it: it runs with the change.
    await page.get_by_role("button", name="Start lab", exact=True).click()
    await page.locator('[data-status="RUNNING"]').wait_for(timeout=WAIT)

    # The compute instance's page: its quota counts the service's 3 CPUs and 30Gi claim.
    await page.goto(f"{studio}/p/ml/instances/{box.id}")
    quota = page.get_by_role("table", name="Quota compute")
    cpu = quota.get_by_role("row").filter(has=page.get_by_text("requests.cpu", exact=True))
    await expect(cpu.get_by_role("cell")).to_have_text(["requests.cpu", "3", "8", ""], timeout=WAIT)
    claimed = quota.get_by_role("row").filter(has=page.get_by_text("requests.storage", exact=True))
    await expect(claimed.get_by_role("cell")).to_have_text(["requests.storage", "30Gi", "200Gi", ""])
    claims = page.get_by_role("table", name="Volume claims")
    row = claims.get_by_role("row").filter(has=page.get_by_text("lab-workspace", exact=True))
    await expect(row).to_contain_text("30Gi")
    await expect(row).to_contain_text("kept on delete")
    await expect(row.get_by_role("link", name="lab", exact=True)).to_have_attribute(
        "href", service_url.removeprefix(studio)
    )
    await screenshot(page, "instance-quota-usage")
    assert watched.errors == [], watched.errors
