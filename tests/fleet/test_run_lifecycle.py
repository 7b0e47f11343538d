"""Agent runs: running → succeeded | failed, logged; ended exactly when done."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone
from django_fsm import TransitionNotAllowed

from codex.events.models import Event, EventKind
from codex.fleet.models import AgentRun, RunStatus
from codex.fleet.models.run import Spend
from tests.factories import make_task
from tests.fleet.factories import make_instance

pytestmark = pytest.mark.django_db


def test_begin_creates_a_running_run_and_logs_it():
    task = make_task()
    run = AgentRun.objects.begin(
        by="worker:1", task=task, instance=make_instance(), slot=2
    )
    assert run.status == RunStatus.RUNNING and run.ended_at is None
    assert run.session_id.startswith("session_") and run.session_id.endswith("_2")
    event = Event.objects.get(subject=f"run:{run.session_id}")
    assert (event.kind, event.target, event.task, event.data["run"]) == (
        EventKind.RUN,
        "running",
        task,
        run.pk,
    )


def test_succeed_ends_the_run_and_logs_the_transition():
    run = AgentRun.objects.begin(by="worker:1")
    run.perform("succeed", by="worker:1")
    run.refresh_from_db()
    assert run.status == RunStatus.SUCCEEDED and run.ended_at is not None
    event = Event.objects.filter(subject=f"run:{run.session_id}").latest("id")
    assert (event.source, event.target, event.reason) == (
        "running",
        "succeeded",
        "session ended",
    )


def test_fail_keeps_the_error():
    run = AgentRun.objects.begin(by="worker:1")
    run.perform("fail", by="worker:1", reason="API error", error="529 overloaded")
    run.refresh_from_db()
    assert (run.status, run.error) == (RunStatus.FAILED, "529 overloaded")
    with pytest.raises(TransitionNotAllowed):
        run.perform("succeed", by="worker:1")


def test_a_finished_run_must_have_ended_and_a_running_one_must_not():
    with pytest.raises(IntegrityError), transaction.atomic():
        AgentRun.objects.create(session_id="s1", status=RunStatus.SUCCEEDED)
    with pytest.raises(IntegrityError), transaction.atomic():
        AgentRun.objects.create(session_id="s2", ended_at=timezone.now())


def test_issues_closed_counts_the_closed_issue_numbers():
    run = AgentRun.objects.begin(by="worker:1", issues_worked=[42, 43])
    run.closed_issues = [42, 42]
    run.save(update_fields=["closed_issues"])
    run.refresh_from_db()
    assert (run.closed_issues, run.issues_closed) == ([42], 1)


def test_a_heartbeat_does_not_bump_the_version():
    run = AgentRun.objects.begin(by="worker:1")
    version = run.version
    run.beat()
    stored = AgentRun.objects.get(pk=run.pk)
    assert stored.heartbeat_at == run.heartbeat_at and stored.version == version


SPEND_OF_TASK = {
    "queryset": lambda task: AgentRun.objects.filter(task=task).spend(),
    "compiled": lambda task: AgentRun.spend_of_task(task.pk),
}


@pytest.mark.parametrize("spend_of", SPEND_OF_TASK.values(), ids=SPEND_OF_TASK)
def test_spend_totals_cost_and_every_kind_of_token_in_one_query(
    django_assert_num_queries, spend_of
):
    task = make_task()
    first = AgentRun.objects.begin(by="worker:1", session_id="a", task=task)
    AgentRun.objects.filter(pk=first.pk).update(
        cost_usd=Decimal("1.250000"),
        input_tokens=100,
        output_tokens=20,
        cache_write_tokens=3,
        cache_read_tokens=4000,
    )
    second = AgentRun.objects.begin(by="worker:1", session_id="b", task=task)
    AgentRun.objects.filter(pk=second.pk).update(
        cost_usd=Decimal("0.500000"), output_tokens=7
    )
    AgentRun.objects.begin(by="worker:1", session_id="c", cost_usd=Decimal("9"))

    with django_assert_num_queries(1):
        spent = spend_of(task)

    assert spent == Spend(cost_usd=Decimal("1.75"), tokens=4130, runs=2)
    assert spent.tokens == sum(
        run.total_tokens for run in AgentRun.objects.filter(task=task)
    )


def test_spend_of_no_runs_is_zero():
    for spent in (
        AgentRun.objects.none().spend(),
        AgentRun.spend_of_task(make_task().pk),
    ):
        assert spent == Spend(cost_usd=Decimal(0), tokens=0, runs=0)
        assert isinstance(spent.cost_usd, Decimal) and isinstance(spent.tokens, int)
