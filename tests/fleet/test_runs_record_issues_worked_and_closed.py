"""Spec 000 SessionOutcome for Codex's own runs: "issues_worked | Issue numbers
attempted", "issues_closed | Issue numbers successfully closed", "success = true
if len(issues_closed) > 0", "productivity_score | Ratio: (issues_closed * 10 +
files_changed) / tool_count"."""

from __future__ import annotations

import pytest

from codex.fleet.models import AgentRun
from codex.tasks.runners import PhaseResult
from tests.factories import make_task
from tests.pipeline.helpers import run_steps

pytestmark = pytest.mark.django_db


def runs_of(task) -> list[AgentRun]:
    return list(AgentRun.objects.filter(task=task).order_by("started_at", "id"))


def test_every_run_of_an_issue_works_it_and_the_release_closes_it(scripted_runner):
    scripted_runner.queue(
        "release",
        PhaseResult(merged=True, metrics={"tool_count": 4, "files_changed": 1}),
    )
    task = make_task(issue_number=42)

    run_steps(task)

    assert task.status == "completed"
    *working, release = runs_of(task)
    assert [run.issues_worked for run in working] == [[42]] * len(working)
    assert [run.closed_issues for run in working] == [[]] * len(working)
    assert not any(run.success for run in working)
    assert (release.issues_worked, release.closed_issues) == ([42], [42])
    assert release.issues_closed == 1 and release.success
    assert release.productivity_score == (1 * 10 + 1) / 4


def test_a_run_that_does_not_finish_the_task_closes_nothing(scripted_runner):
    scripted_runner.queue("intake", PhaseResult.failed("the repository is gone"))
    task = make_task(issue_number=43)

    run_steps(task)

    (run,) = runs_of(task)
    assert (run.status, run.issues_worked, run.issues_closed) == ("failed", [43], 0)
    assert not run.success


def test_work_from_no_issue_records_no_issue(scripted_runner):
    task = make_task()

    run_steps(task)

    assert task.status == "completed"
    assert {tuple(run.issues_worked) for run in runs_of(task)} == {()}
