"""Mirrors, worktrees, commits and pushes against real git repositories."""

from __future__ import annotations

from pathlib import Path

import pytest

from codex.core.errors import Action, ClassifiedFailure
from codex.repositories.models import Repository
from integrations.git import (
    add_worktree,
    branch_name,
    branch_sha,
    commit_all,
    ensure_mirror,
    fast_forward,
    head_sha,
    mirror_path,
    prune_all_mirrors,
    prune_worktrees,
    push,
    ref_sha,
    remove_worktree,
    run_git,
)
from tests.integrations.git.helpers import clone, commit_file, log

TASK = "FEAT-20260119-abc123"
BRANCH = f"codex/{TASK}-a1"


def repo_for(remote: Path) -> Repository:
    """An (unsaved) local-forge repository for `remote`."""
    return Repository(url=f"file://{remote}", forge="local")


@pytest.fixture
def mirror(remote) -> Path:
    return ensure_mirror(repo_for(remote), str(remote), {})


@pytest.fixture
def worktree(mirror, tmp_path) -> Path:
    return add_worktree(mirror, tmp_path / "worktrees" / "work-1-a1", BRANCH, "main")


def test_branch_names():
    assert branch_name(TASK) == f"codex/{TASK}"
    assert branch_name(TASK, 2) == f"codex/{TASK}-a2"
    for bad in ("", "a b", "../x", "-x"):
        with pytest.raises(ValueError):
            branch_name(bad)
    with pytest.raises(ValueError):
        branch_name(TASK, 0)


def test_mirror_is_bare_under_the_root_and_fetched_on_each_call(
    remote, tmp_path, settings
):
    repository = repo_for(remote)
    mirror = ensure_mirror(repository, str(remote), {})
    assert mirror == mirror_path(repository)
    assert mirror.parent == Path(settings.CODEX_MIRROR_ROOT)
    assert run_git(["rev-parse", "--is-bare-repository"], mirror).strip() == "true"
    first = ref_sha(mirror, "refs/remotes/origin/main")
    assert first == branch_sha(remote, "main")

    other = clone(remote, tmp_path / "other", "main")
    newer = commit_file(other, "b.txt", "b\n", "someone else's commit")
    run_git(["push", "--quiet", "origin", "main"], other)
    assert ensure_mirror(repository, str(remote), {}) == mirror
    assert ref_sha(mirror, "refs/remotes/origin/main") == newer


def test_mirror_refuses_a_remote_url_with_credentials(remote):
    with pytest.raises(ValueError):
        ensure_mirror(repo_for(remote), "https://x:token@example.com/a/b", {})


def test_worktree_commit_and_push(remote, mirror, worktree):
    assert run_git(["branch", "--show-current"], worktree).strip() == BRANCH
    assert (worktree / "README.md").read_text() == "hello\n"
    (worktree / "feature.py").write_text("print('hi')\n")
    (worktree / "README.md").unlink()

    sha = commit_all(worktree, "Add the feature\n\nWith a body.", TASK)

    assert sha == head_sha(worktree)
    line = log(worktree, "-1", "%an|%ae|%cn|%(trailers:key=Codex-Task,valueonly)")[0]
    assert line == f"Codex Bot|codex@example.org|Codex Bot|{TASK}"
    message = run_git(["log", "-1", "--format=%B"], worktree)
    assert message.startswith("Add the feature\n\nWith a body.\n\n")
    files = run_git(["show", "--name-status", "--format=", "HEAD"], worktree)
    assert set(files.split()) == {"A", "feature.py", "D", "README.md"}

    assert push(worktree, BRANCH, {}) == sha
    assert branch_sha(remote, BRANCH) == sha
    assert branch_sha(remote, "main") != sha


def test_commit_all_without_changes_is_none(worktree):
    before = head_sha(worktree)
    assert commit_all(worktree, "nothing", TASK) is None
    assert head_sha(worktree) == before


def test_add_worktree_is_idempotent_and_continues_a_pushed_branch(
    remote, mirror, worktree, tmp_path
):
    assert add_worktree(mirror, worktree, BRANCH, "main") == worktree
    with pytest.raises(ClassifiedFailure) as excinfo:
        add_worktree(mirror, worktree, "codex/other", "main")
    assert excinfo.value.action == Action.ABORT

    (worktree / "a.txt").write_text("a\n")
    pushed = commit_all(worktree, "first", TASK)
    push(worktree, BRANCH, {})
    # Another machine: a fresh mirror picks up the pushed branch, not main.
    remove_worktree(mirror, worktree, delete_branch=True)
    assert branch_sha(mirror, BRANCH) is None
    again = add_worktree(mirror, tmp_path / "worktrees" / "again", BRANCH, "main")
    assert head_sha(again) == pushed


