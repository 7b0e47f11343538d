"""Intake that needs clarification escalates; the answer lets the task go on."""

from __future__ import annotations

import pytest

from codex.tasks.jobs import advance_task
from codex.tasks.models import Escalation
from codex.tasks.runners import PhaseResult
from tests.factories import make_task
from tests.pipeline.helpers import run_steps, transitions

QUESTIONS = ["Which identity provider?", "Is SSO in scope?"]


def needs_clarification() -> PhaseResult:
    return PhaseResult(
        needs_clarification=True,
        questions=QUESTIONS,
        artifacts={"spec.md": "# Feature: draft\n\nOpen questions below.\n"},
    )


@pytest.mark.django_db
def test_intake_needing_clarification_escalates_with_the_questions(scripted_runner):
    scripted_runner.queue("intake", needs_clarification())
    task = make_task()

    results = run_steps(task)

    assert results == ["escalated/intake"]
    assert task.status == "escalated"
    assert task.phase == "intake"
    assert task.needs_clarification is True
    assert task.lease_holder is None
    escalation = Escalation.objects.get(task=task)
    assert escalation.reason == "needs_clarification"
    assert escalation.phase == "intake"
    assert escalation.questions == QUESTIONS
    assert escalation.is_open
    # The draft spec is kept for the person who answers.
    assert task.artifacts.filter(name="spec.md").count() == 1
    assert transitions(task, "status")[-1] == ("in_progress", "escalated")
    event = task.events.in_order().filter(kind="transition").last()
    assert event.data["questions"] == QUESTIONS


@pytest.mark.django_db
def test_a_second_advance_of_the_escalated_task_is_skipped(scripted_runner):
    scripted_runner.queue("intake", needs_clarification())
    task = make_task()
    run_steps(task)

    assert advance_task(task.task_id) == "skipped: escalated"
    assert len(scripted_runner.calls) == 1


@pytest.mark.django_db
def test_answering_the_questions_resumes_the_task_to_completion(
    scripted_runner, django_capture_on_commit_callbacks, enqueued
):
    scripted_runner.queue("intake", needs_clarification())
    task = make_task()
    run_steps(task)
    escalation = Escalation.objects.get(task=task)

    with django_capture_on_commit_callbacks(execute=True):
        task.resolve_escalation(
            escalation,
            decision="resume",
            by="user:x",
            answers=["Okta", "No"],
        )

    task.refresh_from_db()
    assert task.status == "in_progress"
    assert task.phase == "intake"
    escalation.refresh_from_db()
    assert escalation.answers == ["Okta", "No"]
    assert escalation.resolved_by_label == "user:x"
    assert escalation.consumed_at is not None
    assert [call[0] for call in enqueued] == [
        ("codex.tasks.jobs.advance_task", task.task_id)
    ]

    results = run_steps(task)

    assert results[0] == "in_progress/planning"
    assert task.status == "completed"
    assert task.needs_clarification is False
    assert [phase for _, phase in scripted_runner.calls].count("intake") == 2
    # The clarified spec is a new version of spec.md; the draft is kept.
    assert task.artifacts.filter(name="spec.md").count() == 2
    assert transitions(task, "status") == [
        ("pending", "in_progress"),
        ("in_progress", "escalated"),
        ("escalated", "in_progress"),
        ("in_progress", "completed"),
    ]


@pytest.mark.django_db
def test_a_second_clarification_round_escalates_again(scripted_runner):
    scripted_runner.queue("intake", needs_clarification(), needs_clarification())
    task = make_task()
    run_steps(task)
    task.resolve_escalation(
        Escalation.objects.get(task=task), decision="resume", by="user:x"
    )

    results = run_steps(task)

    assert results == ["escalated/intake"]
    assert Escalation.objects.filter(task=task).count() == 2
    assert Escalation.objects.filter(task=task).open().count() == 1
