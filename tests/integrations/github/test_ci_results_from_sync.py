"""Issue 5: the sync keeps check results current: a task waiting in
implementation learns its CI result from the forge when a webhook was missed."""

from __future__ import annotations

import pytest

from codex.tasks.ci_results import refresh_ci_results
from tests.factories import make_task, put_in_state
from tests.integrations.github.payloads import REPO_API

pytestmark = pytest.mark.django_db


def waiting_task(repository):
    return put_in_state(
        make_task(repository),
        status="in_progress",
        phase="implementation",
        pr_url="https://github.com/Codertocat/Hello-World/pull/2",
        commits=["6dcb09b5b57875f334f61aebed695e2e4193db5e"],
        ci_passing=None,
    )


def answer(github, *, state: str, runs: list[dict]) -> None:
    sha = "6dcb09b5b57875f334f61aebed695e2e4193db5e"
    github.get(
        f"{REPO_API}/commits/{sha}/status",
        json={"state": state, "total_count": 1 if runs == [] else 0, "statuses": []},
    )
    github.get(
        f"{REPO_API}/commits/{sha}/check-runs",
        json={"total_count": len(runs), "check_runs": runs},
    )


def test_a_finished_successful_run_sets_ci_passing(
    github, repository, django_capture_on_commit_callbacks
):
    task = waiting_task(repository)
    answer(
        github, state="pending", runs=[{"status": "completed", "conclusion": "success"}]
    )
    with django_capture_on_commit_callbacks() as callbacks:
        assert refresh_ci_results(repository) == {"passing": 1, "failing": 0}
    task.refresh_from_db()
    assert task.ci_passing is True
    assert task.lease_holder is None
    assert len(callbacks) == 1  # the next step is enqueued


def test_a_failed_run_sets_ci_failing(github, repository):
    task = waiting_task(repository)
    answer(
        github, state="pending", runs=[{"status": "completed", "conclusion": "failure"}]
    )
    assert refresh_ci_results(repository) == {"passing": 0, "failing": 1}
    task.refresh_from_db()
    assert task.ci_passing is False


def test_pending_checks_change_nothing(github, repository):
    task = waiting_task(repository)
    answer(
        github, state="pending", runs=[{"status": "in_progress", "conclusion": None}]
    )
    assert refresh_ci_results(repository) == {"passing": 0, "failing": 0}
    task.refresh_from_db()
    assert task.ci_passing is None


def test_a_task_held_by_a_worker_is_left_for_the_next_round(github, repository):
    task = waiting_task(repository)
    task.acquire_lease("worker:x")
    answer(
        github, state="pending", runs=[{"status": "completed", "conclusion": "success"}]
    )
    assert refresh_ci_results(repository) == {"passing": 0, "failing": 0}
    task.refresh_from_db()
    assert task.ci_passing is None
