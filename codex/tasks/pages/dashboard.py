"""The dashboard's numbers, each aggregated in SQL: a fixed handful of queries
however many tasks and runs there are.

Definitions (shown on the page too):

- success rate: completed ÷ finished (completed, failed, cancelled) tasks;
- escalation rate: tasks escalated at least once ÷ all tasks (a wait at a
  gate, docs/gates.md, is a step of the policy, not a rescue: not counted);
- cycles to green: verification_cycles + review_cycles, averaged over
  completed tasks;
- cost per merged pull request: the agent runs' cost of tasks whose pull
  request was merged ÷ their number; all spend ÷ merged PRs is shown beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import Decimal

from django.core.cache import cache
from django.db.models import Count, F, Q, Sum
from django.db.models.functions import TruncDate
from django.utils import timezone

from codex.fleet.models import AgentRun
from codex.fleet.models.choices import HealthStatus
from codex.tasks.models import (
    TERMINAL_STATUSES,
    Escalation,
    Phase,
    Status,
    Task,
)
from codex.tasks.models.escalation import GATE_REASONS
from codex.tasks.spend_caps import cap_lines, month_start

THROUGHPUT_DAYS = 14
RECENT_TASKS = 10
# The agent-run totals read every run ever (200k runs: most of the page's time
# when computed each time); they move by a fraction of a percent a minute, so
# the page shows a snapshot this old at most, and says when it was taken.
RUN_TOTALS_SECONDS = 60
RUN_TOTALS_CACHE_KEY = "codex:dashboard:run-totals:1"


@dataclass(frozen=True)
class Bar:
    """One bar of a chart: its label, value and length relative to the longest."""

    key: str
    label: str
    value: int
    percent: float

    @property
    def rest(self) -> float:
        """What is left of a full-length bar: a vertical bar's top offset."""
        return 100 - self.percent


def bars(counts: dict[str, int], labels: list[tuple[str, str]]) -> list[Bar]:
    """Bars in the order of `labels` (every label, zero included)."""
    longest = max(counts.values(), default=0) or 1
    return [
        Bar(key, label, counts.get(key, 0), 100 * counts.get(key, 0) / longest)
        for key, label in labels
    ]


def percent(part: int | Decimal, whole: int | Decimal) -> float | None:
    """part ÷ whole in percent, or None when there is nothing to divide by."""
    return 100 * float(part) / float(whole) if whole else None


@dataclass(frozen=True)
class RunTotals:
    """Agent runs by health, and their spend (all, and on merged tasks)."""

    health: dict[str, int]
    total_cost: Decimal
    merged_cost: Decimal
    as_of: datetime
    # This month's spend against the monthly caps (codex.tasks.spend_caps).
    caps: tuple = ()


def run_totals(*, fresh: bool = False) -> RunTotals:
    """The agent-run totals: from the cache (Redis when configured, so shared
    by every web process) if at most RUN_TOTALS_SECONDS old, else computed in
    one pass over the runs and cached. `fresh` skips the cache."""
    if not fresh:
        cached = cache.get(RUN_TOTALS_CACHE_KEY)
        if isinstance(cached, RunTotals):
            return cached
    # Health is computed in SQL by the run queryset; the merged tasks are a
    # hashed IN over the task_merged index rather than a join with every task.
    merged_tasks = Task.objects.filter(pr_merged=True).values("id")
    health: dict[str, int] = {}
    total_cost = merged_cost = month_cost = Decimal(0)
    for row in (
        AgentRun.objects.with_health()
        .order_by()
        .values("health")
        .annotate(
            n=Count("id"),
            cost=Sum("cost_usd"),
            merged=Sum("cost_usd", filter=Q(task_id__in=merged_tasks)),
            month=Sum("cost_usd", filter=Q(started_at__gte=month_start())),
        )
    ):
        health[row["health"]] = row["n"]
        total_cost += row["cost"] or 0
        merged_cost += row["merged"] or 0
        month_cost += row["month"] or 0
    totals = RunTotals(
        health,
        total_cost,
        merged_cost,
        timezone.now(),
        tuple(cap_lines(month_cost)),
    )
    cache.set(RUN_TOTALS_CACHE_KEY, totals, RUN_TOTALS_SECONDS)
    return totals


def forget_run_totals() -> None:
    """Drop the cached snapshot (tests, and after importing runs in bulk)."""
    cache.delete(RUN_TOTALS_CACHE_KEY)


