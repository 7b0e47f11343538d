"""advance_task may be delivered twice, late, or for a task someone else holds."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from codex.tasks.jobs import advance_task
from codex.tasks.models import (
    Artifact,
    Phase,
    ReviewReport,
    Task,
    VerificationReport,
)
from codex.tasks.runners import PhaseResult
from tests.factories import make_task, put_in_state
from tests.phase_runner import verification
from tests.pipeline.helpers import run_steps

NOW = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
STOPPED = ["paused", "blocked", "escalated", "completed", "failed", "cancelled"]


@pytest.mark.django_db
@pytest.mark.parametrize("status", STOPPED)
def test_a_task_that_is_not_workable_is_left_alone(scripted_runner, status):
    task = put_in_state(make_task(), status=status, phase="implementation")
    events = task.events.count()

    assert advance_task(task.task_id) == f"skipped: {status}"

    row = Task.objects.get(pk=task.pk)
    assert row.version == task.version
    assert row.status == status
    assert row.phase == "implementation"
    assert row.lease_holder is None
    assert task.events.count() == events
    assert scripted_runner.calls == []


@pytest.mark.django_db
def test_a_task_leased_by_another_worker_is_busy(scripted_runner):
    task = make_task()
    other = Task.objects.get(pk=task.pk)
    other.acquire_lease("worker:elsewhere:1")
    version = other.version

    assert advance_task(task.task_id) == "busy"

    row = Task.objects.get(pk=task.pk)
    assert scripted_runner.calls == []
    assert row.status == "pending"
    assert row.version == version
    assert row.lease_holder == "worker:elsewhere:1"


@pytest.mark.django_db
def test_an_in_progress_task_leased_by_another_worker_is_busy(scripted_runner):
    task = make_task()
    advance_task(task.task_id)
    other = Task.objects.get(pk=task.pk)
    other.acquire_lease("worker:elsewhere:1")

    assert advance_task(task.task_id) == "busy"

    assert scripted_runner.calls == [(task.task_id, "intake")]
    assert Task.objects.get(pk=task.pk).phase == "planning"


@pytest.mark.django_db
def test_an_expired_lease_of_another_worker_is_taken_over(
    scripted_runner, time_machine
):
    time_machine.move_to(NOW, tick=False)
    task = make_task()
    other = Task.objects.get(pk=task.pk)
    other.acquire_lease("worker:crashed:1")
    time_machine.move_to(NOW + timedelta(seconds=59), tick=False)
    assert advance_task(task.task_id) == "busy"
    time_machine.move_to(NOW + timedelta(seconds=60), tick=False)

    assert advance_task(task.task_id) == "in_progress/planning"

    task.refresh_from_db()
    assert task.lease_holder is None
    lease_event = task.events.get(kind="lease")
    assert lease_event.data["previous_holder"] == "worker:crashed:1"


@pytest.mark.django_db
def test_an_unknown_task_id_is_missing(scripted_runner):
    assert advance_task("FEAT-20250101-zzzzzz") == "missing"
    assert scripted_runner.calls == []


@pytest.mark.django_db
def test_a_redelivered_job_after_completion_changes_nothing(scripted_runner):
    task = make_task()
    run_steps(task)
    version = task.version
    events = task.events.count()

    assert advance_task(task.task_id) == "skipped: completed"
    assert advance_task(task.task_id) == "skipped: completed"

    task.refresh_from_db()
    assert task.version == version
    assert task.events.count() == events
    assert len(scripted_runner.calls) == 6


@pytest.mark.django_db
def test_running_the_intake_step_twice_stores_spec_md_once(scripted_runner):
    task = make_task()
    advance_task(task.task_id)
    # The step's outcome is lost (as if a worker redid it): intake runs again.
    put_in_state(task, phase=Phase.INTAKE)

    assert advance_task(task.task_id) == "in_progress/planning"

    assert [phase for _, phase in scripted_runner.calls] == ["intake", "intake"]
    assert Artifact.objects.filter(task=task, name="spec.md").count() == 1
    task.refresh_from_db()
    assert task.phase_progress["intake"]["output_paths"] == [
        f"agent-spec/{task.task_id}/spec.md"
    ]


@pytest.mark.django_db
def test_running_the_planning_step_twice_stores_its_documents_once(scripted_runner):
    task = make_task()
    advance_task(task.task_id)
    advance_task(task.task_id)
    put_in_state(task, phase=Phase.PLANNING)

    assert advance_task(task.task_id) == "in_progress/implementation"

    names = list(
        Artifact.objects.filter(task=task)
        .order_by("name")
        .values_list("name", flat=True)
    )
    assert names == ["plan.md", "spec.md", "tasks.md"]


@pytest.mark.django_db
def test_running_the_verification_step_twice_keeps_one_report_per_cycle(
    scripted_runner,
):
    failing = PhaseResult(verification=verification(approve=False))
    scripted_runner.queue("verification", failing, failing)
    task = make_task()
    for _ in range(3):
        advance_task(task.task_id)
    task.refresh_from_db()
    assert task.phase == "verification"
    assert advance_task(task.task_id) == "in_progress/implementation"
    # The same cycle is run again (as if its outcome were redelivered).
    put_in_state(task, phase=Phase.VERIFICATION, verification_cycles=0)

    assert advance_task(task.task_id) == "in_progress/implementation"

    assert VerificationReport.objects.filter(task=task).count() == 1
    assert VerificationReport.objects.get(task=task).cycle == 1
    assert ReviewReport.objects.filter(task=task).count() == 0


@pytest.mark.django_db
def test_each_call_makes_one_step_of_progress(scripted_runner):
    task = make_task()

    first = advance_task(task.task_id)
    second = advance_task(task.task_id)

    assert (first, second) == ("in_progress/planning", "in_progress/implementation")
    task.refresh_from_db()
    assert task.phase_progress["intake"]["agent_invocations"] == 1
    assert task.phase_progress["planning"]["agent_invocations"] == 1
    assert task.artifacts.count() == 3
