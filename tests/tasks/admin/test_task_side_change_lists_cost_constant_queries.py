"""The task-side change lists cost the same number of queries for 3 rows as for
30 (list_select_related, no per-row queries)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from codex.tasks.models import (
    AgentQuestion,
    Analysis,
    Artifact,
    BuildResult,
    Escalation,
    Learning,
    ReviewReport,
    Triage,
    VerificationReport,
)
from tests.factories import make_task

pytestmark = pytest.mark.django_db


def add_rows(model, count: int) -> None:
    for _ in range(count):
        task = make_task()
        if model is Triage:
            Triage.objects.create(
                task=task, type="BUG_FIX", scope="SMALL", complexity="simple"
            )
        elif model is Analysis:
            Analysis.objects.create(task=task, brief="b")
        elif model is BuildResult:
            BuildResult.objects.create(task=task, cycle=1)
        elif model is AgentQuestion:
            AgentQuestion.objects.create(
                task=task, from_role="writer", to_role="analyst", question="q"
            )
        elif model is Learning:
            Learning.objects.create(
                repository=task.repository,
                task=task,
                agent="writer",
                type="t",
                content="c",
            )
        elif model is Escalation:
            Escalation.objects.create(task=task, phase="intake", reason="security")
        elif model is Artifact:
            Artifact.store_all(task, {"spec.md": f"# {task.task_id}"})
        elif model is VerificationReport:
            VerificationReport.objects.create(
                task=task, cycle=1, recommendation="approve"
            )
        elif model is ReviewReport:
            ReviewReport.objects.create(task=task, cycle=1, assessment="approve")


def queries_for(console, url: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        assert console.get(url).status_code == 200
    return len(captured)


@pytest.mark.parametrize(
    "model",
    [
        Triage,
        Analysis,
        BuildResult,
        AgentQuestion,
        Learning,
        Escalation,
        Artifact,
        VerificationReport,
        ReviewReport,
    ],
    ids=lambda model: model.__name__,
)
def test_change_list_queries_do_not_grow_with_rows(console, model):
    url = reverse(f"admin:tasks_{model._meta.model_name}_changelist")
    add_rows(model, 3)
    console.get(url)  # warm the session and content types
    few = queries_for(console, url)
    add_rows(model, 27)
    assert queries_for(console, url) == few


def test_the_task_change_list_does_not_grow_with_rows(console):
    url = reverse("admin:tasks_task_changelist")
    for _ in range(3):
        make_task()
    console.get(url)
    few = queries_for(console, url)
    for _ in range(27):
        make_task()
    assert queries_for(console, url) == few
