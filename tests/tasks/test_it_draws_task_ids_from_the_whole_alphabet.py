"""A task id's six random characters (docs/domain/tasks.md#task-id) are the
base-36 digits of one draw: every position takes every character of the
alphabet, and the id keeps its shape."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from codex.tasks.models import new_task_id
from codex.tasks.models.queryset import TASK_ID_ALPHABET

TASK_ID = re.compile(r"^FEAT-20261128-[a-z0-9]{6}$")


def test_every_position_takes_every_character():
    today = datetime(2026, 11, 28, tzinfo=UTC)
    ids = [new_task_id(today) for _ in range(3000)]
    assert all(TASK_ID.match(task_id) for task_id in ids)
    for position in range(-6, 0):
        # 3000 uniform draws miss one of 36 characters with odds of 1e-34.
        assert {task_id[position] for task_id in ids} == set(TASK_ID_ALPHABET)
    assert len(set(ids)) > 2990
