"""Artifact.store_all: a step's documents in one INSERT, content-addressed by
SHA-256 (spec 002 §3.5, "same content = same result"): storing the same
content again adds nothing, a changed document is a new version."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from codex.tasks.models import Artifact
from tests.factories import make_task

pytestmark = pytest.mark.django_db


def versions(task, name: str) -> list[str]:
    rows = Artifact.objects.filter(task=task, name=name).order_by("created_at", "id")
    return list(rows.values_list("content", flat=True))


def test_it_writes_all_documents_in_one_insert_and_returns_their_paths():
    task = make_task()
    with CaptureQueriesContext(connection) as queries:
        paths = Artifact.store_all(task, {"plan.md": "# Plan", "tasks.md": "- T1"})
    assert [q["sql"].split()[0] for q in queries.captured_queries] == ["INSERT"]
    assert paths == [
        f"agent-spec/{task.task_id}/plan.md",
        f"agent-spec/{task.task_id}/tasks.md",
    ]


def test_the_same_content_again_is_the_same_row():
    task = make_task()
    Artifact.store_all(task, {"spec.md": "# Spec"})
    paths = Artifact.store_all(task, {"spec.md": "# Spec"})
    assert paths == [f"agent-spec/{task.task_id}/spec.md"]
    assert versions(task, "spec.md") == ["# Spec"]


def test_a_changed_document_is_a_new_version():
    task = make_task()
    Artifact.store_all(task, {"spec.md": "# Spec v1"})
    Artifact.store_all(task, {"spec.md": "# Spec v2"})
    assert versions(task, "spec.md") == ["# Spec v1", "# Spec v2"]


def test_no_documents_send_nothing():
    task = make_task()
    with CaptureQueriesContext(connection) as queries:
        assert Artifact.store_all(task, {}) == []
    assert queries.captured_queries == []
