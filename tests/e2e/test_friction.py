"""The first hour's friction, in a real browser: another project's URL and an unknown path show the
normal frame with a way back; the "Deploying" notification ends when the deploy FAILED; the
services list names the GPU model; every button of the services list and the instance template
form has an accessible name."""

from __future__ import annotations

import re
from typing import Any

from playwright.async_api import expect

from gpupaas.catalog.service import profiles
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from gpupaas.core.gpus import Vendor
from gpupaas.instance_templates.models import InstanceTemplate
from gpupaas.provisioning.drivers.simulated.failures import FAIL_ANNOTATION
from gpupaas.service_instances import service as services
from gpupaas.service_instances.states import ServiceStatus
from tests.conftest import SECRET_KEY
from tests.e2e.conftest import Watched, new_page, screenshot, sign_in
from tests.factories import make_instance, make_profile, make_project, make_user, platform_actor
from tests.workers.conftest import wait_status

WAIT = 20_000  # ms

# Every visible button's accessible name as a browser computes it for the common cases
# (aria-labelledby, aria-label, text, title); the buttons without one.
UNNAMED_BUTTONS = """() => [...document.querySelectorAll('button, [role="button"]')]
  .filter((b) => b.offsetParent !== null && b.getAttribute('aria-hidden') !== 'true')
  .filter((b) => {
    const by = (b.getAttribute('aria-labelledby') || '').split(/\\s+/).filter(Boolean)
      .map((id) => document.getElementById(id)?.textContent || '').join(' ');
    return !(by.trim() || (b.getAttribute('aria-label') || '').trim() || (b.textContent || '').trim()
      || (b.getAttribute('title') || '').trim());
  })
  .map((b) => b.outerHTML.slice(0, 160))"""


async def test_another_projects_url_and_an_unknown_path(db: object, studio: str, browser: Any) -> None:
    await make_user("alice")
    await make_user("bob")
    await make_project("ml", alice=Role.MEMBER)
    await make_project("secret", bob=Role.ADMIN)
    watched = Watched()
    page = await new_page(browser, watched)
    await sign_in(page, studio, "alice")

    # Another project's URL: the normal frame (navigation, account menu), a not-found message.
    await page.goto(f"{studio}/p/secret/instances")
    await expect(page.get_by_role("heading", name="Page not found")).to_be_visible()
    await expect(
        page.get_by_text('Project "secret" does not exist, or you are not a member of it.')
    ).to_be_visible()
    await expect(
        page.get_by_role("navigation", name="Main").get_by_role("link", name="Catalog")
    ).to_be_visible()
    await expect(page.get_by_text("Something went wrong")).to_have_count(0)
    await screenshot(page, "not-found-project")
    # and a way back to a project of one's own
    await page.get_by_role("link", name="Go to ml").click()
    await page.wait_for_url(re.compile(r".*/p/ml/dashboard$"))

    # An unknown path inside a project: the same.
    await page.goto(f"{studio}/p/ml/no-such-page")
    await expect(page.get_by_role("heading", name="Page not found")).to_be_visible()
    await expect(page.get_by_role("navigation", name="Main")).to_be_visible()

    # Signing out works from there.
    await page.goto(f"{studio}/p/secret/dashboard")
    await page.get_by_role("button", name="Account").click()
    await page.get_by_role("menuitem", name="Sign out").click()
    await page.wait_for_url(re.compile(r".*/login$"))


async def test_the_deploying_notification_ends_when_the_deploy_failed(
    db: object, studio: str, browser: Any
) -> None:
    await make_user("alice")
    project = await make_project("ml", alice=Role.ADMIN)
    # A profile whose deploys the simulated cluster fails (an image that cannot be pulled).
    profile = await make_profile(project, annotations=[(FAIL_ANNOTATION, "apply")])
    instance = await make_instance(project, profile, "doomed", display_name="Doomed")
    page = await new_page(browser, Watched())
    await sign_in(page, studio, "alice")
    await page.goto(f"{studio}/p/ml/instances/{instance.id}")
    await page.get_by_role("button", name="Deploy", exact=True).click()
    toasts = page.locator(".mantine-Notification-root")
    await expect(toasts.filter(has_text="is queued for deployment")).to_be_visible()
    await wait_status(instance.id, DeploymentStatus.FAILED, timeout=20)
    # The notification turns into the outcome; nothing says "Deploying" any more.
    await expect(toasts.filter(has_text="“Doomed” failed")).to_be_visible(timeout=WAIT)
    await expect(toasts.filter(has_text="Deploying")).to_have_count(0)
    await screenshot(page, "deploy-failed-notification")


async def test_services_list_names_the_model_and_every_button(db: object, studio: str, browser: Any) -> None:
    await make_user("alice")
    project = await make_project("ml", alice=Role.ADMIN)
    h100 = profiles.ResourcesIn(
        cpu="4", memory="16Gi", storage="100Gi", gpu_count=1, gpu_vendor=Vendor.NVIDIA, gpu_model="H100 80GB"
    )
    profile = await make_profile(project, resources=h100)
    box = await make_instance(project, profile, "box", display_name="Box", deploy=True)
    await wait_status(box.id, DeploymentStatus.SUCCESS, timeout=20)
    template = await InstanceTemplate.get(name="jupyterlab-pytorch")
    data = services.ServiceIn(
        project="ml", compute_instance=str(box.id), template=str(template.id), name="lab"
    )
    service = await services.create_service(await platform_actor(), data, secret_key=SECRET_KEY)

    page = await new_page(browser, Watched())
    await sign_in(page, studio, "alice")
    await page.goto(f"{studio}/p/ml/services")
    row = page.get_by_role("row").filter(has_text="lab")
    await expect(row).to_contain_text("1 × NVIDIA H100 80GB", timeout=WAIT)
    await expect(row).to_contain_text("Running", timeout=WAIT)
    assert (await services_status(service.id)) == ServiceStatus.RUNNING
    assert await page.evaluate(UNNAMED_BUTTONS) == []
    await screenshot(page, "services-list")

    # The instance template form, with a port and an argument row (their remove buttons).
    await page.goto(f"{studio}/p/ml/studio/instance-templates/new")
    await expect(page.get_by_role("heading", name=re.compile("Instance Template"))).to_be_visible()
    assert await page.evaluate(UNNAMED_BUTTONS) == []


async def services_status(service_id: Any) -> ServiceStatus:
    from gpupaas.service_instances.models import ServiceInstance

    return (await ServiceInstance.get(id=service_id)).status
