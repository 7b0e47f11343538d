"""The merge gate from GitHub's side (docs/gates.md): an approving review by a
writer who is not the requester decides the open gate at the reviewed commit;
the requester's, a reader's or an older commit's approval does not; a person's
merge of a pull request waiting at a manual gate completes the task."""

from __future__ import annotations

import pytest

from codex.tasks.models import Status
from codex.webhooks.models import Outcome, WebhookDelivery
from tests.factories import make_task, put_in_state
from tests.webhooks.conftest import load, process_all

pytestmark = pytest.mark.django_db
PR_URL = "https://github.com/Codertocat/Hello-World/pull/2"
HEAD = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"


def waiting_task(repository, *, requester="rita", mode="approval", subject=HEAD):
    task = make_task(repository, requester_login=requester)
    put_in_state(
        task,
        status=Status.IN_PROGRESS,
        phase="release",
        pr_url=PR_URL,
        branch="changes",
    )
    return task.perform(
        "await_approval",
        by="system:pipeline",
        reason="the pull request waits for approval",
        kind="merge",
        mode=mode,
        subject=subject,
    )


def approved_review(commit: str = HEAD) -> dict:
    payload = load("pull_request_review", "submitted.payload.json")
    payload["review"]["state"] = "approved"
    payload["review"]["commit_id"] = commit
    return payload


def last() -> WebhookDelivery:
    return WebhookDelivery.objects.order_by("-pk").first()


def test_a_writers_approval_decides_the_gate(deliver, hello_world):
    task = waiting_task(hello_world)
    deliver("pull_request_review", approved_review())
    process_all()
    task.refresh_from_db()
    assert (task.status, task.phase) == ("in_progress", "release")
    gate = task.gates.get()
    assert (gate.decision, gate.decided_by) == ("approved", "github:Codertocat")
    assert last().outcome == Outcome.PROCESSED


def test_the_requesters_approval_alone_does_not(deliver, hello_world):
    task = waiting_task(hello_world, requester="Codertocat")
    deliver("pull_request_review", approved_review())
    process_all()
    task.refresh_from_db()
    assert task.status == "escalated"
    assert task.open_gate is not None
    assert "requester" in last().detail
    assert task.events.filter(reason__contains="not accepted").exists()


def test_a_readers_approval_does_not(deliver, hello_world, forge):
    forge.writers = set()
    task = waiting_task(hello_world)
    deliver("pull_request_review", approved_review())
    process_all()
    task.refresh_from_db()
    assert task.status == "escalated"


def test_an_approval_of_an_older_commit_does_not(deliver, hello_world):
    task = waiting_task(hello_world)
    deliver("pull_request_review", approved_review(commit="1" * 40))
    process_all()
    task.refresh_from_db()
    assert task.status == "escalated"
    assert "current version" in last().detail


def test_a_persons_merge_completes_a_task_at_a_manual_gate(deliver, hello_world):
    task = waiting_task(hello_world, mode="manual")
    payload = load("pull_request", "closed.payload.json")
    payload["pull_request"]["merged"] = True
    deliver("pull_request", payload)
    process_all()
    task.refresh_from_db()
    assert task.status == "completed" and task.pr_merged
    gate = task.gates.get()
    assert (gate.decision, gate.decided_by) == ("merged", "github:Codertocat")
    # Escalated → in_progress (the gate closes), then in_progress → completed:
    # only the documented transitions.
    assert list(
        task.events.filter(kind="transition", field="status")
        .order_by("-id")
        .values_list("source", "target", "data__transition")[:2]
    ) == [
        ("in_progress", "completed", "complete"),
        ("escalated", "in_progress", "notice_merge"),
    ]
    assert task.escalations.get().reason == "merge_approval"
    assert not task.escalations.open().exists()
