"""A review that finds SQL built from user input exports it: the reviewer's
security scan is the format's block,

    security:
      vulnerabilities_found: 1
      items:
        - type: "CWE-256"
          description: "Plaintext Storage of Password"
          severity: "critical"
          file: "src/auth/auth.service.ts"
          line: 45

and every field of report-<n>.yml is the format's, checked key by key
(docs/domain/tasks.md#review-report). The reviewer's own numbers are
exported; a scan that contradicts itself is sent back to it."""

from __future__ import annotations

import pytest
import yaml

from agents.roles.reviewer import check_security
from codex.repositories.models import Repository
from codex.tasks.exports import report_yaml
from codex.tasks.models import ReviewReport
from tests.agents_e2e.test_agents_end_to_end import (
    MUL_OK,
    QA_APPROVE,
    implementation,
    intake_and_planning,
    steps,
)
from tests.factories import make_task
from tests.model_stub import submit

pytestmark = pytest.mark.django_db(transaction=True)

SQL_FINDING = {
    "type": "CWE-89",
    "description": "SQL built from user input: the name is formatted into the query",
    "severity": "high",
    "file": "calc.py",
    "line": 7,
}
REVIEW_FINDS_SQL = submit(
    {
        "assessment": "request_changes",
        "summary": "The lookup builds SQL from user input.",
        "comments": [
            {
                "severity": "blocking",
                "file": "calc.py",
                "line": 7,
                "issue": "Query formatted with the user's name",
                "suggestion": "Pass it as a parameter",
                "category": "security",
            },
            {
                "severity": "suggestion",
                "issue": "Name the magic number",
                "category": "maintainability",
            },
        ],
        "security": {"vulnerabilities_found": 1, "items": [SQL_FINDING]},
    }
)

TOP = ["task_id", "pr_url", "created_at", "cycle", "assessment", "comments"]
TOP += ["security", "feedback"]
COMMENT = ["id", "severity", "file", "line", "issue", "suggestion", "category"]
ITEM = ["type", "description", "severity", "file", "line"]
FEEDBACK = ["blocking_count", "suggestion_count", "priority_order", "message"]


@pytest.fixture
def repository(bare_repo):
    return Repository.objects.create(url=f"file://{bare_repo}")


def test_a_review_with_a_finding_exports_it_key_by_key(
    agent_settings, stub, repository
):
    agent_settings.CODEX_REVIEW_POST_COMMENTS = False
    stub.add(
        *intake_and_planning(), *implementation(MUL_OK), QA_APPROVE, REVIEW_FINDS_SQL
    )
    task = make_task(repository, title="Add multiplication")

    assert steps(task, 5)[-1] == "in_progress/implementation"

    report = ReviewReport.objects.get(task=task, cycle=1)
    exported = yaml.safe_load(report_yaml(report))
    assert list(exported) == TOP
    assert exported["assessment"] == "request_changes"
    security = exported["security"]
    assert list(security) == ["vulnerabilities_found", "items"]
    assert security["vulnerabilities_found"] >= 1
    assert security["items"] == [SQL_FINDING]
    assert [list(item) for item in security["items"]] == [ITEM]
    assert [list(comment) for comment in exported["comments"]] == [COMMENT, COMMENT]
    assert [c["category"] for c in exported["comments"]] == [
        "security",
        "maintainability",
    ]
    assert [c["id"] for c in exported["comments"]] == ["R001", "R002"]
    assert exported["feedback"] == {
        "blocking_count": 1,
        "suggestion_count": 1,
        "priority_order": ["R001", "R002"],
        "message": "The lookup builds SQL from user input.",
    }
    assert list(exported["feedback"]) == FEEDBACK


def test_a_scan_that_contradicts_itself_goes_back_to_the_reviewer():
    assert "lists 1" in check_security(
        {"security": {"vulnerabilities_found": 0, "items": [SQL_FINDING]}}
    )
    assert check_security({"security": {"vulnerabilities_found": 0, "items": []}}) == ""
