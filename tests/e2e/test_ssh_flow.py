"""SSH in a real browser: a key added on the account page (a bad one refused with the server's
message), a service launched from the built-in Ubuntu template (which declares SSH access), and
its Connect panel's exact ssh command, which logs that key in at the simulated cluster's SSH
server; the panel lists a key added to the service, and deleting it takes it off."""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

from playwright.async_api import expect

from gpupaas.bootstrap import seed
from gpupaas.compute.states import DeploymentStatus
from gpupaas.core.actor import Role
from tests.e2e.conftest import Watched, new_page, screenshot, sign_in
from tests.factories import builtin_namespace_version, make_instance, make_profile, make_project, make_user
from tests.ssh_keys.keygen import key_pair
from tests.workers.conftest import wait_status
from tests.workers.test_ssh_flow import logs_in

WAIT = 20_000  # ms
UBUNTU = "Ubuntu 24.04 (CPU)"
SSH_COMMAND = re.compile(r"^ssh -p (\d+) root@127\.0\.0\.1$")


async def _choose(page: Any, combobox: str | re.Pattern[str], option: str) -> None:
    await page.get_by_role("combobox", name=combobox).click()
    await page.get_by_role("option", name=option, exact=True).click()


async def test_a_profile_key_logs_in_with_the_connect_panel_s_ssh_command(
    db: object, studio: str, browser: Any
) -> None:
    alice = await make_user("alice")
    project = await make_project("ml", alice=Role.MEMBER)
    await seed()
    # its namespace has the LimitRange that gives the CPU shell its requests under the quota
    profile = await make_profile(project, await builtin_namespace_version())
    instance = await make_instance(project, profile, "box", display_name="Box", deploy=True, by=alice)
    await wait_status(instance.id, DeploymentStatus.SUCCESS, timeout=20)
    mine, colleague, stranger = key_pair(comment="alice@laptop"), key_pair(comment="bob@desk"), key_pair()

    watched = Watched()
    page = await new_page(browser, watched)
    await sign_in(page, studio, "alice")

    # Her account page: a line that is no key is refused with the server's message, hers is added.
    await page.goto(f"{studio}/p/ml/account")
    await page.get_by_role("heading", name="SSH keys").wait_for()
    await expect(page.get_by_text("No SSH keys")).to_be_visible()
    key_field = page.get_by_label(re.compile(r"^Public key"))
    await key_field.fill("ssh-ed25519 not-base64")
    await page.get_by_role("button", name="Add SSH key").click()
    await expect(key_field).to_have_attribute("aria-invalid", "true", timeout=WAIT)
    await key_field.fill(mine.public_line)
    await page.get_by_role("button", name="Add SSH key").click()
    row = page.get_by_test_id("ssh-key-alice@laptop")
    await expect(row).to_contain_text("ssh-ed25519", timeout=WAIT)
    await expect(row).to_contain_text("SHA256:")
    await screenshot(page, "account-ssh-keys")

    # Launch the built-in Ubuntu template (SSH access on its SSH port) into her compute instance.
    await page.get_by_role("navigation", name="Main").get_by_role("link", name="Service Instances").click()
    await page.get_by_role("link", name="Launch service").first.click()
    await page.wait_for_url(re.compile(r".*/services/new$"))
    await _choose(page, re.compile(r"^Compute instance"), "Box")
    ubuntu = page.get_by_role("radio", name=f"{UBUNTU} (CPU)")
    await ubuntu.click()
    await page.get_by_role("textbox", name=re.compile(r"^Name")).fill("shell")
    await page.get_by_role("button", name="Launch", exact=True).click()
    await page.wait_for_url(re.compile(r".*/services/[0-9a-f-]{36}$"))

    # Running, live: the Connect panel shows the exact ssh command, which lets her key in.
    await page.locator('[data-status="RUNNING"]').wait_for(timeout=WAIT)
    command = page.get_by_label("SSH ssh command")
    await expect(command).to_have_text(SSH_COMMAND, timeout=WAIT)
    text = (await command.text_content()) or ""
    match = SSH_COMMAND.match(text)
    assert match, text
    port = int(match[1])
    assert (await logs_in("127.0.0.1", port, "root", mine))[0]
    assert not (await logs_in("127.0.0.1", port, "root", stranger))[0]

    # A colleague's key added to the service is listed and lets them in; deleted, it no longer does.
    await page.reload()  # the host key and the keys are read with the page
    panel = page.get_by_test_id("ssh-panel")
    await expect(panel).to_contain_text("SHA256:", timeout=WAIT)
    await panel.get_by_label(re.compile(r"^Add a key to this service")).fill(colleague.public_line)
    await panel.get_by_role("button", name="Add key").click()
    added = page.get_by_test_id("service-ssh-key-bob@desk")
    await expect(added).to_be_visible(timeout=WAIT)
    await screenshot(page, "service-ssh")
    await _eventually_logs_in(port, colleague, True)
    await added.get_by_role("button", name="Delete bob@desk").click()
    await page.get_by_role("dialog").get_by_role("button", name="Delete", exact=True).click()
    await expect(added).to_have_count(0, timeout=WAIT)
    await _eventually_logs_in(port, colleague, False)
    assert watched.errors == []


async def _eventually_logs_in(port: int, pair: Any, expected: bool, timeout: float = 20.0) -> None:
    """Key changes reach the running service through an APPLY_SSH_KEYS run: wait for it."""
    deadline = time.monotonic() + timeout
    while (await logs_in("127.0.0.1", port, "root", pair))[0] != expected:
        assert time.monotonic() < deadline, (
            f"the key {'still does not log in' if expected else 'still logs in'}"
        )
        await asyncio.sleep(0.2)
