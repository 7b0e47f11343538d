"""Workers play backlog rounds (spec 000's parallel agent manager): free
sessions claim open cached issues and start one task each; three empty rounds
end the run; a round that finds work resets the count."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
import time_machine
from django.core.exceptions import ValidationError
from django.utils import timezone

from codex.claims.jobs import expire_stale_claims, play_backlog_rounds
from codex.claims.models import BacklogRun, BacklogState, ClaimState, IssueClaim
from codex.events.models import Event, EventKind
from codex.github.models import GitHubIssue
from codex.tasks.models import Task
from tests.claims.backlog_helpers import backlog_tasks, cache_open_issues, finish
from tests.claims.factories import make_backlog_run, make_claim, put_claim_in_state
from tests.factories import make_repository

pytestmark = pytest.mark.django_db


def issue_numbers(tasks) -> list[int]:
    return [task.issue_number for task in tasks]


def test_2_sessions_over_5_issues_keep_at_most_2_tasks_going():
    run = make_backlog_run(sessions=2)
    cache_open_issues(run.repository, 1, 2, 3, 4, 5)

    assert play_backlog_rounds() == 1
    assert issue_numbers(backlog_tasks(run)) == [1, 2]

    # Both sessions busy: nothing claimed, and the round does not count as
    # empty (the sessions did not look at the backlog).
    assert play_backlog_rounds() == 0
    run.refresh_from_db()
    assert (run.rounds, run.consecutive_empty_rounds) == (1, 0)
    assert Task.objects.count() == 2

    first, second = backlog_tasks(run)
    finish(first)
    assert play_backlog_rounds() == 1
    assert issue_numbers(backlog_tasks(run)) == [1, 2, 3]  # one free session

    finish(second, status="failed")  # failed counts as finished too
    finish(*backlog_tasks(run)[2:])
    assert play_backlog_rounds() == 1
    assert issue_numbers(backlog_tasks(run)) == [1, 2, 3, 4, 5]
    run.refresh_from_db()
    assert (run.state, run.rounds, run.issues_found) == (BacklogState.RUNNING, 3, 5)


def test_a_started_task_is_the_issues_task():
    run = make_backlog_run()
    (issue,) = cache_open_issues(run.repository, 7)

    run.play_round()

    (task,) = backlog_tasks(run)
    assert (task.title, task.description) == (issue.title, issue.body)
    assert (task.created_by, task.issue_number) == ("api", 7)
    assert task.idempotency_key == f"backlog:{run.repository.pk}:7"
    created = Event.objects.get(task=task, kind=EventKind.CREATED)
    assert created.actor == f"backlog:{run.pk}"
    claim = IssueClaim.objects.get(repository=run.repository, number=7)
    assert claim.state == ClaimState.CLAIMED
    assert claim.claimed_by == f"backlog-{run.pk}-r1-s1"
    round_event = Event.objects.filter(subject=f"backlog:{run.pk}").last()
    assert round_event.data["started"] == [task.task_id]


def test_three_empty_rounds_end_the_run():
    run = make_backlog_run(sessions=2)
    cache_open_issues(run.repository, 1)
    play_backlog_rounds()
    finish(*backlog_tasks(run))

    for expected in (BacklogState.COUNTING, BacklogState.COUNTING):
        assert play_backlog_rounds() == 1
        run.refresh_from_db()
        assert run.state == expected
    assert play_backlog_rounds() == 1
    run.refresh_from_db()
    assert (run.state, run.consecutive_empty_rounds) == (BacklogState.TERMINATED, 3)
    # A terminated run plays no more rounds.
    cache_open_issues(run.repository, 2)
    assert play_backlog_rounds() == 0
    assert Task.objects.count() == 1


def test_a_round_that_finds_work_resets_the_count():
    run = make_backlog_run()
    play_backlog_rounds()
    play_backlog_rounds()
    run.refresh_from_db()
    assert (run.state, run.consecutive_empty_rounds) == (BacklogState.COUNTING, 2)

    cache_open_issues(run.repository, 9)  # the sync found a new issue
    play_backlog_rounds()
    run.refresh_from_db()
    assert (run.state, run.consecutive_empty_rounds) == (BacklogState.RUNNING, 0)

    finish(*backlog_tasks(run))
    play_backlog_rounds()
    play_backlog_rounds()
    run.refresh_from_db()
    assert run.state == BacklogState.COUNTING  # only 2 empty since the reset
    play_backlog_rounds()
    run.refresh_from_db()
    assert run.state == BacklogState.TERMINATED


def test_a_worker_dying_mid_round_leaves_nothing_and_the_redelivery_starts_once():
    run = make_backlog_run(sessions=2)
    cache_open_issues(run.repository, 1, 2)

    killed = RuntimeError("worker killed")
    with (
        mock.patch.object(BacklogRun, "record_round", side_effect=killed),
        pytest.raises(RuntimeError),
    ):
        run.play_round()
    assert Task.objects.count() == 0
    assert not IssueClaim.objects.filter(state=ClaimState.CLAIMED).exists()

    assert play_backlog_rounds() == 1  # the redelivered job
    assert play_backlog_rounds() == 0
    assert issue_numbers(Task.objects.order_by("issue_number")) == [1, 2]


def test_an_issue_whose_claim_ran_out_while_its_task_runs_is_not_started_again():
    run = make_backlog_run(sessions=5)
    cache_open_issues(run.repository, 1, 2)
    play_backlog_rounds()
    assert Task.objects.count() == 2

    with time_machine.travel(timezone.now() + timedelta(minutes=31)):
        assert expire_stale_claims() == 2  # the claims' 30-minute TTL is over
        assert play_backlog_rounds() == 1  # three sessions free, nothing to do

    assert Task.objects.count() == 2
    run.refresh_from_db()
    assert run.consecutive_empty_rounds == 1


def test_another_run_on_the_repository_does_not_start_the_same_issue():
    repository = make_repository()
    cache_open_issues(repository, 1, 2, 3)
    first = make_backlog_run(repository, sessions=2)
    second = make_backlog_run(repository, sessions=2)

    play_backlog_rounds()

    assert sorted(issue_numbers(Task.objects.all())) == [1, 2, 3]
    assert not set(first.tasks.all()) & set(second.tasks.all())


def test_only_open_unblocked_issues_of_the_run_repository_are_claimed():
    run = make_backlog_run(sessions=5)
    cache_open_issues(run.repository, 1, 2, 3)
    GitHubIssue.objects.filter(repository=run.repository, number=2).update(
        state="closed"
    )
    make_claim(run.repository, 3, state=ClaimState.BLOCKED)
    make_claim(run.repository, 4)  # a claim row, but not an open cached issue
    cache_open_issues(make_repository(), 5)  # someone else's repository

    run.play_round()

    assert issue_numbers(backlog_tasks(run)) == [1]


def test_a_held_claim_is_left_to_its_session():
    run = make_backlog_run(sessions=2)
    cache_open_issues(run.repository, 1, 2)
    held = make_claim(run.repository, 1)
    IssueClaim.objects.claim(run.repository, held.number, "someone-else")

    run.play_round()

    assert issue_numbers(backlog_tasks(run)) == [2]


def test_a_long_issue_title_is_cut_to_the_task_title_limit():
    run = make_backlog_run()
    (issue,) = cache_open_issues(run.repository, 1)
    GitHubIssue.objects.filter(pk=issue.pk).update(title="x" * 256)

    run.play_round()

    assert backlog_tasks(run)[0].title == "x" * 200


def test_an_issue_that_is_no_valid_request_is_a_failed_attempt():
    run = make_backlog_run()
    cache_open_issues(run.repository, 1)
    refused = ValidationError({"title": "nope"})

    with mock.patch.object(
        type(Task.objects), "create_from_request", side_effect=refused
    ):
        outcome = run.play_round()

    assert outcome.tasks == [] and len(outcome.claims) == 1
    claim = IssueClaim.objects.get(repository=run.repository, number=1)
    assert (claim.state, claim.failure_count) == (ClaimState.FAILED, 1)
    assert "not a valid task request" in claim.failure_reasons[0]
    run.refresh_from_db()
    assert run.consecutive_empty_rounds == 0  # the session did find an issue


def test_a_stopped_run_is_not_played():
    run = make_backlog_run()
    cache_open_issues(run.repository, 1)
    run.perform("stop", by="user:alice")
    assert play_backlog_rounds() == 0
    assert Task.objects.count() == 0


def test_one_failing_run_does_not_keep_the_others_from_their_round():
    broken = make_backlog_run()
    healthy = make_backlog_run()
    cache_open_issues(healthy.repository, 1)
    real = BacklogRun.play_round

    def play(self, **kwargs):
        if self.pk == broken.pk:
            raise RuntimeError("boom")
        return real(self, **kwargs)

    with (
        mock.patch.object(BacklogRun, "play_round", play),
        pytest.raises(RuntimeError, match="boom"),
    ):
        play_backlog_rounds()

    assert issue_numbers(backlog_tasks(healthy)) == [1]


def test_claims_past_their_failure_limit_stay_blocked():
    run = make_backlog_run()
    cache_open_issues(run.repository, 1)
    claim = make_claim(run.repository, 1)
    put_claim_in_state(claim, ClaimState.BLOCKED, failure_count=3)
    assert play_backlog_rounds() == 1
    assert Task.objects.count() == 0
