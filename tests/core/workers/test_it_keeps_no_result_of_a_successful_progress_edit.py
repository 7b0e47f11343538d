"""The progress comment's edits keep no job result when they succeed
(CODEX_JOB_RESULTS_UNSAVED, codex/core/workers/job_results.py), so they do not crowd
the steps' results out of the kept ones. Their failures are kept, and other
jobs' successes (the steps') too. Run through django-q2's own worker signal
and monitor save."""

from __future__ import annotations

import uuid

import pytest
from django.utils import timezone
from django_q.brokers import get_broker
from django_q.models import Failure, Success
from django_q.monitor import save_task
from django_q.signals import pre_execute

pytestmark = pytest.mark.django_db

STEP = "codex.tasks.jobs.advance_task"
PROGRESS = "codex.tasks.progress.update_progress_comment"
OTHER = "codex.core.workers.job_results.prune_job_results"


def run_and_save(func: str, *, success: bool = True) -> str:
    """A job package as a worker runs it (pre_execute first), then saved by
    the monitor; returns its id."""
    package = {
        "id": uuid.uuid4().hex,
        "name": uuid.uuid4().hex,
        "func": func,
        "args": ("FEAT-20260101-abcdef",),
        "kwargs": {},
        "started": timezone.now(),
        "stopped": timezone.now(),
        "result": "done" if success else "Traceback: boom",
        "success": success,
        "sync": True,  # keeps the test's connection open
    }
    pre_execute.send(sender="django_q", func=func, task=package)
    save_task(package, get_broker())
    return package["id"]


def test_a_successful_edit_keeps_no_result():
    run_and_save(PROGRESS)
    assert not Success.objects.exists()


def test_its_failure_is_kept():
    job_id = run_and_save(PROGRESS, success=False)
    assert Failure.objects.filter(id=job_id).exists()


@pytest.mark.parametrize("func", [STEP, OTHER])
def test_other_jobs_keep_their_results(func):
    job_id = run_and_save(func)
    assert Success.objects.filter(id=job_id).exists()


def test_the_setting_decides(settings):
    settings.CODEX_JOB_RESULTS_UNSAVED = ()
    job_id = run_and_save(PROGRESS)
    assert Success.objects.filter(id=job_id).exists()
