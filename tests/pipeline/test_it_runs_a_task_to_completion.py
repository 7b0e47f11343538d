"""A new task runs intake → … → release → completed on advance_task alone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from codex.tasks.jobs import advance_task
from codex.tasks.models import Artifact, ReviewReport, VerificationReport
from tests.factories import make_task
from tests.phase_runner import ScriptedPhaseRunner
from tests.pipeline.helpers import run_steps, transitions

PHASES = ["intake", "planning", "implementation", "verification", "review", "release"]
# The envelope's current_agent: pm | dev | qa | reviewer | none.
AGENTS = ["pm", "dev", "dev", "qa", "reviewer", "dev"]


@pytest.fixture
def agents_seen(scripted_runner, monkeypatch):
    """(phase, current_agent) as the runner sees the task at each step."""
    seen: list[tuple[str, str]] = []
    original = ScriptedPhaseRunner.run

    def run(self, task):
        seen.append((task.phase, task.current_agent))
        return original(self, task)

    monkeypatch.setattr(ScriptedPhaseRunner, "run", run)
    return seen


@pytest.mark.django_db
def test_a_new_task_runs_to_completion_without_a_person(scripted_runner):
    task = make_task()

    results = run_steps(task)

    assert task.status == "completed"
    assert task.phase == "release"
    assert results[-1] == "completed/release"
    assert len(results) == len(PHASES)
    assert [phase for _, phase in scripted_runner.calls] == PHASES
    assert task.finished_at is not None


@pytest.mark.django_db
def test_the_finished_task_has_its_documents_and_one_report_of_each(
    scripted_runner,
):
    task = make_task()

    run_steps(task)

    names = set(Artifact.objects.filter(task=task).values_list("name", flat=True))
    assert names == {"spec.md", "plan.md", "tasks.md", "release-notes.md"}
    assert Artifact.objects.filter(task=task).count() == 4
    assert VerificationReport.objects.filter(task=task).count() == 1
    assert ReviewReport.objects.filter(task=task).count() == 1
    assert task.verification_reports.get().recommendation == "approve"
    assert task.review_reports.get().assessment == "approve"
    assert task.pr_merged is True
    assert task.pr_url == "https://github.com/acme/web/pull/42"


@pytest.mark.django_db
def test_the_event_log_tells_the_story_in_order(scripted_runner):
    task = make_task()

    run_steps(task)

    assert transitions(task, "status") == [
        ("pending", "in_progress"),
        ("in_progress", "completed"),
    ]
    assert transitions(task, "phase") == list(zip(PHASES, PHASES[1:], strict=False))
    kinds = list(task.events.in_order().values_list("kind", flat=True))
    assert kinds[0] == "created"
    assert "error" not in kinds
    # The status moves bracket every phase move.
    story = [
        (event.field, event.target)
        for event in task.events.in_order().filter(kind="transition")
    ]
    assert story[0] == ("status", "in_progress")
    assert story[-1] == ("status", "completed")
    assert all(
        event.actor.startswith("worker:")
        for event in task.events.in_order().filter(kind="transition")
    )


@pytest.mark.django_db
def test_the_lease_is_released_after_every_step(scripted_runner):
    task = make_task()

    task.refresh_from_db()
    while task.status in ("pending", "in_progress"):
        advance_task(task.task_id)
        task.refresh_from_db()
        assert task.lease_holder is None
        assert task.lease_expires_at is None

    assert task.status == "completed"


@pytest.mark.django_db
def test_current_agent_follows_the_phases(agents_seen):
    task = make_task()
    assert task.current_agent == "none"

    run_steps(task)

    assert agents_seen == list(zip(PHASES, AGENTS, strict=True))
    assert task.current_agent == "none"


@pytest.mark.django_db
def test_phase_progress_marks_every_phase_completed_with_timings(
    scripted_runner, time_machine
):
    start = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
    time_machine.move_to(start, tick=False)
    task = make_task()
    for step in range(1, len(PHASES) + 1):
        advance_task(task.task_id)
        time_machine.move_to(start + timedelta(minutes=step), tick=False)
    task.refresh_from_db()
    assert task.status == "completed"

    for index, phase in enumerate(PHASES):
        progress = task.phase_progress[phase]
        assert progress["status"] == "completed", phase
        assert progress["agent_invocations"] == 1, phase
        # Phase n is entered by step n (at minute n-1) and left by step n+1.
        started = datetime.fromisoformat(progress["started_at"])
        completed = datetime.fromisoformat(progress["completed_at"])
        assert started == start + timedelta(minutes=max(index - 1, 0)), phase
        assert completed == start + timedelta(minutes=index), phase
    assert task.phase_progress["intake"]["output_paths"] == [
        f"agent-spec/{task.task_id}/spec.md"
    ]
    assert task.phase_progress["verification"]["output_paths"] == [
        f"agent-verification/{task.task_id}/report-1.yml"
    ]
    assert task.finished_at == start + timedelta(minutes=len(PHASES) - 1)
