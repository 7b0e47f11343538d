"""End to end on the local forge: the real anthropic SDK talks to a scripted
Messages API; every phase is an AgentPhaseRunner step of advance_task."""

from __future__ import annotations

import pytest

from agents.demo import git
from agents.phase_runner import NO_KEY_REASON
from codex.repositories.models import LocalIssue, LocalPullRequest, Repository
from codex.tasks.jobs import advance_task
from codex.tasks.models import Artifact, ReviewReport, VerificationReport
from tests.factories import make_task
from tests.model_stub import message, submit, tool_use

pytestmark = pytest.mark.django_db(transaction=True)

SPEC = (
    "# Feature: multiply\n\n## Overview\nA mul function.\n\n"
    "## Acceptance Criteria\n- mul(2, 3) == 6\n"
)
MUL_OK = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n"
MUL_BROKEN = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n"
TEST_MUL = "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"


def intake_and_planning():
    return [
        message("Looking at the code.", tool_use("list_files", {})),
        submit({"should_proceed": True, "needs_clarification": False, "spec_md": SPEC}),
        submit(
            {
                "plan_md": "# Implementation Plan\n\nAdd mul to calc.py.",
                "tasks": [{"title": "Add mul with a test"}],
                "analysis": {"files": ["calc.py"], "must_not_do": ["touch add"]},
            }
        ),
    ]


def implementation(calc: str, answers=()):
    """The developer's run; in a feedback cycle it answers the findings
    `answers` (their ids) as fixed."""
    responses = [{"id": i, "status": "fixed", "note": "fixed"} for i in answers]
    return [
        message(
            tool_use("write_file", {"path": "calc.py", "content": calc}),
            tool_use("write_file", {"path": "test_mul.py", "content": TEST_MUL}),
        ),
        submit(
            {
                "summary": "Added mul and its test.",
                "commit_message": "Add mul",
                "tasks_completed": 1,
                **({"feedback_responses": responses} if responses else {}),
            }
        ),
    ]


QA_APPROVE = submit(
    {
        "acceptance_criteria": [
            {"criterion": "mul(2, 3) == 6", "met": True, "evidence": "test_mul"}
        ],
        "recommendation": "approve",
        "summary": "All good.",
    }
)
REVIEW_APPROVE = submit(
    {
        "assessment": "approve",
        "summary": "Small and clear.",
        "comments": [],
        "security": {"vulnerabilities_found": 0, "items": []},
    }
)
RELEASE = submit({"release_notes": "Adds calc.mul.", "merge": True})


def steps(task, count):
    return [advance_task(task.task_id) for _ in range(count)]


@pytest.fixture
def repository(bare_repo):
    return Repository.objects.create(url=f"file://{bare_repo}")


def test_a_request_becomes_a_merged_change(agent_settings, stub, repository):
    stub.add(
        *intake_and_planning(),
        *implementation(MUL_OK),
        QA_APPROVE,
        REVIEW_APPROVE,
        RELEASE,
    )
    task = make_task(
        repository,
        title="Add multiplication",
        description="calc needs mul",
        acceptance_criteria="- mul(2, 3) == 6",
        issue_number=7,
    )

    results = steps(task, 6)
    task.refresh_from_db()

    assert results[-1] == "completed/release", results
    assert task.status == "completed" and task.pr_merged
    names = set(task.artifacts.values_list("name", flat=True))
    assert {"spec.md", "plan.md", "tasks.md", "release-notes.md"} <= names
    spec = Artifact.objects.get(task=task, name="spec.md").content
    # The model's spec in the SpecKit sections, its criteria the success ones.
    assert spec.startswith(f"# Feature: {task.title}\n")
    assert "## Success Criteria\n\n- mul(2, 3) == 6" in spec
    assert "A mul function." in spec and "## Edge Cases" in spec
    assert "T001: Add mul with a test" in task.artifacts.get(name="tasks.md").content
    assert task.total_tasks == 1 and task.current_task == 1
    assert task.branch == f"codex/{task.task_id}"
    # The developer's write_file became a commit on the branch.
    assert len(task.commits) == 1
    bare = repository.local_path
    log = git("log", "--format=%H %s", task.branch, cwd=bare)
    assert task.commits[0] in log and "Add mul" in log
    # A real pytest run in the worktree: the old test and the new one pass.
    report = VerificationReport.objects.get(task=task)
    assert report.recommendation == "approve"
    assert (report.tests_passed, report.tests_failed, report.tests_total) == (2, 0, 2)
    assert ReviewReport.objects.get(task=task).assessment == "approve"
    # The pull request was opened (a draft until verified) and merged.
    pull = LocalPullRequest.objects.get(repository=repository)
    assert pull.state == "merged" and not pull.draft
    assert task.pr_url == f"{repository.url}/pull/{pull.number}"
    assert git("show", "main:calc.py", cwd=bare) == MUL_OK
    assert git("show", "main:test_mul.py", cwd=bare) == TEST_MUL
    assert LocalIssue.objects.get(repository=repository, number=7).closed_at
    # Tool calls are events; the reviewer saw the diff.
    tools = task.events.filter(kind="tool").values_list("data__tool", flat=True)
    assert {"list_files", "write_file", "commit", "submit_result"} <= set(tools)
    review_prompt = stub.bodies[6]["messages"][0]["content"][0]["text"]
    assert "+def mul(a, b):" in review_prompt


