"""Issues become tasks for writers; @codex commands; spec 001 child reports."""

from __future__ import annotations

import pytest

from codex.children.models import ChildReport, FanOut
from codex.claims.models import IssueClaim
from codex.tasks.models import Escalation, Status, Task
from codex.webhooks.models import Outcome, WebhookDelivery
from tests.factories import make_task, put_in_state
from tests.jobs import queued_calls
from tests.webhooks.conftest import load, process_all


def labeled(label: str = "codex", sender: str = "Codertocat", kind: str = "User"):
    payload = load("issues", "labeled.payload.json")
    payload["label"]["name"] = label
    payload["issue"]["labels"].append({"name": label})
    payload["sender"].update(login=sender, type=kind)
    return payload


def comment(body: str, sender: str = "Codertocat", comment_id: int = 777) -> dict:
    payload = load("issue_comment", "created.payload.json")
    payload["comment"].update(body=body, id=comment_id)
    payload["sender"].update(login=sender, type="User")
    return payload


def last_outcome() -> WebhookDelivery:
    return WebhookDelivery.objects.order_by("-pk").first()


@pytest.mark.django_db
def test_the_trigger_label_from_a_writer_creates_and_claims_a_task(
    deliver, hello_world, enqueued, django_capture_on_commit_callbacks
):
    deliver("issues", labeled())
    with django_capture_on_commit_callbacks(execute=True):
        process_all()
    task = Task.objects.get()
    # The envelope's created_by is form | api | manual: the issue says GitHub.
    assert (task.created_by, task.issue_number) == ("api", 1)
    assert task.idempotency_key == f"github:{hello_world.pk}:1"
    assert task.title == "Spelling error in the README file"
    claim = IssueClaim.objects.get(repository=hello_world, number=1)
    assert claim.claimed_by == task.task_id
    assert last_outcome().outcome == Outcome.PROCESSED
    # Its first step: a job row written with the task (ORM broker).
    assert ("codex.tasks.jobs.advance_task", task.task_id) in queued_calls()


@pytest.mark.django_db
def test_labelling_twice_or_opening_with_the_label_makes_one_task(deliver, hello_world):
    deliver("issues", labeled())
    deliver("issues", labeled())
    opened = load("issues", "opened.payload.json")
    opened["issue"]["labels"].append({"name": "Codex"})
    deliver("issues", opened)
    process_all()
    assert Task.objects.count() == 1
    assert WebhookDelivery.objects.filter(outcome=Outcome.PROCESSED).count() == 3


@pytest.mark.django_db
@pytest.mark.parametrize(
    "payload",
    [
        labeled(label="bug"),
        load("issues", "opened.payload.json"),  # opened without the label
    ],
    ids=["other-label", "opened-unlabelled"],
)
def test_without_the_trigger_label_nothing_happens(deliver, hello_world, payload):
    deliver("issues", payload)
    process_all()
    assert not Task.objects.exists()
    assert last_outcome().outcome == Outcome.IGNORED


@pytest.mark.django_db
@pytest.mark.parametrize(
    "sender, kind",
    [("codex[bot]", "Bot"), ("CODEX[BOT]", "User"), ("other[bot]", "Bot")],
)
def test_bot_senders_are_ignored(deliver, hello_world, forge, sender, kind):
    forge.writers.add(sender)
    deliver("issues", labeled(sender=sender, kind=kind))
    process_all()
    assert not Task.objects.exists()
    assert last_outcome().outcome == Outcome.IGNORED
    assert "bot" in last_outcome().detail


@pytest.mark.django_db
def test_an_unknown_repository_is_not_acted_on(deliver):
    deliver("issues", labeled())
    process_all()
    assert not Task.objects.exists()
    assert last_outcome().outcome == Outcome.UNKNOWN_REPOSITORY


@pytest.mark.django_db
def test_a_repository_that_does_not_accept_tasks_gets_none(deliver, hello_world):
    hello_world.accepts_tasks = False
    hello_world.save()
    deliver("issues", labeled())
    process_all()
    assert not Task.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_non_writer_gets_no_task_and_one_polite_comment(deliver, hello_world, forge):
    deliver("issues", labeled(sender="stranger"))
    deliver("issues", labeled(sender="stranger"))
    process_all()
    assert not Task.objects.exists()
    assert not IssueClaim.objects.exists()
    assert len(forge.comments) == 1
    assert "write access" in forge.comments[0]["body"]
    assert forge.comments[0]["issue_number"] == 1


@pytest.mark.django_db(transaction=True)
def test_non_writers_get_silence_when_replies_are_off(
    deliver, hello_world, forge, settings
):
    settings.CODEX_WEBHOOK_REPLY_TO_NON_WRITERS = False
    deliver("issues", labeled(sender="stranger"))
    process_all()
    assert forge.comments == [] and not Task.objects.exists()


# -- @codex commands ------------------------------------------------------------


@pytest.fixture
def issue_task(hello_world):
    return make_task(hello_world, issue_number=1)


@pytest.mark.django_db(transaction=True)
def test_codex_cancel_from_a_writer_cancels_and_replies_once(
    deliver, issue_task, forge
):
    deliver("issue_comment", comment("Not needed any more.\n@codex cancel"))
    process_all()
    issue_task.refresh_from_db()
    assert issue_task.status == Status.CANCELLED
    assert len(forge.comments) == 1
    assert "Cancelled" in forge.comments[0]["body"]
    # Processing the same delivery again (admin re-process) replies no more.
    from codex.webhooks.jobs import reprocess

    reprocess(WebhookDelivery.objects.all())
    process_all()
    assert len(forge.comments) == 1


