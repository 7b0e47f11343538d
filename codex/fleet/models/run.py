"""Agent runs: one session of an agent (docs/domain/fleet.md#agent-run)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from decimal import Decimal
from typing import Any, NamedTuple

from django.db import models
from django.db.models import Case, Count, F, Q, Sum, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone
from django_fsm import FSMField, transition

from codex.core.store import LoggedStateModel, VersionedQuerySet, hot_aggregate
from codex.events.models import EventKind
from codex.fleet.models.choices import HealthStatus, RunStatus
from codex.fleet.productivity import (
    OUTCOME_SCORE_THRESHOLD,
    OUTCOME_TOOL_COUNT_ABOVE,
    SCORE_THRESHOLD,
    WARNING_TOOL_COUNT_AT_LEAST,
    ProductivityMetrics,
)

SESSION_ID_FORMAT = "session_%Y%m%d_%H%M%S"
# SQL compares numerator * (1 / threshold) with tool_count, in whole numbers.
_TENTHS = round(1 / SCORE_THRESHOLD)
_OUTCOME_TENTHS = round(1 / OUTCOME_SCORE_THRESHOLD)


def new_session_id(slot: int = 1) -> str:
    """`session_<YYYYMMDD>_<HHMMSS>_<slot>`, the form imported session logs use."""
    return f"{timezone.now():{SESSION_ID_FORMAT}}_{slot}"


# The agent run of the step this thread is running (advance_task names it for
# its runner), so the step's bookkeeping need not look it up again.
_STEP_RUN: ContextVar[AgentRun | None] = ContextVar("step_run", default=None)


def run_silent_since() -> Coalesce:
    """Since when a run has been silent: its last heartbeat, or its start if
    it never beat (the reaper's rule, codex.fleet.heartbeats)."""
    return Coalesce("heartbeat_at", "started_at")


@contextmanager
def running_step(run: AgentRun) -> Iterator[AgentRun]:
    """Name `run` as this thread's step run while the block runs."""
    token = _STEP_RUN.set(run)
    try:
        yield run
    finally:
        _STEP_RUN.reset(token)


def step_run() -> AgentRun | None:
    """The run `running_step` names here now, if any."""
    return _STEP_RUN.get()


# Spend's sums; tokens count cache writes and reads too (AgentRun.total_tokens).
SPEND_SUMS = {
    "cost": Sum("cost_usd"),
    "tokens": Sum(
        F("input_tokens")
        + F("output_tokens")
        + F("cache_write_tokens")
        + F("cache_read_tokens")
    ),
    "runs": Count("id"),
}


class Spend(NamedTuple):
    """What a set of agent runs has spent: dollars, tokens of every kind, runs."""

    cost_usd: Decimal
    tokens: int
    runs: int


def _spend(sums: Any) -> Spend:
    cost, tokens, runs = sums
    return Spend(
        cost_usd=Decimal(cost or 0), tokens=int(tokens or 0), runs=int(runs or 0)
    )


class AgentRunQuerySet(VersionedQuerySet):
    protected_update_fields = frozenset({"status", "session_id"})

    @hot_aggregate("task_id", **SPEND_SUMS)
    def spend_sums_of(self, task_id: int) -> AgentRunQuerySet:
        """The sums of SPEND_SUMS over the task's runs."""
        return self.filter(task_id=task_id)

    def running(self) -> AgentRunQuerySet:
        return self.filter(status=RunStatus.RUNNING)

    def spend(self) -> Spend:
        """The cost and token totals of these runs, in one aggregate query.

        Tokens count cache writes and reads too, as `AgentRun.total_tokens`.
        """
        sums = self.aggregate(**SPEND_SUMS)
        return _spend(sums[name] for name in SPEND_SUMS)

    def with_health(self) -> AgentRunQuerySet:
        """Annotate `health` (docs/domain/fleet.md#productivity), computed in SQL.

        The thresholds are rewritten in whole numbers so the database and
        Python agree exactly: for tool_count > 0, score < 0.1 is the same as
        10 * numerator < tool_count.
        """
        tools = F("tool_count")
        outcome_low = Q(tool_count__gt=OUTCOME_TOOL_COUNT_ABOVE) & Q(
            outcome_numerator_x10__lt=tools
        )
        no_files = Q(tool_count__gte=WARNING_TOOL_COUNT_AT_LEAST, files_changed=0)
        metrics_low = Q(tool_count__gte=WARNING_TOOL_COUNT_AT_LEAST) & Q(
            metrics_numerator_x10__lt=tools
        )
        return self.alias(
            outcome_numerator_x10=(F("issues_closed") * 10 + F("files_changed"))
            * _OUTCOME_TENTHS,
            metrics_numerator_x10=(F("files_changed") * 2 + F("issues_closed") * 5)
            * _TENTHS,
        ).annotate(
            health=Case(
                When(status=RunStatus.FAILED, then=Value(HealthStatus.UNHEALTHY)),
                When(
                    outcome_low | no_files | metrics_low,
                    then=Value(HealthStatus.WARNING),
                ),
                default=Value(HealthStatus.HEALTHY),
                output_field=models.CharField(),
            )
        )

    def begin(self, *, by: str, session_id: str = "", slot: int = 1, **fields: Any):
        """Create a running run (started now unless given) and log its start."""
        run = self.model(session_id=session_id or new_session_id(slot), **fields)
        run.record(by=by, reason="run started", field="status", target="running")
        run.save()  # the row and its event in one transaction
        return run


class AgentRun(LoggedStateModel):
    """One session of an agent (docs/domain/fleet.md#agent-run, #productivity).

    Records when it ran, what it worked on (`issues_worked`) and closed
    (`closed_issues`; `issues_closed` is their count, kept in step on save),
    tool calls, files changed, response length, tokens and cost. Its scores,
    warnings and health are computed from those counts, never stored: see
    codex.fleet.productivity for the two formulas and the thresholds.

    Status::

        running ──succeed──▶ succeeded
        running ──fail─────▶ failed      (error kept; health "unhealthy")

    `ended_at` is set exactly when the run is no longer running (a database
    constraint). Heartbeats do not bump `version`.
    """

    session_id = models.CharField(max_length=200, unique=True)
    status = FSMField(
        max_length=10,
        choices=RunStatus.choices,
        default=RunStatus.RUNNING,
        protected=True,
    )
    task = models.ForeignKey(
        "tasks.Task",
        on_delete=models.PROTECT,
        related_name="runs",
        null=True,
        blank=True,
    )
    instance = models.ForeignKey(
        "fleet.AgentInstance",
        on_delete=models.PROTECT,
        related_name="runs",
        null=True,
        blank=True,
    )
    started_at = models.DateTimeField(default=timezone.now)
    ended_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    issues_worked = models.JSONField(default=list, blank=True)
    closed_issues = models.JSONField(default=list, blank=True)
    issues_closed = models.PositiveIntegerField(default=0, editable=False)
    tool_count = models.PositiveIntegerField(default=0)
    files_changed = models.PositiveIntegerField(default=0)
    response_length = models.PositiveIntegerField(null=True, blank=True)

    input_tokens = models.PositiveBigIntegerField(default=0)
    output_tokens = models.PositiveBigIntegerField(default=0)
    cache_write_tokens = models.PositiveBigIntegerField(default=0)
    cache_read_tokens = models.PositiveBigIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, default=Decimal(0))

    error = models.TextField(blank=True)
    imported_from = models.CharField(
        max_length=500, blank=True, help_text="Session log file and line, if imported."
    )

    objects = AgentRunQuerySet.as_manager()

    event_kind = EventKind.RUN
    event_id_key = "run"  # event_fields: the run is named by its id there only

    class Meta:
        ordering = ["-started_at", "-id"]
        indexes = [
            models.Index(fields=["status", "-started_at"], name="run_status_started"),
            models.Index(fields=["-started_at", "-id"], name="run_started"),
            # The reaper's look for silent runs, by the expression it filters
            # on: its cost stays that of the runs it finds, not of all running.
            models.Index(
                run_silent_since(), condition=Q(status="running"), name="run_silent"
            ),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(status=RunStatus.RUNNING, ended_at__isnull=True)
                | (~Q(status=RunStatus.RUNNING) & Q(ended_at__isnull=False)),
                name="run_ended_exactly_when_not_running",
            ),
            models.CheckConstraint(
                condition=Q(ended_at__isnull=True)
                | Q(ended_at__gte=models.F("started_at")),
                name="run_ends_after_it_starts",
            ),
        ]

    def __str__(self) -> str:
        return self.session_id

    @property
    def event_subject(self) -> str:
        return f"run:{self.session_id}"

    def event_fields(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "data": {self.event_id_key: self.pk}}

    @classmethod
    def spend_of_task(cls, task_pk: int) -> Spend:
        """What one task's runs spent (`AgentRunQuerySet.spend`): every step
        reads it (the task's budget, its progress comment)."""
        return _spend(cls.objects.spend_sums_of(task_pk))

    def save(self, *args: Any, **kwargs: Any) -> None:
        self.closed_issues = sorted(set(self.closed_issues))
        self.issues_closed = len(self.closed_issues)
        update_fields = kwargs.get("update_fields")
        if update_fields is not None and "closed_issues" in update_fields:
            kwargs["update_fields"] = {*update_fields, "issues_closed"}
        super().save(*args, **kwargs)

    # -- transitions ---------------------------------------------------------

    @transition(
        field=status,
        source=RunStatus.RUNNING,
        target=RunStatus.SUCCEEDED,
        custom={"admin": False},
    )
    def succeed(self, *, by: str, reason: str = "session ended") -> None:
        """The session ended normally."""
        self.ended_at = timezone.now()

    @transition(
        field=status,
        source=RunStatus.RUNNING,
        target=RunStatus.FAILED,
        custom={"label": "Mark failed"},
    )
    def fail(self, *, by: str, reason: str = "session failed", error: str = "") -> None:
        """The session crashed, timed out, or an operator stopped it."""
        self.ended_at = timezone.now()
        self.error = error or reason

    def beat(self) -> None:
        """A heartbeat from the worker running the session (no version bump)."""
        self.write_unversioned(heartbeat_at=timezone.now())

    @staticmethod
    def issue_outcome(issue_number: int | None, *, closed: bool) -> dict[str, Any]:
        """The run's issues_worked and closed_issues (the issues attempted and
        closed, docs/domain/fleet.md#agent-run) for a run on
        `issue_number`, to set with its ending transition; nothing for work
        that came from no issue."""
        if not issue_number:
            return {}
        return {
            "issues_worked": [issue_number],
            "closed_issues": [issue_number] if closed else [],
        }

    # -- computed fields (docs/domain/fleet.md#productivity) -----------------

    @property
    def success(self) -> bool:
        """At least one issue closed (docs/domain/fleet.md#agent-run)."""
        return self.issues_closed > 0

    @property
    def metrics(self) -> ProductivityMetrics:
        return ProductivityMetrics(
            tool_count=self.tool_count,
            files_changed=self.files_changed,
            issues_closed=self.issues_closed,
            response_length=self.response_length,
        )

    @property
    def productivity_score(self) -> float:
        """SessionOutcome: (issues_closed * 10 + files_changed) / tool_count."""
        return self.metrics.productivity_score

    @property
    def metrics_score(self) -> float:
        """ProductivityMetrics `score`: (files_changed*2 + issues_closed*5)
        / max(tool_count, 1)."""
        return self.metrics.score

    @property
    def warnings(self) -> list[str]:
        return self.metrics.warnings

    @property
    def health_status(self) -> str:
        return self.metrics.health_status(failed=self.status == RunStatus.FAILED)

    @property
    def total_tokens(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_write_tokens
            + self.cache_read_tokens
        )
