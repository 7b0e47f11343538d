"""Escalations, releases and failures are announced, once each, with the step
that made them. Spec 002 §3.4: intake/verification/review → (escalated):
"Teams notification queued" / "Teams notification, task paused"; release →
(completed): "Task finalized, notifications sent"; §3.5: "Trigger notification |
No | Deduplicate via notification_id in task envelope"."""

from __future__ import annotations

import pytest

from codex.configuration.models import Setting
from codex.notifications.models import Notification
from codex.tasks.jobs import advance_task
from codex.tasks.models import Escalation
from codex.tasks.runners import PhaseResult
from tests.factories import make_task
from tests.phase_runner import review
from tests.pipeline.helpers import run_steps

pytestmark = pytest.mark.django_db


def announced(task) -> list[tuple[str, str]]:
    return sorted(
        Notification.objects.filter(task=task).values_list("notification_id", "channel")
    )


def test_a_release_is_announced_on_every_configured_channel(scripted_runner):
    Setting.objects.put("notify.channels", "log, teams", actor="user:alice")
    task = make_task()

    run_steps(task)

    assert task.status == "completed"
    assert announced(task) == [
        (f"released:{task.task_id}:log", "log"),
        (f"released:{task.task_id}:teams", "teams"),
    ]
    body = Notification.objects.get(channel="teams").body
    assert task.title in body and task.pr_url in body


def test_an_escalation_is_announced_with_its_reason(scripted_runner):
    failing = PhaseResult(review=review(approve=False, blocking=1))
    scripted_runner.queue("review", failing, failing)
    task = make_task()

    run_steps(task)

    assert task.status == "escalated"
    escalation = Escalation.objects.get(task=task)
    (notification,) = Notification.objects.filter(task=task)
    assert notification.notification_id == (
        f"escalated:{task.task_id}:{escalation.pk}:log"
    )
    assert "Review cycles exhausted" in notification.subject
    assert escalation.detail in notification.body
    assert f"/tasks/{task.task_id}/" in notification.body


def test_a_second_escalation_of_the_same_task_is_announced_again(scripted_runner):
    scripted_runner.queue(
        "intake",
        PhaseResult.escalate("which database?", questions=["Which database?"]),
    )
    task = make_task()
    run_steps(task)
    first = Escalation.objects.get(task=task)
    task.resolve_escalation(first, decision="resume", by="user:bob", resolution="pg")
    scripted_runner.queue("intake", PhaseResult.escalate("and the port?"))

    run_steps(task)

    assert task.status == "escalated"
    assert len(announced(task)) == 2
    assert "Which database?" in Notification.objects.earliest("created_at").body


def test_a_failure_is_announced_with_its_reason(scripted_runner):
    scripted_runner.queue("intake", PhaseResult.failed("the repository is gone"))
    task = make_task()

    run_steps(task)

    assert task.status == "failed"
    (notification,) = Notification.objects.filter(task=task)
    assert notification.notification_id == f"failed:{task.task_id}:log"
    assert "the repository is gone" in notification.body


def test_a_step_delivered_twice_announces_nothing_new(scripted_runner):
    scripted_runner.queue("intake", PhaseResult.failed("the repository is gone"))
    task = make_task()
    run_steps(task)

    assert advance_task(task.task_id) == "skipped: failed"
    assert Notification.objects.filter(task=task).count() == 1


def test_a_cancelled_or_blocked_task_is_not_announced(scripted_runner):
    scripted_runner.queue("intake", PhaseResult.blocked("GitHub is down"))
    task = make_task()
    advance_task(task.task_id)
    task.refresh_from_db()
    assert task.status == "blocked"

    task.perform("cancel", by="user:alice")

    assert not Notification.objects.filter(task=task).exists()


def test_a_broken_notification_setting_does_not_stop_the_task(scripted_runner, caplog):
    # A value that does not parse (saved around the console's validation).
    Setting.objects.create(key="notify.max_attempts", value="many")
    Setting.objects.create(key="notify.email.to", value="  ")
    Setting.objects.put("notify.channels", "email", actor="user:alice")
    scripted_runner.queue("intake", PhaseResult.failed("the repository is gone"))
    task = make_task()

    run_steps(task)

    assert task.status == "failed"
    assert not Notification.objects.filter(task=task).exists()
    assert "announce_failure: not announced" in caplog.text
