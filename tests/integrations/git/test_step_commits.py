"""Per-task commits: a Codex-Step trailer on each, read back as recovery
points (real git on temporary repositories)."""

from __future__ import annotations

import pytest

from integrations.git import STEP_TRAILER, commit_all, committed_steps, run_git
from tests.integrations.git.test_repository import TASK, mirror, worktree

pytestmark = pytest.mark.django_db

__all__ = ["mirror", "worktree"]  # the fixtures this module borrows


def test_step_commits_are_read_back_in_order(worktree):
    (worktree / "a.txt").write_text("a\n")
    first = commit_all(worktree, "T001: a", TASK, trailers={STEP_TRAILER: "T001"})
    (worktree / "b.txt").write_text("b\n")
    commit_all(worktree, "wip without a step", TASK)
    (worktree / "c.txt").write_text("c\n")
    third = commit_all(worktree, "T002: c", TASK, trailers={STEP_TRAILER: "T002"})
    (worktree / "d.txt").write_text("d\n")
    commit_all(worktree, "other task", "FEAT-other", trailers={STEP_TRAILER: "T003"})

    steps = committed_steps(worktree, "origin/main", TASK)

    assert steps == {"T001": first, "T002": third}
    assert list(steps) == ["T001", "T002"]
    message = run_git(["log", "-1", "--format=%B", third], worktree)
    assert f"Codex-Task: {TASK}" in message and "Codex-Step: T002" in message


def test_nothing_committed_since_the_base_is_empty(worktree):
    assert committed_steps(worktree, "origin/main", TASK) == {}


@pytest.mark.parametrize(
    "trailers", [{"Bad Key": "x"}, {STEP_TRAILER: "T001\nCodex-Task: other"}]
)
def test_trailers_cannot_smuggle_lines(worktree, trailers):
    (worktree / "a.txt").write_text("a\n")
    with pytest.raises(ValueError, match="bad commit trailer"):
        commit_all(worktree, "x", TASK, trailers=trailers)
