"""The per-child timeout ("Child timeout: 8 minutes"; docs/children.md): a
child at work longer than children.child_timeout_minutes without reporting
is stopped and reported as timed out, which counts towards the analysis;
the limit is read when it applies, so a value saved in the console binds the
next check."""

from __future__ import annotations

from datetime import timedelta

import pytest
import time_machine
from django.utils import timezone

from codex.children.jobs import close_expired_windows
from codex.configuration.models import Setting
from tests.children.harness import child, fan_out, succeed

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def forge(memory_forge):
    return memory_forge


def test_a_silent_child_is_stopped_after_8_minutes_and_reported(forge):
    row = fan_out(2, window=timedelta(hours=1))
    succeed(forge, row, "C1", 11)
    c2 = child(row, "C2")

    with time_machine.travel(timezone.now() + timedelta(minutes=7)):
        close_expired_windows()
    c2.task.refresh_from_db()
    assert c2.task.status == "pending"  # not yet: 7 of 8 minutes

    with time_machine.travel(timezone.now() + timedelta(minutes=9)):
        close_expired_windows()
    c2.task.refresh_from_db()
    assert c2.task.status == "cancelled"
    [report] = [
        b for b in forge.bodies(row.issue_number) if b.startswith("🤖 Child C2")
    ]
    assert report.startswith("🤖 Child C2 failed: cancelled: timed out")
    assert "children.child_timeout_minutes" in report
    row.refresh_from_db()
    # Both reported: the analysis ran on them, not waiting for the window.
    assert row.state == "complete" and row.analysis.failed_children == ["C2"]


def test_the_timeout_is_read_live_from_configuration(forge):
    row = fan_out(2, window=timedelta(hours=1))
    Setting.objects.put("children.child_timeout_minutes", 30, actor="user:alice")
    with time_machine.travel(timezone.now() + timedelta(minutes=9)):
        close_expired_windows()
    assert child(row, "C1").task.status == "pending"
    with time_machine.travel(timezone.now() + timedelta(minutes=31)):
        close_expired_windows()
    assert {child(row, c).task.status for c in ("C1", "C2")} == {"cancelled"}


def test_a_child_that_reported_is_not_timed_out(forge):
    row = fan_out(2, window=timedelta(hours=1))
    succeed(forge, row, "C1", 11)
    with time_machine.travel(timezone.now() + timedelta(minutes=9)):
        close_expired_windows()
    timed_out = child(row, "C1").task.events.filter(reason__contains="timed out")
    assert not timed_out.exists()
    assert child(row, "C2").task.events.filter(reason__contains="timed out").exists()
