"""An instance of a task still active is parked between the task's phase runs
(a review, a retry, a person's answer): silence is normal for it, and the
heartbeat reaper leaves it alone. Once the task has ended, a silent instance
is reaped as before."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from codex.fleet.heartbeats import reap_stale_work
from codex.fleet.models import InstanceStatus
from tests.factories import make_task, put_in_state
from tests.fleet.factories import make_instance

pytestmark = pytest.mark.django_db

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture(autouse=True)
def _settings(settings):
    settings.CODEX_WORKTREE_ROOT = None
    settings.CODEX_HEARTBEAT_STALE_SECONDS = 300


def test_a_parked_instance_of_an_active_task_is_not_reaped(time_machine):
    time_machine.move_to(T0, tick=False)
    task = make_task(issue_number=3)
    parked = make_instance(repository=task.repository, task=task, issue_number=3)
    ended = make_task(task.repository, title="Ended", issue_number=4)
    orphan = make_instance(repository=task.repository, task=ended, issue_number=4)
    put_in_state(ended, status="failed")

    time_machine.move_to(T0 + timedelta(hours=5), tick=False)
    done = reap_stale_work()

    assert done["instances_terminated"] == [orphan.instance_id]
    parked.refresh_from_db()
    assert parked.status == InstanceStatus.STARTED
