"""The task page leads with what the task produced: the pull request as a
link (the forge's page, or for the local forge the console's page of it, for
an operator), the merged commit, the change's size (git's diff stat of the
task's commits); then the artifacts and reports; the timeline last, with a
filter by kind."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from codex.repositories.forge import get_forge
from codex.repositories.models import LocalPullRequest, Repository
from codex.tasks.models import Task
from codex.tasks.pages.outcome import diff_stat
from integrations.git import add_worktree, commit_all, ensure_mirror, push
from tests.factories import make_repository, make_task, make_user, put_in_state
from tests.integrations.git.helpers import make_remote

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _git_roots(settings, tmp_path):
    settings.CODEX_MIRROR_ROOT = str(tmp_path / "mirrors")
    settings.CODEX_WORKTREE_ROOT = str(tmp_path / "worktrees")


@pytest.fixture
def merged_task(tmp_path) -> Task:
    """A task whose two commits were pushed to the local forge and merged."""
    repository = Repository.objects.create(url=f"file://{make_remote(tmp_path / 'f')}")
    forge = get_forge(repository)
    task = make_task(repository=repository)
    branch = f"codex/{task.task_id}"
    mirror = ensure_mirror(repository, forge.remote_url(), forge.git_credentials())
    worktree = add_worktree(mirror, tmp_path / "worktrees" / "w", branch, "main")
    shas = []
    for name, text in (("a.py", "one\ntwo\n"), ("b.py", "three\n")):
        (worktree / name).write_text(text)
        shas.append(commit_all(worktree, f"add {name}", task.task_id))
    sha = push(worktree, branch, forge.git_credentials())
    pull = forge.create_pull_request(head=branch, base="main", title="t", body="")
    forge.merge_pull_request(pull["number"], sha=sha)
    return put_in_state(
        task,
        status="completed",
        phase="release",
        branch=branch,
        pr_url=pull["url"],
        pr_merged=True,
        commits=shas,
    )


def page_of(client, task: Task) -> str:
    response = client.get(reverse("pages:task", args=[task.task_id]))
    assert response.status_code == 200
    return response.content.decode()


def test_the_outcome_comes_first_and_the_timeline_last(console):
    task = put_in_state(
        make_task(),
        status="in_progress",
        pr_url="https://github.com/acme/web/pull/7",
    )
    page = page_of(console, task)
    order = [
        page.index(f'id="{name}"')
        for name in ("outcome", "artifacts", "timeline-card", "timeline-kind")
    ]
    assert order == sorted(order)
    assert page.index("<h2>Verification reports</h2>") < page.index(
        'id="timeline-card"'
    )
    assert (
        '<a href="https://github.com/acme/web/pull/7" rel="noopener noreferrer" '
        'class="token" id="outcome-pr">'
    ) in page
    assert '<option value="tool">Agent tool call</option>' in page


def test_a_merged_local_pull_request_shows_its_commit_and_size(console, merged_task):
    page = page_of(console, merged_task)
    pull = LocalPullRequest.objects.get(repository=merged_task.repository)
    admin_page = reverse("admin:repositories_localpullrequest_change", args=[pull.pk])
    assert f'<a href="{admin_page}" rel="noopener noreferrer" class="token"' in page
    assert f'<code id="outcome-merged-commit">{pull.merge_sha[:12]}</code>' in page
    assert "2 commits · 2 files changed, 3 insertions(+)" in page


def test_a_member_sees_the_local_pull_request_as_text(merged_task):
    member = Client()
    member.force_login(make_user("carol", role="team"))
    page = page_of(member, merged_task)
    assert "/admin/" not in page.split('id="outcome"')[1].split("</section>")[0]
    assert f'<span class="token">{merged_task.pr_url}</span>' in page


def test_commits_that_are_not_shas_never_reach_git(merged_task):
    Task.objects.filter(pk=merged_task.pk).update(commits=["--output=/tmp/x", "HEAD"])
    merged_task.refresh_from_db()
    assert diff_stat(merged_task) == ""


def test_a_repository_not_on_this_machine_has_no_stat():
    task = put_in_state(
        make_task(repository=make_repository()), status="completed", commits=["a" * 40]
    )
    assert diff_stat(task) == ""
