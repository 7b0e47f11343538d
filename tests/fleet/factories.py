"""Factories for fleet tests: instances, relationships, runs."""

from __future__ import annotations

import itertools
from datetime import timedelta
from typing import Any

from django.utils import timezone

from codex.fleet.models import (
    AgentInstance,
    AgentRun,
    InstanceRelationship,
    InstanceType,
    RelationshipType,
    RunStatus,
)
from tests.factories import make_repository

# Spec 000's session log record (logs/session_*.jsonl), word for word.
SESSION_LOG_EXAMPLE = {
    "session_id": "session_20251217_143022_1",
    "started_at": "2025-12-17T14:30:22",
    "ended_at": "2025-12-17T15:05:47",
    "issues_worked": [42, 43],
    "issues_closed": [42],
    "files_changed": 5,
    "tool_count": 45,
    "productivity_score": 0.33,
    "success": True,
    "health_status": "healthy",
    "warnings": [],
}

_sessions = itertools.count(1)


def make_instance(
    type: str = InstanceType.CODING,
    *,
    repository=None,
    issue_number: int | None = 123,
    **fields: Any,
) -> AgentInstance:
    """A started instance with the next free agent number."""
    if type == InstanceType.PLANNING and "issue_number" not in fields:
        issue_number = None
    return AgentInstance.objects.start(
        type=type,
        repository=repository or make_repository(),
        issue_number=issue_number,
        worktree_path=f"/worktrees/{type}-{issue_number}",
        branch_name=f"issue-{issue_number}",
        by="worker:test",
        **fields,
    )


def put_instance_in(instance: AgentInstance, status: str) -> AgentInstance:
    """Force a status for a test, bypassing transitions (tests only)."""
    AgentInstance._base_manager.filter(pk=instance.pk).update(status=status)
    instance.refresh_from_db()
    return instance


def add_reviews(coding: AgentInstance, count: int) -> list[InstanceRelationship]:
    """`count` spawned_review relationships (iterations 1..count) to new review
    instances, written directly (no limits applied)."""
    links = []
    for iteration in range(1, count + 1):
        review = make_instance(
            InstanceType.REVIEW,
            repository=coding.repository,
            issue_number=coding.issue_number,
            parent=coding,
        )
        links.append(
            InstanceRelationship.objects.create(
                parent=coding,
                child=review,
                relationship_type=RelationshipType.SPAWNED_REVIEW,
                review_iteration=iteration,
            )
        )
    return links


def make_run(
    *,
    tool_count: int = 0,
    files_changed: int = 0,
    closed: int = 0,
    status: str = RunStatus.SUCCEEDED,
    **fields: Any,
) -> AgentRun:
    """A run with the given counts; `closed` issues numbered 1..closed."""
    now = timezone.now()
    run = AgentRun(
        tool_count=tool_count,
        files_changed=files_changed,
        closed_issues=list(range(1, closed + 1)),
        status=status,
        started_at=now - timedelta(minutes=30),
        ended_at=None if status == RunStatus.RUNNING else now,
        **fields,
    )
    run.session_id = fields.get("session_id") or f"session_test_{next(_sessions)}"
    run.save()
    return run
