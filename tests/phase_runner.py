"""A phase runner for tests: replays PhaseResults queued per phase.

Results for a phase are consumed in order; a phase with nothing queued gets the
happy-path result of `default_result`, so a test scripts only what differs.
"""

from __future__ import annotations

from collections import defaultdict, deque

from codex.tasks.runners import PhaseResult


def default_result(task) -> PhaseResult:
    """What a well-behaved agent would produce in the task's current phase."""
    phase = task.phase
    if phase == "intake":
        return PhaseResult(artifacts={"spec.md": f"# Feature: {task.title}\n"})
    if phase == "planning":
        return PhaseResult(
            artifacts={"plan.md": "# Implementation Plan\n", "tasks.md": "# Tasks\n"},
            total_tasks=2,
        )
    if phase == "implementation":
        return PhaseResult(
            current_task=task.total_tasks,
            commits=[f"c{task.verification_cycles}{task.review_cycles}"],
            branch=f"codex/{task.task_id}",
            pr_url="https://github.com/acme/web/pull/42",
            ci_passing=True,
        )
    if phase == "verification":
        return PhaseResult(verification=verification(approve=True))
    if phase == "review":
        return PhaseResult(review=review(approve=True))
    if phase == "release":
        return PhaseResult(merged=True, artifacts={"release-notes.md": "Notes\n"})
    raise AssertionError(f"no default for phase {phase}")


def verification(*, approve: bool) -> dict:
    """Fields of a verification report (docs/domain/tasks.md#verification-report)."""
    if approve:
        return {"tests_passed": 47, "tests_total": 47, "recommendation": "approve"}
    return {
        "tests_passed": 45,
        "tests_failed": 2,
        "tests_total": 47,
        "failures": [{"name": "login", "error": "Expected 401, got 500"}],
        "recommendation": "request_changes",
        "feedback": {"priority": "high", "summary": "Login throws", "items": []},
    }


def review(*, approve: bool, blocking: int = 0) -> dict:
    """Fields of a review report (docs/domain/tasks.md#review-report)."""
    comments = [
        {"id": f"R{n:03}", "severity": "blocking", "issue": "Password in plain text"}
        for n in range(1, blocking + 1)
    ]
    return {
        "assessment": "approve" if approve else "request_changes",
        "comments": comments,
        "feedback": {"blocking_count": blocking, "message": "see comments"},
    }


class ScriptedPhaseRunner:
    """Replays queued results; records every (task_id, phase) it ran."""

    queued: dict[str, deque] = defaultdict(deque)
    calls: list[tuple[str, str]] = []

    @classmethod
    def reset(cls) -> None:
        cls.queued = defaultdict(deque)
        cls.calls = []

    @classmethod
    def queue(cls, phase: str, *results: PhaseResult) -> None:
        cls.queued[phase].extend(results)

    def run(self, task) -> PhaseResult:
        type(self).calls.append((task.task_id, task.phase))
        queue = type(self).queued[task.phase]
        return queue.popleft() if queue else default_result(task)
