"""Report sections come from the reports' real structure: a review's security
section without findings is no " : " bullet, a verification feedback without
items is no empty bullet, malformed JSON is an absent section; a request's
empty sections are hidden; a held phase shows its hold, not "In progress"."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse

from codex.tasks.models import ReviewReport, VerificationReport
from codex.tasks.pages.views import phase_rows
from tests.factories import make_task

pytestmark = pytest.mark.django_db


def html_of(client, task) -> str:
    return client.get(reverse("pages:task", args=[task.task_id])).content.decode()


def test_a_security_section_without_findings_has_no_bullets(member_client):
    task = make_task()
    ReviewReport.objects.create(
        task=task,
        cycle=1,
        assessment="approve",
        security={"vulnerabilities_found": 0, "items": []},
        feedback={"blocking_count": 0, "message": "Looks good"},
    )

    html = html_of(member_client, task)

    assert '<li><span class="badge"></span>  : </li>' not in html
    assert "vulnerabilities_found" not in html
    assert "No vulnerabilities found." in html
    assert "Looks good" in html


def test_security_findings_are_listed(member_client):
    task = make_task()
    ReviewReport.objects.create(
        task=task,
        cycle=1,
        assessment="request_changes",
        security={
            "vulnerabilities_found": 1,
            "items": [
                {
                    "type": "CWE-89",
                    "description": "raw SQL",
                    "severity": "high",
                    "file": "db.py",
                    "line": 9,
                },
                "not an object",
            ],
        },
    )

    html = html_of(member_client, task)

    assert "<strong>CWE-89</strong>: raw SQL <code>db.py:9</code>" in html
    assert "not an object" not in html


def test_verification_feedback_without_items_has_no_empty_bullet(member_client):
    task = make_task()
    VerificationReport.objects.create(
        task=task,
        cycle=1,
        recommendation="request_changes",
        feedback={"priority": "high", "summary": "Fix the login test"},
        failures="not a list",
    )

    html = html_of(member_client, task)

    assert "Fix the login test" in html
    assert "high priority" in html
    assert "<li></li>" not in html and '<li><span class="badge"></span>' not in html
    assert "<h4>Failures</h4>" not in html


def test_empty_request_sections_are_hidden(member_client):
    bare = make_task(description="", acceptance_criteria="")
    described = make_task(description="Only a description", acceptance_criteria="")

    assert "<h2>Request</h2>" not in html_of(member_client, bare)
    html = html_of(member_client, described)
    assert "<h3>Description</h3>" in html
    assert "Acceptance criteria" not in html


def test_a_blocked_phase_shows_blocked_and_its_clock_stops():
    task = make_task()
    task.perform("start", by="worker:w1")
    task.perform("block", by="worker:w1", reason="forge down", exit_code=23)
    held_at = task.updated_at
    later = held_at + timedelta(hours=5)

    intake = phase_rows(task, now=later, held_at=held_at)[0]

    assert intake["status"] == "blocked"
    assert intake["status_label"] == "Blocked"
    assert intake["duration"] != "5h 00m" and not intake["duration"].startswith("5h")


def test_the_page_says_blocked_since(member_client):
    task = make_task()
    task.perform("start", by="worker:w1")
    task.perform("block", by="worker:w1", reason="forge down", exit_code=23)

    html = html_of(member_client, task)

    assert 'data-phase-status="blocked"' in html
    assert "Blocked since" in html and "forge down" in html
    assert "In progress" not in html.split('class="phases"')[1].split("</table>")[0]


def test_a_review_that_did_not_scan_is_not_shown_as_clear(member_client):
    task = make_task()
    ReviewReport.objects.create(task=task, cycle=1, assessment="approve", security={})
    assert "No vulnerabilities found." not in html_of(member_client, task)
