"""issue-state.json, pinned whole: a bare task, a task deep in review with
every record the issue pipeline keeps, and a failed one, each compared byte for
byte (keys, order, values) with its golden file under golden/ (on PostgreSQL as
data: jsonb orders the keys of stored JSON values its own way).

Regenerate after an intended change with CODEX_WRITE_GOLDEN=1 and read the diff.
"""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
import time_machine
from django.conf import settings
from django.utils import timezone

from codex.events.models import Event
from codex.tasks.exports import issue_state
from codex.tasks.models import (
    AgentQuestion,
    Analysis,
    Artifact,
    BuildResult,
    Escalation,
    Learning,
    ReviewReport,
    Triage,
)
from tests.factories import make_repository, make_task, put_in_state

pytestmark = pytest.mark.django_db

GOLDEN = Path(__file__).with_name("golden")
NOW = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


def _rendered(task) -> str:
    text = json.dumps(issue_state(task), indent=2, ensure_ascii=False) + "\n"
    return text.replace(task.task_id, "FEAT-TASK-ID")


def _matches_golden(task, name: str) -> None:
    path = GOLDEN / f"{name}.json"
    text = _rendered(task)
    if os.environ.get("CODEX_WRITE_GOLDEN"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
    golden = path.read_text(encoding="utf-8")
    if settings.IS_POSTGRESQL:
        # jsonb keeps its own key order inside stored JSON values (the
        # records' check results): the same document, compared as data.
        assert json.loads(text) == json.loads(golden)
    else:
        assert text == golden


def _task(**fields):
    repository = make_repository("https://github.com/acme/golden")
    with time_machine.travel(NOW, tick=False):
        return make_task(repository, **fields)


def test_a_bare_task():
    _matches_golden(_task(), "issue_state_bare")


def _in_review_with_every_record():
    task = _task(issue_number=42)
    Triage.objects.create(
        task=task,
        type="BUG_FIX",
        scope="SMALL",
        complexity="simple",
        should_proceed=True,
    )
    Analysis.objects.create(
        task=task,
        files=[{"path": "src/Slider.tsx", "purpose": "slider", "action": "modify"}],
        patterns=["debounce inputs"],
        must_do=["Keep the public API"],
        must_not_do=["Don't refactor the existing state management"],
        test_requirement={"required": True, "location": "tests/Slider.test.tsx"},
        brief="Full markdown brief",
    )
    BuildResult.objects.create(
        task=task,
        cycle=1,
        tests_passed=True,
        lint_passed=True,
        commands_run=[BuildResult.command("npm test", 0, "ok")],
    )
    ReviewReport.objects.create(
        task=task,
        cycle=1,
        assessment="request_changes",
        comments=[
            {
                "id": "R1",
                "severity": "blocking",
                "file": "src/Slider.tsx",
                "line": 12,
                "issue": "Off by one",
            }
        ],
        feedback={"message": "see comments", "good": ["clear names"]},
    )
    Artifact.store_all(
        task,
        {
            "writer.json": json.dumps(
                {
                    "summary": "Clamp the slider",
                    "commit_message": "Fix the slider's bounds",
                    "changes": [{"file": "src/Slider.tsx", "action": "modify"}],
                    "test_files": ["tests/Slider.test.tsx"],
                }
            )
        },
    )
    Event.objects.create(
        task=task,
        kind="tool",
        actor="agent:pm",
        data={"tool": "add_labels", "success": True, "labels": ["bug", "ui"]},
    )
    AgentQuestion.objects.create(
        task=task, from_role="writer", to_role="analyst", question="Where?"
    )
    AgentQuestion.objects.create(
        task=task,
        from_role="reviewer",
        to_role="writer",
        question="Why a clamp?",
        answer="Inputs overflow",
        answered_at=timezone.now(),
    )
    Escalation.objects.create(
        task=task,
        phase="review",
        reason="needs_clarification",
        detail="Which range is valid?",
    )
    Learning.objects.create(
        repository=task.repository,
        task=task,
        agent="writer",
        type="pattern_discovered",
        content="uses lodash debounce",
    )
    return put_in_state(
        task,
        status="escalated",
        phase="review",
        verification_cycles=1,
        review_cycles=1,
        feedback_history={
            "verification": [{"at": "2025-03-01T12:05:00Z", "feedback": {"n": 1}}],
            "review": [
                {"at": "2025-03-01T12:09:00Z", "feedback": {"message": "later"}}
            ],
        },
        commits=["abc123", "def456"],
        branch="codex/fix-slider",
        pr_url="https://github.com/acme/golden/pull/9",
    )


def test_a_task_in_review_with_every_record():
    _matches_golden(_in_review_with_every_record(), "issue_state_in_review")


def test_a_failed_task_and_a_completed_one():
    task = _in_review_with_every_record()
    Escalation.objects.filter(task=task).update(resolved_at=timezone.now())
    put_in_state(
        task,
        status="failed",
        errors=[{"message": "first"}, {"message": "push rejected"}],
    )
    _matches_golden(task, "issue_state_failed")
    put_in_state(task, status="completed", phase="release")
    _matches_golden(task, "issue_state_completed")
