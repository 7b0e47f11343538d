"""A run's checkpoint keeps a digest of its worktree (agents.checkpoints), so
that a resumed run is told whether the files are as it left them. The digest
comes from one `git status` and the listed files' content: it must change
with the commit, with any change to a tracked file's content or mode, with a
new, deleted or renamed file, and stay the same when nothing changed."""

from __future__ import annotations

import os

import pytest

from agents import checkpoints
from agents.checkpoints import STATE_READ_BYTES, worktree_state
from integrations.git import run_git
from integrations.git.repository import identity_env
from tests.agents.git_worktrees import git_worktree


@pytest.fixture
def worktree(tmp_path):
    return git_worktree(tmp_path, {"a.py": "A = 1\n", "b.py": "B = 2\n"})


def test_the_same_worktree_gives_the_same_digest(worktree):
    (worktree / "a.py").write_text("A = 10\n")
    (worktree / "new.py").write_text("N = 1\n")
    first = worktree_state(worktree)
    assert len(first) == 64
    assert worktree_state(worktree) == first


def test_each_kind_of_change_gives_another_digest(worktree):
    seen = {worktree_state(worktree)}

    def changed() -> None:
        state = worktree_state(worktree)
        assert state not in seen
        seen.add(state)

    (worktree / "a.py").write_text("A = 10\n")
    changed()
    # The same file edited again: git status lists it the same way.
    (worktree / "a.py").write_text("A = 11\n")
    changed()
    (worktree / "new.py").write_text("N = 1\n")
    changed()
    # An untracked file's content counts too.
    (worktree / "new.py").write_text("N = 2\n")
    changed()
    (worktree / "b.py").unlink()
    changed()
    os.chmod(worktree / "a.py", 0o755)
    changed()
    run_git(["add", "--all"], worktree)
    changed()
    run_git(["mv", "new.py", "moved.py"], worktree)
    changed()
    run_git(["commit", "--quiet", "-m", "work"], worktree, env=identity_env())
    changed()


def test_a_big_file_counts_by_its_size_and_time(worktree):
    big = worktree / "big.bin"
    big.write_bytes(b"x" * (STATE_READ_BYTES + 1))
    before = worktree_state(worktree)
    big.write_bytes(b"y" * (STATE_READ_BYTES + 2))
    assert worktree_state(worktree) != before


def test_no_worktree_gives_no_digest(tmp_path):
    assert worktree_state(tmp_path) == ""


def test_a_link_is_not_read_through(worktree, tmp_path):
    # What a link points at outside the worktree is none of the digest's
    # business (nor readable through it): only the link itself counts.
    outside = tmp_path / "outside.txt"
    outside.write_text("secret one\n")
    (worktree / "link.txt").symlink_to(outside)
    before = worktree_state(worktree)
    outside.write_text("secret two\n")
    assert worktree_state(worktree) == before


def test_it_reads_no_more_than_its_total_after_each_turn(worktree, monkeypatch):
    # An agent may leave thousands of new files; the digest runs after every
    # turn, so past its total it counts files by size and time, unread.
    monkeypatch.setattr(checkpoints, "STATE_READ_TOTAL_BYTES", 10)
    first, second = worktree / "first.txt", worktree / "second.txt"
    first.write_text("1234567\n")  # 8 bytes: read
    second.write_text("abcdefg\n")  # 8 more: past the total of 10
    before = worktree_state(worktree)
    stamp = second.stat()
    second.write_text("ABCDEFG\n")
    os.utime(second, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    assert worktree_state(worktree) == before
    first.write_text("7654321\n")
    assert worktree_state(worktree) != before
