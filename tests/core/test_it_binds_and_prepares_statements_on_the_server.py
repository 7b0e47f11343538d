"""On PostgreSQL the server binds a statement's parameters (psycopg does not
quote each value into the text) and a statement a connection has run
CODEX_DB_PREPARE_THRESHOLD times (5) is prepared, so the server parses and
plans it once; both can be turned off for a pooler that cannot keep prepared
statements (CODEX_DB_SERVER_SIDE_BINDING=0, CODEX_DB_PREPARE_THRESHOLD=0)."""

from __future__ import annotations

import json

import pytest

from tests.factories import make_repository, make_task
from tests.test_settings_env import load_settings


def database_options(**variables: str) -> dict:
    """settings.DATABASES["default"]["OPTIONS"] in a fresh process, for a
    PostgreSQL DATABASE_URL (no connection is made) and `variables`."""
    result = load_settings(
        "import json; from codex import settings as s; "
        "print(json.dumps(s.DATABASES['default'].get('OPTIONS', {})))",
        DEBUG="1",
        DATABASE_URL="postgres://codex@db.invalid:5432/codex",
        **variables,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_postgresql_binds_on_the_server_and_prepares_by_default(tmp_path):
    options = database_options(CODEX_VAR_DIR=str(tmp_path))
    assert options["server_side_binding"] is True
    assert options["prepare_threshold"] == 5


def test_each_can_be_turned_off(tmp_path):
    options = database_options(
        CODEX_VAR_DIR=str(tmp_path),
        CODEX_DB_SERVER_SIDE_BINDING="0",
        CODEX_DB_PREPARE_THRESHOLD="0",
    )
    assert options["server_side_binding"] is False
    assert options["prepare_threshold"] is None  # psycopg: never prepare


@pytest.mark.postgresql
@pytest.mark.django_db
def test_a_repeated_lookup_is_prepared_and_a_hostile_value_stays_a_value():
    from django.db import connection

    from codex.tasks.models import Task

    task = make_task(make_repository(), title="Robert'); DROP TABLE tasks_task;--")
    for _ in range(6):
        found = Task.objects.filter(title=task.title).values_list("pk", flat=True)
        assert list(found) == [task.pk]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE %s",
            [
                'SELECT "tasks_task"."id" AS "pk" FROM "tasks_task" WHERE '
                '"tasks_task"."title" = $1 %'
            ],
        )
        (prepared,) = cursor.fetchone()
    assert prepared == 1
    assert Task.objects.count() == 1
