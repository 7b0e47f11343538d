"""Backlog runs: spec 000's parallel agent manager and its BacklogState (§5)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.core.validators import MinValueValidator
from django.db import models
from django.utils import timezone
from django_fsm import FSMField, TransitionNotAllowed, can_proceed, transition

from codex.core.logged_state import LoggedStateModel
from codex.events.models import EventKind

if TYPE_CHECKING:
    from codex.claims.models.claim import IssueClaim

SYSTEM_ACTOR = "codex:backlog"


def default_threshold() -> int:
    """Spec 000 §5: "threshold ... (default: 3)" empty rounds."""
    return getattr(settings, "CODEX_BACKLOG_EMPTY_ROUNDS_THRESHOLD", 3)


class BacklogState(models.TextChoices):
    RUNNING = "running", "Running"
    COUNTING = "counting", "Counting empty rounds"
    TERMINATED = "terminated", "Terminated"


def threshold_reached(run: BacklogRun) -> bool:
    """As many consecutive empty rounds as the threshold."""
    return run.consecutive_empty_rounds >= run.threshold


class BacklogRun(LoggedStateModel):
    """N parallel sessions working through a repository's open issues
    (spec 000 §5 BacklogState, the ParallelAgentManager's loop).

    State (spec 000 §5)::

        running ──start_counting (all sessions empty)──▶ counting
        counting ──reset (any session has work)──▶ running     (counter back to 0)
        counting ──terminate (threshold reached)──▶ terminated
        running | counting ──stop (operator)──▶ terminated

    `record_round(found)` applies the rule after each round: a round in which
    no session found an issue adds one to `consecutive_empty_rounds`; reaching
    `threshold` (3 by default) ends the run; any round with work resets it.
    """

    repository = models.ForeignKey(
        "repositories.Repository",
        on_delete=models.PROTECT,
        related_name="backlog_runs",
    )
    sessions = models.PositiveSmallIntegerField(
        "parallel sessions", default=1, validators=[MinValueValidator(1)]
    )
    threshold = models.PositiveSmallIntegerField(
        default=default_threshold,
        validators=[MinValueValidator(1)],
        help_text="Consecutive empty rounds before the run ends.",
    )
    state_field = "state"
    state = FSMField(
        max_length=20,
        choices=BacklogState.choices,
        default=BacklogState.RUNNING,
        protected=True,
    )
    consecutive_empty_rounds = models.PositiveSmallIntegerField(
        default=0, help_text="Spec 000's consecutive_no_issues."
    )
    rounds = models.PositiveIntegerField(default=0)
    issues_found = models.PositiveIntegerField(default=0)
    last_check = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(default=timezone.now, editable=False)
    terminated_at = models.DateTimeField(null=True, blank=True)

    event_kind = EventKind.WORKFLOW

    class Meta:
        ordering = ["-started_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(sessions__gte=1), name="backlog_sessions_positive"
            ),
            models.CheckConstraint(
                condition=models.Q(threshold__gte=1), name="backlog_threshold_positive"
            ),
        ]
        indexes = [models.Index(fields=["state"], name="backlog_state")]

    def __str__(self) -> str:
        return f"backlog run {self.pk} on {self.repository}"

    @property
    def event_subject(self) -> str:
        return f"backlog:{self.pk}"

    # -- transitions ------------------------------------------------------------

    @transition(
        field=state,
        source=BacklogState.RUNNING,
        target=BacklogState.COUNTING,
        custom={"admin": False},
    )
    def start_counting(
        self, *, by: str, reason: str = "all sessions found no issues"
    ) -> None:
        """The first empty round."""

    @transition(
        field=state,
        source=BacklogState.COUNTING,
        target=BacklogState.RUNNING,
        custom={"admin": False},
    )
    def reset(self, *, by: str, reason: str = "a session found work") -> None:
        """Work turned up again: the empty-round counter starts over."""
        self.consecutive_empty_rounds = 0

    @transition(
        field=state,
        source=BacklogState.COUNTING,
        target=BacklogState.TERMINATED,
        conditions=[threshold_reached],
        custom={"admin": False},
    )
    def terminate(
        self, *, by: str, reason: str = "empty-round threshold reached"
    ) -> None:
        """The backlog is empty: end gracefully."""
        self.terminated_at = timezone.now()

    @transition(
        field=state,
        source=[BacklogState.RUNNING, BacklogState.COUNTING],
        target=BacklogState.TERMINATED,
        custom={"label": "Stop"},
    )
    def stop(self, *, by: str, reason: str = "stopped by an operator") -> None:
        """An operator ends the run early."""
        self.terminated_at = timezone.now()

    # -- the round rule ---------------------------------------------------------

    def record_round(self, found: int, *, by: str = SYSTEM_ACTOR) -> str:
        """Record one round in which the sessions found `found` issues, apply
        spec 000 §5's rule, and save. Returns the state after the round.

        Raises TransitionNotAllowed on a terminated run, VersionConflict when
        someone else recorded a round since this object was read.
        """
        if found < 0:
            raise ValueError("found cannot be negative")
        if self.state == BacklogState.TERMINATED:
            raise TransitionNotAllowed(f"{self} is terminated")
        self.rounds += 1
        self.issues_found += found
        self.last_check = timezone.now()
        if found:
            if self.state == BacklogState.COUNTING:
                self.reset(by=by)
            self.consecutive_empty_rounds = 0
        else:
            self.consecutive_empty_rounds += 1
            if self.state == BacklogState.RUNNING:
                self.start_counting(by=by)
            if can_proceed(self.terminate):
                self.terminate(by=by)
        self.record(
            by=by,
            reason=f"round {self.rounds}: {found} issue(s) found",
            data={
                "round": self.rounds,
                "found": found,
                "consecutive_empty_rounds": self.consecutive_empty_rounds,
                "threshold": self.threshold,
            },
        )
        self.save()
        return self.state

    def play_round(self, *, by: str = SYSTEM_ACTOR) -> list[IssueClaim]:
        """One round of the manager: each of the N sessions claims the next
        open issue; then the round is recorded. Returns the claims taken."""
        from codex.claims.models.claim import IssueClaim

        if self.state == BacklogState.TERMINATED:
            raise TransitionNotAllowed(f"{self} is terminated")
        round_number = self.rounds + 1
        taken = []
        for index in range(1, self.sessions + 1):
            taken += IssueClaim.objects.claim_next(
                self.repository,
                f"backlog-{self.pk}-r{round_number}-s{index}",
                by=by,
            )
        self.record_round(len(taken), by=by)
        return taken
