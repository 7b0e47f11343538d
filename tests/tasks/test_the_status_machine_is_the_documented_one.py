"""The task's status machine is exactly the one documented in
docs/domain/tasks.md#task-status, row for row, and exactly the eight statuses
and transitions of the envelope's state machine:

    | Status | Description | Next Possible States |
    | `pending` | Task created, not yet started | `in_progress` |
    | `in_progress` | Actively being worked on | `blocked`, `escalated`,
                                              `paused`, `completed`, `failed` |
    | `blocked` | Temporary blocker (lease, auth) | `in_progress`, `failed` |
    | `escalated` | Requires human decision | `in_progress`, `failed`, `cancelled` |
    | `paused` | User-requested pause | `in_progress`, `cancelled` |
    | `completed` | Successfully finished | (terminal) |
    | `failed` | Unrecoverable error | (terminal) |
    | `cancelled` | User cancelled | (terminal) |

and `* → cancelled` ("User cancels", guard "task not completed").
"""

from __future__ import annotations

import re
from pathlib import Path

from codex.tasks.models import TERMINAL_STATUSES, Status, Task

DOC = Path(__file__).resolve().parents[2] / "docs" / "domain" / "tasks.md"

EIGHT = [
    "pending",
    "in_progress",
    "blocked",
    "escalated",
    "paused",
    "completed",
    "failed",
    "cancelled",
]
NEXT_POSSIBLE = {
    "pending": {"in_progress"},
    "in_progress": {"blocked", "escalated", "paused", "completed", "failed"},
    "blocked": {"in_progress", "failed"},
    "escalated": {"in_progress", "failed", "cancelled"},
    "paused": {"in_progress", "cancelled"},
}


def documented_rows() -> dict[str, tuple[frozenset[str], str]]:
    """{transition: (from statuses, to status)} of the table under
    docs/domain/tasks.md#task-status."""
    text = DOC.read_text()
    section = text[
        text.index('<a id="task-status"></a>') : text.index('<a id="task-phase"></a>')
    ]
    rows = {}
    for line in section.splitlines():
        match = re.match(r"^\| `(\w+)` \| ([^|]+) \| ([^|]+) \|", line)
        if match is None:
            continue
        name, sources, target = match.groups()
        assert name not in rows, f"{name} documented twice"
        rows[name] = (
            frozenset(s.strip() for s in sources.split(",")),
            target.strip(),
        )
    return rows


def model_rows() -> dict[str, tuple[frozenset[str], str]]:
    """{transition: (from statuses, to status)} of Task's `status` field."""
    rows: dict[str, tuple[set[str], str]] = {}
    for transition in Task._meta.get_field("status").get_all_transitions(Task):
        sources, target = rows.setdefault(transition.name, (set(), transition.target))
        assert target == transition.target, f"{transition.name} has two targets"
        sources.add(transition.source)
    return {name: (frozenset(s), t) for name, (s, t) in rows.items()}


def test_the_statuses_are_exactly_the_eight():
    assert Status.values == EIGHT
    assert set(TERMINAL_STATUSES) == {"completed", "failed", "cancelled"}


def test_every_transition_is_a_documented_row_and_every_row_a_transition():
    documented = documented_rows()
    assert documented, "no transition table found in docs/domain/tasks.md"
    assert model_rows() == documented


def test_the_transitions_join_only_the_states_the_envelope_allows():
    pairs = {
        (source, target)
        for sources, target in model_rows().values()
        for source in sources
    }
    allowed = {
        (source, target)
        for source, targets in NEXT_POSSIBLE.items()
        for target in targets
    }
    # `* → cancelled`: every status but the terminal ones may be cancelled.
    allowed |= {(status, "cancelled") for status in EIGHT[:5]}
    assert pairs == allowed
    assert not {status for pair in pairs for status in pair} - set(EIGHT)
