"""Spec 004 `github_issues`: "Cache issue data with sync timestamps to reduce API
calls"; unique per (repository, number)."""

from __future__ import annotations

import copy
from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from codex.github.models import GitHubIssue
from tests.configuration.factories import webhook_issue
from tests.factories import make_repository

pytestmark = pytest.mark.django_db


def test_a_webhook_issue_is_cached_with_its_fields():
    repository = make_repository()

    issue = GitHubIssue.objects.upsert_from_api(repository, webhook_issue("labeled"))

    assert issue.number == 1
    assert issue.title == "Spelling error in the README file"
    assert issue.state == "open"
    assert issue.labels == ["bug"]
    assert issue.created_at.isoformat() == "2019-05-15T15:20:18+00:00"
    assert issue.synced_at > timezone.now() - timedelta(minutes=1)


def test_a_newer_payload_updates_the_same_row():
    repository = make_repository()
    opened = webhook_issue("opened")
    GitHubIssue.objects.upsert_from_api(repository, opened)
    closed = copy.deepcopy(opened)
    closed.update(
        state="closed",
        closed_at="2019-05-16T10:00:00Z",
        updated_at="2019-05-16T10:00:00Z",
        assignee={"login": "octocat"},
    )

    GitHubIssue.objects.upsert_from_api(repository, closed)

    issue = GitHubIssue.objects.get()
    assert (issue.state, issue.assignee) == ("closed", "octocat")
    assert issue.closed_at is not None


def test_an_older_payload_does_not_move_the_cache_back():
    repository = make_repository()
    newer = webhook_issue("opened")
    newer.update(state="closed", updated_at="2019-06-01T00:00:00Z")
    GitHubIssue.objects.upsert_from_api(repository, newer)

    GitHubIssue.objects.upsert_from_api(repository, webhook_issue("opened"))

    assert GitHubIssue.objects.get().state == "closed"


def test_pull_requests_listed_as_issues_are_not_cached():
    payload = webhook_issue("opened")
    payload["pull_request"] = {"url": "https://api.github.com/repos/o/r/pulls/1"}

    assert GitHubIssue.objects.upsert_from_api(make_repository(), payload) is None
    assert not GitHubIssue.objects.exists()


def test_the_same_number_in_two_repositories_are_two_issues():
    for repository in (make_repository(), make_repository()):
        GitHubIssue.objects.upsert_from_api(repository, webhook_issue("opened"))

    assert GitHubIssue.objects.filter(number=1).count() == 2


def test_repository_and_number_are_unique():
    repository = make_repository()
    GitHubIssue.objects.create(repository=repository, number=7, title="a", state="open")

    with pytest.raises(IntegrityError), transaction.atomic():
        GitHubIssue.objects.create(
            repository=repository, number=7, title="b", state="open"
        )


def test_the_admin_list_runs_a_constant_number_of_queries(
    console, django_assert_max_num_queries
):
    url = reverse("admin:github_githubissue_changelist")

    def add(count: int) -> None:
        for _ in range(count):
            repository = make_repository()
            GitHubIssue.objects.upsert_from_api(repository, webhook_issue("opened"))

    add(3)
    with django_assert_max_num_queries(20) as few:
        assert console.get(url).status_code == 200
    add(27)
    with django_assert_max_num_queries(len(few.captured_queries)):
        response = console.get(url)
    assert response.content.decode().count("Spelling error in the README") >= 30