@dataclass
class Dashboard:
    by_status: list[Bar] = field(default_factory=list)
    by_phase: list[Bar] = field(default_factory=list)
    throughput: list[Bar] = field(default_factory=list)
    health: list[Bar] = field(default_factory=list)
    total_tasks: int = 0
    active_tasks: int = 0
    finished_tasks: int = 0
    completed_tasks: int = 0
    escalated_tasks: int = 0
    completed_in_window: int = 0
    # Rates in percent; None when there is nothing to measure yet.
    success_rate: float | None = None
    escalation_rate: float | None = None
    average_cycles_to_green: float | None = None
    merged_pull_requests: int = 0
    total_cost: Decimal = Decimal(0)
    merged_cost: Decimal = Decimal(0)
    cost_per_merged_pr: Decimal | None = None
    spend_per_merged_pr: Decimal | None = None
    total_runs: int = 0
    runs_as_of: datetime | None = None
    caps: tuple = ()
    recent_tasks: list[Task] = field(default_factory=list)


def build(today: date | None = None) -> Dashboard:
    """Everything the dashboard shows: four queries, each served by an index
    (Task.Meta.indexes; EXPLAIN notes in bench/lists.py), and the agent-run
    totals, a fifth query at most once a minute."""
    today = today or timezone.localdate()
    board = Dashboard()

    # 1. Status, phase, merges and cycles in one GROUP BY: an index-only scan
    # of task_dashboard. Phase only counts for active tasks.
    status_counts: dict[str, int] = {}
    phase_counts: dict[str, int] = {}
    completed_cycles = 0
    for row in (
        Task.objects.order_by()
        .values("status", "phase", "pr_merged")
        .annotate(
            # COUNT(*), not COUNT(id): id is not in the index.
            n=Count("*"),
            cycles=Sum(F("verification_cycles") + F("review_cycles")),
        )
    ):
        status, n = row["status"], row["n"]
        status_counts[status] = status_counts.get(status, 0) + n
        if status not in TERMINAL_STATUSES:
            phase_counts[row["phase"]] = phase_counts.get(row["phase"], 0) + n
        if status == Status.COMPLETED:
            completed_cycles += row["cycles"] or 0
        if row["pr_merged"]:
            board.merged_pull_requests += n
    board.by_status = bars(status_counts, list(Status.choices))
    board.by_phase = bars(phase_counts, list(Phase.choices))
    board.total_tasks = sum(status_counts.values())
    board.finished_tasks = sum(status_counts.get(s, 0) for s in TERMINAL_STATUSES)
    board.active_tasks = board.total_tasks - board.finished_tasks
    board.completed_tasks = status_counts.get(Status.COMPLETED, 0)
    board.success_rate = percent(board.completed_tasks, board.finished_tasks)
    if board.completed_tasks:
        board.average_cycles_to_green = completed_cycles / board.completed_tasks

    # 2. Tasks escalated at least once, counted in the (small) escalation table
    # rather than probed once per task.
    board.escalated_tasks = (
        Escalation.objects.exclude(reason__in=GATE_REASONS.values())
        .values("task")
        .distinct()
        .count()
    )
    board.escalation_rate = percent(board.escalated_tasks, board.total_tasks)

    # 3. Throughput: completions per day over the window, days without any too.
    # A range on finished_at itself (not on its date) so task_completed_finished
    # serves it.
    first_day = today - timedelta(days=THROUGHPUT_DAYS - 1)
    window_start = timezone.make_aware(datetime.combine(first_day, time.min))
    per_day = {
        row["day"]: row["n"]
        for row in Task.objects.filter(
            status=Status.COMPLETED, finished_at__gte=window_start
        )
        .annotate(day=TruncDate("finished_at"))
        .order_by()
        .values("day")
        .annotate(n=Count("*"))
    }
    days = [first_day + timedelta(days=offset) for offset in range(THROUGHPUT_DAYS)]
    board.throughput = bars(
        {day.isoformat(): per_day.get(day, 0) for day in days},
        [(day.isoformat(), f"{day:%b %d}") for day in days],
    )
    board.completed_in_window = sum(bar.value for bar in board.throughput)

    # 4. Agent runs: health, spend and the spend on merged tasks, from a
    # snapshot at most RUN_TOTALS_SECONDS old (see run_totals).
    runs = run_totals()
    board.runs_as_of = runs.as_of
    board.caps = runs.caps
    board.health = bars(runs.health, list(HealthStatus.choices))
    board.total_runs = sum(runs.health.values())
    board.total_cost, board.merged_cost = runs.total_cost, runs.merged_cost
    if board.merged_pull_requests:
        board.cost_per_merged_pr = board.merged_cost / board.merged_pull_requests
        board.spend_per_merged_pr = board.total_cost / board.merged_pull_requests

    # 5. The latest tasks, to reach their pages.
    board.recent_tasks = list(
        Task.objects.select_related("repository").order_by("-created_at", "-id")[
            :RECENT_TASKS
        ]
    )
    return board
