"""The task page's actions in a real browser: an operator's buttons ask before
they act and follow the task live; a blocked phase says so; a long pull-request
URL stays inside its column."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest

from codex.tasks.models import Task
from tests.browser.conftest import LIVE_UPDATE_TIMEOUT_MS, PASSWORD, screenshot
from tests.factories import make_task, make_user, put_in_state

pytestmark = pytest.mark.django_db(transaction=True)

LONG_PR_URL = (
    "https://github.com/acme/" + "a-very-long-repository-name-" * 6 + "/pull/7"
)


@pytest.fixture
def operator_page(page, live_server):
    """The page, signed in through the login form as an operator."""
    operator = make_user("olga", is_staff=True)
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", operator.username)
    page.fill("#id_password", PASSWORD)
    page.click("form button[type=submit]")
    page.wait_for_url(re.compile(r".*/dashboard/$"))
    return page


def phase_status(page, label: str) -> str:
    return page.inner_text(
        f"#status-content table.phases tr:has(th:text('{label}')) td"
    )


def test_a_blocked_task_is_retried_after_confirming(operator_page, live_server):
    page = operator_page
    task = make_task(title="Blocked on the forge")
    task.perform("start", by="worker:w1")
    task.perform(
        "block",
        by="worker:w1",
        reason="forge down",
        retry_after=timedelta(hours=1),
        exit_code=124,
    )
    page.goto(f"{live_server.url}/tasks/{task.task_id}/")
    assert phase_status(page, "Intake") == "Blocked"
    assert "Blocked since" in page.inner_text("#status-content")
    screenshot(page, "task-page-blocked-actions")

    # Saying no to the question changes nothing.
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.click("#status-content button:has-text('Retry now')")
    page.wait_for_timeout(500)
    task.refresh_from_db()
    assert task.status == "blocked"

    questions: list[str] = []

    def accept(dialog) -> None:
        questions.append(dialog.message)
        dialog.accept()

    page.once("dialog", accept)
    page.click("#status-content button:has-text('Retry now')")
    page.wait_for_selector(".messages >> text=retry done")
    assert questions == [f"Retry {task.task_id} now, without waiting?"]
    task.refresh_from_db()
    assert task.status == "in_progress"
    assert phase_status(page, "Intake") == "In progress"
    screenshot(page, "task-page-retried")


def test_the_buttons_follow_the_task_without_reloading(operator_page, live_server):
    page = operator_page
    task = make_task(title="Followed live")
    task.perform("start", by="worker:w1")
    page.goto(f"{live_server.url}/tasks/{task.task_id}/")
    page.wait_for_selector("#status-content button:has-text('Pause')")
    page.evaluate("window.__codexNoReload = 'still here'")

    task.perform("pause", by="user:someone-else")
    page.wait_for_selector(
        "#status-content button:has-text('Resume')", timeout=LIVE_UPDATE_TIMEOUT_MS
    )
    assert phase_status(page, "Intake") == "Paused"
    assert page.locator("#status-content button:has-text('Pause')").count() == 0
    assert page.evaluate("window.__codexNoReload") == "still here"

    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#status-content button:has-text('Cancel task')")
    page.wait_for_selector("#status-content [data-status='cancelled']")
    assert Task.objects.get(pk=task.pk).status == "cancelled"
    assert page.locator("#status-content .actions").count() == 0


def test_a_long_pull_request_url_wraps_inside_the_page(operator_page, live_server):
    page = operator_page
    task = make_task(title="Long link")
    task.perform("start", by="worker:w1")
    put_in_state(task, pr_url=LONG_PR_URL)
    page.goto(f"{live_server.url}/tasks/{task.task_id}/")
    link = page.locator(f"#status-content a[href='{LONG_PR_URL}']")
    link.wait_for()

    overflow = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    box = link.bounding_box()
    card = page.locator("#status-block").bounding_box()
    assert overflow <= 0
    assert box["x"] + box["width"] <= card["x"] + card["width"]
    screenshot(page, "task-page-long-pr-url")
