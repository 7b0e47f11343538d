"""/metrics holds the installation's figures, read from the database at
scrape time: tasks by status and phase, agent runs with their spend, tokens
and durations, the job queue's depth and age, the workers' beats and jails,
jail failures, webhook outcomes and what blocks every task."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from django.utils import timezone
from django_q.models import OrmQ

from codex.fleet.models import AgentRun
from codex.tasks.models import Escalation, Task
from codex.webhooks.models import WebhookDelivery
from tests.factories import make_task, make_worker_cluster, put_in_state
from tests.fleet.factories import make_instance, make_run

pytestmark = pytest.mark.django_db


def value(figures: dict, name: str, **labels: str) -> float:
    return figures[(name, tuple(sorted(labels.items())))]


def test_tasks_by_status_and_phase(scrape):
    make_task()
    make_task()
    put_in_state(make_task(), status="blocked", phase="planning")
    put_in_state(make_task(), status="escalated", phase="review")
    figures = scrape()
    assert value(figures, "codex_tasks", status="pending", phase="intake") == 2
    assert value(figures, "codex_tasks", status="blocked", phase="planning") == 1
    assert value(figures, "codex_tasks", status="escalated", phase="review") == 1
    # Every pair is there, zeros too, so an alert on one can fire.
    assert value(figures, "codex_tasks", status="failed", phase="release") == 0


def test_agent_runs_spend_tokens_and_durations(scrape):
    developer = make_instance(role="developer")
    now = timezone.now()

    def run(status, seconds, cost, role=developer, **fields):
        made = make_run(status=status, instance=role, cost_usd=Decimal(cost), **fields)
        AgentRun.objects.filter(pk=made.pk).update(
            started_at=now - timedelta(seconds=seconds),
            ended_at=None if status == "running" else now,
        )

    run("succeeded", 45, "1.25", input_tokens=1000, output_tokens=200)
    run("succeeded", 400, "2.50", cache_read_tokens=5000)
    run("failed", 5, "0.25", role=None)
    run("running", 30, "0.10")
    figures = scrape()
    assert value(figures, "codex_agent_runs_total", status="succeeded") == 2
    assert value(figures, "codex_agent_runs_total", status="running") == 1
    assert value(figures, "codex_agent_spend_usd_total", status="succeeded") == 3.75
    assert value(figures, "codex_agent_spend_usd_total", status="failed") == 0.25
    assert value(figures, "codex_agent_tokens_total", kind="input") == 1000
    assert value(figures, "codex_agent_tokens_total", kind="cache_read") == 5000
    histogram = "codex_agent_run_duration_seconds"
    assert value(figures, f"{histogram}_bucket", role="developer", le="30.0") == 0
    assert value(figures, f"{histogram}_bucket", role="developer", le="60.0") == 1
    assert value(figures, f"{histogram}_bucket", role="developer", le="600.0") == 2
    assert value(figures, f"{histogram}_bucket", role="developer", le="+Inf") == 2
    assert value(figures, f"{histogram}_count", role="developer") == 2
    assert value(figures, f"{histogram}_sum", role="developer") == pytest.approx(445)
    assert value(figures, f"{histogram}_count", role="none") == 1  # the running
    # one is not finished, so not in the histogram


def test_queue_depth_and_age(scrape):
    make_task()  # its first step waits in the queue
    waiting = OrmQ.objects.get()
    assert scrape()[("codex_queue_jobs_waiting", ())] == 1
    # Queued ten minutes ago (the package's stamp; the row's lock is reset
    # whenever a job is handed back).
    from django_q.signing import SignedPackage

    package = SignedPackage.loads(waiting.payload)
    package["started"] = timezone.now() - timedelta(minutes=10)
    OrmQ.objects.filter(pk=waiting.pk).update(payload=SignedPackage.dumps(package))
    age = scrape()[("codex_queue_oldest_job_age_seconds", ())]
    assert 600 <= age < 660
    # A cluster takes it (its claim in the key), then a worker starts it.
    OrmQ.objects.filter(pk=waiting.pk).update(key=f"{waiting.key}@c1")
    figures = scrape()
    assert figures[("codex_queue_jobs_waiting", ())] == 0
    assert figures[("codex_queue_oldest_job_age_seconds", ())] == 0
    assert value(figures, "codex_queue_jobs_taken", cluster="c1") == 1
    OrmQ.objects.filter(pk=waiting.pk).update(key=f"{waiting.key}@c1#4242")
    assert value(scrape(), "codex_queue_jobs_running", cluster="c1") == 1


def test_workers_jails_and_what_blocks_every_task(scrape, settings):
    settings.CODEX_PHASE_RUNNER = "agents.phase_runner.AgentPhaseRunner"
    good = make_worker_cluster("w1", beat_seconds_ago=3)
    bad = make_worker_cluster(
        "w2", jail_problem="bubblewrap (bwrap) is not installed", model_key=False
    )
    make_worker_cluster("gone", beat_seconds_ago=600)
    figures = scrape()
    assert figures[("codex_workers_beating", ())] == 2
    age = value(figures, "codex_worker_beat_age_seconds", host="w1", cluster=good.claim)
    assert 3 <= age < 30
    jail = "codex_worker_jail_ok"
    assert (
        value(figures, jail, host="w1", cluster=good.claim, backend="bubblewrap") == 1
    )
    assert value(figures, jail, host="w2", cluster=bad.claim, backend="bubblewrap") == 0
    assert value(figures, "codex_worker_model_key", host="w2", cluster=bad.claim) == 0
    blockers = "codex_installation_blocker"
    assert value(figures, blockers, code="no_jail") == 1  # a warning: w1 has one
    assert value(figures, blockers, code="no_model_key") == 0  # w1 has a key
    assert value(figures, blockers, code="no_worker") == 0


def test_no_worker_is_a_blocker(scrape):
    figures = scrape()
    assert figures[("codex_workers_beating", ())] == 0
    assert value(figures, "codex_installation_blocker", code="no_worker") == 2


def test_jail_failures_and_webhook_outcomes(scrape):
    jailless, other = (put_in_state(make_task(), status="escalated") for _ in "ab")
    Escalation.objects.create(
        task=jailless,
        phase="implementation",
        reason="manual_review",
        detail="agents' commands cannot run: no command jail is available "
        "(bubblewrap (bwrap) is not installed). Fix: apt-get install bubblewrap",
    )
    Escalation.objects.create(task=other, phase="review", detail="a person decides")
    for number, outcome in enumerate(["processed", "processed", "failed", "ignored"]):
        WebhookDelivery.objects.create(
            delivery_id=f"d-{number}", event="issues", outcome=outcome
        )
    figures = scrape()
    assert figures[("codex_jail_escalations_total", ())] == 1
    deliveries = "codex_webhook_deliveries_total"
    assert value(figures, deliveries, outcome="processed") == 2
    assert value(figures, deliveries, outcome="failed") == 1
    assert value(figures, deliveries, outcome="unprocessable") == 0
    assert Task.objects.count() == 2


def test_the_work_in_progress_is_live_and_the_history_a_minute_old_at_most(scrape):
    from codex.monitoring.metrics import HISTORY_SECONDS, forget_history_snapshot

    put_in_state(make_task(), status="completed", phase="release")
    make_task()
    assert value(scrape(), "codex_tasks", status="completed", phase="release") == 1
    put_in_state(make_task(), status="completed", phase="release")
    put_in_state(make_task(), status="in_progress", phase="planning")
    figures = scrape()
    # The history is the snapshot's, taken at the first scrape...
    assert value(figures, "codex_tasks", status="completed", phase="release") == 1
    assert HISTORY_SECONDS <= 60
    # ...and what is in flight now is read now.
    assert value(figures, "codex_tasks", status="pending", phase="intake") == 1
    assert value(figures, "codex_tasks", status="in_progress", phase="planning") == 1
    forget_history_snapshot()  # as a minute passing does
    assert value(scrape(), "codex_tasks", status="completed", phase="release") == 2
