"""Browser tests: Playwright driving Debian's Chromium against a live server.

No `playwright install`: the browser is the system's (`apt-get install -y
chromium`), found at CODEX_CHROMIUM or /usr/bin/chromium. The module skips with
a reason only when Chromium or the playwright package is missing; CI installs
both, and its PostgreSQL run fails on any skip.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.factories import make_user

CHROMIUM = os.environ.get("CODEX_CHROMIUM") or shutil.which("chromium") or ""
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
ARTIFACTS = Path(
    os.environ.get(
        "CODEX_TEST_ARTIFACTS", Path(__file__).resolve().parents[2] / "test-artifacts"
    )
)
PASSWORD = "pw-12345!"  # what tests.factories.make_user sets
# Bounded waits: the task page polls every few seconds.
LIVE_UPDATE_TIMEOUT_MS = 15_000


def missing_browser() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return (
            "the playwright package is not installed "
            "(pip install -r requirements/dev.txt)"
        )
    if not CHROMIUM or not Path(CHROMIUM).exists():
        return "Chromium is not installed (apt-get install -y chromium)"
    return None


def pytest_collection_modifyitems(config, items) -> None:
    reason = missing_browser()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"browser tests need a browser: {reason}")
    for item in items:
        if "tests/browser/" in str(item.path).replace(os.sep, "/"):
            item.add_marker(skip)


@pytest.fixture(scope="module")
def browser() -> Iterator:
    """One Chromium per module. Playwright's sync API runs an event loop in this
    thread, which would make Django refuse ORM calls from the test: allow them
    for the module only (the live server runs in its own thread)."""
    from playwright.sync_api import sync_playwright

    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(
                executable_path=CHROMIUM, args=CHROMIUM_ARGS
            )
            try:
                yield chromium
            finally:
                chromium.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@pytest.fixture
def page(browser, request) -> Iterator:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(10_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield page
    finally:
        if getattr(request.node, "rep_call", None) and request.node.rep_call.failed:
            screenshot(page, f"{request.node.name}-failure")
        context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


def screenshot(page, name: str) -> Path:
    """Save a full-page screenshot under test-artifacts/ (kept by CI)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{re.sub(r'[^A-Za-z0-9_.-]+', '-', name)}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


@pytest.fixture
def member(transactional_db):
    return make_user("carol", role="team")


@pytest.fixture
def signed_in(page, live_server, member):
    """The page, signed in through the real login form as a team member."""
    page.goto(f"{live_server.url}/accounts/login/")
    screenshot(page, "login")
    page.fill("#id_username", member.username)
    page.fill("#id_password", PASSWORD)
    page.click("form button[type=submit]")
    page.wait_for_url(re.compile(r".*/dashboard/$"))
    return page
