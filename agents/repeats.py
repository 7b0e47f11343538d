"""Noticing an agent going round in circles: the same tool call, answered
the same way, again and again with nothing changed in between (a model that
reads one file twenty times, or runs a failing command without touching the
code). At `note_at` repeats the result says so; at `limit` the run ends and
a person is asked to look, with the repeated call named."""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Any

ARGUMENTS_SHOWN = 300

NOTE = (
    "\n\n[Note from Codex: you have made exactly this call {count} times and got "
    "exactly this result each time, with no file changed in between. Doing it "
    "again will not change anything: try another approach, ask_question, or "
    "submit what you have and say what is left.]"
)


class RepeatWatch:
    """Counts identical (call, result) pairs within one state of the
    worktree: any file changed by a tool starts a new state, so running the
    tests again after an edit is never a repeat."""

    def __init__(self, *, note_at: int, limit: int) -> None:
        self.note_at = note_at
        self.limit = limit
        self.generation = 0
        self.counts: Counter[str] = Counter()
        self.stuck_on = ""

    def changed_files(self) -> None:
        """A tool changed the worktree: earlier results may differ now."""
        self.generation += 1

    def see(self, name: str, arguments: Any, result: str) -> str:
        """Count one call; the note to add to its result ("" for none). When
        the call reaches the limit, `stuck_on` names it."""
        if self.limit <= 0:
            return ""
        key = hashlib.sha256(
            json.dumps(
                [self.generation, name, arguments, result],
                sort_keys=True,
                default=str,
            ).encode()
        ).hexdigest()
        self.counts[key] += 1
        count = self.counts[key]
        if count >= self.limit:
            shown = json.dumps(arguments, sort_keys=True, default=str)
            if len(shown) > ARGUMENTS_SHOWN:
                shown = shown[:ARGUMENTS_SHOWN] + "..."
            self.stuck_on = (
                f"the agent made the same call {count} times with the same result "
                f"and no change in between: {name} {shown}"
            )
            return ""
        if count >= self.note_at:
            return NOTE.format(count=count)
        return ""