def test_a_failing_test_sends_the_task_back_with_the_failure(
    agent_settings, stub, repository
):
    stub.add(*intake_and_planning(), *implementation(MUL_BROKEN), QA_APPROVE)
    task = make_task(repository, title="Add multiplication")

    results = steps(task, 4)
    task.refresh_from_db()

    assert results[-1] == "in_progress/implementation", results
    assert task.verification_cycles == 1
    report = VerificationReport.objects.get(task=task)
    # The agent said approve; the real test run overrules it.
    assert report.recommendation == "request_changes"
    assert (report.tests_passed, report.tests_failed) == (1, 1)
    # Read from the JUnit XML the test command wrote outside the worktree.
    assert report.failures[0]["name"] == "test_mul::test_mul"
    assert report.failures[0]["file"] == "test_mul.py"
    assert report.failures[0]["line"] == 5
    assert "assert 5 == 6" in report.failures[0]["error"]
    # The tests near the change (the changed test file, and the test named
    # after the changed module) ran first, then the whole suite.
    assert report.feedback["checks"] == [
        {
            "kind": "test_nearby",
            "command": f"{agent_settings.CODEX_TEST_COMMAND} test_mul.py test_calc.py",
            "status": "failed",
            "exit_code": 1,
            "results_from": "junit_xml",
        },
        {
            "kind": "test",
            "command": agent_settings.CODEX_TEST_COMMAND,
            "status": "failed",
            "exit_code": 1,
            "results_from": "junit_xml",
        },
    ]
    feedback = task.feedback_history["verification"][0]["feedback"]
    assert "test_mul" in " ".join(feedback["items"])
    assert "assert 5 == 6" in feedback["test_output"]
    # The pull request stays a draft; main is untouched.
    pull = LocalPullRequest.objects.get(repository=repository)
    assert pull.draft and pull.state == "open"
    assert "mul" not in git("show", "main:calc.py", cwd=repository.local_path)

    # The developer's next run gets the failure as QA's findings, fixes it,
    # answers it, and the task moves on to verification again.
    stub.add(*implementation(MUL_OK, answers=["Q001"]))
    assert advance_task(task.task_id) == "in_progress/verification"
    first = stub.bodies[-2]["messages"][0]["content"]
    first = first if isinstance(first, str) else first[0]["text"]
    assert "QA's findings" in first and "Q001: Fix failing test test_mul" in first
    task.refresh_from_db()
    assert len(task.commits) == 2


def test_without_an_api_key_the_task_blocks_with_a_clear_message(
    agent_settings, stub, repository
):
    agent_settings.CODEX_CREDENTIALS = {"claude": [], "github": []}
    task = make_task(repository)

    advance_task(task.task_id)
    task.refresh_from_db()

    assert task.status == "blocked"
    assert task.blocked_reason == NO_KEY_REASON
    assert stub.requests == []
