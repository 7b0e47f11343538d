"""Indexes for the dashboard's aggregates (codex.tasks.pages.dashboard).

Created with SQL that both PostgreSQL and SQLite understand, and kept out of
the model state: Task.Meta lives in codex/tasks/models/task.py, which is being
rewritten in parallel. Moving them into Task.Meta.indexes later takes a
SeparateDatabaseAndState migration with these names.

- task_dashboard: every column the status/phase/merge/cycles aggregate reads,
  so it is an index-only scan; few distinct combinations, so btree
  deduplication keeps it small (about 0.7 MB for 100k tasks);
- task_completed_finished: completions in the throughput window;
- task_merged: the tasks whose pull request was merged, for the agent runs'
  cost per merged pull request.
"""

from django.db import migrations

INDEXES = {
    "task_dashboard": "(status, phase, pr_merged, verification_cycles, review_cycles)",
    "task_completed_finished": "(finished_at) WHERE status = 'completed'",
    "task_merged": "(id) WHERE pr_merged",
}


class Migration(migrations.Migration):
    dependencies = [
        ("tasks", "0005_pr_url_any_forge"),
    ]

    operations = [
        migrations.RunSQL(
            sql=f"CREATE INDEX {name} ON tasks_task {definition}",
            reverse_sql=f"DROP INDEX {name}",
        )
        for name, definition in INDEXES.items()
    ]
