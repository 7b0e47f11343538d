"""The merge gate on GitHub (docs/gates.md), over `responses`: with the
`approval` policy Codex merges only a pull request that someone with write
access, other than the requester and never a bot, approved at its head
commit; with `manual` it waits for a person's merge; `auto` never waits."""

from __future__ import annotations

import copy

import pytest

from agents.gate_steps import merge_gate
from codex.tasks.models import GateKind
from integrations.github.forge import GitHubForge
from tests.factories import make_task, put_in_state
from tests.integrations.github.payloads import HEAD_SHA, REPO_API, pull_request, review

pytestmark = pytest.mark.django_db

OLD_SHA = "0" * 40


def approval(review_id: int, login: str, *, sha: str = HEAD_SHA, state="APPROVED"):
    item = review(review_id, "LGTM", login=login)
    item.update(state=state, commit_id=sha)
    return item


def can_write(github, login: str, permission: str = "write") -> None:
    github.get(
        f"{REPO_API}/collaborators/{login}/permission",
        json={
            "permission": permission,
            "role_name": permission,
            "user": {"login": login},
        },
    )


@pytest.fixture
def task(repository):
    repository.merge_gate = "approval"
    repository.save()
    task = make_task(repository, requester_login="rita")
    return put_in_state(
        task, "in_progress", "release", pr_url=f"{repository.url}/pull/2"
    )


def pulls(github) -> None:
    github.get(f"{REPO_API}/pulls", json=[pull_request(2, head="changes")])


def test_it_waits_when_nobody_approved(github, task):
    pulls(github)
    github.get(f"{REPO_API}/pulls/2/reviews", json=[])

    waiting = merge_gate(task, GitHubForge(task.repository), "changes")

    assert waiting.outcome == "await"
    assert (waiting.gate_kind, waiting.gate_subject) == (GateKind.MERGE, HEAD_SHA)
    assert "other than the requester" in waiting.reason


def test_a_writers_approval_at_the_head_lets_it_merge_and_is_recorded(github, task):
    pulls(github)
    github.get(f"{REPO_API}/pulls/2/reviews", json=[approval(7, "alice")])
    can_write(github, "alice")

    assert merge_gate(task, GitHubForge(task.repository), "changes") is None

    task.save()  # the step's save writes the gate and its event
    gate = task.gates.get()
    assert (gate.decision, gate.decided_by, gate.subject) == (
        "approved",
        "github:alice",
        HEAD_SHA,
    )
    assert task.events.filter(kind="control", actor="github:alice").exists()


@pytest.mark.parametrize(
    "reviews, writers",
    [
        ([approval(7, "rita")], []),  # the requester alone
        ([approval(7, "alice", sha=OLD_SHA)], []),  # approved older code
        ([approval(7, "renovate[bot]")], []),  # a bot
        ([approval(7, "alice"), approval(8, "alice", state="CHANGES_REQUESTED")], []),
        ([approval(7, "mallory")], [("mallory", "read")]),  # no write access
    ],
    ids=["requester", "stale-commit", "bot", "superseded", "reader"],
)
def test_approvals_that_do_not_count(github, task, reviews, writers):
    pulls(github)
    github.get(f"{REPO_API}/pulls/2/reviews", json=reviews)
    for login, permission in writers:
        can_write(github, login, permission)

    waiting = merge_gate(task, GitHubForge(task.repository), "changes")

    assert waiting is not None and waiting.outcome == "await"
    assert not task.gates.exists()


def test_manual_waits_for_a_person_to_merge(github, task):
    task.repository.merge_gate = "manual"
    pulls(github)

    waiting = merge_gate(task, GitHubForge(task.repository), "changes")

    assert (waiting.outcome, waiting.gate_mode) == ("await", "manual")


def test_a_merged_pull_request_passes_every_gate(github, task):
    github.get(f"{REPO_API}/pulls", json=[pull_request(2, head="changes", merged=True)])
    assert merge_gate(task, GitHubForge(task.repository), "changes") is None


def test_auto_asks_github_nothing(github, task):
    task.repository.merge_gate = "auto"
    assert merge_gate(task, GitHubForge(task.repository), "changes") is None
    assert len(github.calls) == 0


def test_approvals_reads_the_latest_verdict_per_person(github, repository):
    reviews = [
        approval(1, "alice"),
        approval(2, "bob", state="CHANGES_REQUESTED"),
        copy.deepcopy(approval(3, "bob")),
        approval(4, "carol", state="COMMENTED"),
    ]
    github.get(f"{REPO_API}/pulls/2/reviews", json=reviews)

    found = GitHubForge(repository).approvals(2)

    assert sorted(a["login"] for a in found) == ["alice", "bob"]
