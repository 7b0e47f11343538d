"""The Content-Security-Policy holds in a real browser: every kind of page
(sign-in, team pages, a task's live page, the Swagger UI, the console) loads
and works without one violation report."""

from __future__ import annotations

import pytest

from tests.browser.conftest import PASSWORD, screenshot
from tests.factories import make_repository, make_task, make_user

pytestmark = pytest.mark.django_db(transaction=True)

RECORD_VIOLATIONS = """
window.__csp = [];
document.addEventListener('securitypolicyviolation', (event) => {
  window.__csp.push(event.violatedDirective + ' ' + event.blockedURI);
});
"""


@pytest.fixture
def watched(page):
    """The page, recording CSP violations and the console's CSP errors."""
    page.add_init_script(RECORD_VIOLATIONS)
    console: list[str] = []
    page.on(
        "console",
        lambda message: (
            console.append(message.text)
            if "Content Security Policy" in message.text
            else None
        ),
    )
    page.console_errors = console
    return page


def visit(page, url: str, wait_for: str = "body") -> None:
    response = page.goto(url)
    assert response.status < 400, (url, response.status)
    assert response.headers.get("content-security-policy"), url
    page.wait_for_selector(wait_for)
    page.wait_for_load_state("networkidle")
    violations = page.evaluate("window.__csp")
    assert not violations, (url, violations)
    assert not page.console_errors, (url, page.console_errors)


def sign_in(page, base: str, url: str, username: str) -> None:
    page.goto(f"{base}{url}")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("form [type=submit]")
    page.wait_for_load_state("networkidle")


def test_team_pages_and_swagger_ui(watched, live_server):
    operator = make_user("olga", is_staff=True, is_superuser=True)
    task = make_task(make_repository("https://github.com/acme/web"))
    base = live_server.url
    visit(watched, f"{base}/accounts/login/", "#id_username")
    sign_in(watched, base, "/accounts/login/", operator.username)
    for url in ("/dashboard/", "/tasks/new/", "/inbox/"):
        visit(watched, f"{base}{url}")
    visit(watched, f"{base}/tasks/{task.task_id}/")
    watched.wait_for_timeout(1500)  # one poll of the live fragment
    assert not watched.evaluate("window.__csp")
    visit(watched, f"{base}/api/docs/", ".swagger-ui .info")
    screenshot(watched, "swagger-ui-under-csp")


def test_the_console(watched, live_server):
    operator = make_user("olga", is_staff=True, is_superuser=True)
    task = make_task(make_repository("https://github.com/acme/web"))
    base = live_server.url
    visit(watched, f"{base}/admin/login/", "#id_username")
    sign_in(watched, base, "/admin/login/", operator.username)
    for url in (
        "/admin/",
        "/admin/tasks/task/",
        f"/admin/tasks/task/{task.pk}/change/",
        "/admin/repositories/repository/add/",
        "/admin/configuration/setting/",
        "/admin/axes/accessattempt/",
    ):
        visit(watched, f"{base}{url}")
    screenshot(watched, "console-under-csp")
