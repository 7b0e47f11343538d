"""A parent task fanned out to child agents (docs/domain/fan-out.md)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models, transaction
from django.utils import timezone
from django_fsm import FSMField, transition

from codex.children.choices import AnalysisTrigger, FanOutState, WorkflowEvent
from codex.children.models import guards
from codex.children.models.fan_out_operations import (
    ANALYSIS_TIMED_OUT,  # noqa: F401 (imported from here too)
    FanOutOperations,
)
from codex.children.models.fan_out_queryset import (
    DEFAULT_WINDOW,
    MAX_CHILDREN,
    FanOutQuerySet,
)
from codex.core.store import VersionedLeasedModel
from codex.events.models import Event, EventKind


class FanOut(FanOutOperations, VersionedLeasedModel):
    """A parent task whose work is split among at most 5 child agents, and the
    collection of their reports until a completion analysis decides what to merge.

    State (docs/domain/fan-out.md#fan-out-state; every transition holds the
    lease and is logged)::

        created ─spawn_children─▶ children_spawned ─open_window─▶
        awaiting_completions ─trigger_on_count─▶ analyzing ─complete─▶ complete
        awaiting_completions ─time_out─▶ analyzing        (window closed)
        created | children_spawned | awaiting_completions | complete
                 ─trigger_manually─▶ analyzing            (manual override)

    Rules: 0 ≤ expected_child_count ≤ 5. Reports are accepted in every state
    (a late one is kept but starts nothing). The analysis starts when as many
    distinct children as expected have reported (more is an overflow, noted),
    or when the window (default 10 minutes from opening) closes with fewer (an
    underflow; whatever arrived is analysed). An analysis running past 8
    minutes is finished by the rules. Workflow events COMMENT_RECEIVED,
    COUNT_CHECK, ANALYSIS_TRIGGERED, ANALYSIS_COMPLETE go to the event log.
    What happens to it (reports, the window, the analysis) is in
    FanOutOperations (codex.children.models.fan_out_operations).
    """

    parent = models.OneToOneField(
        "tasks.Task", on_delete=models.PROTECT, related_name="fan_out"
    )
    issue_number = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[MinValueValidator(1)],
        help_text="The parent's GitHub issue, whose comments carry the reports.",
    )
    expected_child_count = models.PositiveSmallIntegerField(
        validators=[MinValueValidator(0), MaxValueValidator(MAX_CHILDREN)]
    )
    state = FSMField(
        max_length=24,
        choices=FanOutState.choices,
        default=FanOutState.CREATED,
        protected=True,
    )
    window = models.DurationField(
        default=DEFAULT_WINDOW, help_text="How long to wait for all children."
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    spawned_at = models.DateTimeField(null=True, blank=True)
    window_opened_at = models.DateTimeField(null=True, blank=True)
    deadline = models.DateTimeField(null=True, blank=True)
    analysis_started_at = models.DateTimeField(null=True, blank=True)
    analysis_trigger = models.CharField(
        max_length=10, choices=AnalysisTrigger.choices, blank=True
    )
    completed_at = models.DateTimeField(null=True, blank=True)

    objects = FanOutQuerySet.as_manager()

    lease_guarded_fields = ("state",)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = "fan-out"
        constraints = [
            models.CheckConstraint(
                condition=models.Q(expected_child_count__gte=0)
                & models.Q(expected_child_count__lte=MAX_CHILDREN),
                name="children_fanout_expected_0_to_5",
            ),
            models.CheckConstraint(
                condition=models.Q(issue_number__isnull=True)
                | models.Q(issue_number__gt=0),
                name="children_fanout_issue_number_positive",
            ),
            models.CheckConstraint(
                condition=models.Q(window__gt=timedelta(0)),
                name="children_fanout_window_positive",
            ),
        ]
        indexes = [
            models.Index(fields=["state", "deadline"], name="children_fanout_due"),
        ]

    def __str__(self) -> str:
        return f"fan-out of {self.parent}"

    @property
    def subject(self) -> str:
        """How the event log names this fan-out."""
        return f"fanout:{self.pk}"

    def reporting_count(self) -> int:
        """Distinct children that reported (a child's latest report counts once)."""
        return self.reports.current().count()

    # -- events ----------------------------------------------------------------

    def log(self, kind: str, *, by: str, reason: str = "", **fields: Any) -> Event:
        """Append an event about this fan-out to the parent task's history."""
        return Event.log(
            kind,
            actor=by,
            reason=reason,
            task=self.parent,
            subject=self.subject,
            **fields,
        )

    def log_workflow(
        self, event: str, *, by: str, reason: str = "", **data: Any
    ) -> Event:
        """One workflow event (docs/domain/fan-out.md#fan-out-state), under
        data["event"]."""
        return self.log(
            EventKind.WORKFLOW,
            by=by,
            reason=reason,
            data={"event": event, "issue_number": self.issue_number, **data},
        )

    def record(self, *, by: str, reason: str, source: str, target: str) -> None:
        """Queue a transition event; the next save writes it with the change."""
        if not hasattr(self, "_pending_events"):
            self._pending_events = []
        self._pending_events.append(
            Event(
                task_id=self.parent_id,
                subject=self.subject,
                kind=EventKind.TRANSITION,
                field="state",
                source=source,
                target=target,
                actor=by,
                reason=reason,
            )
        )

    def save(self, *args: Any, **kwargs: Any) -> None:
        pending = getattr(self, "_pending_events", [])
        with transaction.atomic():
            super().save(*args, **kwargs)
            if pending:
                Event.objects.bulk_create(pending)
        self._pending_events = []

    # -- transitions -----------------------------------------------------------

    @transition(
        field=state, source=FanOutState.CREATED, target=FanOutState.CHILDREN_SPAWNED
    )
    def spawn_children(self, *, by: str, reason: str = "children spawned") -> None:
        """The child agents were started."""
        self.spawned_at = timezone.now()

    @transition(
        field=state,
        source=FanOutState.CHILDREN_SPAWNED,
        target=FanOutState.AWAITING_COMPLETIONS,
    )
    def open_window(
        self,
        *,
        by: str,
        reason: str = "waiting for the children's reports",
        now: datetime | None = None,
    ) -> None:
        """Start the completion window: the deadline is `window` from now."""
        self.window_opened_at = now or timezone.now()
        self.deadline = self.window_opened_at + self.window

    @transition(
        field=state,
        source=FanOutState.AWAITING_COMPLETIONS,
        target=FanOutState.ANALYZING,
        conditions=[guards.all_expected_children_reported],
    )
    def trigger_on_count(
        self, *, by: str, reason: str = "all expected children reported"
    ) -> None:
        """Every expected child reported: start the analysis."""
        self._start_analysis(AnalysisTrigger.COUNT, by=by, reason=reason)

    @transition(
        field=state,
        source=FanOutState.AWAITING_COMPLETIONS,
        target=FanOutState.ANALYZING,
        conditions=[guards.window_has_deadline],
    )
    def time_out(self, *, by: str, reason: str = "completion window closed") -> None:
        """The window closed: analyse the reports that arrived (an underflow)."""
        self._start_analysis(AnalysisTrigger.TIMEOUT, by=by, reason=reason)

    @transition(
        field=state,
        source=[
            FanOutState.CREATED,
            FanOutState.CHILDREN_SPAWNED,
            FanOutState.AWAITING_COMPLETIONS,
            FanOutState.COMPLETE,
        ],
        target=FanOutState.ANALYZING,
    )
    def trigger_manually(
        self, *, by: str, reason: str = "analysis triggered manually"
    ) -> None:
        """An operator's override: start (or re-run) the analysis now."""
        self._start_analysis(AnalysisTrigger.MANUAL, by=by, reason=reason)

    @transition(
        field=state,
        source=FanOutState.ANALYZING,
        target=FanOutState.COMPLETE,
        conditions=[guards.analysis_recorded],
    )
    def complete(self, *, by: str, reason: str = "analysis complete") -> None:
        """The analysis is stored."""
        self.completed_at = timezone.now()

    def _start_analysis(self, trigger: str, *, by: str, reason: str) -> None:
        self.analysis_started_at = timezone.now()
        self.analysis_trigger = trigger
        reports = list(self.reports.current().values_list("child_id", "comment_id"))
        # The analysis request's payload (docs/children.md).
        self.log_workflow(
            WorkflowEvent.ANALYSIS_TRIGGERED,
            by=by,
            reason=reason,
            trigger=trigger,
            expected_count=self.expected_child_count,
            actual_count=len(reports),
            comment_ids=sorted(comment_id for _, comment_id in reports),
        )


def record_transition_event(sender, instance, name, source, target, **kwargs) -> None:
    """django-fsm post_transition receiver: every fan-out transition is logged."""
    method_kwargs = kwargs.get("method_kwargs") or {}
    instance.record(
        by=str(method_kwargs.get("by") or "unknown"),
        reason=str(method_kwargs.get("reason") or name),
        source=source,
        target=target,
    )
