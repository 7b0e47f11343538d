"""The implementation phase's CI policy on GitHub: pending waits and is read
again without the agent, none passes or escalates per CODEX_CI_NONE_PASSES.
GitHub over `responses` with its real payload shapes; git for real."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from responses import matchers

from agents.roles.base import RoleContext, Step
from agents.roles.developer.pull_request import ci_policy, recheck_ci
from codex.tasks.pipeline import apply_result
from codex.tasks.runners import PhaseResult
from integrations.git import run_git
from integrations.github.forge import GitHubForge
from tests.factories import make_task, put_in_state
from tests.integrations.git.helpers import clone, commit_file, make_remote
from tests.integrations.github.payloads import (
    REPO_API,
    check_runs,
    combined_status,
    pull_request,
)

pytestmark = pytest.mark.django_db

NO_STATUSES = combined_status("pending", [])


@pytest.fixture
def task(repository):
    task = make_task(repository)
    return put_in_state(task, "in_progress", "implementation", total_tasks=1)


@pytest.fixture
def worktree(tmp_path, task):
    """The task's worktree: its branch one commit ahead of origin/main."""
    remote = make_remote(tmp_path / "remotes")
    path = clone(remote, tmp_path / "worktree")
    run_git(["checkout", "--quiet", "-b", f"codex/{task.task_id}", "origin/main"], path)
    commit_file(path, "calc.py", "x = 1\n", "T001: x")
    return path


def step(task, forge, worktree, branch):
    """The developer's step as the phase runner prepares it."""
    context = RoleContext(task=task, branch=branch)
    return Step(
        task=task, forge=forge, branch=branch, worktree=worktree, context=context
    )


def checks(github, sha, status, *runs):
    github.get(f"{REPO_API}/commits/{sha}/status", json=status)
    github.get(f"{REPO_API}/commits/{sha}/check-runs", json=check_runs(*runs))


def apply(task, result: PhaseResult) -> None:
    """What advance_task does with a step's result: under the task's lease."""
    task.acquire_lease("test", attempts=1)
    apply_result(task, result, by="test")
    task.save(release_lease=True)


def done(task) -> PhaseResult:
    return PhaseResult(current_task=1, branch=f"codex/{task.task_id}", pr_url="u")


def test_pending_ci_blocks_then_is_read_again_without_the_agent(
    github, settings, task, worktree
):
    settings.CODEX_CI_PENDING_RETRY_SECONDS = 240
    sha = run_git(["rev-parse", "HEAD"], worktree).strip()
    branch = f"codex/{task.task_id}"

    waiting = ci_policy(task, done(task), "pending", sha)
    assert waiting.outcome == "blocked"
    assert waiting.retry_after == timedelta(seconds=240)
    apply(task, waiting)
    assert task.status == "blocked"
    assert task.errors[-1]["message"].startswith(f"CI pending on {sha} (1 of 1")

    # The retry time comes; the next step only reads GitHub again.
    put_in_state(task, "in_progress")
    github.get(
        f"{REPO_API}/pulls",
        json=[pull_request(7, head=branch, sha=sha)],
        match=[
            matchers.query_param_matcher(
                {"head": f"Codertocat:{branch}", "state": "all", "per_page": "100"}
            )
        ],
    )
    checks(
        github, sha, combined_status("success", ["ci/build"]), ("completed", "success")
    )
    forge = GitHubForge(task.repository)

    result = recheck_ci(step(task, forge, worktree, branch))

    assert result is not None and result.outcome == "done"
    assert result.ci_passing is True and result.current_task == 1
    assert result.commits == [sha]
    assert result.pr_url.endswith("/pull/7")
    apply(task, result)
    assert (task.status, task.phase) == ("in_progress", "verification")


def test_still_pending_blocks_again_and_the_retry_limit_bounds_it(
    github, settings, task, worktree
):
    settings.CODEX_MAX_RETRIES = 1
    sha = run_git(["rev-parse", "HEAD"], worktree).strip()
    branch = f"codex/{task.task_id}"
    apply(task, ci_policy(task, done(task), "pending", sha))
    put_in_state(task, "in_progress")
    github.get(f"{REPO_API}/pulls", json=[pull_request(7, head=branch, sha=sha)])
    checks(github, sha, NO_STATUSES, ("in_progress", None))

    result = recheck_ci(step(task, GitHubForge(task.repository), worktree, branch))

    assert result.outcome == "blocked"
    apply(task, result)
    assert task.status == "escalated"
    assert "retry limit reached" in task.escalations.get().detail


def test_a_moved_worktree_runs_the_agent_instead(github, task, worktree):
    sha = run_git(["rev-parse", "HEAD"], worktree).strip()
    apply(task, ci_policy(task, done(task), "pending", sha))
    put_in_state(task, "in_progress")
    commit_file(worktree, "more.py", "y = 2\n", "more")

    forge = GitHubForge(task.repository)
    assert recheck_ci(step(task, forge, worktree, "b")) is None
    assert len(github.calls) == 0


def test_an_older_pending_block_does_not_count_after_the_phase_restarts(task, worktree):
    sha = run_git(["rev-parse", "HEAD"], worktree).strip()
    apply(task, ci_policy(task, done(task), "pending", sha))
    put_in_state(
        task, "in_progress", phase_entered_at=timezone.now() + timedelta(seconds=1)
    )

    assert recheck_ci(step(task, None, worktree, "b")) is None


@pytest.mark.parametrize(
    ("none_passes", "finished", "expected"),
    [
        (True, True, ("done", True)),
        (False, True, ("escalate", None)),
        (False, False, ("done", None)),
    ],
)
def test_no_checks_configured_follows_the_setting(
    settings, task, none_passes, finished, expected
):
    settings.CODEX_CI_NONE_PASSES = none_passes
    result = done(task)
    result.current_task = 1 if finished else 0

    applied = ci_policy(task, result, "none", "a" * 40)

    assert (applied.outcome, applied.ci_passing) == expected
    if applied.outcome == "escalate":
        assert "CODEX_CI_NONE_PASSES is off" in applied.reason


def test_failing_ci_is_not_passing_and_pending_with_work_left_goes_on(task):
    assert ci_policy(task, done(task), "failure", "a").ci_passing is False
    unfinished = done(task)
    unfinished.current_task = 0
    applied = ci_policy(task, unfinished, "pending", "a")
    assert applied.outcome == "done" and applied.ci_passing is None
