"""The escalation inbox: open escalations and one answer each (the resolution is
consumed once, docs/domain/tasks.md#escalations; a stale form says so instead of
failing)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from codex.tasks.models import Decision, Escalation, Task
from tests.factories import make_task, make_user, put_in_state

pytestmark = pytest.mark.django_db

INBOX = "/inbox/"


def escalate(
    questions=("Ship without the flaky test?", "Who owns CI?"),
    detail="verification cycles exhausted",
    **task_fields,
) -> tuple[Task, Escalation]:
    task = put_in_state(
        make_task(**task_fields), status="in_progress", phase="verification"
    )
    task.perform(
        "escalate",
        by="agent:qa",
        reason=detail,
        questions=list(questions),
        code="verification_max_cycles",
    )
    return task, task.escalations.get()


def answer(escalation: Escalation, decision="resume", answers=None, note="") -> dict:
    prefix = f"esc{escalation.pk}"
    data = {f"{prefix}-decision": decision, f"{prefix}-resolution": note}
    for index, text in enumerate(answers or []):
        data[f"{prefix}-answer_{index}"] = text
    return data


def resolve_url(escalation: Escalation) -> str:
    return reverse("pages:resolve", args=[escalation.pk])


def messages_of(response) -> list[str]:
    return [str(message) for message in response.context["messages"]]


def test_url_is_the_one_the_nav_uses():
    assert reverse("pages:inbox") == INBOX


def test_lists_open_escalations_newest_first_with_their_questions(member_client):
    older, _ = escalate(title="Older task", questions=["First question?"])
    newer, _ = escalate(title="Newer task", detail="needs a decision")
    done, done_escalation = escalate(title="Resolved task")
    done.resolve_escalation(done_escalation, decision="fail", by="user:x")

    response = member_client.get(INBOX)

    content = response.content.decode()
    assert response.status_code == 200
    assert content.index("Newer task") < content.index("Older task")
    assert "Resolved task" not in content
    assert "Ship without the flaky test?" in content
    assert "First question?" in content
    assert "needs a decision" in content
    assert "Verification cycles exhausted" in content  # the reason
    assert "verification</strong>" in content  # the phase
    assert "2 open escalations" in content


def test_resume_records_the_answers_once_and_the_task_goes_on(member_client, member):
    task, escalation = escalate()

    response = member_client.post(
        resolve_url(escalation),
        answer(escalation, answers=["yes", "platform team"], note="ship it"),
        follow=True,
    )

    assert response.redirect_chain == [(INBOX, 302)]
    assert f"Escalation of {task.task_id} resolved: resume the task." in messages_of(
        response
    )
    escalation.refresh_from_db()
    assert escalation.answers == ["yes", "platform team"]
    assert escalation.resolution == "ship it"
    assert escalation.decision == Decision.RESUME
    assert escalation.resolved_by == member
    assert escalation.resolved_by_label == "user:bob"
    assert escalation.consumed_at is not None
    task.refresh_from_db()
    assert (task.status, task.phase) == ("in_progress", "verification")
    assert "Ship without the flaky test?" not in response.content.decode()


@pytest.mark.parametrize(
    ("decision", "status"), [("fail", "failed"), ("cancel", "cancelled")]
)
def test_fail_and_cancel_need_no_answers(member_client, decision, status):
    task, escalation = escalate()
    member_client.post(resolve_url(escalation), answer(escalation, decision=decision))
    task.refresh_from_db()
    assert task.status == status
    escalation.refresh_from_db()
    assert escalation.decision == decision


def test_resume_without_answers_shows_the_errors_and_records_nothing(member_client):
    task, escalation = escalate()

    response = member_client.post(
        resolve_url(escalation), answer(escalation, answers=["yes", ""])
    )

    assert response.status_code == 400
    content = response.content.decode()
    assert "Answer this question to resume the task." in content
    assert "yes</textarea>" in content
    escalation.refresh_from_db()
    assert escalation.is_open
    assert Task.objects.get(pk=task.pk).status == "escalated"


def test_unknown_decision_is_a_form_error(member_client):
    _, escalation = escalate(questions=[])
    response = member_client.post(
        resolve_url(escalation), answer(escalation, decision="merge")
    )
    assert response.status_code == 400
    assert "Select a valid choice" in response.content.decode()
    escalation.refresh_from_db()
    assert escalation.is_open


def test_stale_form_already_resolved_by_someone_else(member_client):
    task, escalation = escalate()
    carol = make_user("carol")
    task.resolve_escalation(
        escalation,
        decision="resume",
        by="user:carol",
        answers=["no", "carol"],
        user=carol,
    )

    response = member_client.post(
        resolve_url(escalation),
        answer(escalation, decision="cancel", answers=["yes", "bob"]),
        follow=True,
    )

    assert response.status_code == 200
    [message] = messages_of(response)
    assert f"The escalation of {task.task_id} was already resolved by user:carol" in (
        message
    )
    assert "(resume the task); your answer was not recorded." in message
    escalation.refresh_from_db()
    assert escalation.answers == ["no", "carol"]
    assert Task.objects.get(pk=task.pk).status == "in_progress"


def test_an_answer_is_consumed_once_a_second_submit_is_refused(member_client):
    task, escalation = escalate()
    data = answer(escalation, answers=["yes", "me"])
    member_client.post(resolve_url(escalation), data)

    response = member_client.post(resolve_url(escalation), data, follow=True)

    first, second = messages_of(response)
    assert "resolved: resume the task" in first
    assert "already resolved by user:bob" in second
    assert task.events.filter(source="escalated", target="in_progress").count() == 1


def test_stale_form_task_moved_on(member_client):
    task, escalation = escalate()
    # The task left `escalated` some other way while the escalation stayed open.
    put_in_state(task, status="in_progress")

    response = member_client.post(
        resolve_url(escalation), answer(escalation, answers=["a", "b"]), follow=True
    )

    assert response.status_code == 200
    [message] = messages_of(response)
    assert message == (
        f"Task {task.task_id} is in progress now, no longer waiting for this "
        "answer; nothing was recorded."
    )
    escalation.refresh_from_db()
    assert escalation.is_open
    assert escalation.answers == []


def test_task_busy_keeps_the_answers_and_asks_to_retry(member_client):
    task, escalation = escalate()
    task.acquire_lease("worker:elsewhere")

    response = member_client.post(
        resolve_url(escalation), answer(escalation, answers=["keep me", "b"])
    )

    assert response.status_code == 409
    content = response.content.decode()
    assert "is being changed right now" in content
    assert "keep me" in content
    escalation.refresh_from_db()
    assert escalation.is_open


def test_unknown_escalation_is_404(member_client):
    response = member_client.post(reverse("pages:resolve", args=[999999]), {})
    assert response.status_code == 404


def test_resolving_needs_post(member_client):
    _, escalation = escalate()
    assert member_client.get(resolve_url(escalation)).status_code == 405


def test_pagination(member_client):
    for index in range(23):
        escalate(title=f"Task number {index:02d}", questions=[])

    first = member_client.get(INBOX).content.decode()
    second = member_client.get(INBOX + "?page=2").content.decode()

    assert first.count('class="card escalation"') == 20
    assert second.count('class="card escalation"') == 3
    assert "Task number 22" in first and "Task number 00" in second
    assert "Page 1 of 2" in first


def test_constant_queries_whatever_the_number_of_escalations(member_client):
    def count_queries() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert member_client.get(INBOX).status_code == 200
        return len(queries)

    escalate()
    few = count_queries()
    for _ in range(15):
        escalate()
    assert count_queries() == few
    assert few <= 6


def test_untrusted_text_is_escaped(member_client):
    escalate(
        title="<b>bold</b>",
        questions=["<script>alert(1)</script>?"],
        detail="<img src=x onerror=alert(2)>",
    )
    content = member_client.get(INBOX).content.decode()
    assert "<script>alert(1)" not in content
    assert "<img src=x" not in content
    assert "<b>bold</b>" not in content
    assert "&lt;script&gt;alert(1)&lt;/script&gt;?" in content
    assert "&lt;img src=x onerror=alert(2)&gt;" in content
