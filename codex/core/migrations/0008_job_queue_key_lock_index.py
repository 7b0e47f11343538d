"""An index on the job queue's (key, lock): what every take, hand-back and
monitoring read of the ORM broker filters on (codex.core.workers.brokers,
codex.core.workers.snapshot). django-q2's table has none, and a backlog of
thousands of jobs was scanned whole by each."""

from django.db import migrations

INDEX = "codex_ormq_key_lock"


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0007_worker_cluster_health"),
    ]

    operations = [
        migrations.RunSQL(
            f'CREATE INDEX IF NOT EXISTS "{INDEX}" ON "django_q_ormq" ("key", "lock")',
            f'DROP INDEX IF EXISTS "{INDEX}"',
        )
    ]
