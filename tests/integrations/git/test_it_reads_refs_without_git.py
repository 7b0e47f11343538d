"""read_refs: refs read from git's files answer what `git rev-parse` would,
or nothing (then the caller asks git)."""

from __future__ import annotations

import pytest

from codex.repositories.models import Repository
from integrations.git import add_worktree, ensure_mirror, read_refs, run_git
from tests.integrations.git.helpers import IDENTITY, clone, commit_file


def rev_parse(repo, *names: str) -> list[str]:
    return run_git(["rev-parse", *names], repo).split()


@pytest.fixture
def linked(remote, tmp_path):
    """A worktree of a mirror (refs packed by its clone)."""
    mirror = ensure_mirror(Repository(url=f"file://{remote}"), str(remote), {})
    return add_worktree(mirror, tmp_path / "worktrees" / "w", "codex/T-1", "main")


def test_a_mirrors_worktree_packed_then_loose(linked, remote, tmp_path):
    names = ["origin/main", "HEAD", "refs/remotes/origin/main", "codex/T-1"]
    assert read_refs(linked, names) == rev_parse(linked, *names)
    commit_file(linked, "a.txt", "a\n", "ours")  # a loose branch ref
    other = clone(remote, tmp_path / "other", "main")
    commit_file(other, "b.txt", "b\n", "theirs")
    run_git(["push", "--quiet", "origin", "main"], other)
    ensure_mirror(Repository(url=f"file://{remote}"), str(remote), {})
    # origin/main is loose now, newer than its packed line: the loose one.
    assert read_refs(linked, names) == rev_parse(linked, *names)
    assert read_refs(linked, ["origin/main"]) == rev_parse(other, "HEAD")


def test_a_plain_clone_tags_and_git_s_order_for_short_names(remote, tmp_path):
    work = clone(remote, tmp_path / "work", "main")
    run_git(["tag", "light"], work)
    run_git(["tag", "-a", "-m", "annotated", "heavy"], work, IDENTITY)
    commit_file(work, "c.txt", "c\n", "later")
    run_git(["branch", "light"], work)  # the tag comes first, as in git
    names = ["HEAD", "main", "light", "heavy", "refs/heads/light", "origin/main"]
    assert read_refs(work, names) == rev_parse(work, *names)
    run_git(["checkout", "--quiet", "--detach", "HEAD~1"], work)
    assert read_refs(work, ["HEAD"]) == rev_parse(work, "HEAD")


@pytest.mark.parametrize(
    "name",
    ["HEAD~1", "main^{commit}", "@", "origin/main:README.md", "no-such-ref", "abc1"],
)
def test_what_is_no_plain_ref_is_left_to_git(remote, tmp_path, name):
    work = clone(remote, tmp_path / "work", "main")
    assert read_refs(work, ["HEAD", name]) is None


def test_no_repository_is_left_to_git(tmp_path):
    assert read_refs(tmp_path, ["HEAD"]) is None
    (tmp_path / ".git").write_text("not a pointer\n")
    assert read_refs(tmp_path, ["HEAD"]) is None