def test_unknown_base_is_refused(mirror, tmp_path):
    with pytest.raises(ClassifiedFailure) as excinfo:
        add_worktree(mirror, tmp_path / "w", "codex/x", "no-such-branch")
    assert excinfo.value.action == Action.ABORT


def test_non_fast_forward_push_pulls_and_retries(remote, worktree, tmp_path):
    (worktree / "a.txt").write_text("a\n")
    commit_all(worktree, "ours, first", TASK)
    push(worktree, BRANCH, {})
    # Someone else pushes to the branch meanwhile (another file: no conflict).
    other = clone(remote, tmp_path / "other", BRANCH)
    theirs = commit_file(other, "b.txt", "b\n", "theirs")
    run_git(["push", "--quiet", "origin", BRANCH], other)
    (worktree / "c.txt").write_text("c\n")
    commit_all(worktree, "ours, second", TASK)

    # One push alone is rejected as non-fast-forward: pull_retry.
    with pytest.raises(ClassifiedFailure) as excinfo:
        push(worktree, BRANCH, {}, tries=1)
    assert excinfo.value.action == Action.PULL_RETRY
    assert excinfo.value.source == "git"

    pushed = push(worktree, BRANCH, {})

    assert branch_sha(remote, BRANCH) == pushed == head_sha(worktree)
    assert log(remote, BRANCH) == [
        "ours, second",
        "theirs",
        "ours, first",
        "initial commit",
    ]
    assert theirs in log(remote, BRANCH, "%H")
    assert {"a.txt", "b.txt", "c.txt"} <= {p.name for p in worktree.iterdir()}


def test_conflicting_push_is_manual_review(remote, worktree, tmp_path):
    (worktree / "same.txt").write_text("base\n")
    commit_all(worktree, "ours, first", TASK)
    push(worktree, BRANCH, {})
    other = clone(remote, tmp_path / "other", BRANCH)
    commit_file(other, "same.txt", "theirs\n", "theirs")
    run_git(["push", "--quiet", "origin", BRANCH], other)
    (worktree / "same.txt").write_text("ours\n")
    ours = commit_all(worktree, "ours, second", TASK)

    with pytest.raises(ClassifiedFailure) as excinfo:
        push(worktree, BRANCH, {})

    assert excinfo.value.action == Action.MANUAL_REVIEW
    assert not excinfo.value.recoverable
    # The worktree is back on our commit, not stuck mid-rebase.
    assert head_sha(worktree) == ours
    assert run_git(["status", "--porcelain"], worktree) == ""
    assert (worktree / "same.txt").read_text() == "ours\n"
    assert log(remote, BRANCH)[0] == "theirs"


def test_remove_worktree_and_branch(mirror, worktree):
    assert remove_worktree(mirror, worktree, delete_branch=True) is True
    assert not worktree.exists()
    assert str(worktree) not in run_git(["worktree", "list"], mirror)
    assert branch_sha(mirror, BRANCH) is None
    # Idempotent.
    assert remove_worktree(mirror, worktree) is False


def test_remove_worktree_keeps_the_branch_by_default(mirror, worktree):
    (worktree / "a.txt").write_text("uncommitted\n")
    sha = head_sha(worktree)
    assert remove_worktree(mirror, worktree) is True
    assert not worktree.exists()
    assert branch_sha(mirror, BRANCH) == sha


def test_remove_worktree_leaves_a_folder_that_is_not_ours(mirror, tmp_path):
    stranger = tmp_path / "stranger"
    stranger.mkdir()
    (stranger / "keep.txt").write_text("mine\n")
    assert remove_worktree(mirror, stranger) is False
    assert (stranger / "keep.txt").exists()


def test_prune_forgets_worktrees_deleted_by_hand(mirror, worktree, tmp_path):
    import shutil

    shutil.rmtree(worktree)  # what the orphaned-worktree reaper does
    listing = run_git(["worktree", "list", "--porcelain"], mirror)
    assert f"worktree {worktree}" in listing

    prune_worktrees(mirror)

    listing = run_git(["worktree", "list", "--porcelain"], mirror)
    assert f"worktree {worktree}" not in listing
    # The branch is free again for a new worktree.
    elsewhere = add_worktree(mirror, tmp_path / "worktrees" / "b", BRANCH, "main")
    assert run_git(["branch", "--show-current"], elsewhere).strip() == BRANCH


