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
import os
import stat
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
    """A digest of the worktree's commit, changes and new files: one `git
    status` (its header names the commit) and the content of the files it
    lists, read here up to STATE_READ_BYTES each and STATE_READ_TOTAL_BYTES
    in all (past either, a file counts by its size and time)."""
    try:
        status = run_git(
            ["status", "--porcelain=v2", "--branch", "-z", "--untracked-files=all"],
            worktree,
        )
    except (ClassifiedFailure, OSError):
        return ""
    digest = hashlib.sha256(status.encode())
    left = STATE_READ_TOTAL_BYTES
    for path in _listed_paths(status):
        content, read = _content_digest(worktree / path, min(STATE_READ_BYTES, left))
        left -= read
        digest.update(b"\0" + path.encode() + b"\0" + content)
    return digest.hexdigest()


# A file up to this size is read whole for the digest, while the digest has
# read less than the total (it runs after every turn: an agent's thousands of
# new files must not be read again each time); past either, a file counts by
# its size and modification time.
STATE_READ_BYTES = 1 << 20
STATE_READ_TOTAL_BYTES = 16 << 20


def _listed_paths(status: str) -> list[str]:
    """The paths `git status --porcelain=v2 -z` lists (a rename's new path;
    its old one follows as an entry of its own, skipped)."""
    paths, entries, index = [], status.split("\0"), 0
    while index < len(entries):
        entry = entries[index]
        index += 1
        kind = entry[:1]
        if kind == "1":  # changed: 8 fields before the path
            paths.append(entry.split(" ", 8)[-1])
        elif kind == "2":  # renamed or copied: 9 fields, then the old path
            paths.append(entry.split(" ", 9)[-1])
            index += 1
        elif kind == "u":  # unmerged: 10 fields
            paths.append(entry.split(" ", 10)[-1])
        elif kind == "?":  # untracked
            paths.append(entry[2:])
    return paths


def _content_digest(target: Path, up_to: int) -> tuple[bytes, int]:
    """What a listed file holds now, and the bytes read to say so: its
    content's digest when it is at most `up_to` bytes, else its size and
    time; a deleted file or anything but a regular file gives a marker."""
    try:
        info = target.lstat()
        if not stat.S_ISREG(info.st_mode):
            return f"mode {info.st_mode:o}".encode(), 0
        if info.st_size > up_to:
            return f"{info.st_size} {info.st_mtime_ns}".encode(), 0
        # Not through a link the agent may have put in its place since.
        descriptor = os.open(target, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(descriptor, "rb") as file:
            return hashlib.file_digest(file, "sha256").digest(), info.st_size
    except OSError:
        return b"gone", 0


def max_age_seconds() -> float:
    return float(getattr(settings, "CODEX_AGENT_CHECKPOINT_MAX_AGE_SECONDS", 86_400))


def load(task: Task, role: str) -> RunCheckpoint | None:
    """The checkpoint a run of `role` on `task` resumes, if any. One left by
    another attempt at the phase, or too old, is removed here: so a run that
    loads none and saves none has no row to remove when it ends."""
    found = RunCheckpoint.objects.of_role(task.pk, role)
    if found is None:
        return None
    if found.resumable(attempt(task), max_age_seconds=max_age_seconds()):
        return found
    RunCheckpoint.objects.filter(pk=found.pk, updated_at=found.updated_at).delete()
    return None


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


# The row's key: one checkpoint per task and role (a save replaces the rest),
# and what a save writes over it, worked out once (a save runs every turn).
KEY_FIELDS = ["task", "role"]
SAVED_FIELDS = [
    field.name
    for field in RunCheckpoint._meta.concrete_fields
    if not field.primary_key and field.name not in KEY_FIELDS
]


class Saver:
    """The runtime's checkpoint callback for a run of `role` on `task`: each
    call keeps the conversation in one statement (an insert that replaces
    the role's row); `saved` says whether it has kept one."""

    def __init__(
        self, task: Task, role: str, worktree: Path, files_written: set[str]
    ) -> None:
        self.task, self.role, self.worktree = task, role, worktree
        self.files_written = files_written
        self.key = attempt(task)
        self.saved = False

    def __call__(
        self,
        messages: list[dict[str, Any]],
        metrics: RunMetrics,
        wait_seconds: float = 0,
    ) -> None:
        usage, now = metrics.usage, timezone.now()
        row = RunCheckpoint(
            task_id=self.task.pk,
            role=self.role,
            attempt=self.key,
            conversation=RunCheckpoint.pack(messages),
            turns=metrics.turns,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cost_usd=metrics.cost_usd,
            files_written=sorted(self.files_written),
            worktree_state=worktree_state(self.worktree),
            wait_until=now + timedelta(seconds=wait_seconds) if wait_seconds else None,
            updated_at=now,
        )
        RunCheckpoint.objects.bulk_create(
            [row],
            update_conflicts=True,
            unique_fields=KEY_FIELDS,
            update_fields=SAVED_FIELDS,
        )
        self.saved = True


def settle(task: Task, role: str, outcome: RunOutcome, *, kept: bool = True) -> None:
    """After a run: a run that ended waiting for the model keeps its
    conversation (its spend is now recorded on its AgentRun, so the
    checkpoint's is cleared); any other end removes it. `kept`: False when
    the run neither resumed nor saved a checkpoint, so there is none to
    remove (load removed any other)."""
    if not kept:
        return
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
