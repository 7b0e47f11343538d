"""One progress comment per task on its issue (docs/gates.md): posted once,
edited in place after, never re-posted, also across a crash between posting
and recording it and between an edit and its record; on GitHub over
`responses` (a POST once, then PATCHes of the same comment)."""

from __future__ import annotations

import json

import pytest
import responses
from django.core.cache import cache

from codex.core.store.side_effects import SideEffect
from codex.repositories.models import LocalComment, Repository
from codex.tasks.models import Status
from codex.tasks.progress import progress_marker, update_progress_comment
from tests.factories import make_task, put_in_state
from tests.integrations.git.helpers import make_remote
from tests.integrations.github.conftest import TOKENS
from tests.integrations.github.payloads import REPO_API, REPO_URL, comment

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _no_wait(settings):
    settings.CODEX_PROGRESS_MIN_SECONDS = 0
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def task(tmp_path):
    bare = make_remote(tmp_path / "forge")
    repository = Repository.objects.create(url=f"file://{bare}")
    return make_task(repository, issue_number=5)


def ours(task) -> list[LocalComment]:
    return list(
        LocalComment.objects.filter(
            issue__number=5, body__contains=progress_marker(task)
        )
    )


def test_posted_once_then_edited_in_place(task):
    assert update_progress_comment(task.task_id) == "posted"
    [first] = ours(task)
    assert "status: **pending**" in first.body

    put_in_state(task, Status.IN_PROGRESS, "planning")
    assert update_progress_comment(task.task_id) == "edited"
    [edited] = ours(task)
    assert edited.pk == first.pk and "**Planning**" in edited.body
    assert update_progress_comment(task.task_id) == "unchanged"


def test_a_crash_after_posting_finds_the_comment_instead_of_posting_again(task):
    update_progress_comment(task.task_id)
    # The worker died after GitHub posted it and before its record was done.
    SideEffect.objects.filter(key__startswith="issue:progress:").update(
        status="started", result={}
    )
    cache.clear()
    put_in_state(task, Status.IN_PROGRESS, "planning")
    update_progress_comment(task.task_id)
    [only] = ours(task)
    assert "**Planning**" in only.body


def test_a_crash_between_the_edit_and_its_record_edits_the_same_comment(task):
    update_progress_comment(task.task_id)
    put_in_state(task, Status.IN_PROGRESS, "planning")
    update_progress_comment(task.task_id)
    cache.clear()  # the record of the edit is lost; the job runs again
    update_progress_comment(task.task_id)
    assert len(ours(task)) == 1


def test_it_says_why_a_task_waits_and_what_people_can_do(task):
    put_in_state(task, Status.IN_PROGRESS, "release", pr_url="https://x/pull/1")
    task.perform(
        "await_approval",
        by="system:pipeline",
        reason="pull request waits for approval",
        kind="merge",
        subject="a" * 40,
    )
    update_progress_comment(task.task_id)
    [body] = [c.body for c in ours(task)]
    assert "Waiting: pull request waits for approval" in body
    assert "@codex approve" in body and "Cost so far: $0.00" in body
    assert "https://x/pull/1" in body


def test_no_issue_no_comment():
    task = make_task()
    assert update_progress_comment(task.task_id) == "no issue to comment on"


@pytest.fixture
def github_task(settings):
    settings.CODEX_CREDENTIALS = {**settings.CODEX_CREDENTIALS, "github": TOKENS}
    settings.CODEX_GITHUB_SECONDS_BETWEEN_REQUESTS = None
    settings.CODEX_GITHUB_SECONDS_BETWEEN_WRITES = None
    settings.GITHUB_APP_ID = ""
    settings.GITHUB_BASE_URL = "https://api.github.com"
    settings.CODEX_BOT_LOGIN = "codex[bot]"
    return make_task(Repository.objects.create(url=REPO_URL), issue_number=1)


def test_on_github_one_post_then_patches_of_the_same_comment(github_task):
    with responses.RequestsMock(assert_all_requests_are_fired=True) as github:
        # GitHub answers with the comment as posted.
        github.add_callback(
            "POST",
            f"{REPO_API}/issues/1/comments",
            callback=lambda request: (
                201,
                {},
                json.dumps(comment(901, json.loads(request.body)["body"])),
            ),
        )
        update_progress_comment(github_task.task_id)
        put_in_state(github_task, Status.IN_PROGRESS, "planning")
        github.patch(
            f"{REPO_API}/issues/comments/901",
            json=comment(901, "edited", login="codex[bot]"),
        )
        assert update_progress_comment(github_task.task_id) == "edited"
        posts = [c for c in github.calls if c.request.method == "POST"]
        patch = [c for c in github.calls if c.request.method == "PATCH"]
        assert len(posts) == 1 and len(patch) == 1
        assert "**Planning**" in json.loads(patch[0].request.body)["body"]


def test_edits_close_together_wait_and_carry_the_newest_state(
    task, settings, monkeypatch
):
    settings.CODEX_PROGRESS_MIN_SECONDS = 30
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        put_in_state(task, Status.IN_PROGRESS, "implementation")  # meanwhile

    monkeypatch.setattr("codex.tasks.progress.time.sleep", sleep)
    update_progress_comment(task.task_id)
    put_in_state(task, Status.IN_PROGRESS, "planning")
    assert update_progress_comment(task.task_id) == "edited"
    assert len(slept) == 1 and 25 < slept[0] <= 30
    [only] = ours(task)
    assert "**Implementation**" in only.body