def test_prune_all_mirrors(mirror, worktree, tmp_path, settings):
    import shutil

    (Path(settings.CODEX_MIRROR_ROOT) / "not-a-mirror.git").mkdir()
    shutil.rmtree(worktree)
    assert prune_all_mirrors() == [mirror]
    listing = run_git(["worktree", "list", "--porcelain"], mirror)
    assert f"worktree {worktree}" not in listing
    assert prune_all_mirrors(tmp_path / "missing") == []


@pytest.fixture
def git_commands(monkeypatch):
    """The git subcommands started from here on, in order."""
    import subprocess

    from integrations.git import runner

    started: list[str] = []
    real = subprocess.Popen

    def popen(args, *rest, **kwargs):
        started.append(runner._verb(args[1:]))
        return real(args, *rest, **kwargs)

    monkeypatch.setattr(runner.subprocess, "Popen", popen)
    return started


def test_a_later_step_reuses_the_mirror_and_worktree_with_fewer_gits(
    remote, mirror, worktree, git_commands
):
    """What every step after the first starts: the fetch and, for the
    fast-forward check, one show-ref; no remote config, prune or listing."""
    assert ensure_mirror(repo_for(remote), str(remote), {}) == mirror
    assert add_worktree(mirror, worktree, BRANCH, "main") == worktree
    assert fast_forward(worktree, BRANCH) == head_sha(worktree)
    assert git_commands == ["fetch", "show-ref", "rev-parse"]


def test_a_commit_compares_the_index_with_head_rather_than_walk_the_tree_again(
    worktree, git_commands
):
    """`add --all` walked the tree already: what is left to commit is the
    index against HEAD (no `git status` over every file), and nothing staged
    is still no commit."""
    (worktree / "README.md").write_text("changed\n")
    (worktree / "new.txt").write_text("new\n")
    sha = commit_all(worktree, "a change", TASK)
    assert git_commands == ["add", "diff", "commit", "rev-parse"]
    assert sha == head_sha(worktree)
    changed = run_git(["show", "--name-status", "--format=", "HEAD"], worktree)
    assert changed.split() == ["M", "README.md", "A", "new.txt"]

    git_commands.clear()
    assert commit_all(worktree, "nothing", TASK) is None
    assert git_commands == ["add", "diff"]
    assert head_sha(worktree) == sha


def test_a_commit_whose_check_fails_raises_rather_than_skip(worktree, monkeypatch):
    from integrations.git import commits

    real = commits.git

    def broken(args, *rest, **kwargs):
        if args[0] == "diff":
            return real(["diff", "--cached", "--quiet", "no-such-ref"], *rest, **kwargs)
        return real(args, *rest, **kwargs)

    monkeypatch.setattr(commits, "git", broken)
    (worktree / "new.txt").write_text("new\n")
    with pytest.raises(ClassifiedFailure):
        commit_all(worktree, "a change", TASK)


def test_a_worktree_on_another_branch_or_detached_still_asks_git(
    mirror, worktree, git_commands
):
    with pytest.raises(ClassifiedFailure):
        add_worktree(mirror, worktree, "codex/other", "main")
    assert git_commands[:2] == ["worktree", "worktree"]  # prune, list
    git_commands.clear()
    run_git(["checkout", "--quiet", "--detach"], worktree)
    with pytest.raises(ClassifiedFailure):
        add_worktree(mirror, worktree, BRANCH, "main")
    assert "worktree" in git_commands


def test_a_changed_remote_url_is_set_again(remote, mirror, tmp_path):
    repository = repo_for(remote)
    moved = tmp_path / "moved.git"
    run_git(["clone", "--quiet", "--bare", str(remote), str(moved)], tmp_path)
    ensure_mirror(repository, str(moved), {})
    url = run_git(["config", "--get", "remote.origin.url"], mirror).strip()
    assert url == str(moved)


def test_fast_forward_moves_up_to_a_push_on_top_only(
    remote, mirror, worktree, tmp_path
):
    repository = repo_for(remote)
    # No remote branch yet: nothing to do.
    assert fast_forward(worktree, BRANCH) == head_sha(worktree)
    (worktree / "a.txt").write_text("a\n")
    ours = commit_all(worktree, "ours", TASK)
    push(worktree, BRANCH, {})
    other = clone(remote, tmp_path / "other", BRANCH)
    theirs = commit_file(other, "b.txt", "b\n", "on top of ours")
    run_git(["push", "--quiet", "origin", BRANCH], other)
    ensure_mirror(repository, str(remote), {})
    assert fast_forward(worktree, BRANCH) == theirs
    assert head_sha(worktree) == theirs

    # A local commit the remote lacks stays where it is.
    (worktree / "c.txt").write_text("c\n")
    local = commit_all(worktree, "local only", TASK)
    ensure_mirror(repository, str(remote), {})
    assert fast_forward(worktree, BRANCH) == local
    assert ours != theirs != local


