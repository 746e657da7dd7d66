"""The studio's Audit log page in a real browser: a project admin sees their project's entries,
opens one's diff and filters the refusals; a platform admin reads every project."""

from __future__ import annotations

import re
from typing import Any

import httpx

from gpupaas.core.actor import Role
from tests.e2e.conftest import Watched, new_page, screenshot, sign_in
from tests.factories import make_project, make_user

CREATE_TEMPLATE = """
mutation($input: CreateEnvironmentTemplateInput!) {
  createEnvironmentTemplate(input: $input) { environmentTemplate { id } userErrors { code } }
}"""
UPDATE_TEMPLATE = """
mutation($input: UpdateEnvironmentTemplateInput!) {
  updateEnvironmentTemplate(input: $input) { environmentTemplate { id } userErrors { code } }
}"""


async def test_project_admins_read_their_audit_log(db: object, studio: str, browser: Any) -> None:
    # given changes and a refusal in "ml", and a change in "cv"
    alice, bob, carol = await make_user("alice"), await make_user("bob"), await make_user("carol")
    await make_user("root", platform_admin=True)
    await make_project("ml", alice=Role.ADMIN, bob=Role.MEMBER)
    await make_project("cv", carol=Role.ADMIN)
    async with httpx.AsyncClient(base_url=studio) as http:

        async def call(token: str, query: str, variables: dict[str, Any]) -> dict[str, Any]:
            response = await http.post(
                "/graphql",
                json={"query": query, "variables": variables},
                headers={"authorization": f"Bearer {token}"},
            )
            body: dict[str, Any] = response.json()
            return body

        made = await call(alice.token, CREATE_TEMPLATE, {"input": {"project": "ml", "name": "jupyter"}})
        template = made["data"]["createEnvironmentTemplate"]["environmentTemplate"]["id"]
        await call(alice.token, UPDATE_TEMPLATE, {"input": {"id": template, "displayName": "Jupyter Lab"}})
        await call(bob.token, CREATE_TEMPLATE, {"input": {"project": "ml", "name": "sneaky"}})
        await call(carol.token, CREATE_TEMPLATE, {"input": {"project": "cv", "name": "vision"}})
    watched = Watched()
    page = await new_page(browser, watched)
    # when alice opens the Audit log from the studio's navigation
    await sign_in(page, studio, "alice")
    await page.goto(f"{studio}/p/ml/dashboard")
    await page.get_by_role("navigation", name="Main").get_by_role("link", name="Audit log").click()
    await page.wait_for_url(re.compile(r".*/p/ml/studio/audit$"))
    await page.get_by_text("updateEnvironmentTemplate").wait_for()
    # then she sees ml's entries only, and the update's diff
    assert await page.get_by_text("vision").count() == 0
    row = page.locator("tr", has_text="updateEnvironmentTemplate")
    await row.get_by_role("button", name="Show the changes").click()
    changes = page.get_by_role("table", name="Changes")
    await changes.get_by_text("display_name").wait_for()
    await changes.get_by_text('"Jupyter Lab"').wait_for()
    await screenshot(page, "audit-log")
    # and filtering the refusals shows bob's attempt
    await page.get_by_label("Actor").fill("bob")
    await page.get_by_role("button", name="Apply").click()
    # (bob's refusal is on the unfiltered page too: wait for the filtered one, without alice's change)
    await page.get_by_text("updateEnvironmentTemplate").wait_for(state="detached")
    await page.get_by_text("REFUSED FORBIDDEN").wait_for()
    assert watched.errors == [] and watched.dialogs == []


async def test_platform_admins_read_every_project(db: object, studio: str, browser: Any) -> None:
    carol = await make_user("carol")
    await make_user("root", platform_admin=True)
    await make_project("ml")
    await make_project("cv", carol=Role.ADMIN)
    async with httpx.AsyncClient(base_url=studio) as http:
        await http.post(
            "/graphql",
            json={"query": CREATE_TEMPLATE, "variables": {"input": {"project": "cv", "name": "vision"}}},
            headers={"authorization": f"Bearer {carol.token}"},
        )
    watched = Watched()
    page = await new_page(browser, watched)
    await sign_in(page, studio, "root")
    await page.goto(f"{studio}/p/ml/studio/audit")
    await page.get_by_role("heading", name="Audit log").wait_for()
    assert await page.get_by_text("vision").count() == 0  # ml's log
    await page.get_by_text("All projects").click()
    await page.get_by_text("vision").wait_for()
    assert watched.errors == []
