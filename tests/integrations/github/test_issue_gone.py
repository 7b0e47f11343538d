"""A deleted issue is told apart from an issue this token cannot see."""

from __future__ import annotations

import pytest

from codex.core.errors import Action, ClassifiedFailure
from integrations.github.forge import GitHubForge, IssueGone
from tests.integrations.github.payloads import REPO_API, issue

pytestmark = pytest.mark.django_db

DELETED = {"message": "This issue was deleted", "status": "410"}
NOT_FOUND = {"message": "Not Found", "status": "404"}


def test_an_existing_issue_passes(github, repository):
    github.get(f"{REPO_API}/issues/1", json=issue(1))
    GitHubForge(repository).ensure_issue(1)


def test_410_is_a_deleted_issue(github, repository):
    github.get(f"{REPO_API}/issues/1", status=410, json=DELETED)
    with pytest.raises(IssueGone) as caught:
        GitHubForge(repository).ensure_issue(1)
    assert caught.value.number == 1 and caught.value.action == Action.ABORT
    assert "issue #1 of Codertocat/Hello-World was deleted" in caught.value.message


def test_404_with_the_repository_visible_is_a_deleted_issue(github, repository):
    github.get(f"{REPO_API}/issues/1", status=404, json=NOT_FOUND)
    github.get(REPO_API, json={"id": 1296269, "full_name": "Codertocat/Hello-World"})
    with pytest.raises(IssueGone):
        GitHubForge(repository).ensure_issue(1)


def test_404_with_the_repository_invisible_is_an_access_problem(github, repository):
    github.get(f"{REPO_API}/issues/1", status=404, json=NOT_FOUND)
    github.get(REPO_API, status=404, json=NOT_FOUND)
    with pytest.raises(ClassifiedFailure) as caught:
        GitHubForge(repository).ensure_issue(1)
    assert not isinstance(caught.value, IssueGone)
    assert caught.value.action == Action.MANUAL_REVIEW


def test_commenting_on_a_deleted_issue_raises_issue_gone(github, repository):
    github.post(f"{REPO_API}/issues/1/comments", status=410, json=DELETED)
    with pytest.raises(IssueGone):
        GitHubForge(repository).comment(1, "Done")
