"""The local forge end to end, on a real bare repository in a temporary folder."""

from __future__ import annotations

import pytest

from codex.core.errors import Action, ClassifiedFailure
from codex.core.store.side_effects import SideEffect, perform_once
from codex.repositories.forge import get_forge
from codex.repositories.local_forge import LocalForge
from codex.repositories.models import (
    LocalComment,
    LocalIssue,
    LocalPullRequest,
    Repository,
)
from integrations.git import (
    add_worktree,
    branch_sha,
    commit_all,
    ensure_mirror,
    push,
    run_git,
)
from tests.integrations.git.helpers import clone, commit_file, log, make_remote

pytestmark = pytest.mark.django_db

TASK = "FEAT-20260119-abc123"
BRANCH = f"codex/{TASK}"


@pytest.fixture(autouse=True)
def _git_roots(settings, tmp_path):
    settings.CODEX_MIRROR_ROOT = str(tmp_path / "mirrors")
    settings.CODEX_WORKTREE_ROOT = str(tmp_path / "worktrees")


@pytest.fixture
def repository(tmp_path) -> Repository:
    bare = make_remote(tmp_path / "forge")
    return Repository.objects.create(url=f"file://{bare}")


@pytest.fixture
def forge(repository) -> LocalForge:
    return get_forge(repository)


def work_on(forge: LocalForge, tmp_path, files: dict[str, str], branch=BRANCH):
    """What a coding agent does: mirror, worktree, change, commit, push."""
    mirror = ensure_mirror(
        forge.repository, forge.remote_url(), forge.git_credentials()
    )
    worktree = add_worktree(mirror, tmp_path / "worktrees" / branch, branch, "main")
    for name, text in files.items():
        (worktree / name).write_text(text)
    commit_all(worktree, f"change {', '.join(files)}", TASK)
    return push(worktree, branch, forge.git_credentials()), worktree


def open_pr(forge: LocalForge, head: str = BRANCH, **fields):
    fields.setdefault("title", "Add a feature")
    fields.setdefault("body", "")
    return forge.create_pull_request(head=head, base="main", **fields)


def test_forge_basics(repository, forge):
    assert isinstance(forge, LocalForge)
    assert forge.remote_url() == repository.local_path
    assert forge.git_credentials() == {}
    assert forge.checks_state("0" * 40) == "none"
    assert forge.user_can_write("anyone") is True


def test_pull_request_create_find_merge_end_to_end(forge, tmp_path):
    sha, _ = work_on(forge, tmp_path, {"feature.py": "print('hi')\n"})
    assert forge.find_pull_request(BRANCH) is None

    pr = open_pr(forge, body="Closes nothing")

    assert pr["number"] == 1
    assert pr["head"] == BRANCH and pr["base"] == "main"
    assert pr["state"] == "open" and pr["head_sha"] == sha and pr["draft"] is False
    assert forge.find_pull_request(BRANCH) == pr
    assert forge.get_pull_request(1) == pr

    merged = forge.merge_pull_request(1, sha=sha)

    bare = forge.bare
    assert merged["state"] == "merged"
    row = LocalPullRequest.objects.get(repository=forge.repository, number=1)
    assert row.merge_sha == branch_sha(bare, "main") and row.merged_at is not None
    # Squash: one new commit on main, with the change, and the title with #1.
    assert log(bare, "main") == ["Add a feature (#1)", "initial commit"]
    assert run_git(["show", "main:feature.py"], bare) == "print('hi')\n"
    [author] = log(bare, "-1", "%an <%ae>")
    assert author == "Codex <codex@localhost>"
    assert forge.find_pull_request(BRANCH)["state"] == "merged"
    # A retried merge step does not fail and does not merge again.
    assert forge.merge_pull_request(1, sha=sha)["state"] == "merged"
    assert branch_sha(bare, "main") == row.merge_sha


def test_merge_commit_method(forge, tmp_path):
    sha, _ = work_on(forge, tmp_path, {"a.txt": "a\n"})
    open_pr(forge)
    forge.merge_pull_request(1, sha=sha, method="merge", message="Merge it")
    parents = run_git(["log", "-1", "--format=%P", "main"], forge.bare).split()
    assert parents[1] == sha
    assert log(forge.bare, "-1")[0] == "Merge it"


def test_rebase_method(forge, tmp_path):
    sha, _ = work_on(forge, tmp_path, {"a.txt": "a\n"})
    # main moves on meanwhile, so the rebase has something to do.
    other = clone(forge.bare, tmp_path / "other", "main")
    commit_file(other, "b.txt", "b\n", "on main")
    run_git(["push", "--quiet", "origin", "main"], other)
    open_pr(forge)
    forge.merge_pull_request(1, sha=sha, method="rebase")
    assert log(forge.bare, "main") == ["change a.txt", "on main", "initial commit"]


def test_numbers_count_per_repository(forge, tmp_path):
    work_on(forge, tmp_path, {"a.txt": "a\n"}, branch="codex/one")
    work_on(forge, tmp_path, {"b.txt": "b\n"}, branch="codex/two")
    assert open_pr(forge, head="codex/one")["number"] == 1
    assert open_pr(forge, head="codex/two")["number"] == 2
    other = Repository.objects.create(url=f"file://{make_remote(tmp_path / 'x')}")
    work_on(get_forge(other), tmp_path / "x", {"c.txt": "c\n"}, branch="codex/one")
    assert open_pr(get_forge(other), head="codex/one")["number"] == 1


