"""Review reports stored before the reviewer gave the format's security
block ({issues_found, findings: [text]}) get it: each finding an item with
its text as the description, vulnerabilities_found their number; and their
feedback its suggestion_count and priority_order
(docs/domain/tasks.md#review-report)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = ("tasks", "0018_waiting_tasks_are_escalated")
AFTER = ("tasks", "0019_review_reports_security_as_the_format")


def migrate(target):
    """The tasks app at `target`, the other apps at their newest (their
    tables as the database has them: a repository row needs every column)."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    others = [
        leaf
        for leaf in executor.loader.graph.leaf_nodes()
        if leaf[0] != target[0] and leaf[0] != "tasks"
    ]
    executor.migrate([target, *others])
    executor.loader.build_graph()
    return executor.loader.project_state([target, *others]).apps


def test_old_security_findings_become_items():
    apps = migrate(BEFORE)
    Repository = apps.get_model("repositories", "Repository")
    Task = apps.get_model("tasks", "Task")
    ReviewReport = apps.get_model("tasks", "ReviewReport")
    task = Task.objects.create(
        task_id="FEAT-20260119-dddddd",
        created_by="api",
        repository=Repository.objects.create(url="https://github.com/acme/w"),
        title="t",
        request_fingerprint="x",
    )
    ReviewReport.objects.create(
        task=task,
        cycle=1,
        assessment="request_changes",
        comments=[
            {"id": "R001", "severity": "suggestion"},
            {"id": "R002", "severity": "blocking"},
        ],
        security={"issues_found": True, "findings": ["SQL from user input"]},
        feedback={"blocking_count": 1, "message": "fix it"},
    )

    apps = migrate(AFTER)
    report = apps.get_model("tasks", "ReviewReport").objects.get()
    assert report.security == {
        "vulnerabilities_found": 1,
        "items": [
            {
                "type": None,
                "description": "SQL from user input",
                "severity": None,
                "file": None,
                "line": None,
            }
        ],
    }
    assert report.feedback == {
        "blocking_count": 1,
        "suggestion_count": 1,
        "priority_order": ["R002", "R001"],
        "message": "fix it",
    }
