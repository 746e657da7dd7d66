"""End-to-end tests of the studio in a real browser: Debian's chromium driven by Playwright (never a
downloaded browser), against `gpupaas serve`'s app under uvicorn on a loopback port, with a fresh
database, the built SPA (`npm run build`) and an in-process worker on the simulated cluster.

Without chromium or the build they are skipped locally, and fail in CI or when GPUPAAS_REQUIRE_BROWSER
is set (tests/required.py). Screenshots of each main page go under SCREENSHOTS (tests/conftest.py lists them at the end of the run).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from gpupaas.app import STATIC_DIR, create_app
from gpupaas.runtime import Runtime
from gpupaas.settings import Settings
from tests.conftest import SCREENSHOTS, serving
from tests.required import BROWSER, missing

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]


def _missing() -> str | None:
    if not Path(CHROMIUM).exists():
        return f"no chromium at {CHROMIUM} (Debian's package chromium; .ci/run installs it)"
    if not (STATIC_DIR / "index.html").exists():
        return "the studio is not built (make frontend, or npm run build)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "the playwright package is not installed (make install)"
    return None


@pytest.fixture(autouse=True)
def _browser_available() -> None:
    reason = _missing()
    if reason is not None:
        missing(BROWSER, reason)


@pytest.fixture
async def studio(settings: Settings) -> AsyncIterator[str]:
    """The real app with a worker on the simulated cluster (short phases), under uvicorn."""
    fast = replace(settings, simulated_phase_seconds=0.2, run_requeue_after_seconds=5.0)
    # serving() runs without the app's lifespan (the `db` fixture owns the connection), so the
    # runtime (bus, relay, broadcaster for the subscriptions, worker, simulated endpoints) is
    # started here and handed to the app.
    runtime = Runtime(fast)
    await runtime.start()
    try:
        async with serving(create_app(fast, migrate=False, runtime=runtime)) as url:
            yield url
    finally:
        await runtime.stop()


@dataclass
class Watched:
    """What a page did that a test must see: dialogs opened (alert() from an XSS), console errors,
    and among them what the Content-Security-Policy refused."""

    dialogs: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    csp_violations: list[str] = field(default_factory=list)

    def on_console(self, message: Any) -> None:
        if message.type == "error":
            self.errors.append(message.text)
        if "Content Security Policy" in message.text:
            self.csp_violations.append(message.text)


@pytest.fixture
async def browser() -> AsyncIterator[Any]:
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        instance = await playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            yield instance
        finally:
            await instance.close()


async def new_page(
    browser: Any, watched: Watched | None = None, *, width: int = 1280, height: int = 900
) -> Any:
    """A page in a fresh context (its own cookies), recording dialogs and console errors."""
    context = await browser.new_context(viewport={"width": width, "height": height})
    context.set_default_timeout(15_000)
    page = await context.new_page()
    if watched is not None:

        async def on_dialog(dialog: Any) -> None:
            watched.dialogs.append(dialog.message)
            await dialog.dismiss()

        page.on("dialog", on_dialog)
        page.on("console", watched.on_console)
        page.on("pageerror", lambda e: watched.errors.append(str(e)))
    return page


def _screenshot_path(name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    return SCREENSHOTS / f"{re.sub(r'[^a-z0-9-]+', '-', name.lower())}.png"


async def screenshot(page: Any, name: str) -> None:
    await page.screenshot(path=str(_screenshot_path(name)), full_page=True)


async def sign_in(page: Any, url: str, username: str, password: str = "correct horse battery") -> None:
    await page.goto(f"{url}/login")
    await page.get_by_label("Username").fill(username)
    await page.get_by_label(re.compile(r"^Password")).fill(password)
    await page.get_by_role("button", name="Sign in").click()
    await page.wait_for_url(re.compile(r".*/p/[^/]+/dashboard$"))
