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


def test_a_review_report_is_served_in_its_files_format(api_client):
    task = make_task()
    ReviewReport.objects.create(
        task=task,
        cycle=1,
        pr_url=PR,
        assessment="request_changes",
        comments=[BLOCKING, SUGGESTION],
        security={"items": [{"type": "CWE-256", "severity": "critical"}]},
        feedback={"message": "Hash the passwords."},
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
    assert report["security"]["vulnerabilities_found"] == 1
    assert report["feedback"] == {
        "blocking_count": 1,
        "suggestion_count": 1,
        "priority_order": ["R001", "R002"],
        "message": "Hash the passwords.",
    }


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
