"""Backlog runs: parallel sessions through the open issues
(docs/domain/claims.md#backlog-runs)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models, transaction
from django.utils import timezone
from django_fsm import FSMField, TransitionNotAllowed, can_proceed, transition

from codex.core.store import LoggedStateModel, VersionedQuerySet
from codex.events.models import EventKind

if TYPE_CHECKING:
    from codex.claims.models.claim import IssueClaim
    from codex.github.models import GitHubIssue
    from codex.tasks.models import Task

SYSTEM_ACTOR = "codex:backlog"


def default_threshold() -> int:
    """How many empty rounds in a row finish a run (3 by default,
    docs/domain/claims.md#backlog-runs)."""
    return getattr(settings, "CODEX_BACKLOG_EMPTY_ROUNDS_THRESHOLD", 3)


class BacklogState(models.TextChoices):
    RUNNING = "running", "Running"
    COUNTING = "counting", "Counting empty rounds"
    TERMINATED = "terminated", "Terminated"


def threshold_reached(run: BacklogRun) -> bool:
    """As many consecutive empty rounds as the threshold."""
    return run.consecutive_empty_rounds >= run.threshold


ACTIVE_STATES = (BacklogState.RUNNING, BacklogState.COUNTING)


def idempotency_key(repository_pk: int, number: int) -> str:
    """The intake idempotency key of the task a backlog run starts for an issue.

    Per repository and issue, not per run: whichever run (or redelivered
    round) gets there first starts the one task; the others get that task back.
    """
    return f"backlog:{repository_pk}:{number}"


@dataclass
class RoundOutcome:
    """What one call of `BacklogRun.play_round` did."""

    played: bool
    """False when no round was recorded: every session was busy with a task,
    or another worker was playing this run's round at that moment."""
    claims: list[IssueClaim] = field(default_factory=list)
    tasks: list[Task] = field(default_factory=list)
    active: int = 0
    """The run's tasks still in progress when the round began."""
    state: str = BacklogState.RUNNING


class BacklogRunQuerySet(VersionedQuerySet):
    """Backlog runs; state changes go through transitions and `record_round`."""

    protected_update_fields = frozenset({"state"})

    def active(self) -> BacklogRunQuerySet:
        """Runs still playing rounds (running or counting empty rounds)."""
        return self.filter(state__in=ACTIVE_STATES)


class BacklogRun(LoggedStateModel):
    """N parallel sessions working through a repository's open issues
    (docs/domain/claims.md#backlog-runs).

    State::

        running ──start_counting (all sessions empty)──▶ counting
        counting ──reset (any session has work)──▶ running     (counter back to 0)
        counting ──terminate (threshold reached)──▶ terminated
        running | counting ──stop (operator)──▶ terminated

    `record_round(found)` applies the rule after each round: a round in which
    no session found an issue adds one to `consecutive_empty_rounds`; reaching
    `threshold` (3 by default) ends the run; any round with work resets it.

    `play_round` is one round of the manager: the free sessions (N minus the
    run's tasks still in progress) each claim an open cached issue and start a
    task for it; `tasks` are the tasks the run started.
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
        default=0,
        help_text="Rounds in a row that found no issue to claim "
        "(docs/domain/claims.md#backlog-runs).",
    )
    rounds = models.PositiveIntegerField(default=0)
    issues_found = models.PositiveIntegerField(default=0)
    last_check = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(default=timezone.now, editable=False)
    terminated_at = models.DateTimeField(null=True, blank=True)
    tasks = models.ManyToManyField(
        "tasks.Task",
        related_name="backlog_runs",
        blank=True,
        editable=False,
        help_text="The tasks this run started, one per claimed issue.",
    )

    objects = BacklogRunQuerySet.as_manager()

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

    def record_round(
        self,
        found: int,
        *,
        by: str = SYSTEM_ACTOR,
        started: list[str] | None = None,
    ) -> str:
        """Record one round in which the sessions found `found` issues, apply
        the empty-rounds rule, and save. Returns the state after the round.
        `started` (task ids) goes into the round's event.

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
                **({"started": started} if started is not None else {}),
            },
        )
        self.save()
        return self.state

    def active_tasks(self) -> models.QuerySet[Task]:
        """The run's tasks that are not finished (completed, failed, cancelled):
        each one occupies a session."""
        from codex.tasks.models import TERMINAL_STATUSES

        return self.tasks.exclude(status__in=TERMINAL_STATUSES)

    def play_round(self, *, by: str = SYSTEM_ACTOR) -> RoundOutcome:
        """One round of the manager, in one transaction.

        1. Every session busy (N tasks of the run in progress): nothing is
           claimed and no round is recorded. Busy sessions did not look at the
           backlog, so the round must not count as empty (only a round in
           which every session looked and found nothing is empty).
        2. Otherwise each free session claims the lowest-numbered candidate: an
           open issue of the repository's GitHubIssue cache that is claimable
           (not held, cooling down, blocked or closed) and has no task yet.
        3. Each claimed issue becomes a task (idempotently, see
           `idempotency_key`), linked to the run.
        4. `record_round(found)`: three empty rounds in a row end the run.

        Everything commits together: a worker that dies half way leaves no
        claim, task or round behind, and the redelivered job plays the round
        afresh. A second worker arriving while the round is played skips it
        (the run's row is locked with SKIP LOCKED on PostgreSQL).

        Raises TransitionNotAllowed on a terminated run.
        """
        with transaction.atomic():
            locked = (
                type(self)
                .objects.select_for_update(skip_locked=True)
                .filter(pk=self.pk)
                .values_list("pk", flat=True)
            )
            if not list(locked):
                return RoundOutcome(played=False, state=self.state)
            # The row as it is now, not as this object was read before the lock.
            self.refresh_from_db()
            if self.state == BacklogState.TERMINATED:
                raise TransitionNotAllowed(f"{self} is terminated")
            active = self.active_tasks().count()
            free = self.sessions - active
            if free <= 0:
                return RoundOutcome(played=False, active=active, state=self.state)
            issues = self._open_issues()
            claims = self._claim_issues(issues, free, by=by)
            tasks, found = self._start_tasks(claims, issues, by=by)
            state = self.record_round(
                found, by=by, started=[task.task_id for task in tasks]
            )
        return RoundOutcome(
            played=True, claims=claims, tasks=tasks, active=active, state=state
        )

    def _open_issues(self) -> dict[int, GitHubIssue]:
        """The repository's open issues in the GitHub cache, by number."""
        from codex.github.models import GitHubIssue, GitHubIssueState

        rows = GitHubIssue.objects.filter(
            repository=self.repository, state=GitHubIssueState.OPEN
        ).only("number", "title", "body")
        return {issue.number: issue for issue in rows}

    def _claim_issues(
        self, issues: dict[int, GitHubIssue], free: int, *, by: str
    ) -> list[IssueClaim]:
        """Up to `free` claims, one per free session, lowest issue first."""
        from codex.claims.models.claim import IssueClaim
        from codex.tasks.models import Task

        if not issues:
            return []
        # claim_next takes existing claim rows; open issues seen for the first
        # time get an unclaimed row (ignore_conflicts: another worker may be
        # adding the same rows).
        known = set(
            IssueClaim.objects.filter(
                repository=self.repository, number__in=list(issues)
            ).values_list("number", flat=True)
        )
        IssueClaim.objects.bulk_create(
            [
                IssueClaim(
                    repository=self.repository,
                    number=number,
                    title=issue.title[:300],
                )
                for number, issue in sorted(issues.items())
                if number not in known
            ],
            ignore_conflicts=True,
        )
        # An issue that already has a task is not work for a new session: its
        # claim may have run out while the task is still going (the TTL is 30
        # minutes, a task takes hours), and starting it again would only return
        # the same task.
        has_task = Task.objects.filter(
            repository=self.repository, issue_number__isnull=False
        ).values("issue_number")
        candidates = IssueClaim.objects.filter(number__in=list(issues)).exclude(
            number__in=has_task
        )
        round_number = self.rounds + 1
        taken: list[IssueClaim] = []
        for index in range(1, free + 1):
            claimed = candidates.claim_next(
                self.repository,
                f"backlog-{self.pk}-r{round_number}-s{index}",
                by=by,
            )
            if not claimed:
                break  # nothing left to claim; later sessions would find nothing
            taken += claimed
        return taken

    def _start_tasks(
        self, claims: list[IssueClaim], issues: dict[int, GitHubIssue], *, by: str
    ) -> tuple[list[Task], int]:
        """Start a task per claim; returns (tasks started, issues found).

        A claim whose task cannot be created (the issue's text is not a valid
        request) is recorded as a failed attempt: the claim's failure count
        blocks the issue after three, instead of the run retrying it forever.
        """
        from codex.tasks.models import CreatedBy, Task
        from codex.tasks.models.task import TITLE_MAX_LENGTH, IdempotencyMismatch

        started: list[Task] = []
        found = 0
        for claim in claims:
            issue = issues.get(claim.number)
            title = (issue.title if issue else claim.title) or (
                f"GitHub issue #{claim.number}"
            )
            try:
                with transaction.atomic():
                    task, created = Task.objects.create_from_request(
                        repository=self.repository,
                        title=title[:TITLE_MAX_LENGTH],
                        description=issue.body if issue else "",
                        created_by=CreatedBy.API,
                        issue_number=claim.number,
                        idempotency_key=idempotency_key(
                            self.repository.pk, claim.number
                        ),
                        actor=f"backlog:{self.pk}",
                    )
            except ValidationError as exc:
                claim.perform(
                    "fail",
                    by=by,
                    reason=f"the issue is not a valid task request: {exc}"[:500],
                    session_id=claim.claimed_by,
                )
                found += 1
                continue
            except IdempotencyMismatch:
                created = False
            if not created:
                # Someone started this issue between our candidate query and our
                # claim (another run, a webhook): not this round's work.
                claim.perform(
                    "release",
                    by=by,
                    reason="the issue already has a task",
                    session_id=claim.claimed_by,
                )
                continue
            self.tasks.add(task)
            started.append(task)
            found += 1
        return started, found
