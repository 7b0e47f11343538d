"""The records of the issue-agent pipeline, written by the agents that
produce them: triage (labels on the issue; a declined request stops with a
comment saying why), analysis, build results, the writer's changes, summary
and commit message, review findings with what is good, and NEEDS_INFO; the
issue-state.json export holds them all."""

from __future__ import annotations

import pytest

from codex.repositories.models import LocalComment, LocalIssue, Repository
from codex.tasks.exports import issue_state
from codex.tasks.jobs import advance_task
from codex.tasks.models.analysis import Analysis, BuildResult, Triage
from tests.agents_e2e.test_agents_end_to_end import (
    MUL_OK,
    QA_APPROVE,
    RELEASE,
    SPEC,
    implementation,
    steps,
)
from tests.factories import make_task
from tests.model_stub import submit

pytestmark = pytest.mark.django_db(transaction=True)

TRIAGED = {
    "should_proceed": True,
    "needs_clarification": False,
    "spec_md": SPEC,
    "triage": {
        "type": "NEW_FEATURE",
        "scope": "SMALL",
        "complexity": "simple",
        # A label outside the schema's pattern ("<b>bad</b>") is refused by the
        # result's JSON Schema before the role sees it (tests/agents/test_runtime).
        "labels": ["enhancement"],
    },
}
PLANNED = submit(
    {
        "plan_md": "# Implementation Plan\n\nAdd mul to calc.py.",
        "tasks": [{"title": "Add mul with a test"}],
        "analysis": {
            "files": [
                {"path": "calc.py", "purpose": "mul lives here", "action": "modify"},
                "test_mul.py",
            ],
            "test_requirement": "a pytest test of mul",
            "must_not_do": ["touch add"],
            "brief": "Add mul next to add.",
        },
    }
)
REVIEWED = submit(
    {
        "assessment": "approve",
        "summary": "Small and clear.",
        "comments": [],
        "good": ["The test names the case it checks."],
        "security": {"vulnerabilities_found": 0, "items": []},
    }
)


@pytest.fixture
def repository(bare_repo):
    return Repository.objects.create(url=f"file://{bare_repo}")


def test_a_merged_task_exports_every_record(agent_settings, stub, repository):
    agent_settings.CODEX_REVIEW_POST_COMMENTS = False
    stub.add(
        submit(TRIAGED),
        PLANNED,
        *implementation(MUL_OK),
        QA_APPROVE,
        REVIEWED,
        RELEASE,
    )
    task = make_task(repository, title="Add multiplication", issue_number=7)

    assert steps(task, 6)[-1] == "completed/release"

    triage = Triage.objects.get(task=task)
    assert (triage.type, triage.scope, triage.complexity) == (
        "NEW_FEATURE",
        "SMALL",
        "simple",
    )
    assert LocalIssue.objects.get(repository=repository, number=7).labels == [
        "enhancement"
    ]
    analysis = Analysis.objects.get(task=task)
    analysis.full_clean()
    assert analysis.files[1] == {
        "path": "test_mul.py",
        "purpose": "",
        "action": "modify",
    }
    assert analysis.test_requirement["required"] is True
    build = BuildResult.objects.get(task=task, cycle=1)
    assert build.passed and build.commands_run[0]["exit_code"] == 0

    task.refresh_from_db()
    state = issue_state(task)
    assert state["issue"]["labels"] == ["enhancement"]
    assert state["triage"]["completed"] and state["triage"]["scope"] == "SMALL"
    assert state["analysis"]["brief"] == "Add mul next to add."
    assert state["writer"]["summary"] == "Added mul and its test."
    changes = state["writer"]["changes"]
    assert {"file": "calc.py", "description": "modified"} in changes
    assert {"file": "test_mul.py", "description": "created"} in changes
    assert state["writer"]["test_file"] == "test_mul.py"
    assert state["build"]["completed"] and state["build"]["tests_passed"]
    assert state["review"]["verdict"] == "APPROVED"
    assert state["review"]["findings"]["good"] == ["The test names the case it checks."]
    assert state["commit"]["message"] == "Add mul"
    assert state["commit"]["issue_closed"] is True


def test_a_declined_request_stops_with_a_comment_saying_why(
    agent_settings, stub, repository
):
    stub.add(
        submit(
            {
                "should_proceed": False,
                "needs_clarification": False,
                "spec_md": "",
                "reason": "A calculator; a web server is out of scope.",
            }
        )
    )
    task = make_task(repository, title="Add a web server", issue_number=8)

    assert advance_task(task.task_id) == "failed/intake"

    triage = Triage.objects.get(task=task)
    assert not triage.should_proceed and "out of scope" in triage.rejection_reason
    (comment,) = LocalComment.objects.filter(issue__number=8)
    assert "will not work on this request" in comment.body
    assert "out of scope" in comment.body
    state = issue_state(task)
    assert state["triage"]["should_proceed"] is False


def test_a_reviewer_lacking_information_asks_a_person(agent_settings, stub, repository):
    stub.add(
        submit(TRIAGED),
        PLANNED,
        *implementation(MUL_OK),
        QA_APPROVE,
        submit(
            {
                "assessment": "needs_info",
                "summary": "Should mul accept floats?",
                "comments": [],
                "questions": ["Should mul accept floats, or ints only?"],
                "security": {"vulnerabilities_found": 0, "items": []},
            }
        ),
    )
    task = make_task(repository, title="Add multiplication", issue_number=9)

    assert steps(task, 5)[-1] == "escalated/review"

    escalation = task.escalations.get()
    assert escalation.reason == "needs_clarification"
    assert "NEEDS_INFO" in escalation.detail
    task.refresh_from_db()
    assert issue_state(task)["review"]["verdict"] == "NEEDS_INFO"
