"""The dashboard's indexes join the model state (Task.Meta.indexes).

0006_dashboard_indexes made them with SQL outside the model state, so a table
rebuild on SQLite dropped them (0008 and 0010 made them again) and
makemigrations did not know them. The model now declares them under the same
names and definitions: the state learns them here, and the database keeps the
ones it has (CREATE INDEX IF NOT EXISTS makes any that are missing). From now
on Django's own table rebuilds keep them.
"""

from django.db import migrations, models

INDEXES = [
    models.Index(
        fields=["status", "phase", "pr_merged", "verification_cycles", "review_cycles"],
        name="task_dashboard",
    ),
    models.Index(
        fields=["finished_at"],
        condition=models.Q(status="completed"),
        name="task_completed_finished",
    ),
    models.Index(fields=["id"], condition=models.Q(pr_merged=True), name="task_merged"),
]


def make_missing_indexes(apps, schema_editor):
    """Create any of the indexes the database lacks, as the model defines it."""
    task = apps.get_model("tasks", "Task")
    with schema_editor.connection.cursor() as cursor:
        existing = schema_editor.connection.introspection.get_constraints(
            cursor, task._meta.db_table
        )
    for index in INDEXES:
        if index.name not in existing:
            schema_editor.add_index(task, index)


class Migration(migrations.Migration):
    dependencies = [
        ("tasks", "0010_spend_gates"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AddIndex(model_name="task", index=index) for index in INDEXES
            ],
            database_operations=[
                migrations.RunPython(make_missing_indexes, migrations.RunPython.noop),
            ],
        ),
    ]
