"""What happens when children fail, a merge is refused or the window closes
(docs/children.md, "When the analysis runs, and what follows"): spec 001's
"Strategy Decision Logic" carried out, merges in order, the analysis on the
parent's issue, children not chosen cancelled, the parent completed or
escalated."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from codex.children.jobs import close_expired_windows
from codex.configuration.models import Setting
from codex.tasks.models import Escalation, Task
from tests.children.harness import ADVANCE, child, fail, fan_out, succeed

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def forge(memory_forge):
    return memory_forge


def parent_of(fan_out_row) -> Task:
    return Task.objects.get(pk=fan_out_row.parent_id)


def test_two_of_three_succeeding_merge_partially_and_complete_the_parent(forge):
    row = fan_out(3)
    # Each child has its own GitHub issue, a sub-issue of the parent's.
    assert len(forge.issues) == 4 and len(forge.sub_issues) == 3
    succeed(forge, row, "C2", 12)
    fail(row, "C3")
    succeed(forge, row, "C1", 11)
    row.refresh_from_db()
    assert row.state == "complete"
    assert row.analysis.merge_strategy == "MERGE_PARTIAL"
    assert forge.merged == [11, 12]  # the analysis's order, not arrival order
    parent = parent_of(row)
    assert parent.status == "completed"
    assert forge.closed == [row.issue_number]
    bodies = forge.bodies(row.issue_number)
    assert sum(b.startswith("🤖 Child") for b in bodies) == 3
    assert any("Completion analysis: MERGE_PARTIAL" in b for b in bodies)
    # The merged children take their next step (their release completes them).
    steps = {step for step in forge.steps if step[0] == ADVANCE}
    assert {(ADVANCE, child(row, n).task.task_id) for n in ("C1", "C2")} <= steps


def test_a_failed_child_of_two_is_no_merge_and_escalates_the_parent(forge):
    row = fan_out(2)
    succeed(forge, row, "C1", 21)
    fail(row, "C2")
    row.refresh_from_db()
    assert row.analysis.merge_strategy == "NO_MERGE"
    assert forge.merged == []
    parent = parent_of(row)
    assert parent.status == "escalated"
    assert "NO_MERGE" in Escalation.objects.get(task=parent).detail
    # The successful child's work is not merged: it is cancelled, not left
    # waiting at release for ever.
    assert child(row, "C1").task.status == "cancelled"
    assert forge.closed == []
    assert "failed: failed" in forge.bodies(row.issue_number)[1]


def test_a_refused_merge_stops_the_rest_and_escalates(forge):
    row = fan_out(2)
    forge.refuse.add(31)
    succeed(forge, row, "C1", 31)
    succeed(forge, row, "C2", 32)
    row.refresh_from_db()
    assert row.analysis.merge_strategy == "MERGE_ALL"
    assert forge.merged == []  # #32 is not merged after #31 was refused
    parent = parent_of(row)
    assert parent.status == "escalated"
    analysis = forge.bodies(row.issue_number)[-1]
    assert "Stopped: pull request #31 was not merged" in analysis
    # Both were chosen: a person decides about them, nothing is cancelled.
    assert {child(row, n).task.status for n in ("C1", "C2")} == {"in_progress"}


def test_the_window_closing_analyses_what_arrived_and_cancels_the_rest(forge):
    # A child's own timeout (8 minutes) would stop C2 before the 10-minute
    # window closes: give children longer to see the window at work.
    Setting.objects.put("children.child_timeout_minutes", 60, actor="test")
    row = fan_out(2)
    succeed(forge, row, "C1", 41)
    working = child(row, "C2").task
    row.refresh_from_db()
    assert row.state == "awaiting_completions"
    assert close_expired_windows(timezone.now()) == 0  # not yet
    assert close_expired_windows(row.deadline + timedelta(seconds=1)) == 1
    row.refresh_from_db()
    assert row.analysis.trigger == "timeout"
    assert row.analysis.discrepancy == "underflow"
    assert forge.merged == [41]
    working.refresh_from_db()
    assert working.status == "cancelled"
    assert parent_of(row).status == "completed"


def test_the_window_is_configurable_in_the_database(forge):
    Setting.objects.put("children.window_minutes", 30, actor="test")
    row = fan_out(1)
    assert row.deadline - row.window_opened_at == timedelta(minutes=30)


def test_the_analysis_timeout_is_configurable_in_the_database(forge):
    Setting.objects.put("children.analysis_timeout_minutes", 2, actor="test")
    row = fan_out(1)
    # The analysis started and its worker died in the model call: the
    # fan-out stays analysing until the timeout hands it to the rules.
    with transaction.atomic():
        row._locked()._run("trigger_manually", by="test")
    row.refresh_from_db()
    assert row.state == "analyzing"
    started = row.analysis_started_at
    assert close_expired_windows(started + timedelta(minutes=1)) == 0
    assert close_expired_windows(started + timedelta(minutes=2)) == 1
    row.refresh_from_db()
    assert row.state == "complete"
    assert row.analysis.decided_by == "rule"