def test_a_merge_killed_mid_way_does_not_break_later_pushes(remote, tmp_path):
    """A scratch worktree left in the bare repository with a half-written
    HEAD (its process killed while git added it) made every later push fail;
    the next merge removes it first."""
    from integrations.git import merge_into

    other = clone(remote, tmp_path / "other", "main")
    run_git(["checkout", "--quiet", "-b", "feature"], other)
    head = commit_file(other, "f.txt", "f\n", "feature")
    run_git(["push", "--quiet", "origin", "feature"], other)
    scratch = tmp_path / "codex-merge-left"
    run_git(["worktree", "add", "--quiet", "--detach", str(scratch), "main"], remote)
    admin = next((remote / "worktrees").iterdir())
    (admin / "HEAD").write_text("0" * 40 + "\n")
    commit_file(other, "g.txt", "g\n", "more")
    with pytest.raises(ClassifiedFailure):
        run_git(["push", "--quiet", "origin", "feature"], other)

    merged = merge_into(remote, base="main", head=head, message="Merge feature")
    assert branch_sha(remote, "main") == merged
    assert not scratch.exists()
    run_git(["push", "--quiet", "origin", "feature"], other)


def test_a_new_mirror_is_cloned_in_the_mirror_layout(remote, tmp_path, git_commands):
    """The first call clones (no fetch into an empty repository, which walks
    every object to check the pack): the remote's branches end under
    refs/remotes/origin/ and the mirror has no local branch."""
    other = clone(remote, tmp_path / "other", "main")
    commit_file(other, "b.txt", "b\n", "on a branch")
    run_git(["push", "--quiet", "origin", "HEAD:refs/heads/feature"], other)
    git_commands.clear()
    mirror = ensure_mirror(repo_for(remote), str(remote), {})
    assert git_commands[0] == "clone" and "fetch" not in git_commands
    refs = run_git(["for-each-ref", "--format=%(refname)"], mirror).split()
    assert refs == ["refs/remotes/origin/feature", "refs/remotes/origin/main"]
    assert ref_sha(mirror, "refs/remotes/origin/main") == branch_sha(remote, "main")
    fetch = run_git(["config", "--get-all", "remote.origin.fetch"], mirror).split()
    assert fetch == ["+refs/heads/*:refs/remotes/origin/*"]
    assert run_git(["config", "--get", "remote.origin.url"], mirror).strip() == str(
        remote
    )
    assert sorted(p.name for p in mirror.iterdir() if p.name.startswith("codex")) == [
        "codex.lock"
    ]
    # And it works as a mirror: a worktree, a commit, a push, a fetch.
    worktree = add_worktree(mirror, tmp_path / "worktrees" / "w", BRANCH, "main")
    (worktree / "c.txt").write_text("c\n")
    sha = commit_all(worktree, "ours", TASK)
    assert push(worktree, BRANCH, {}) == sha
    git_commands.clear()
    ensure_mirror(repo_for(remote), str(remote), {})
    assert git_commands == ["fetch"]
    assert ref_sha(mirror, f"refs/remotes/origin/{BRANCH}") == sha


def test_what_a_stopped_clone_left_is_replaced(remote, settings):
    repository = repo_for(remote)
    mirror = mirror_path(repository)
    (mirror / "objects").mkdir(parents=True)
    (mirror / "objects" / "stray").write_text("half-way\n")
    (mirror / "codex-clone").mkdir()
    (mirror / "packed-refs").write_text("# pack-refs with: peeled\n")
    assert ensure_mirror(repository, str(remote), {}) == mirror
    assert not (mirror / "objects" / "stray").exists()
    assert not (mirror / "codex-clone").exists()
    assert ref_sha(mirror, "refs/remotes/origin/main") == branch_sha(remote, "main")


def test_a_clone_that_fails_leaves_no_repository(tmp_path):
    repository = Repository(url="file:///nowhere", forge="local")
    with pytest.raises(ClassifiedFailure):
        ensure_mirror(repository, str(tmp_path / "no-such-remote.git"), {})
    mirror = mirror_path(repository)
    assert [p.name for p in mirror.iterdir()] == ["codex.lock"]
