"""On PostgreSQL, a job that becomes waiting in the ORM broker's queue (a new
row, or one handed back: its key without a cluster's claim) notifies the
`codex_jobs` channel, so an idle pusher wakes at once instead of polling
(codex.core.workers.brokers.ClaimingORM). A notification sent inside a transaction is
delivered when it commits, with the job. The condition is in the function,
not the trigger: a trigger naming a column would stop a later migration from
changing that column's type. Nothing on other databases."""

from django.db import migrations

# codex.core.workers.brokers.JOBS_CHANNEL; a migration keeps its own copy, so that
# its history does not change when the code does.
CHANNEL = "codex_jobs"

CREATE = f"""
CREATE OR REPLACE FUNCTION codex_job_queued() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF strpos(NEW.key, '@') = 0 THEN
        PERFORM pg_notify('{CHANNEL}', '');
    END IF;
    RETURN NULL;
END
$$;
DROP TRIGGER IF EXISTS codex_job_queued ON django_q_ormq;
CREATE TRIGGER codex_job_queued
AFTER INSERT OR UPDATE ON django_q_ormq
FOR EACH ROW EXECUTE FUNCTION codex_job_queued();
"""

DROP = """
DROP TRIGGER IF EXISTS codex_job_queued ON django_q_ormq;
DROP FUNCTION IF EXISTS codex_job_queued();
"""


def on_postgresql(sql: str):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("core", "0005_idempotencyrecord"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(on_postgresql(CREATE), on_postgresql(DROP))]
