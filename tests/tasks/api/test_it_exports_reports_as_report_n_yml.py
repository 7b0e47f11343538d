"""Spec 002 §5.1 storage layout: agent-verification/{task_id}/report-1.yml to
report-3.yml and agent-review/{task_id}/report-1.yml, report-2.yml, each in the
format of §4.4 ("verification-report.yml") and §4.5 ("review-report.yml"),
served by GET /api/tasks/{task_id}/reports/{kind}/report-{n}.yml."""

from __future__ import annotations

import pytest
import yaml

from codex.tasks.models import ReviewReport, VerificationReport
from tests.factories import make_task

pytestmark = pytest.mark.django_db

PR = "https://github.com/ii-us/target-repo/pull/42"
FAILURE = {
    "name": "auth.test.ts > login > should reject invalid password",
    "error": "Expected status 401, received 500",
    "file": "src/auth/auth.service.ts",
    "line": 42,
}
BLOCKING = {
    "id": "R001",
    "severity": "blocking",
    "file": "src/auth/auth.service.ts",
    "line": 45,
    "issue": "Password stored in plain text",
    "suggestion": "Use bcrypt.hash() before storing",
    "category": "security",
}
SUGGESTION = {**BLOCKING, "id": "R002", "severity": "suggestion"}
VULNERABILITY = {
    "type": "CWE-256",
    "description": "Plaintext Storage of Password",
    "severity": "critical",
    "file": "src/auth/auth.service.ts",
    "line": 45,
}


def url(task, kind: str, cycle: int | str) -> str:
    return f"/api/tasks/{task.task_id}/reports/{kind}/report-{cycle}.yml"


def test_a_verification_report_is_served_in_its_files_format(api_client):
    task = make_task()
    VerificationReport.objects.create(
        task=task,
        cycle=2,
        pr_url=PR,
        tests_passed=47,
        tests_failed=2,
        tests_skipped=3,
        tests_total=52,
        failures=[FAILURE],
        acceptance_criteria=[
            {"criterion": "Users can log in", "status": "failed", "evidence": "500"}
        ],
        recommendation="request_changes",
        feedback={"priority": "high", "summary": "Login is broken", "items": []},
    )

    response = api_client.get(url(task, "verification", 2))

    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/yaml")
    assert 'filename="report-2.yml"' in response["Content-Disposition"]
    text = response.content.decode()
    assert text.startswith(
        "# verification-report.yml\n"
        f"# Location: agent-verification/{task.task_id}/report-2.yml\n"
    )
    report = yaml.safe_load(text)
    assert list(report) == [
        "task_id",
        "pr_url",
        "created_at",
        "cycle",
        "test_results",
        "acceptance_criteria",
        "recommendation",
        "feedback",
    ]
    assert report["test_results"] == {
        "summary": {"passed": 47, "failed": 2, "skipped": 3, "total": 52},
        "failures": [FAILURE],
    }
    assert (report["task_id"], report["cycle"], report["pr_url"]) == (
        task.task_id,
        2,
        PR,
    )
    assert report["created_at"].endswith("Z")


def test_a_verification_reports_sections_are_the_formats_key_by_key(api_client):
    task = make_task()
    VerificationReport.objects.create(
        task=task,
        cycle=1,
        failures=[{**FAILURE, "pre_existing": True}, {"name": "lint", "check": "lint"}],
        acceptance_criteria=[
            {"criterion": "a", "status": "passed", "evidence": "ok", "met": True},
            {"criterion": "b", "status": "failed", "evidence": "500", "issue_ref": "x"},
        ],
        recommendation="request_changes",
        feedback={
            "priority": "high",
            "summary": "Login is broken",
            "items": ["Fix failing test login", {"severity": "major", "line": 3}],
            "checks": [{"kind": "test"}],
        },
    )

    report = yaml.safe_load(api_client.get(url(task, "verification", 1)).content)

    assert report["test_results"]["failures"] == [
        FAILURE,
        {"name": "lint", "error": None, "file": None, "line": None},
    ]
    assert report["acceptance_criteria"] == [
        {"criterion": "a", "status": "passed", "evidence": "ok"},
        {"criterion": "b", "status": "failed", "evidence": "500", "issue_ref": "x"},
    ]
    item = dict.fromkeys(["severity", "description", "file", "line", "suggestion"])
    assert report["feedback"] == {
        "priority": "high",
        "summary": "Login is broken",
        "items": [
            {**item, "description": "Fix failing test login"},
            {**item, "severity": "major", "line": 3},
        ],
    }


def test_a_review_report_is_served_in_its_files_format(api_client):
    task = make_task()
    ReviewReport.objects.create(
        task=task,
        cycle=1,
        pr_url=PR,
        assessment="request_changes",
        comments=[BLOCKING, SUGGESTION],
        security={"vulnerabilities_found": 1, "items": [VULNERABILITY]},
        # As the reviewer writes it, with what the format leaves out.
        feedback={
            "blocking_count": 1,
            "suggestion_count": 1,
            "priority_order": ["R001", "R002"],
            "message": "Hash the passwords.",
            "good": ["Small change"],
        },
    )

    report = yaml.safe_load(api_client.get(url(task, "review", 1)).content)

    assert list(report) == [
        "task_id",
        "pr_url",
        "created_at",
        "cycle",
        "assessment",
        "comments",
        "security",
        "feedback",
    ]
    assert report["comments"] == [BLOCKING, SUGGESTION]
    assert [list(comment) for comment in report["comments"]] == [list(BLOCKING)] * 2
    assert report["security"] == {"vulnerabilities_found": 1, "items": [VULNERABILITY]}
    assert list(report["security"]["items"][0]) == list(VULNERABILITY)
    assert report["feedback"] == {
        "blocking_count": 1,
        "suggestion_count": 1,
        "priority_order": ["R001", "R002"],
        "message": "Hash the passwords.",
    }


def test_the_export_never_counts_what_the_reviewer_did_not_say(api_client):
    task = make_task()
    ReviewReport.objects.create(
        task=task,
        cycle=1,
        assessment="approve",
        comments=[{**SUGGESTION, "extra": "not in the format"}],
        security={"items": [VULNERABILITY]},
    )

    report = yaml.safe_load(api_client.get(url(task, "review", 1)).content)

    assert report["security"]["vulnerabilities_found"] is None
    assert report["feedback"] == dict.fromkeys(
        ["blocking_count", "suggestion_count", "priority_order", "message"]
    )
    assert list(report["comments"][0]) == list(BLOCKING)


@pytest.mark.parametrize(
    ("kind", "cycle"),
    [
        ("review", 2),
        ("verification", 1),
        ("release", 1),
        ("review", "0"),
        ("review", "x"),
    ],
)
def test_a_report_that_does_not_exist_is_404(api_client, kind, cycle):
    task = make_task()
    ReviewReport.objects.create(task=task, cycle=1, assessment="approve")

    assert api_client.get(url(task, kind, cycle)).status_code == 404


def test_an_unknown_task_is_404_and_anonymous_is_401(client, api_client):
    task = make_task()
    ReviewReport.objects.create(task=task, cycle=1, assessment="approve")

    assert client.get(url(task, "review", 1)).status_code == 401
    missing = "/api/tasks/FEAT-20260101-zzzzzz/reports/review/report-1.yml"
    assert api_client.get(missing).status_code == 404
