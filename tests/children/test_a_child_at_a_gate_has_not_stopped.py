"""A child waiting at a gate (a plan approval, a spend cap) is `escalated`
with the gate's escalation, but it has not stopped: it does not report a
failure to its parent (docs/children.md, "How children report"); a child
escalated for any other reason does."""

from __future__ import annotations

import pytest

from codex.children.reporting import report_body
from tests.children.harness import child, fan_out
from tests.factories import put_in_state, waiting_for_plan_approval

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_child_waiting_for_its_plan_approval_does_not_report(memory_forge):
    row = fan_out(2)
    c1 = child(row, "C1")
    waiting_for_plan_approval(c1.task)
    c1.task.refresh_from_db()
    assert c1.task.status == "escalated"
    assert report_body(c1) is None
    # No report job was queued by the gate's transition either.
    assert not row.reports.exists()
    assert not any(
        b.startswith("🤖 Child") for b in memory_forge.bodies(row.issue_number)
    )


def test_a_child_escalated_otherwise_reports_a_failure(memory_forge):
    row = fan_out(2)
    c2 = child(row, "C2")
    put_in_state(c2.task, status="in_progress", phase="review")
    c2.task.perform("escalate", by="agent:reviewer", reason="review cycles exhausted")
    outcome, text = report_body(child(row, "C2"))
    assert outcome == "failure" and text.startswith("🤖 Child C2 failed: escalated")
