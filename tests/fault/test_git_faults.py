# ruff: noqa: F811 (pytest fixtures are imported, then named as arguments)
"""git faults during a task's steps, through the pipeline.

A task from GitHub issue #1 runs through advance_task with the real
AgentPhaseRunner (tests/fault/pipeline_harness.py); its remote is a bare
repository on disk. What a demanding user expects: the agent's commits are
never lost and never pushed over someone else's; a push that raced another
is rebased when that is clean and handed to a person (with both sets of
commits on the remote) when it is not; a worktree deleted under a running
agent costs a retry, not the task.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from agents.demo import GIT_ENV, git
from agents.phase_runner import worktree_path
from codex.configuration.models.credential import ActiveCredential
from codex.core.errors import Action, make_error
from codex.tasks.jobs import advance_task
from codex.tasks.models import Escalation, Status
from codex.tasks.runners import PhaseResult
from integrations.git import mirror_path

# The fixtures: the bare remote, the model stub, the fake GitHub, the task.
from tests.agents_e2e.conftest import agent_settings, bare_repo, stub  # noqa: F401
from tests.factories import make_task
from tests.fault.pipeline_harness import agents, claimed_task, github, github_env  # noqa: F401
from tests.fault.pipeline_steps import MUL, run_to_the_end, step

pytestmark = pytest.mark.django_db(transaction=True)

NOTES = "Release notes live here.\n"
THEIR_CALC = "def add(a, b):\n    return b + a\n"


def push_as_someone_else(bare: Path, branch: str, name: str, text: str) -> str:
    """Another person commits `name` on main's tip and pushes it to `branch`."""
    work = bare.parent / f"someone-{name}"
    if not work.exists():
        git("clone", "--quiet", str(bare), str(work), cwd=bare.parent)
    git("checkout", "--quiet", "-B", branch, "origin/main", cwd=work)
    (work / name).write_text(text)
    git("add", name, cwd=work)
    git("-c", "commit.gpgsign=false", "commit", "--quiet", "-m", f"{name}", cwd=work)
    git("push", "--quiet", "origin", f"HEAD:refs/heads/{branch}", cwd=work)
    return git("rev-parse", "HEAD", cwd=work).strip()


def branch_log(bare: Path, ref: str) -> list[str]:
    return git("log", "--format=%H %s", ref, cwd=bare).splitlines()


def is_ancestor(bare: Path, older: str, newer: str) -> bool:
    return (
        subprocess.run(
            ["git", "merge-base", "--is-ancestor", older, newer],
            cwd=bare,
            env=GIT_ENV,
            check=False,
        ).returncode
        == 0
    )


def test_a_push_racing_someone_elses_is_rebased_onto_it_and_the_task_completes(
    github, agents, claimed_task, bare_repo
):
    task = claimed_task
    branch = f"codex/{task.task_id}"
    theirs = []
    # While the developer works, a person pushes to the task's branch.
    agents.hooks["commit_message"] = lambda: theirs.append(
        push_as_someone_else(bare_repo, branch, "NOTES.md", NOTES)
    )

    run_to_the_end(task)

    assert task.status == Status.COMPLETED, task.errors
    # Their commit is kept (an ancestor: nothing was force-pushed over it) and
    # ours sits on top of it, rebased; the task records the pushed commit.
    assert is_ancestor(bare_repo, theirs[0], branch)
    tip = git("rev-parse", branch, cwd=bare_repo).strip()
    # The branch's commits as pushed: theirs, then ours rebased on top.
    assert task.commits[-1] == tip
    assert theirs[0] in task.commits
    assert [line.split(" ", 1)[1] for line in branch_log(bare_repo, branch)[:2]] == [
        "Add mul",
        "NOTES.md",
    ]
    # Both changes were merged; one pull request, one merge.
    assert git("show", "main:calc.py", cwd=bare_repo) == MUL
    assert git("show", "main:NOTES.md", cwd=bare_repo) == NOTES
    assert github.writes["create_pull"] == 1 and github.writes["merge"] == 1


def test_a_push_that_cannot_be_rebased_goes_to_a_person_with_both_commits_kept(
    github, agents, claimed_task, bare_repo
):
    task = claimed_task
    branch = f"codex/{task.task_id}"
    theirs = []
    # A person changes the very lines the developer changes.
    agents.hooks["commit_message"] = lambda: theirs.append(
        push_as_someone_else(bare_repo, branch, "calc.py", THEIR_CALC)
    )

    for _ in range(3):
        step(task)

    assert task.status == Status.ESCALATED and task.phase == "implementation"
    reason = Escalation.objects.get(task=task).detail
    assert f"someone else pushed to {branch}" in reason
    # Their commit is untouched on the branch: no force push.
    assert git("rev-parse", branch, cwd=bare_repo).strip() == theirs[0]
    # Ours is not lost: on a branch of its own, named in the reason.
    aside = next(
        line.split("refs/heads/")[1]
        for line in git("show-ref", cwd=bare_repo).splitlines()
        if "-unmerged-" in line
    )
    assert f"our commits are on {aside}" in reason
    assert git("show", f"{aside}:calc.py", cwd=bare_repo) == MUL
    assert branch_log(bare_repo, aside)[0].endswith(" Add mul")
    # No pull request was opened for a branch in that state.
    assert github.writes["create_pull"] == 0


