"""People in control, end to end on the local forge (docs/gates.md): the plan
waits for approval and is posted on the issue, a person's message reaches the
developer fenced as human input, the merge waits at the approval gate (no
release run, no merge) until someone other than the requester approves, and
one progress comment on the issue is edited in place all along."""

from __future__ import annotations

import json

import pytest

from codex.repositories.models import LocalComment, LocalPullRequest, Repository
from codex.tasks.jobs import advance_task
from codex.tasks.models import Decider, GateDecision, GateRefused, SteeringSource
from codex.tasks.models.steering import send_message
from codex.tasks.progress import update_progress_comment
from tests.agents_e2e.test_agents_end_to_end import (
    MUL_OK,
    QA_APPROVE,
    RELEASE,
    REVIEW_APPROVE,
    implementation,
    intake_and_planning,
)
from tests.factories import make_task, make_user

pytestmark = pytest.mark.django_db(transaction=True)


def comments(task, marker: str) -> list[LocalComment]:
    return list(
        LocalComment.objects.filter(
            issue__repository=task.repository,
            issue__number=task.issue_number,
            body__contains=marker,
        )
    )


def test_plan_and_merge_wait_for_a_person(agent_settings, stub, bare_repo):
    agent_settings.CODEX_PROGRESS_MIN_SECONDS = 0
    repository = Repository.objects.create(
        url=f"file://{bare_repo}", merge_gate="approval", plan_approval=True
    )
    rita, alice = make_user("rita", role="team"), make_user("alice", role="team")
    task = make_task(
        repository,
        title="Add multiplication",
        acceptance_criteria="- mul(2, 3) == 6",
        issue_number=7,
        requested_by=rita,
    )
    stub.add(
        *intake_and_planning(),
        *implementation(MUL_OK),
        QA_APPROVE,
        REVIEW_APPROVE,
        RELEASE,
    )

    # Intake and planning, then the plan waits.
    advance_task(task.task_id), advance_task(task.task_id)
    task.refresh_from_db()
    assert (task.status, task.phase) == ("escalated", "planning")
    version = task.open_gate.subject
    assert update_progress_comment(task.task_id) == "posted"
    [plan] = comments(task, f"codex:plan:{task.task_id}:{version}")
    assert (
        "Add mul to calc.py." in plan.body and f"@codex approve {version}" in plan.body
    )
    [progress] = comments(task, f"codex:progress:{task.task_id}")
    assert "status: **escalated**" in progress.body

    # A message for the developer, then an approval by someone else.
    send_message(
        task,
        "Keep add() exactly as it is.",
        author="user:alice",
        source=SteeringSource.PAGE,
    )
    task.decide_gate(
        GateDecision.APPROVED,
        decider=Decider("user:alice", user=alice, may_approve=True),
        subject=version,
    )
    calls_before = len(stub.requests)
    for _ in range(3):  # implementation, verification, review
        advance_task(task.task_id)
    task.refresh_from_db()
    developer_prompt = json.dumps(stub.bodies[calls_before]["messages"][0])
    assert "Keep add() exactly as it is." in developer_prompt
    assert "human_input" in developer_prompt
    assert task.steering_messages.get().delivered_phase == "implementation"

    # Release: the merge waits, without running the release manager.
    runs_before_release = len(stub.requests)
    advance_task(task.task_id)
    task.refresh_from_db()
    assert (task.status, task.phase) == ("escalated", "release")
    assert len(stub.requests) == runs_before_release
    pull = LocalPullRequest.objects.get(repository=repository)
    assert pull.state == "open" and task.open_gate.subject == pull.head_sha
    assert update_progress_comment(task.task_id) == "edited"

    with pytest.raises(GateRefused, match="requester"):
        task.decide_gate(
            GateDecision.APPROVED,
            decider=Decider("user:rita", user=rita, may_approve=True),
        )
    task.decide_gate(
        GateDecision.APPROVED,
        decider=Decider("user:alice", user=alice, may_approve=True),
        subject=pull.head_sha,
    )
    advance_task(task.task_id)
    task.refresh_from_db()
    pull.refresh_from_db()
    assert task.status == "completed" and pull.state == "merged"

    update_progress_comment(task.task_id)
    [progress] = comments(task, f"codex:progress:{task.task_id}")
    assert "completed" in progress.body and "Commands" not in progress.body
    decided = [
        (g.kind, g.decision, g.decided_by) for g in task.gates.order_by("opened_at")
    ]
    assert decided == [
        ("plan", "approved", "user:alice"),
        ("merge", "approved", "user:alice"),
    ]