def test_second_open_pull_request_for_a_head_is_refused(forge, tmp_path):
    work_on(forge, tmp_path, {"a.txt": "a\n"})
    open_pr(forge)
    with pytest.raises(ClassifiedFailure) as excinfo:
        open_pr(forge, title="again")
    assert excinfo.value.action == Action.MANUAL_REVIEW
    assert "#1" in str(excinfo.value)
    assert LocalPullRequest.objects.count() == 1


def test_pull_request_of_a_missing_branch_is_refused(forge):
    with pytest.raises(ClassifiedFailure) as excinfo:
        open_pr(forge, head="codex/nothing")
    assert excinfo.value.action == Action.MANUAL_REVIEW


def test_merge_with_a_stale_sha_is_refused(forge, tmp_path):
    first, worktree = work_on(forge, tmp_path, {"a.txt": "a\n"})
    open_pr(forge)
    (worktree / "a.txt").write_text("a, reworked\n")
    commit_all(worktree, "rework", TASK)
    newer = push(worktree, BRANCH, {})
    main_before = branch_sha(forge.bare, "main")

    with pytest.raises(ClassifiedFailure) as excinfo:
        forge.merge_pull_request(1, sha=first)

    assert excinfo.value.action == Action.MANUAL_REVIEW
    assert branch_sha(forge.bare, "main") == main_before
    pr = forge.get_pull_request(1)
    assert pr["state"] == "open" and pr["head_sha"] == newer
    assert forge.merge_pull_request(1, sha=newer)["state"] == "merged"


def test_merge_conflict_is_refused_and_changes_nothing(forge, tmp_path):
    sha, _ = work_on(forge, tmp_path, {"README.md": "ours\n"})
    other = clone(forge.bare, tmp_path / "other", "main")
    commit_file(other, "README.md", "theirs\n", "on main")
    run_git(["push", "--quiet", "origin", "main"], other)
    main_before = branch_sha(forge.bare, "main")
    open_pr(forge)

    with pytest.raises(ClassifiedFailure) as excinfo:
        forge.merge_pull_request(1, sha=sha, method="merge")

    assert excinfo.value.action == Action.MANUAL_REVIEW
    assert branch_sha(forge.bare, "main") == main_before
    assert forge.get_pull_request(1)["state"] == "open"
    # The scratch worktree is gone.
    assert (
        run_git(["worktree", "list", "--porcelain"], forge.bare).count("worktree ") == 1
    )


def test_draft_and_mark_ready(forge, tmp_path):
    sha, _ = work_on(forge, tmp_path, {"a.txt": "a\n"})
    assert open_pr(forge, draft=True)["draft"] is True
    with pytest.raises(ClassifiedFailure):
        forge.merge_pull_request(1, sha=sha)
    assert forge.mark_ready(1)["draft"] is False
    assert forge.merge_pull_request(1, sha=sha)["state"] == "merged"


def test_unknown_pull_request(forge):
    with pytest.raises(ClassifiedFailure) as excinfo:
        forge.get_pull_request(42)
    assert excinfo.value.action == Action.MANUAL_REVIEW


def test_comments_and_find_comment(forge):
    marker = "<!-- codex:status -->"
    assert forge.find_comment(7, marker) is None
    comment = forge.comment(7, f"{marker}\nworking on it")
    assert forge.find_comment(7, marker) == comment
    assert forge.find_comment(8, marker) is None
    assert comment["body"].endswith("working on it")
    assert comment["id"] == LocalComment.objects.get().pk


@pytest.mark.django_db(transaction=True)
def test_comment_is_made_once_through_perform_once(forge):
    marker = "<!-- codex:once -->"
    key = f"local:{forge.repository.full_name}:comment:7:once"

    def act():
        return dict(forge.comment(7, f"{marker} hello"))

    def lookup():
        found = forge.find_comment(7, marker)
        return None if found is None else dict(found)

    first = perform_once(key, act, lookup=lookup)
    assert perform_once(key, act, lookup=lookup) == first
    # An attempt that died after commenting: the lookup finds the comment.
    SideEffect.objects.filter(key=key).update(status="started")
    assert perform_once(key, act, lookup=lookup)["id"] == first["id"]
    assert LocalComment.objects.count() == 1


def test_labels_and_closing_are_recorded_idempotently(forge, tmp_path):
    forge.add_labels(3, ["codex", "bug"])
    forge.add_labels(3, ["bug", "ready"])
    issue = LocalIssue.objects.get(repository=forge.repository, number=3)
    assert issue.labels == ["codex", "bug", "ready"]

    forge.close_issue(3, comment="Done in #1")
    forge.close_issue(3, comment="Done in #1")
    issue.refresh_from_db()
    assert issue.is_closed
    assert [c.body for c in issue.comments.all()] == ["Done in #1"]


def test_closing_a_pull_request_number_closes_the_pull_request(forge, tmp_path):
    work_on(forge, tmp_path, {"a.txt": "a\n"})
    open_pr(forge)
    forge.close_issue(1)
    assert forge.get_pull_request(1)["state"] == "closed"
    assert forge.find_pull_request(BRANCH) is None
    # A closed pull request frees its head for a new one.
    assert open_pr(forge)["number"] == 2
