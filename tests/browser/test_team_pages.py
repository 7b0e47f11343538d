"""The team pages in a real browser: a feature request through the form, the
task page moving without a reload, and an escalation answered in the inbox.

Screenshots of every page land in test-artifacts/.
"""

from __future__ import annotations

import re

import pytest

from codex.tasks.models import Escalation, Task
from tests.browser.conftest import LIVE_UPDATE_TIMEOUT_MS, screenshot
from tests.factories import make_repository, make_task, put_in_state

pytestmark = pytest.mark.django_db(transaction=True)

TASK_URL = re.compile(r".*/tasks/[A-Z]+-\d{8}-[a-z0-9]+/$")


def status_badge(status: str) -> str:
    return f'#status-content [data-status="{status}"]'


def test_feature_request_through_the_form_lands_on_the_task_page(
    signed_in, live_server, member
):
    page = signed_in
    repository = make_repository("https://github.com/acme/web")
    page.goto(f"{live_server.url}/tasks/new/")
    # Validation messages first: an empty submission stays on the form.
    page.click("form.wide button[type=submit]")
    assert page.url.endswith("/tasks/new/")
    page.fill("#id_title", "")
    page.evaluate("document.querySelector('form.wide').noValidate = true")
    page.click("form.wide button[type=submit]")
    page.wait_for_selector(".errorlist")
    screenshot(page, "request-form-errors")
    assert Task.objects.count() == 0

    page.fill("#id_repository", repository.url)
    page.fill("#id_title", "Export the report as CSV")
    page.fill("#id_description", "As an analyst, I want a **CSV** export.")
    page.select_option("#id_priority", "high")
    page.fill("#id_acceptance_criteria", "- A CSV file downloads")
    screenshot(page, "request-form-filled")
    page.click("form.wide button[type=submit]")
    page.wait_for_url(TASK_URL)

    task = Task.objects.get()
    assert page.url.endswith(f"/tasks/{task.task_id}/")
    assert task.title == "Export the report as CSV"
    assert task.created_by == "form"
    assert task.events.filter(actor=f"user:{member.username}").exists()
    assert f"Task {task.task_id} created." in page.inner_text(".messages")
    assert page.locator(status_badge("pending")).count() == 1
    # The description is rendered from Markdown.
    assert page.locator(".markdown strong", has_text="CSV").count() == 1
    screenshot(page, "task-page-new")


def test_task_page_updates_without_reloading(signed_in, live_server):
    page = signed_in
    task = make_task(title="Live updates")
    page.goto(f"{live_server.url}/tasks/{task.task_id}/")
    page.wait_for_selector(status_badge("pending"))
    # A marker that a reload would wipe out.
    page.evaluate("window.__codexNoReload = 'still here'")
    screenshot(page, "task-page-pending")

    task.perform("start", by="worker:browser-test")
    page.wait_for_selector(status_badge("in_progress"), timeout=LIVE_UPDATE_TIMEOUT_MS)
    page.wait_for_selector(
        "#timeline >> text=worker:browser-test", timeout=LIVE_UPDATE_TIMEOUT_MS
    )
    screenshot(page, "task-page-in-progress")

    task.refresh_from_db()
    task.perform("cancel", by="user:someone-else", reason="no longer needed")
    page.wait_for_selector(status_badge("cancelled"), timeout=LIVE_UPDATE_TIMEOUT_MS)
    assert page.evaluate("window.__codexNoReload") == "still here"
    assert "Cancelled" in page.inner_text("#status-content")
    screenshot(page, "task-page-cancelled")


def test_escalation_resolved_in_the_inbox_resumes_the_task(
    signed_in, live_server, member
):
    page = signed_in
    task = put_in_state(
        make_task(title="Needs a person"), status="in_progress", phase="verification"
    )
    task.perform(
        "escalate",
        by="agent:qa",
        reason="verification cycles exhausted",
        questions=["Ship without the flaky test?"],
        code="verification_max_cycles",
    )
    escalation = task.escalations.get()

    page.goto(f"{live_server.url}/tasks/{task.task_id}/")
    page.wait_for_selector(status_badge("escalated"))
    screenshot(page, "task-page-escalated")
    page.click("#status-content >> text=Answer it in the inbox")
    page.wait_for_url(re.compile(r".*/inbox/(#.*)?$"))

    card = page.locator(f"#escalation-{escalation.pk}")
    assert "Ship without the flaky test?" in card.inner_text()
    screenshot(page, "inbox-open")
    card.locator("textarea[name$='answer_0']").fill("Yes, quarantine it.")
    card.locator("textarea[name$='resolution']").fill("Go ahead")
    card.locator("input[type=radio][value=resume]").check()
    card.locator("button[type=submit]").click()
    page.wait_for_selector(".messages >> text=resolved")
    assert page.locator(f"#escalation-{escalation.pk}").count() == 0
    screenshot(page, "inbox-resolved")

    escalation.refresh_from_db()
    task.refresh_from_db()
    assert escalation.decision == "resume"
    assert escalation.answers == ["Yes, quarantine it."]
    assert escalation.consumed_at is not None
    assert escalation.resolved_by_label == f"user:{member.username}"
    assert task.status == "in_progress"
    assert task.phase == "verification"
    assert not Escalation.objects.open().exists()

    page.goto(f"{live_server.url}/tasks/{task.task_id}/")
    page.wait_for_selector(status_badge("in_progress"))
    screenshot(page, "task-page-resumed")
