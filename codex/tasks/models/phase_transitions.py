"""The phase transitions of a task (docs/domain/tasks.md#task-phase), mixed into
Task."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from django_fsm import transition

from codex.tasks.models import guards
from codex.tasks.models.choices import Phase, PhaseStatus


class PhaseTransitions:
    """Task's `phase` transitions; the state diagram is in Task's docstring."""

    # -- phase transitions (docs/domain/tasks.md#task-phase) -------------------

    @transition(
        field="phase",
        source=Phase.INTAKE,
        target=Phase.PLANNING,
        conditions=[
            guards.is_in_progress,
            guards.spec_exists,
            guards.clarification_not_needed,
        ],
        custom={"admin": False},
    )
    def begin_planning(self, *, by: str, reason: str = "spec.md written") -> None:
        self._enter_phase(Phase.PLANNING)

    @transition(
        field="phase",
        source=Phase.PLANNING,
        target=Phase.IMPLEMENTATION,
        conditions=[
            guards.is_in_progress,
            guards.plan_and_tasks_exist,
            guards.has_tasks,
        ],
        custom={"admin": False},
    )
    def begin_implementation(
        self, *, by: str, reason: str = "plan.md and tasks.md written"
    ) -> None:
        self.current_task = 0
        self._enter_phase(Phase.IMPLEMENTATION)

    @transition(
        field="phase",
        source=Phase.IMPLEMENTATION,
        target=Phase.VERIFICATION,
        conditions=[
            guards.is_in_progress,
            guards.all_tasks_done,
            guards.pull_request_exists,
            guards.ci_is_passing,
        ],
        custom={"admin": False},
    )
    def begin_verification(
        self, *, by: str, reason: str = "all tasks done, CI passing"
    ) -> None:
        self._enter_phase(Phase.VERIFICATION)

    @transition(
        field="phase",
        source=Phase.VERIFICATION,
        target=Phase.REVIEW,
        conditions=[guards.is_in_progress, guards.verification_approved],
        custom={"admin": False},
    )
    def begin_review(self, *, by: str, reason: str = "verification approved") -> None:
        self._enter_phase(Phase.REVIEW)

    @transition(
        field="phase",
        source=Phase.VERIFICATION,
        target=Phase.IMPLEMENTATION,
        conditions=[
            guards.is_in_progress,
            guards.verification_requested_changes,
            guards.verification_cycles_remain,
        ],
        custom={"admin": False},
    )
    def return_from_verification(
        self,
        *,
        by: str,
        reason: str = "verification requested changes",
        feedback: dict[str, Any] | None = None,
    ) -> None:
        self.verification_cycles += 1
        self._route_feedback("verification", self.verification_cycles, feedback)

    @transition(
        field="phase",
        source=Phase.REVIEW,
        target=Phase.RELEASE,
        conditions=[
            guards.is_in_progress,
            guards.review_approved,
            guards.no_blocking_comments,
        ],
        custom={"admin": False},
    )
    def begin_release(self, *, by: str, reason: str = "review approved") -> None:
        self._enter_phase(Phase.RELEASE)

    @transition(
        field="phase",
        source=Phase.REVIEW,
        target=Phase.IMPLEMENTATION,
        conditions=[
            guards.is_in_progress,
            guards.review_requested_changes,
            guards.review_cycles_remain,
        ],
        custom={"admin": False},
    )
    def return_from_review(
        self,
        *,
        by: str,
        reason: str = "review requested changes",
        feedback: dict[str, Any] | None = None,
    ) -> None:
        self.review_cycles += 1
        self._route_feedback("review", self.review_cycles, feedback)

    # -- helpers used by the transitions ---------------------------------------

    def _route_feedback(
        self, loop: str, cycle: int, feedback: dict[str, Any] | None
    ) -> None:
        self.feedback_history.setdefault(loop, []).append(
            {
                "cycle": cycle,
                "at": timezone.now().isoformat(),
                "feedback": feedback or {},
            }
        )
        self.current_task = 0
        self.ci_passing = None
        left = self.phase
        self._enter_phase(Phase.IMPLEMENTATION)
        # The phase sent back is not done: it runs again after the next attempt.
        self.phase_progress[left]["status"] = PhaseStatus.PENDING
        self.phase_progress[left].pop("completed_at", None)
