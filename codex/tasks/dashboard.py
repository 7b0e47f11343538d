"""The dashboard's numbers, each aggregated in SQL: a fixed handful of queries
however many tasks and runs there are.

Definitions (shown on the page too):

- success rate: completed ÷ finished (completed, failed, cancelled) tasks;
- escalation rate: tasks escalated at least once ÷ all tasks;
- cycles to green: verification_cycles + review_cycles, averaged over
  completed tasks;
- cost per merged pull request: the agent runs' cost of tasks whose pull
  request was merged ÷ their number; all spend ÷ merged PRs is shown beside it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta
from decimal import Decimal

from django.db.models import Avg, Count, Exists, F, OuterRef, Q, Sum
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

THROUGHPUT_DAYS = 14
RECENT_TASKS = 10


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
    recent_tasks: list[Task] = field(default_factory=list)


def build(today: date | None = None) -> Dashboard:
    """Everything the dashboard shows, in six queries."""
    today = today or timezone.localdate()
    board = Dashboard()

    # 1. Status and phase in one GROUP BY; phase only counts for active tasks.
    status_counts: dict[str, int] = {}
    phase_counts: dict[str, int] = {}
    for row in (
        Task.objects.order_by().values("status", "phase").annotate(n=Count("id"))
    ):
        status_counts[row["status"]] = status_counts.get(row["status"], 0) + row["n"]
        if row["status"] not in TERMINAL_STATUSES:
            phase_counts[row["phase"]] = phase_counts.get(row["phase"], 0) + row["n"]
    board.by_status = bars(status_counts, list(Status.choices))
    board.by_phase = bars(phase_counts, list(Phase.choices))
    board.total_tasks = sum(status_counts.values())
    board.finished_tasks = sum(status_counts.get(s, 0) for s in TERMINAL_STATUSES)
    board.active_tasks = board.total_tasks - board.finished_tasks
    board.completed_tasks = status_counts.get(Status.COMPLETED, 0)
    board.success_rate = percent(board.completed_tasks, board.finished_tasks)

    # 2. Escalations, cycles and merges in one pass over the tasks.
    totals = Task.objects.aggregate(
        escalated=Count(
            "id", filter=Q(Exists(Escalation.objects.filter(task=OuterRef("pk"))))
        ),
        cycles=Avg(
            F("verification_cycles") + F("review_cycles"),
            filter=Q(status=Status.COMPLETED),
        ),
        merged=Count("id", filter=Q(pr_merged=True)),
    )
    board.escalated_tasks = totals["escalated"]
    board.escalation_rate = percent(board.escalated_tasks, board.total_tasks)
    board.average_cycles_to_green = (
        float(totals["cycles"]) if totals["cycles"] is not None else None
    )
    board.merged_pull_requests = totals["merged"]

    # 3. Throughput: completions per day over the window, days without any too.
    first_day = today - timedelta(days=THROUGHPUT_DAYS - 1)
    per_day = {
        row["day"]: row["n"]
        for row in Task.objects.filter(
            status=Status.COMPLETED, finished_at__date__gte=first_day
        )
        .annotate(day=TruncDate("finished_at"))
        .order_by()
        .values("day")
        .annotate(n=Count("id"))
    }
    days = [first_day + timedelta(days=offset) for offset in range(THROUGHPUT_DAYS)]
    board.throughput = bars(
        {day.isoformat(): per_day.get(day, 0) for day in days},
        [(day.isoformat(), f"{day:%b %d}") for day in days],
    )
    board.completed_in_window = sum(bar.value for bar in board.throughput)

    # 4. Cost, overall and for the tasks whose pull request was merged.
    cost = AgentRun.objects.aggregate(
        total=Sum("cost_usd"),
        merged=Sum("cost_usd", filter=Q(task__pr_merged=True)),
        runs=Count("id"),
    )
    board.total_cost = cost["total"] or Decimal(0)
    board.merged_cost = cost["merged"] or Decimal(0)
    board.total_runs = cost["runs"]
    if board.merged_pull_requests:
        board.cost_per_merged_pr = board.merged_cost / board.merged_pull_requests
        board.spend_per_merged_pr = board.total_cost / board.merged_pull_requests

    # 5. Agent health, computed in SQL by the run queryset.
    health_counts = {
        row["health"]: row["n"]
        for row in AgentRun.objects.with_health()
        .order_by()
        .values("health")
        .annotate(n=Count("id"))
    }
    board.health = bars(health_counts, list(HealthStatus.choices))

    # 6. The latest tasks, to reach their pages.
    board.recent_tasks = list(
        Task.objects.select_related("repository").order_by("-created_at", "-id")[
            :RECENT_TASKS
        ]
    )
    return board
