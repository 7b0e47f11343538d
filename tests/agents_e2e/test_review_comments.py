"""The reviewer's comments reach the pull request: one review per cycle, made
inert, never posted twice (local forge; GitHub's side is in
tests/integrations/github/test_review_posting.py)."""

from __future__ import annotations

import pytest

from agents.roles.reviewer import inert, post_review, review_body, review_marker
from codex.core.errors import Action, ClassifiedFailure
from codex.core.store.side_effects import SideEffect
from codex.repositories.forge import get_forge
from codex.repositories.models import LocalComment, LocalPullRequest, Repository
from tests.agents_e2e.test_agents_end_to_end import (
    MUL_OK,
    QA_APPROVE,
    implementation,
    intake_and_planning,
    steps,
)
from tests.factories import make_task
from tests.model_stub import submit

pytestmark = pytest.mark.django_db(transaction=True)

REVIEW_BLOCKING = submit(
    {
        "assessment": "request_changes",
        "summary": "One problem, ping @octocat about #12.",
        "comments": [
            {
                "severity": "blocking",
                "file": "calc.py",
                "line": 5,
                "issue": "mul has no docstring <script>alert(1)</script>",
                "suggestion": "Add one.\n<!-- codex-review X cycle 9 -->",
                "category": "documentation",
            },
            {
                "severity": "suggestion",
                "issue": "Name the test after the case.",
                "category": "tests",
            },
        ],
        "security": {"vulnerabilities_found": 0, "items": []},
    }
)


@pytest.fixture
def repository(bare_repo):
    return Repository.objects.create(url=f"file://{bare_repo}")


def test_blocking_and_suggestion_comments_are_posted_once_per_cycle(
    agent_settings, stub, repository
):
    agent_settings.CODEX_REVIEW_POST_COMMENTS = True
    stub.add(
        *intake_and_planning(), *implementation(MUL_OK), QA_APPROVE, REVIEW_BLOCKING
    )
    task = make_task(repository, title="Add multiplication")

    results = steps(task, 5)

    assert results[-1] == "in_progress/implementation", results
    pull = LocalPullRequest.objects.get(repository=repository)
    (comment,) = LocalComment.objects.filter(issue__number=pull.number)
    body = comment.body
    assert body.startswith(review_marker(task.task_id, 1))
    assert "changes requested" in body
    assert "**Blocking**" in body and "**Suggestions**" in body
    assert "R001 `calc.py:5`: mul has no docstring" in body
    assert "&lt;script&gt;" in body and "<script>" not in body
    assert "@\u200boctocat" in body and "#\u200b12" in body
    assert body.count("<!--") == 1  # only our own marker
    event = task.events.filter(kind="tool", data__tool="post_review").get()
    assert event.data["success"] is True

    # The same cycle again (a retried step): found, not posted twice.
    task.refresh_from_db()
    task.review_cycles = 0
    review = {"assessment": "request_changes", "comments": [{"severity": "blocking"}]}
    post_review(task, get_forge(repository), task.branch, review)
    assert LocalComment.objects.filter(issue__number=pull.number).count() == 1


def test_an_unfinished_post_is_looked_up_not_repeated(agent_settings, repository):
    task = make_task(repository)
    forge = get_forge(repository)
    pull = _open_pull_request(repository, task)
    review = {"assessment": "approve", "comments": [{"severity": "suggestion"}]}
    marker = review_marker(task.task_id, 1)
    # An earlier attempt posted, then the worker died before recording it.
    forge.post_review(pull.number, review_body(task.task_id, 1, review))
    SideEffect.objects.create(
        key=f"pr:review:{repository.pk}:{pull.number}:{task.task_id}:1",
        kind="comment",
        task=task,
        attempts=1,
    )

    post_review(task, forge, pull.head, review)

    comments = LocalComment.objects.filter(issue__number=pull.number)
    assert comments.count() == 1 and marker in comments.get().body


def test_the_local_forge_refuses_a_review_of_an_unknown_pull_request(repository):
    with pytest.raises(ClassifiedFailure) as caught:
        get_forge(repository).post_review(99, "x")
    assert caught.value.error.action == Action.MANUAL_REVIEW
    assert not LocalComment.objects.exists()


def test_posting_can_be_turned_off(agent_settings, repository):
    agent_settings.CODEX_REVIEW_POST_COMMENTS = False
    task = make_task(repository)
    pull = _open_pull_request(repository, task)
    review = {"assessment": "request_changes", "comments": [{"severity": "blocking"}]}

    post_review(task, get_forge(repository), pull.head, review)

    assert not LocalComment.objects.exists()


def test_inert_text_cannot_notify_reference_or_inject():
    text = inert("Hi @team see #3 and <b>x</b>\u202e\n\nnext <!-- hidden -->", 200)
    assert text == "Hi @\u200bteam see #\u200b3 and &lt;b&gt;x&lt;/b&gt; next"
    assert len(inert("x" * 5000)) == 2000


def _open_pull_request(repository, task) -> LocalPullRequest:
    """A pull request of a branch pushed to the bare repository."""
    from agents.demo import git

    branch = f"codex/{task.task_id}"
    git("branch", branch, "main", cwd=repository.local_path)
    forge = get_forge(repository)
    made = forge.create_pull_request(
        head=branch, base="main", title="t", body="b", draft=False
    )
    return LocalPullRequest.objects.get(repository=repository, number=made["number"])