@pytest.mark.django_db(transaction=True)
def test_codex_cancel_while_a_worker_holds_the_task_waits_for_the_step(
    deliver, issue_task, forge
):
    put_in_state(issue_task, status=Status.IN_PROGRESS)
    issue_task.acquire_lease("worker:elsewhere")
    deliver("issue_comment", comment("@codex cancel"))
    process_all()
    issue_task.refresh_from_db()
    assert issue_task.status == Status.IN_PROGRESS
    assert issue_task.control_requests.pending().filter(action="cancel").exists()
    assert "when its current step ends" in forge.comments[0]["body"]


@pytest.mark.django_db(transaction=True)
def test_a_non_writers_command_is_ignored_silently(deliver, issue_task, forge):
    deliver("issue_comment", comment("@codex cancel", sender="stranger"))
    process_all()
    issue_task.refresh_from_db()
    assert issue_task.status == Status.PENDING
    assert forge.comments == []
    assert last_outcome().outcome == Outcome.IGNORED


@pytest.mark.django_db(transaction=True)
def test_codex_status_replies_with_status_phase_and_pull_request(
    deliver, issue_task, forge
):
    put_in_state(
        issue_task,
        status=Status.IN_PROGRESS,
        phase="implementation",
        pr_url="https://github.com/Codertocat/Hello-World/pull/2",
    )
    deliver("issue_comment", comment("@codex status"))
    process_all()
    body = forge.comments[0]["body"]
    assert issue_task.task_id in body
    assert "in progress" in body and "implementation" in body
    assert "/pull/2" in body
    assert body.startswith("@Codertocat")


@pytest.mark.django_db(transaction=True)
def test_codex_retry_unblocks_a_blocked_task(deliver, issue_task, forge, enqueued):
    put_in_state(issue_task, status=Status.BLOCKED, blocked_reason="rate limited")
    deliver("issue_comment", comment("@codex retry"))
    process_all()
    issue_task.refresh_from_db()
    assert issue_task.status == Status.IN_PROGRESS
    assert ("codex.tasks.jobs.advance_task", issue_task.task_id) in queued_calls()


@pytest.mark.django_db(transaction=True)
def test_codex_retry_on_a_task_that_is_not_blocked_says_so(deliver, issue_task, forge):
    deliver("issue_comment", comment("@codex retry"))
    process_all()
    assert "Nothing to retry" in forge.comments[0]["body"]


@pytest.mark.django_db(transaction=True)
def test_codex_answer_resolves_the_open_escalation(deliver, issue_task, forge):
    put_in_state(issue_task, status=Status.ESCALATED)
    escalation = Escalation.objects.create(
        task=issue_task,
        phase="intake",
        reason="needs_clarification",
        detail="Which login provider?",
        questions=["GitHub or Google?"],
    )
    deliver("issue_comment", comment("@codex answer Use GitHub OAuth,\nplease."))
    process_all()
    escalation.refresh_from_db()
    issue_task.refresh_from_db()
    assert escalation.decision == "resume"
    assert escalation.resolution == "Use GitHub OAuth,\nplease."
    assert escalation.resolved_by_label == "github:Codertocat"
    assert issue_task.status == Status.IN_PROGRESS


@pytest.mark.django_db(transaction=True)
def test_a_quoted_command_is_not_run(deliver, issue_task, forge):
    deliver("issue_comment", comment("> @codex cancel\nI disagree with that."))
    process_all()
    issue_task.refresh_from_db()
    assert issue_task.status == Status.PENDING
    assert forge.comments == []


@pytest.mark.django_db(transaction=True)
def test_a_command_on_a_pull_request_finds_the_task_by_its_url(
    deliver, hello_world, forge
):
    task = make_task(hello_world)
    put_in_state(task, pr_url="https://github.com/Codertocat/Hello-World/pull/9")
    payload = comment("@codex cancel")
    payload["issue"]["number"] = 9
    payload["issue"]["pull_request"] = {
        "html_url": "https://github.com/Codertocat/Hello-World/pull/9"
    }
    deliver("issue_comment", payload)
    process_all()
    task.refresh_from_db()
    assert task.status == Status.CANCELLED
    assert forge.comments[0]["issue_number"] == 9


# -- spec 001 child reports ---------------------------------------------------------


@pytest.fixture
def fan_out(issue_task):
    return FanOut.objects.start(
        issue_task, expected_child_count=2, by="test", issue_number=1
    )


@pytest.mark.django_db
def test_a_child_marker_comment_from_a_bot_reaches_the_fan_out(deliver, fan_out):
    payload = comment("🤖 Child C1 complete: PR #10 ready for review", comment_id=55)
    payload["sender"].update(login="github-actions[bot]", type="Bot")
    deliver("issue_comment", payload)
    process_all()
    report = ChildReport.objects.get()
    assert (report.child_id, report.comment_id, report.pr_number) == ("C1", 55, 10)
    assert last_outcome().outcome == Outcome.PROCESSED


@pytest.mark.django_db
def test_comments_without_the_marker_are_not_reports(deliver, fan_out):
    deliver("issue_comment", comment("Child C1 complete: PR #10", comment_id=56))
    process_all()
    assert not ChildReport.objects.exists()
    assert last_outcome().outcome == Outcome.IGNORED


@pytest.mark.django_db
def test_codex_own_bot_cannot_report_as_a_child(deliver, fan_out):
    payload = comment("🤖 Child C1 complete: PR #10", comment_id=57)
    payload["sender"].update(login="codex[bot]", type="Bot")
    deliver("issue_comment", payload)
    process_all()
    assert not ChildReport.objects.exists()
