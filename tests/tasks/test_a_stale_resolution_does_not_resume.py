"""Spec 002 §3.4: "escalated → in_progress | Human resolved | Resolution
provided, task not stale | NOT idempotent: Resolution consumed on first
transition". A resolution answers the task as it was asked: a task whose phase
moved since cannot resume on it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from django_fsm import TransitionNotAllowed

from codex.tasks.models import Task
from tests.factories import make_task, put_in_state

pytestmark = pytest.mark.django_db


def escalated(phase: str = "review") -> Task:
    task = put_in_state(make_task(), status="in_progress", phase=phase)
    task.perform("escalate", by="agent:reviewer", reason="which library?")
    return task


def test_a_fresh_resolution_resumes_the_task():
    task = escalated()

    task.resolve_escalation(
        task.escalations.get(), decision="resume", by="user:bob", resolution="ok"
    )

    assert Task.objects.get(pk=task.pk).status == "in_progress"


def test_a_task_whose_phase_moved_since_the_question_cannot_resume_on_it():
    task = escalated("review")
    put_in_state(task, phase="implementation")

    with pytest.raises(TransitionNotAllowed):
        task.resolve_escalation(
            task.escalations.get(), decision="resume", by="user:bob", resolution="ok"
        )

    row = Task.objects.get(pk=task.pk)
    assert row.status == "escalated"
    assert row.escalations.get().is_open  # the answer was not consumed


def test_a_task_that_entered_its_phase_again_since_cannot_resume_on_it():
    task = escalated("review")
    put_in_state(task, phase_entered_at=timezone.now() + timedelta(seconds=1))

    with pytest.raises(TransitionNotAllowed):
        task.resolve_escalation(
            task.escalations.get(), decision="resume", by="user:bob", resolution="ok"
        )


def test_a_stale_task_can_still_be_failed_or_cancelled_by_its_answer():
    task = escalated("review")
    put_in_state(task, phase="implementation")

    task.resolve_escalation(task.escalations.get(), decision="cancel", by="user:bob")

    assert Task.objects.get(pk=task.pk).status == "cancelled"
