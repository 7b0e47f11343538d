"""Spec 003: a task exports as issue-state.json with the spec's sections."""

from __future__ import annotations

import pytest

from codex.tasks.exports import issue_state
from codex.tasks.jobs import advance_task
from codex.tasks.models import AgentQuestion, Analysis, BuildResult, Learning, Triage
from codex.tasks.runners import PhaseResult
from tests.factories import make_task, put_in_state
from tests.phase_runner import review

pytestmark = pytest.mark.django_db

SECTIONS = [
    "version",
    "issue",
    "pipeline",
    "triage",
    "analysis",
    "writer",
    "build",
    "review",
    "commit",
    "communication",
    "learnings",
]


def test_it_has_the_specs_sections_in_order():
    assert list(issue_state(make_task())) == SECTIONS


def test_triage_analysis_build_questions_and_learnings_are_exported():
    task = make_task(issue_number=42)
    Triage.objects.create(task=task, type="BUG_FIX", scope="SMALL", complexity="simple")
    Analysis.objects.create(
        task=task,
        files=[{"path": "src/Slider.tsx", "purpose": "slider", "action": "modify"}],
        must_not_do=["Don't refactor the existing state management"],
        test_requirement={"required": True, "location": "tests/Slider.test.tsx"},
        brief="Full markdown brief",
    )
    BuildResult.objects.create(
        task=task,
        cycle=1,
        tests_passed=True,
        commands_run=[BuildResult.command("npm test", 0, "ok")],
    )
    AgentQuestion.objects.create(
        task=task, from_role="writer", to_role="analyst", question="Where?"
    )
    Learning.objects.create(
        repository=task.repository,
        task=task,
        agent="writer",
        type="pattern_discovered",
        content="uses lodash debounce",
    )
    state = issue_state(task)
    assert state["issue"]["number"] == 42
    assert state["issue"]["url"] == f"{task.repository.url}/issues/42"
    assert state["issue"]["type"] == "BUG_FIX"
    assert state["triage"] == {
        "completed": True,
        "scope": "SMALL",
        "complexity": "simple",
        "should_proceed": True,
        "rejection_reason": None,
    }
    assert state["analysis"]["must_not_do"] == [
        "Don't refactor the existing state management"
    ]
    assert state["writer"]["test_file"] == "tests/Slider.test.tsx"
    assert state["build"]["commands_run"][0]["command"] == "npm test"
    assert state["communication"]["questions"] == [
        {
            "from": "writer",
            "to": "analyst",
            "question": "Where?",
            "answered": False,
            "answer": None,
        }
    ]
    assert state["learnings"]["observations"][0]["type"] == "pattern_discovered"


def test_pipeline_status_maps_onto_the_specs_four(scripted_runner):
    task = make_task()
    assert issue_state(task)["pipeline"]["status"] == "in_progress"
    put_in_state(task, status="blocked", blocked_reason="unclear scope")
    pipeline = issue_state(task)["pipeline"]
    assert pipeline["status"] == "blocked"
    assert pipeline["blocked_reason"] == "unclear scope"
    put_in_state(task, status="cancelled")
    assert issue_state(task)["pipeline"]["status"] == "failed"


def test_review_verdict_and_feedback_for_writer(scripted_runner):
    scripted_runner.queue(
        "review", PhaseResult(review=review(approve=False, blocking=1))
    )
    task = make_task()
    for _ in range(5):
        advance_task(task.task_id)
    task.refresh_from_db()
    state = issue_state(task)
    assert state["review"]["verdict"] == "REJECTED"
    assert state["review"]["findings"]["issues"][0]["severity"] == "blocking"
    assert state["review"]["feedback_for_writer"] == "see comments"
    assert state["writer"]["previous_feedback"]["message"] == "see comments"
    assert state["pipeline"]["attempt"] == 2
