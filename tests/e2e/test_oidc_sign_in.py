"""Signing in to the studio with OpenID Connect, in chromium: the login page's "Sign in with Acme
SSO", the provider's own page (oidc-provider-mock on a loopback port, tests/oidc_provider.py), and
back in the studio, signed in, in the project a group of the provider gave."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from gpupaas.settings import OidcSettings, Settings
from tests.e2e.conftest import Watched, new_page, screenshot
from tests.factories import make_project
from tests.oidc_provider import RunningProvider, running_provider


@pytest.fixture
def provider() -> Iterator[RunningProvider]:
    with running_provider() as running:
        yield running


@pytest.fixture
def settings(settings: Settings, provider: RunningProvider) -> Settings:
    """The e2e studio (tests/e2e/conftest.py) with the provider configured."""
    oidc = OidcSettings(
        issuer=provider.url,
        client_id="gpupaas-studio",
        client_secret="client secret at the provider",
        name="Acme SSO",
        project_role_pattern="gpupaas:{project}:{role}",
    )
    return replace(settings, oidc=oidc)


async def test_sign_in_with_the_provider_lands_in_the_groups_project(
    db: object, studio: str, browser: Any, provider: RunningProvider
) -> None:
    await make_project("ml")
    await make_project("research")
    provider.set_user("frank-at-acme", {"preferred_username": "frank", "groups": ["gpupaas:research:member"]})
    watched = Watched()
    page = await new_page(browser, watched)
    # The provider's page loads styles from a CDN this machine cannot reach: only the studio's own
    # errors count.
    ours: list[str] = []
    page.on(
        "console",
        lambda m: (
            ours.append(m.text)
            if m.type == "error" and m.location.get("url", "").startswith(studio)
            else None
        ),
    )

    await page.goto(f"{studio}/p/research/instances")
    await page.wait_for_url(re.compile(r".*/login\?next="))
    await screenshot(page, "sign-in-with-oidc")
    await page.get_by_role("link", name="Sign in with Acme SSO").click()

    # the provider's own page
    await page.wait_for_url(re.compile(re.escape(provider.url) + r"/oauth2/authorize\?"))
    await page.locator("input[name=sub]").fill("frank-at-acme")
    await page.get_by_role("button", name="Authorize").click()

    # back in the studio, where the person was going, signed in as frank, in research only
    await page.wait_for_url(re.compile(r".*/p/research/instances$"))
    await page.get_by_role("navigation", name="Main").wait_for()
    await page.get_by_role("combobox", name="Project").click()
    options = page.get_by_role("option")
    await options.first.wait_for()
    assert await options.all_inner_texts() == ["research"]
    await page.keyboard.press("Escape")
    await page.goto(f"{studio}/")
    await page.wait_for_url(re.compile(r".*/p/research/dashboard$"))
    await screenshot(page, "dashboard-after-oidc")
    assert watched.dialogs == []
    assert [e for e in ours if "401" not in e] == []
    assert watched.csp_violations == []


async def test_declining_at_the_provider_comes_back_to_the_login_page_saying_so(
    db: object, studio: str, browser: Any, provider: RunningProvider
) -> None:
    page = await new_page(browser)
    await page.goto(f"{studio}/login")
    await page.get_by_role("link", name="Sign in with Acme SSO").click()
    await page.wait_for_url(re.compile(re.escape(provider.url) + r"/oauth2/authorize\?"))
    await page.get_by_role("button", name="Deny").click()
    await page.wait_for_url(re.compile(r".*/login\?oidc_error=cancelled"))
    alert = page.get_by_role("alert")
    await alert.wait_for()
    assert await alert.inner_text() == "Sign-in was cancelled at the identity provider."
    # the password form is still there to use
    await page.get_by_label("Username").wait_for()
