"""A run's checkpoint (docs/domain/fleet.md#run-checkpoints): one row per task
and role, written in one statement after each turn, replacing whatever an
earlier attempt left; one of another attempt (or too old) is removed when a
run looks for its own, one of its attempt is resumed; removed when the run
ends other than by a wait, and a run that neither resumed nor saved one
touches no row at all."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from agents import checkpoints
from agents.run_outcome import Kind, RunMetrics, RunOutcome
from codex.fleet.models import RunCheckpoint
from tests.factories import make_task

pytestmark = pytest.mark.django_db


def conversation(text: str) -> list[dict]:
    return [{"role": "user", "content": [{"type": "text", "text": text}]}]


def test_each_save_is_one_statement_replacing_the_roles_row(
    tmp_path, django_assert_num_queries
):
    task = make_task()
    RunCheckpoint.objects.create(
        task=task,
        role="developer",
        attempt="implementation:an-abandoned-attempt",
        conversation=RunCheckpoint.pack(conversation("old")),
        turns=7,
    )
    save = checkpoints.Saver(task, "developer", tmp_path, {"b.py", "a.py"})
    assert not save.saved
    with django_assert_num_queries(1):
        save(conversation("new"), RunMetrics(turns=2))
    with django_assert_num_queries(1):
        save(conversation("newer"), RunMetrics(turns=3), 30)
    row = RunCheckpoint.objects.get(task=task, role="developer")
    assert save.saved
    assert row.attempt == checkpoints.attempt(task)
    assert (row.turns, row.files_written) == (3, ["a.py", "b.py"])
    assert row.messages == conversation("newer") and row.wait_until is not None


def test_a_run_that_kept_nothing_removes_nothing(django_assert_num_queries):
    task = make_task()
    done = RunOutcome(Kind.SUBMITTED, result={})
    with django_assert_num_queries(0):
        checkpoints.settle(task, "developer", done, kept=False)
    with django_assert_num_queries(1):
        checkpoints.settle(task, "developer", done)


def test_a_run_that_kept_one_removes_it_when_done(tmp_path):
    task = make_task()
    save = checkpoints.Saver(task, "developer", tmp_path, set())
    save(conversation("turn"), RunMetrics(turns=1))
    checkpoints.settle(task, "developer", RunOutcome(Kind.SUBMITTED), kept=save.saved)
    assert not RunCheckpoint.objects.filter(task=task).exists()


def stored(task, attempt: str, **fields) -> RunCheckpoint:
    return RunCheckpoint.objects.create(
        task=task,
        role="developer",
        attempt=attempt,
        conversation=RunCheckpoint.pack(conversation("before")),
        turns=2,
        **fields,
    )


def test_a_run_resumes_its_attempts_checkpoint_in_one_query(
    django_assert_num_queries,
):
    task = make_task()
    row = stored(task, checkpoints.attempt(task))
    with django_assert_num_queries(1):
        found = checkpoints.load(task, "developer")
    assert found is not None and found.pk == row.pk
    assert checkpoints.load(task, "reviewer") is None


@pytest.mark.parametrize("stale", ["another attempt", "too old"])
def test_a_checkpoint_no_run_can_resume_is_removed_when_found(stale, settings):
    task = make_task()
    if stale == "another attempt":
        stored(task, "implementation:an-abandoned-attempt")
    else:
        settings.CODEX_AGENT_CHECKPOINT_MAX_AGE_SECONDS = 60
        row = stored(task, checkpoints.attempt(task))
        RunCheckpoint.objects.filter(pk=row.pk).update(
            updated_at=timezone.now() - timedelta(seconds=61)
        )
    assert checkpoints.load(task, "developer") is None
    assert not RunCheckpoint.objects.filter(task=task).exists()
