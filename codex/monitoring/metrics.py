"""The installation's figures in Prometheus' format, read from the database
at scrape time (docs/monitoring.md lists them).

Nothing is counted in a process: every web process answers the same, a
restart loses nothing, and the figures are those of the whole installation,
workers on other machines included. Each family is one aggregate statement
(or a read of the broker), so a scrape costs the same number of statements
whatever the database holds; the indexes behind them are named where used.
Totals over all time are counters (they only grow while rows are kept);
what holds now is a gauge.

The history (finished tasks, every agent run, escalation and webhook
delivery) grows without end, and a scraper asks every 15 s or so: it is
read from a snapshot at most HISTORY_SECONDS old, shared by the web
processes through the cache, as the dashboard reads its own; the work in
progress and the queue are live.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta

from django.core.cache import cache
from django.db.models import (
    Count,
    DurationField,
    ExpressionWrapper,
    F,
    Q,
    Sum,
)
from django.db.models.functions import Coalesce
from django.utils import timezone
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from codex.core.workers import queue_snapshot
from codex.fleet.models import AgentRun, RunStatus
from codex.fleet.readiness import (
    BLOCKER_CODES,
    ERROR,
    beating_workers,
    installation_blockers,
)
from codex.tasks.models import TERMINAL_STATUSES, Escalation, Phase, Status, Task
from codex.webhooks.models import Outcome, WebhookDelivery

# Upper bounds (seconds) of the agent run duration histogram: a step of a
# small task takes a minute or two, a developer's long one an hour.
DURATION_BUCKETS = (10, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200)
# What a jail that cannot run leaves in an escalation's detail (the phase
# runner's "agents' commands cannot run: ...", QA's "commands cannot run").
JAIL_FAILURE_TEXT = "commands cannot run"
# How old the history's snapshot may be (a scraper's rate() over minutes
# sees a step a minute at most); its key in the shared cache.
HISTORY_SECONDS = 60
HISTORY_CACHE_KEY = "codex:metrics:history:2"
ACTIVE_STATUSES = tuple(s for s in Status.values if s not in TERMINAL_STATUSES)


class CodexCollector(Collector):
    """Collects every family from the database and the broker on each scrape."""

    def collect(self) -> Iterator[Metric]:
        now = timezone.now()
        history = history_snapshot()
        yield from tasks_by_status_and_phase(history)
        yield from agent_runs(history)
        yield agent_run_durations(history)
        yield from queue(now)
        workers = beating_workers(now)
        yield from worker_health(workers, now)
        yield from installation(workers)
        yield jail_escalations(history)
        yield webhook_deliveries(history)


@dataclass(frozen=True)
class History:
    """What only grows: finished tasks by (status, phase), agent runs'
    totals by status, the finished runs' durations by role, escalations
    because the jail could not run, webhook deliveries by outcome."""

    finished_tasks: dict[tuple[str, str], int]
    runs: dict[str, dict]
    durations: list[dict]
    jail_escalations: int
    webhook_outcomes: dict[str, int]


def history_snapshot(*, fresh: bool = False) -> History:
    """The history's figures: from the cache if at most HISTORY_SECONDS
    old, else read (one aggregate each) and cached. `fresh` skips the cache."""
    if not fresh:
        cached = cache.get(HISTORY_CACHE_KEY)
        if isinstance(cached, History):
            return cached
    history = History(
        finished_tasks=_task_counts(status__in=TERMINAL_STATUSES),
        runs=_run_totals(),
        durations=_duration_rows(),
        jail_escalations=Escalation.objects.filter(
            detail__contains=JAIL_FAILURE_TEXT
        ).count(),
        webhook_outcomes={
            row["outcome"]: row["n"]
            for row in WebhookDelivery.objects.order_by()
            .values("outcome")
            .annotate(n=Count("pk"))
        },
    )
    cache.set(HISTORY_CACHE_KEY, history, HISTORY_SECONDS)
    return history


def forget_history_snapshot() -> None:
    """Drop the cached snapshot (tests, and after importing history in bulk)."""
    cache.delete(HISTORY_CACHE_KEY)


def _task_counts(**where) -> dict[tuple[str, str], int]:
    """Tasks by (status, phase) among those `where` selects: index-only on
    task_dashboard (status and phase are its first columns)."""
    return {
        (row["status"], row["phase"]): row["n"]
        for row in Task.objects.filter(**where)
        .order_by()
        .values("status", "phase")
        .annotate(n=Count("*"))
    }


def tasks_by_status_and_phase(history: History) -> Iterator[Metric]:
    """Every status × phase pair, zeros included (an alert on a series that
    does not exist never fires): the work in progress live (the active
    statuses' ranges of task_dashboard), the finished from the snapshot."""
    counts = {**history.finished_tasks, **_task_counts(status__in=ACTIVE_STATUSES)}
    family = GaugeMetricFamily(
        "codex_tasks", "Tasks by status and phase, now.", labels=["status", "phase"]
    )
    for status in Status.values:
        for phase in Phase.values:
            family.add_metric([status, phase], counts.get((status, phase), 0))
    yield family


def _run_totals() -> dict[str, dict]:
    """Agent runs, spend and tokens over all time, by status."""
    return {
        row["status"]: row
        for row in AgentRun.objects.order_by()
        .values("status")
        .annotate(
            n=Count("pk"),
            cost=Coalesce(Sum("cost_usd"), 0, output_field=AgentRun.cost_usd.field),
            input=Coalesce(Sum("input_tokens"), 0),
            output=Coalesce(Sum("output_tokens"), 0),
            cache_write=Coalesce(Sum("cache_write_tokens"), 0),
            cache_read=Coalesce(Sum("cache_read_tokens"), 0),
        )
    }


def agent_runs(history: History) -> Iterator[Metric]:
    """Agent runs, spend and tokens over all time, by how each run ended."""
    rows = history.runs
    runs = CounterMetricFamily(
        "codex_agent_runs", "Agent runs started, by status.", labels=["status"]
    )
    spend = CounterMetricFamily(
        "codex_agent_spend_usd",
        "Agent spend in US dollars, by run status.",
        labels=["status"],
    )
    tokens = CounterMetricFamily(
        "codex_agent_tokens", "Model tokens of agent runs, by kind.", labels=["kind"]
    )
    kinds = ("input", "output", "cache_write", "cache_read")
    for status in RunStatus.values:
        row = rows.get(status, {})
        runs.add_metric([status], row.get("n", 0))
        spend.add_metric([status], float(row.get("cost", 0)))
    for kind in kinds:
        tokens.add_metric([kind], sum(int(row[kind]) for row in rows.values()))
    yield runs
    yield spend
    yield tokens


def _duration_rows() -> list[dict]:
    """The finished runs' durations by role: a conditional count per bucket,
    their number and total, in one statement."""
    duration = ExpressionWrapper(
        F("ended_at") - F("started_at"), output_field=DurationField()
    )
    buckets = {
        f"le_{bound}": Count("pk", filter=Q(duration__lte=timedelta(seconds=bound)))
        for bound in DURATION_BUCKETS
    }
    return list(
        AgentRun.objects.order_by()
        .filter(ended_at__isnull=False)
        .alias(duration=duration)
        .values("instance__role")
        .annotate(n=Count("pk"), total=Sum(duration), **buckets)
    )


def agent_run_durations(history: History) -> Metric:
    """How long the steps' agent runs took, by role, as a histogram over the
    finished runs."""
    rows = history.durations
    family = HistogramMetricFamily(
        "codex_agent_run_duration_seconds",
        "How long finished agent runs (a step's work) took, by role.",
        labels=["role"],
    )
    for row in rows:
        cumulative = [
            (str(float(bound)), row[f"le_{bound}"]) for bound in DURATION_BUCKETS
        ]
        cumulative.append(("+Inf", row["n"]))
        total = row["total"] or timedelta(0)
        family.add_metric(
            [row["instance__role"] or "none"],
            cumulative,
            sum_value=total.total_seconds(),
        )
    return family


def queue(now) -> Iterator[Metric]:
    """The job queue: waiting jobs and the oldest one's age; per cluster the
    jobs it took and has not started, and those it runs."""
    snapshot = queue_snapshot()
    yield GaugeMetricFamily(
        "codex_queue_jobs_waiting",
        "Jobs ready to run that no worker cluster has taken yet.",
        value=snapshot.waiting,
    )
    yield GaugeMetricFamily(
        "codex_queue_oldest_job_age_seconds",
        "How long the oldest waiting job has waited (0 when none waits).",
        value=snapshot.oldest_age_seconds(now),
    )
    taken = GaugeMetricFamily(
        "codex_queue_jobs_taken",
        "Jobs a worker cluster took and has not started.",
        labels=["cluster"],
    )
    running = GaugeMetricFamily(
        "codex_queue_jobs_running",
        "Jobs a worker cluster's workers are running.",
        labels=["cluster"],
    )
    for claim, count in sorted(snapshot.taken.items()):
        taken.add_metric([claim], count)
    for claim, count in sorted(snapshot.running.items()):
        running.add_metric([claim], count)
    yield taken
    yield running


def worker_health(workers, now) -> Iterator[Metric]:
    """What each beating worker cluster reports (codex.fleet.readiness)."""
    beating = GaugeMetricFamily(
        "codex_workers_beating",
        "Worker clusters that beat now (within CODEX_CLUSTER_STALE_SECONDS).",
        value=len(workers),
    )
    labels = ["host", "cluster"]
    age = GaugeMetricFamily(
        "codex_worker_beat_age_seconds",
        "Seconds since a worker cluster last beat.",
        labels=labels,
    )
    jail = GaugeMetricFamily(
        "codex_worker_jail_ok",
        "1 when a worker cluster's command jail works, 0 when it cannot run.",
        labels=[*labels, "backend"],
    )
    key = GaugeMetricFamily(
        "codex_worker_model_key",
        "1 when a worker cluster has a model key.",
        labels=labels,
    )
    for worker in workers:
        cluster = worker.cluster
        names = [cluster.host, cluster.claim]
        age.add_metric(names, max(0.0, (now - cluster.beat_at).total_seconds()))
        backend = str(worker.jail.get("backend", "unknown"))
        jail.add_metric([*names, backend], 1 if worker.jail_works else 0)
        key.add_metric(names, 1 if worker.has_model_key else 0)
    yield beating
    yield age
    yield jail
    yield key


def installation(workers) -> Iterator[Metric]:
    """What blocks every task now (the dashboard's warnings): every known
    code, 0 when it holds nothing up, so an alert's series always exists."""
    family = GaugeMetricFamily(
        "codex_installation_blocker",
        "2 when it blocks every task now, 1 when it weakens the installation "
        "(a warning), 0 when clear; code: no_worker, no_jail, no_model_key, "
        "unjailed.",
        labels=["code"],
    )
    found = {blocker.code: blocker.level for blocker in installation_blockers(workers)}
    for code in BLOCKER_CODES:
        level = found.get(code)
        family.add_metric([code], 2 if level == ERROR else 1 if level else 0)
    yield family


def jail_escalations(history: History) -> Metric:
    """Tasks sent to a person because commands could not run in the jail."""
    return CounterMetricFamily(
        "codex_jail_escalations",
        "Escalations because agents' commands could not run in the jail.",
        value=history.jail_escalations,
    )


def webhook_deliveries(history: History) -> Metric:
    """GitHub webhook deliveries by outcome (index webhook_outcome)."""
    counts = history.webhook_outcomes
    family = CounterMetricFamily(
        "codex_webhook_deliveries",
        "GitHub webhook deliveries received, by what became of them.",
        labels=["outcome"],
    )
    for outcome in Outcome.values:
        family.add_metric([outcome], counts.get(outcome, 0))
    return family