def test_a_push_on_top_of_the_pull_request_is_tested_reviewed_and_merged(
    github, agents, claimed_task, bare_repo
):
    """Someone adds a commit to the task's branch after the pull request was
    opened: the next steps fast-forward the worktree to it, so QA tests it
    and release merges at the pull request's real head (GitHub refuses a
    merge at a stale one with 409, which pulling nothing would only repeat)."""
    task = claimed_task
    branch = f"codex/{task.task_id}"
    for _ in range(3):
        step(task)
    assert task.phase == "verification"
    work = bare_repo.parent / "someone"
    git(
        "clone",
        "--quiet",
        "-b",
        branch,
        str(bare_repo),
        str(work),
        cwd=bare_repo.parent,
    )
    (work / "test_notes.py").write_text("def test_notes():\n    assert True\n")
    git("add", "test_notes.py", cwd=work)
    git("-c", "commit.gpgsign=false", "commit", "--quiet", "-m", "notes", cwd=work)
    git("push", "--quiet", "origin", f"HEAD:{branch}", cwd=work)
    theirs = git("rev-parse", "HEAD", cwd=work).strip()

    run_to_the_end(task)

    assert task.status == Status.COMPLETED, task.errors
    report = task.verification_reports.get()
    assert (report.tests_passed, report.tests_total) == (3, 3)  # theirs too
    assert is_ancestor(bare_repo, theirs, "main")
    assert git("show", "main:calc.py", cwd=bare_repo) == MUL
    assert github.writes["merge"] == 1
    assert not [e for e in task.errors if e["code"] == "pull_retry"]


@pytest.mark.parametrize("also_mirror", [False, True], ids=["worktree", "+mirror"])
def test_a_deleted_worktree_is_recreated_from_the_pushed_branch(
    github, agents, claimed_task, bare_repo, also_mirror
):
    """Deleted between steps (a reaper, a person; with the mirror: the next
    step runs on another machine): the next step recreates it and goes on."""
    task = claimed_task
    for _ in range(3):
        step(task)
    assert task.phase == "verification" and task.commits
    shutil.rmtree(worktree_path(task))
    if also_mirror:
        shutil.rmtree(mirror_path(task.repository))

    run_to_the_end(task)

    assert task.status == Status.COMPLETED, task.errors
    # The committed work was there: QA's real test run found the new test.
    report = task.verification_reports.get()
    assert (report.tests_passed, report.tests_failed) == (2, 0)
    assert git("show", "main:calc.py", cwd=bare_repo) == MUL
    assert github.writes["create_pull"] == 1 and github.writes["merge"] == 1


@pytest.fixture
def enclosing_repository(agent_settings, tmp_path) -> Path:
    """CODEX_WORKTREE_ROOT inside another git repository (as var/worktrees
    inside a checkout of Codex is by default)."""
    outer = tmp_path / "outer"
    outer.mkdir()
    git("init", "--quiet", "-b", "main", cwd=outer)
    agent_settings.CODEX_WORKTREE_ROOT = str(outer / "worktrees")
    return outer


@pytest.mark.parametrize("refilled", [False, True], ids=["gone", "gone+refilled"])
def test_a_worktree_deleted_under_a_running_agent_costs_a_retry_not_the_task(
    github, agents, claimed_task, bare_repo, enclosing_repository, refilled
):
    """The step in flight fails with a classified, retryable error; the next
    recreates the worktree and the task completes. `refilled`: a tool wrote a
    file into the deleted worktree's path afterwards (write_file makes the
    folders it needs), leaving a folder that is no git worktree."""
    task = claimed_task

    def delete_worktree():
        path = worktree_path(task)
        shutil.rmtree(path)
        if refilled:
            path.mkdir()
            (path / "calc.py").write_text(MUL)

    agents.hooks["commit_message"] = delete_worktree
    for _ in range(3):
        step(task)

    assert task.status == Status.BLOCKED and task.phase == "implementation"
    assert task.blocked_until is not None  # a retry time, not "until a person"
    error = task.errors[-1]
    assert error["code"] == "wait_retry"
    assert "is gone - the next step recreates it" in error["message"]
    assert "Traceback" not in error["message"]
    # git never went looking for a repository in the parent folders.
    outer = enclosing_repository
    assert git("status", "--porcelain", "--untracked-files=no", cwd=outer) == ""
    assert (
        subprocess.run(
            ["git", "rev-parse", "--verify", "--quiet", "HEAD"],
            cwd=enclosing_repository,
            check=False,
        ).returncode
        != 0
    )

    run_to_the_end(task)

    assert task.status == Status.COMPLETED, task.errors
    assert git("show", "main:calc.py", cwd=bare_repo) == MUL
    assert github.writes["create_pull"] == 1
    leftovers = list(Path(enclosing_repository / "worktrees").glob("*.orphan-*"))
    assert len(leftovers) == (1 if refilled else 0)


def test_a_git_authentication_failure_rotates_the_github_token(
    github_env, scripted_runner
):
    """git pushes to GitHub with the GitHub token: git's rotate_token moves the
    github credential on (there is no separate git credential to rotate)."""
    task = make_task(issue_number=None)
    for _ in range(2):
        advance_task(task.task_id)
    scripted_runner.queue(
        "implementation",
        PhaseResult.from_error(
            make_error(
                "git",
                0,
                Action.ROTATE_TOKEN,
                "Authentication failed - trying another token: git push: "
                "remote: Invalid username or token.",
            )
        ),
    )

    advance_task(task.task_id)
    task.refresh_from_db()

    assert task.status == Status.IN_PROGRESS, task.errors
    assert ActiveCredential.objects.get(source="github").index == 1
    assert task.errors[-1]["resolution"] == "retrying with the next credential"
    assert run_to_the_end(task)[-1] == "completed/release"
