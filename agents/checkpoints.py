"""An agent run's checkpoints (docs/domain/fleet.md#run-checkpoints): after
every complete turn the conversation is saved with the task, so that the step
retried after its worker died, or after a wait the model asked for, resumes
the conversation on whichever worker takes it, instead of starting over.

The checkpoint belongs to one attempt at the phase (the phase, when it was
entered, the feedback cycles): a later attempt starts afresh. It also keeps
what the run spent that no AgentRun recorded yet, the files the agent's tools
wrote (so that a resumed developer's new files still ship), the state of the
worktree (said to the model when it differs on resume), and the end of a
model's wait, which every worker honours.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import timedelta
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.utils import timezone

from agents.run_outcome import Kind, RunMetrics, RunOutcome
from agents.runtime import Resume
from codex.core.errors import Action, ClassifiedFailure
from codex.fleet.models import RunCheckpoint
from integrations.anthropic.client import Usage
from integrations.git import run_git

if TYPE_CHECKING:
    from codex.tasks.models import Task

SAME_WORKTREE = "The worktree is as it was."
OTHER_WORKTREE = (
    "The worktree was prepared again since (on another worker, or its "
    "uncommitted changes were lost): check the files you changed before "
    "relying on them, and write again what is missing."
)


def attempt(task: Task) -> str:
    """The attempt at the phase a checkpoint belongs to."""
    entered = task.phase_entered_at.isoformat() if task.phase_entered_at else ""
    return f"{task.phase}:{entered}:{task.verification_cycles}:{task.review_cycles}"


def worktree_state(worktree: Path) -> str:
    """A digest of the worktree's commit, changes and new files."""
    try:
        head = run_git(["rev-parse", "HEAD"], worktree)
        changes = run_git(["diff", "HEAD"], worktree)
        status = run_git(
            ["status", "--porcelain=v1", "--untracked-files=all"], worktree
        )
    except (ClassifiedFailure, OSError):
        return ""
    return hashlib.sha256(f"{head}\0{changes}\0{status}".encode()).hexdigest()


def max_age_seconds() -> float:
    return float(getattr(settings, "CODEX_AGENT_CHECKPOINT_MAX_AGE_SECONDS", 86_400))


def load(task: Task, role: str) -> RunCheckpoint | None:
    """The checkpoint a run of `role` on `task` resumes, if any."""
    return RunCheckpoint.objects.resumable(
        task.pk, role, attempt(task), max_age_seconds=max_age_seconds()
    )


def waiting(checkpoint: RunCheckpoint | None) -> timedelta | None:
    """What is left of the wait the model asked for, or None."""
    if checkpoint is None or checkpoint.wait_until is None:
        return None
    left = checkpoint.wait_until - timezone.now()
    return left if left.total_seconds() > 0 else None


def resume(checkpoint: RunCheckpoint, worktree: Path) -> Resume:
    """The runtime's Resume of `checkpoint` (its unrecorded spend counted)."""
    same = checkpoint.worktree_state and checkpoint.worktree_state == worktree_state(
        worktree
    )
    return Resume(
        messages=checkpoint.messages,
        turns=checkpoint.turns,
        usage=Usage(
            input_tokens=checkpoint.input_tokens,
            output_tokens=checkpoint.output_tokens,
            cache_write_tokens=checkpoint.cache_write_tokens,
            cache_read_tokens=checkpoint.cache_read_tokens,
        ),
        cost_usd=checkpoint.cost_usd,
        worktree_note=SAME_WORKTREE if same else _other_worktree(checkpoint),
    )


def _other_worktree(checkpoint: RunCheckpoint) -> str:
    written = checkpoint.files_written
    if not written:
        return OTHER_WORKTREE
    shown = ", ".join(written[:20]) + (" ..." if len(written) > 20 else "")
    return f"{OTHER_WORKTREE} The files your tools wrote: {shown}."


def saver(
    task: Task, role: str, worktree: Path, files_written: set[str]
) -> Callable[..., None]:
    """The runtime's checkpoint callback for a run of `role` on `task`."""
    key = attempt(task)

    def save(
        messages: list[dict[str, Any]], metrics: RunMetrics, wait_seconds: float = 0
    ) -> None:
        usage = metrics.usage
        wait_until = (
            timezone.now() + timedelta(seconds=wait_seconds) if wait_seconds else None
        )
        RunCheckpoint.objects.update_or_create(
            task=task,
            role=role,
            defaults={
                "attempt": key,
                "conversation": RunCheckpoint.pack(messages),
                "turns": metrics.turns,
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "cache_write_tokens": usage.cache_write_tokens,
                "cache_read_tokens": usage.cache_read_tokens,
                "cost_usd": metrics.cost_usd,
                "files_written": sorted(files_written),
                "worktree_state": worktree_state(worktree),
                "wait_until": wait_until,
                "updated_at": timezone.now(),
            },
        )

    return save


def settle(task: Task, role: str, outcome: RunOutcome) -> None:
    """After a run: a run that ended waiting for the model keeps its
    conversation (its spend is now recorded on its AgentRun, so the
    checkpoint's is cleared); any other end removes it."""
    waits = (
        outcome.kind == Kind.ERROR
        and outcome.error is not None
        and outcome.error.action == Action.WAIT_RETRY
    )
    checkpoints = RunCheckpoint.objects.filter(task=task, role=role)
    if not waits:
        checkpoints.delete()
        return
    wait_until = (
        timezone.now() + timedelta(seconds=outcome.error.retry_after)
        if outcome.error.retry_after
        else None
    )
    checkpoints.update(
        input_tokens=0,
        output_tokens=0,
        cache_write_tokens=0,
        cache_read_tokens=0,
        cost_usd=Decimal(0),
        turns=0,
        wait_until=wait_until,
    )
