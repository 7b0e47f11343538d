"""`@codex approve`, `@codex changes` and `@codex steer` in issue comments
(docs/gates.md): obeyed from writers other than the requester, each answered
once with what happened or why not; the codex:plan label asks for approval."""

from __future__ import annotations

import pytest

from codex.tasks.models import Task
from codex.webhooks.commands import parse_command
from tests.factories import make_task, waiting_for_plan_approval
from tests.webhooks.conftest import load, process_all

pytestmark = pytest.mark.django_db(transaction=True)


def comment(body: str, sender: str = "Codertocat", comment_id: int = 901) -> dict:
    payload = load("issue_comment", "created.payload.json")
    payload["comment"].update(body=body, id=comment_id)
    payload["sender"].update(login=sender, type="User")
    return payload


@pytest.fixture
def waiting(hello_world):
    return waiting_for_plan_approval(
        make_task(hello_world, issue_number=1, requester_login="rita")
    )


def replies(forge) -> list[str]:
    return [c["body"] for c in forge.comments]


def test_parse_takes_the_rest_of_the_comment_for_changes_and_steer():
    assert parse_command("@codex changes Split it.\nAnd test it.").argument == (
        "Split it.\nAnd test it."
    )
    assert parse_command("> @codex steer old\n@codex steer new").argument == "new"
    assert parse_command("@codex approve abc123").argument == "abc123"


def test_approve_with_the_version_from_a_writer(deliver, waiting, forge):
    deliver("issue_comment", comment(f"@codex approve {waiting.open_gate.subject}"))
    process_all()
    waiting.refresh_from_db()
    assert (waiting.status, waiting.phase) == ("in_progress", "implementation")
    assert waiting.gates.get().decided_by == "github:Codertocat"
    assert "Approved" in replies(forge)[-1]


def test_approve_without_the_version_says_which(deliver, waiting, forge):
    deliver("issue_comment", comment("@codex approve"))
    process_all()
    waiting.refresh_from_db()
    assert waiting.status == "escalated"
    assert f"@codex approve {waiting.open_gate.subject}" in replies(forge)[-1]


def test_the_requester_cannot_approve_by_comment(deliver, waiting, forge):
    forge.writers = {"Codertocat", "rita"}
    deliver(
        "issue_comment",
        comment(f"@codex approve {waiting.open_gate.subject}", sender="rita"),
    )
    process_all()
    waiting.refresh_from_db()
    assert waiting.status == "escalated"
    assert "requester cannot approve" in replies(forge)[-1]


def test_a_non_writers_command_is_ignored(deliver, waiting, forge):
    deliver(
        "issue_comment",
        comment(f"@codex approve {waiting.open_gate.subject}", sender="mallory"),
    )
    process_all()
    waiting.refresh_from_db()
    assert waiting.status == "escalated" and replies(forge) == []


def test_changes_send_the_plan_back(deliver, waiting, forge):
    deliver("issue_comment", comment("@codex changes Use one migration, not two."))
    process_all()
    waiting.refresh_from_db()
    assert (waiting.status, waiting.plan_cycles) == ("in_progress", 1)
    entry = waiting.feedback_history["plan"][0]
    assert entry["feedback"]["message"] == "Use one migration, not two."


def test_steer_stores_the_message(deliver, hello_world, forge):
    task = make_task(hello_world, issue_number=1)
    deliver("issue_comment", comment("@codex steer Please keep the old endpoint."))
    process_all()
    message = task.steering_messages.get()
    assert (message.author, message.source, message.body) == (
        "github:Codertocat",
        "forge",
        "Please keep the old endpoint.",
    )
    assert "reads it before its next step" in replies(forge)[-1]


def test_the_plan_label_asks_for_approval_and_records_the_requester(
    deliver, hello_world
):
    payload = load("issues", "opened.payload.json")
    payload["issue"]["labels"] = [{"name": "codex"}, {"name": "codex:plan"}]
    payload["sender"].update(login="Codertocat", type="User")
    deliver("issues", payload)
    process_all()
    task = Task.objects.get(issue_number=payload["issue"]["number"])
    assert task.plan_approval_required
    assert task.requester_login == "Codertocat"


def test_answer_on_a_plan_gate_says_how_to_decide(deliver, waiting, forge):
    # The task is escalated with the gate's escalation: `@codex answer`
    # reaches it, and tells a person the gate's own decisions.
    assert waiting.escalations.open().get().reason == "plan_approval"
    deliver("issue_comment", comment("@codex answer looks fine", comment_id=905))
    process_all()
    waiting.refresh_from_db()
    assert waiting.status == "escalated"
    reply = replies(forge)[-1]
    assert "waits for a decision, not an answer" in reply
    assert f"@codex approve {waiting.open_gate.subject}" in reply
