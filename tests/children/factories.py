"""Test data for fan-outs: parents, open windows, child comments."""

from __future__ import annotations

import itertools
from datetime import datetime, timedelta

from django.utils import timezone

from codex.children.models import FanOut
from tests.factories import make_task

_comment_ids = itertools.count(1_234_567_890)
ACTOR = "webhook:test"

# Spec 001 "Claude Analysis Response", verbatim.
SPEC_RESPONSE = {
    "analysis": {
        "merge_strategy": "MERGE_PARTIAL",
        "prs_to_merge": [10],
        "reasoning": "Child C1 completed successfully with PR #10. Child C2 failed "
        "due to dependency conflicts which don't affect C1's work. Recommending "
        "partial merge of C1's changes.",
        "summary": "1 of 2 children successful. Merging PR #10.",
    }
}


def make_fan_out(expected: int = 3, *, open_window: bool = True, **fields) -> FanOut:
    """A parent task fanned out to `expected` children; by default awaiting."""
    fan_out = FanOut.objects.start(
        make_task(), expected_child_count=expected, by="test", **fields
    )
    if open_window:
        fan_out.perform("spawn_children", by="test")
        fan_out.perform("open_window", by="test")
    return fan_out


def post(
    fan_out: FanOut,
    body: str,
    *,
    comment_id: int | None = None,
    reported_at: datetime | None = None,
    minutes: int = 0,
    **options,
):
    """Deliver one issue comment to the fan-out, as the webhook would."""
    return fan_out.receive_comment(
        comment_id=comment_id or next(_comment_ids),
        body=body,
        author=options.pop("author", "github-actions[bot]"),
        reported_at=reported_at or timezone.now() + timedelta(minutes=minutes),
        by=options.pop("by", ACTOR),
        **options,
    )


def workflow_events(fan_out: FanOut) -> list[str]:
    """The spec 001 §4 workflow events of the fan-out's parent, in order."""
    from codex.events.models import Event

    return [
        e.data["event"]
        for e in Event.objects.filter(task=fan_out.parent, kind="workflow").in_order()
    ]
