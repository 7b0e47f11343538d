"""Spec 000 §5 BacklogState: running --all sessions empty--> counting
--threshold (default 3) reached--> terminated; any work resets to running."""

from __future__ import annotations

import pytest
from django_fsm import TransitionNotAllowed

from codex.claims.models import BacklogRun, BacklogState, IssueClaim
from codex.core.store.refusals import VersionConflict
from codex.events.models import Event, EventKind
from tests.claims.backlog_helpers import backlog_tasks, cache_open_issues, finish
from tests.claims.factories import make_backlog_run

pytestmark = pytest.mark.django_db


def test_the_default_threshold_is_3():
    assert make_backlog_run().threshold == 3


def test_three_empty_rounds_terminate_the_run():
    run = make_backlog_run()
    assert run.record_round(0) == BacklogState.COUNTING
    assert run.record_round(0) == BacklogState.COUNTING
    assert run.consecutive_empty_rounds == 2
    assert run.record_round(0) == BacklogState.TERMINATED
    run.refresh_from_db()
    assert (run.state, run.consecutive_empty_rounds, run.rounds) == ("terminated", 3, 3)
    assert run.terminated_at is not None


def test_the_specs_example_2_of_3_then_one_empty_round_terminates():
    run = make_backlog_run()
    run.record_round(0)
    run.record_round(0)
    assert (run.consecutive_empty_rounds, run.threshold) == (2, 3)
    assert run.record_round(0) == BacklogState.TERMINATED


def test_a_round_with_work_resets_the_counter_and_runs_again():
    run = make_backlog_run()
    run.record_round(0)
    run.record_round(0)
    assert run.record_round(4) == BacklogState.RUNNING
    assert run.consecutive_empty_rounds == 0
    run.record_round(0)
    run.record_round(0)
    assert run.state == BacklogState.COUNTING  # only 2 since the reset
    assert run.issues_found == 4 and run.rounds == 5


def test_rounds_with_work_keep_it_running():
    run = make_backlog_run()
    assert run.record_round(2) == BacklogState.RUNNING
    assert run.consecutive_empty_rounds == 0 and run.last_check is not None


def test_a_threshold_of_1_ends_on_the_first_empty_round():
    run = make_backlog_run(threshold=1)
    assert run.record_round(0) == BacklogState.TERMINATED


def test_a_terminated_run_records_no_more_rounds():
    run = make_backlog_run()
    run.perform("stop", by="user:alice")
    with pytest.raises(TransitionNotAllowed):
        run.record_round(1)


def test_two_managers_recording_the_same_round_conflict():
    run = make_backlog_run()
    other = BacklogRun.objects.get(pk=run.pk)
    run.record_round(0)
    with pytest.raises(VersionConflict):
        other.record_round(0)


def test_rounds_and_transitions_are_workflow_events():
    run = make_backlog_run()
    for found in (0, 1, 0, 0, 0):
        run.record_round(found)
    events = Event.objects.filter(subject=f"backlog:{run.pk}").in_order()
    assert {e.kind for e in events} == {EventKind.WORKFLOW}
    assert [e.data.get("transition") for e in events if e.field] == [
        "start_counting",
        "reset",
        "start_counting",
        "terminate",
    ]
    assert [e.data["found"] for e in events if "found" in e.data] == [0, 1, 0, 0, 0]


def test_play_round_claims_one_issue_per_session_until_the_backlog_is_empty():
    run = make_backlog_run(sessions=2)
    cache_open_issues(run.repository, 1, 2, 3)

    assert len(run.play_round().claims) == 2
    finish(*backlog_tasks(run))  # both sessions free again
    assert len(run.play_round().claims) == 1
    assert run.state == BacklogState.RUNNING
    finish(*backlog_tasks(run))
    for _ in range(3):
        assert run.play_round().claims == []
    assert run.state == BacklogState.TERMINATED
    sessions = set(IssueClaim.objects.values_list("claimed_by", flat=True))
    assert sessions == {
        f"backlog-{run.pk}-r1-s1",
        f"backlog-{run.pk}-r1-s2",
        f"backlog-{run.pk}-r2-s1",
    }
