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
# The history (finished tasks, every agent run ever) grows without end: read
# each time it is most of the page's time (1,000,000 tasks, bench/scale.py).
# It moves by a fraction of a percent a minute, so the page shows a snapshot
# this old at most and says when it was taken; the work in progress is live.
HISTORY_TOTALS_SECONDS = 60
HISTORY_TOTALS_CACHE_KEY = "codex:dashboard:history-totals:1"
ACTIVE_STATUSES = tuple(s for s in Status.values if s not in TERMINAL_STATUSES)


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
class HistoryTotals:
    """What only grows as tasks finish and runs end: finished tasks by status,
    their merged pull requests and the completed ones' cycles; agent runs by
    health, and their spend (all, and on merged tasks)."""

    finished: dict[str, int]
    merged_pull_requests: int
    completed_cycles: int
    health: dict[str, int]
    total_cost: Decimal
    merged_cost: Decimal
    as_of: datetime
    # This month's spend against the monthly caps (codex.tasks.spend_caps).
    caps: tuple = ()


def history_totals(*, fresh: bool = False) -> HistoryTotals:
    """The history's totals: from the cache (Redis when configured, so shared
    by every web process) if at most HISTORY_TOTALS_SECONDS old, else computed
    (one GROUP BY over the finished tasks, one pass over the runs) and cached.
    `fresh` skips the cache."""
    if not fresh:
        cached = cache.get(HISTORY_TOTALS_CACHE_KEY)
        if isinstance(cached, HistoryTotals):
            return cached
    finished: dict[str, int] = {}
    merged_pull_requests = completed_cycles = 0
    for row in (
        Task.objects.filter(status__in=TERMINAL_STATUSES)
        .order_by()
        .values("status", "pr_merged")
        .annotate(
            # COUNT(*), not COUNT(id): id is not in task_dashboard.
            n=Count("*"),
            cycles=Sum(F("verification_cycles") + F("review_cycles")),
        )
    ):
        finished[row["status"]] = finished.get(row["status"], 0) + row["n"]
        if row["status"] == Status.COMPLETED:
            completed_cycles += row["cycles"] or 0
        if row["pr_merged"]:
            merged_pull_requests += row["n"]
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
    totals = HistoryTotals(
        finished,
        merged_pull_requests,
        completed_cycles,
        health,
        total_cost,
        merged_cost,
        timezone.now(),
        tuple(cap_lines(month_cost)),
    )
    cache.set(HISTORY_TOTALS_CACHE_KEY, totals, HISTORY_TOTALS_SECONDS)
    return totals


def forget_history_totals() -> None:
    """Drop the cached snapshot (tests, and after importing runs in bulk)."""
    cache.delete(HISTORY_TOTALS_CACHE_KEY)


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
    (Task.Meta.indexes; EXPLAIN notes in bench/lists.py), and the history's
    totals, two more at most once a minute."""
    today = today or timezone.localdate()
    board = Dashboard()

    # 1. The work in progress by status and phase, live: the active statuses'
    # ranges of task_dashboard, however long the history.
    status_counts: dict[str, int] = {}
    phase_counts: dict[str, int] = {}
    for row in (
        Task.objects.filter(status__in=ACTIVE_STATUSES)
        .order_by()
        .values("status", "phase")
        .annotate(n=Count("*"))
    ):
        status, n = row["status"], row["n"]
        status_counts[status] = status_counts.get(status, 0) + n
        phase_counts[row["phase"]] = phase_counts.get(row["phase"], 0) + n
    # The finished tasks, merges, cycles, runs and spend: from a snapshot at
    # most HISTORY_TOTALS_SECONDS old (see history_totals).
    history = history_totals()
    status_counts.update(history.finished)
    board.merged_pull_requests = history.merged_pull_requests
    board.by_status = bars(status_counts, list(Status.choices))
    board.by_phase = bars(phase_counts, list(Phase.choices))
    board.total_tasks = sum(status_counts.values())
    board.finished_tasks = sum(status_counts.get(s, 0) for s in TERMINAL_STATUSES)
    board.active_tasks = board.total_tasks - board.finished_tasks
    board.completed_tasks = status_counts.get(Status.COMPLETED, 0)
    board.success_rate = percent(board.completed_tasks, board.finished_tasks)
    if board.completed_tasks:
        board.average_cycles_to_green = history.completed_cycles / board.completed_tasks

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

    # 4. Agent runs: health, spend and the spend on merged tasks, from the
    # history's snapshot.
    board.runs_as_of = history.as_of
    board.caps = history.caps
    board.health = bars(history.health, list(HealthStatus.choices))
    board.total_runs = sum(history.health.values())
    board.total_cost, board.merged_cost = history.total_cost, history.merged_cost
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
