"""Every export pinned whole against a golden file under golden/ (keys, order,
values), and each golden file checked key by key against its format
(tests/tasks/export_formats.py): task-envelope.yml, issue-state.json,
verification-report.yml and review-report.yml (docs/domain/tasks.md#exports).

Regenerate after an intended change with CODEX_WRITE_GOLDEN=1 and read the diff.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
import time_machine
import yaml
from django.conf import settings

from codex.tasks.exports import report_yaml, task_envelope_yaml
from codex.tasks.models import ReviewReport, VerificationReport
from tests.factories import make_repository, make_task, put_in_state
from tests.tasks.export_formats import (
    ISSUE_STATE,
    REVIEW_REPORT,
    TASK_ENVELOPE,
    VERIFICATION_REPORT,
    shape_errors,
)
from tests.tasks.test_it_exports_the_issue_state_byte_for_byte import (
    _in_review_with_every_record,
)

pytestmark = pytest.mark.django_db

GOLDEN = Path(__file__).with_name("golden")
NOW = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)
STARTED = "2025-03-01T12:00:00+00:00"
DONE = "2025-03-01T12:05:00+00:00"


def matches_golden(task, text: str, name: str) -> None:
    text = text.replace(task.task_id, "FEAT-TASK-ID")
    path = GOLDEN / name
    if os.environ.get("CODEX_WRITE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    golden = path.read_text(encoding="utf-8")
    if settings.IS_POSTGRESQL:
        # jsonb keeps its own key order inside stored JSON values.
        assert yaml.safe_load(text) == yaml.safe_load(golden)
    else:
        assert text == golden


def envelope_task():
    with time_machine.travel(NOW, tick=False):
        task = _in_review_with_every_record()
        return put_in_state(
            task,
            phase_progress={
                "intake": {
                    "status": "completed",
                    "started_at": STARTED,
                    "completed_at": DONE,
                    "agent_invocations": 1,
                },
                "planning": {
                    "status": "completed",
                    "started_at": STARTED,
                    "completed_at": DONE,
                    "agent_invocations": 2,
                },
                # The envelope defines no agent_invocations for implementation.
                "implementation": {
                    "status": "completed",
                    "started_at": STARTED,
                    "completed_at": DONE,
                    "agent_invocations": 3,
                },
                "verification": {"status": "completed", "started_at": STARTED},
                "review": {"status": "in_progress", "started_at": STARTED},
                "release": {"status": "pending"},
            },
            total_tasks=2,
            current_task=2,
            errors=[
                {
                    "timestamp": STARTED,
                    "phase": "planning",
                    "exit_code": 124,
                    "code": "wait_retry",
                    "message": "Timeout during codebase analysis",
                    "resolution": "blocked until 2025-03-01 12:01:00 UTC",
                }
            ],
        )


def test_the_task_envelope():
    task = envelope_task()
    text = task_envelope_yaml(task)
    matches_golden(task, text, "task_envelope_in_review.yml")
    envelope = yaml.safe_load(text)
    assert shape_errors(envelope, TASK_ENVELOPE) == []
    assert "agent_invocations" not in envelope["phases"]["implementation"]
    assert envelope["status"] == "escalated"


def test_a_bare_task_envelope():
    with time_machine.travel(NOW, tick=False):
        task = make_task(make_repository("https://github.com/acme/golden"))
    text = task_envelope_yaml(task)
    matches_golden(task, text, "task_envelope_bare.yml")
    assert shape_errors(yaml.safe_load(text), TASK_ENVELOPE) == []


def test_the_reports():
    with time_machine.travel(NOW, tick=False):
        task = make_task(make_repository("https://github.com/acme/golden"))
        verification = VerificationReport.objects.create(
            task=task,
            cycle=1,
            pr_url="https://github.com/acme/golden/pull/9",
            tests_passed=47,
            tests_failed=2,
            tests_skipped=3,
            tests_total=52,
            failures=[
                {
                    "name": "auth.test.ts > login > should reject invalid password",
                    "error": "Expected status 401, received 500",
                    "file": "src/auth/auth.service.ts",
                    "line": 42,
                    "pre_existing": False,
                }
            ],
            acceptance_criteria=[
                {
                    "criterion": "Users can register with email/password",
                    "status": "passed",
                    "evidence": "Registration endpoint returns 201",
                },
                {
                    "criterion": "Users can log in and receive a session token",
                    "status": "failed",
                    "evidence": "Login returns 500 for valid credentials",
                    "issue_ref": "failures[0]",
                },
            ],
            recommendation="request_changes",
            feedback={
                "priority": "high",
                "summary": "Login endpoint has critical error handling bug",
                "items": ["Fix failing test login: Expected status 401"],
                "checks": [{"kind": "test", "ok": False}],
            },
        )
        review = ReviewReport.objects.create(
            task=task,
            cycle=1,
            pr_url="https://github.com/acme/golden/pull/9",
            assessment="request_changes",
            comments=[
                {
                    "id": "R001",
                    "severity": "blocking",
                    "file": "src/auth/auth.service.ts",
                    "line": 45,
                    "issue": "Password stored in plain text",
                    "suggestion": "Use bcrypt.hash() before storing",
                    "category": "security",
                },
                {
                    "id": "R002",
                    "severity": "suggestion",
                    "file": "src/auth/auth.service.ts",
                    "line": 30,
                    "issue": "Magic number 3600 should be constant",
                    "suggestion": "Extract to SESSION_TTL_SECONDS constant",
                    "category": "maintainability",
                },
            ],
            security={
                "vulnerabilities_found": 1,
                "items": [
                    {
                        "type": "CWE-256",
                        "description": "Plaintext Storage of Password",
                        "severity": "critical",
                        "file": "src/auth/auth.service.ts",
                        "line": 45,
                    }
                ],
            },
            feedback={
                "blocking_count": 1,
                "suggestion_count": 1,
                "priority_order": ["R001", "R002"],
                "message": "Critical security issue: hash passwords first.",
                "good": ["Small change"],
            },
        )
    for report, name, shape in (
        (verification, "verification_report.yml", VERIFICATION_REPORT),
        (review, "review_report.yml", REVIEW_REPORT),
    ):
        text = report_yaml(report)
        matches_golden(task, text, name)
        assert shape_errors(yaml.safe_load(text), shape) == []


@pytest.mark.parametrize(
    "name",
    [
        "issue_state_bare.json",
        "issue_state_in_review.json",
        "issue_state_failed.json",
        "issue_state_completed.json",
    ],
)
def test_every_issue_state_golden_file_has_the_formats_keys(name):
    document = json.loads((GOLDEN / name).read_text(encoding="utf-8"))
    assert shape_errors(document, ISSUE_STATE) == []
    assert document["pipeline"]["max_attempts"] == 3
    assert document["pipeline"]["attempt"] <= document["pipeline"]["max_attempts"]


def test_the_format_check_finds_what_departs():
    document = {**json.loads((GOLDEN / "issue_state_bare.json").read_text())}
    document["analysis"] = {**document["analysis"], "test_requirement": {}}
    document["extra"] = 1
    assert shape_errors(document, ISSUE_STATE) == [
        "$: extra is not in the format",
        "$.analysis.test_requirement: required missing",
        "$.analysis.test_requirement: type missing",
        "$.analysis.test_requirement: location missing",
        "$.analysis.test_requirement: description missing",
    ]
