"""On PostgreSQL, the database itself refuses changes to a task's request.

The model refuses them too (ImmutableFieldError) and so does TaskQuerySet.update;
the trigger closes the last path, raw SQL. (SQLite is the embedded development
database: its table rebuilds on later migrations would drop a trigger silently,
so it relies on the model-level checks.)
"""

from django.db import migrations

COLUMNS = [
    "task_id",
    "created_by",
    "repository_id",
    "created_at",
    "title",
    "description",
    "priority",
    "acceptance_criteria",
]

CREATE = """
CREATE OR REPLACE FUNCTION tasks_task_request_immutable() RETURNS trigger AS $$
BEGIN
  IF {changed} THEN
    RAISE EXCEPTION 'the request of task % is immutable after creation', OLD.task_id
      USING ERRCODE = 'integrity_constraint_violation';
  END IF;
  RETURN NEW;
END
$$ LANGUAGE plpgsql;
DROP TRIGGER IF EXISTS tasks_task_request_immutable ON tasks_task;
CREATE TRIGGER tasks_task_request_immutable BEFORE UPDATE ON tasks_task
  FOR EACH ROW EXECUTE FUNCTION tasks_task_request_immutable();
""".format(changed=" OR ".join(f"NEW.{c} IS DISTINCT FROM OLD.{c}" for c in COLUMNS))

DROP = """
DROP TRIGGER IF EXISTS tasks_task_request_immutable ON tasks_task;
DROP FUNCTION IF EXISTS tasks_task_request_immutable();
"""


# params=None: the SQL holds a literal %, which must not be read as a placeholder.
def create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(CREATE, params=None)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(DROP, params=None)


class Migration(migrations.Migration):
    dependencies = [("tasks", "0001_initial")]
    operations = [migrations.RunPython(create, drop)]
