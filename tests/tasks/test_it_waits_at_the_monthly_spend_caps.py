"""Monthly spend caps (docs/gates.md): per repository and for the
installation; at a cap the next agent step waits at a spend gate with the
reason and the operators are notified; no approval lifts it, raising the cap
(or a new month) does, through the scheduled check; the dashboard shows the
spend against each cap."""

from __future__ import annotations

import itertools
from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from agents.phase_runner import AgentPhaseRunner
from codex.fleet.models import AgentRun
from codex.notifications.models import Notification
from codex.tasks.gate_jobs import check_spend_caps
from codex.tasks.models import Decider, GateDecision, GateRefused, Status
from codex.tasks.pages import dashboard
from codex.tasks.spend_caps import cap_reached, month_start
from tests.factories import make_repository, make_task, make_user, put_in_state
from tests.pipeline.helpers import run_steps

pytestmark = pytest.mark.django_db
_sessions = itertools.count(1)


def spend(task, cost: str, started_at=None) -> AgentRun:
    run = AgentRun.objects.begin(
        by="worker:test",
        session_id=f"cap-{next(_sessions)}",
        task=task,
        cost_usd=Decimal(cost),
    )
    if started_at is not None:
        AgentRun.objects.filter(pk=run.pk).update(started_at=started_at)
    return run


def test_under_the_cap_nothing_waits():
    repository = make_repository(monthly_cap_usd=Decimal("10"))
    spend(make_task(repository), "9.99")
    assert cap_reached(repository) is None


def test_the_repositorys_cap_counts_only_this_month_and_this_repository():
    repository = make_repository(monthly_cap_usd=Decimal("10"))
    spend(make_task(repository), "8", started_at=month_start() - timedelta(hours=1))
    spend(make_task(), "50")  # another repository
    spend(make_task(repository), "2")
    assert cap_reached(repository) is None
    spend(make_task(repository), "8")
    assert "$10.00 of its monthly cap $10.00" in cap_reached(repository)


def test_the_installations_cap(settings):
    settings.CODEX_MONTHLY_CAP_USD = 5
    spend(make_task(), "5")
    assert "the installation spent $5.00" in cap_reached(make_repository())


def test_at_the_cap_the_step_waits_and_operators_hear_of_it(settings):
    settings.CODEX_NOTIFY_CHANNELS = "log"
    repository = make_repository(monthly_cap_usd=Decimal("1"))
    spend(make_task(repository), "1")
    task = put_in_state(make_task(repository), Status.IN_PROGRESS, "intake")
    result = AgentPhaseRunner().run(task)
    assert (result.outcome, result.gate_kind, result.gate_mode) == (
        "await",
        "spend",
        "cap",
    )
    assert "raise the cap" in result.reason


def test_a_capped_task_is_not_approved_but_goes_on_when_the_cap_is_raised(
    scripted_runner, settings
):
    settings.CODEX_NOTIFY_CHANNELS = "log"
    repository = make_repository(monthly_cap_usd=Decimal("1"))
    spend(make_task(repository), "1")
    task = make_task(repository)
    put_in_state(task, Status.IN_PROGRESS, "intake")
    task.perform(
        "await_approval",
        by="system:pipeline",
        reason=cap_reached(repository),
        kind="spend",
        mode="cap",
    )
    # Escalated with the gate's own escalation, announced like every one.
    assert task.status == "escalated"
    assert task.escalations.open().get().reason == "spend_cap"
    assert Notification.objects.filter(
        task=task, subject__contains="needs a decision: Spend cap"
    ).exists()
    with pytest.raises(GateRefused, match="raising the cap"):
        task.decide_gate(
            GateDecision.APPROVED,
            decider=Decider(
                "user:al", user=make_user("al", role="team"), may_approve=True
            ),
        )
    assert check_spend_caps() == {"checked": 1, "lifted": 0}

    repository.monthly_cap_usd = Decimal("100")
    repository.save()
    assert check_spend_caps() == {"checked": 1, "lifted": 1}
    task.refresh_from_db()
    assert task.status == "in_progress"
    assert task.gates.get().decision == "under_cap"
    escalation = task.escalations.get()
    assert (escalation.decision, escalation.resolved_by_label) == (
        "resume",
        "system:gate-check",
    )
    assert escalation.consumed_at is not None
    # Not a person's answer for the next agent: the gate's decision.
    assert not task.escalations.answered_in(task.phase).exists()
    run_steps(task)
    assert task.status == "completed"


def test_the_dashboard_shows_spend_against_each_cap(client, settings):
    client.force_login(make_user("bob", role="team"))
    settings.CODEX_MONTHLY_CAP_USD = 100
    repository = make_repository(monthly_cap_usd=Decimal("4"))
    spend(make_task(repository), "3")
    spend(make_task(repository), "2", started_at=timezone.now() - timedelta(days=40))
    dashboard.forget_history_totals()
    page = client.get(reverse("pages:dashboard")).content.decode()
    assert 'id="spend-caps"' in page
    assert "$3.00 of $4.00" in page
    assert "$3.00 of $100.00" in page
