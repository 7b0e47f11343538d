"""PostgreSQL restarted under load: web and workers recover by themselves.

The live test starts a private PostgreSQL cluster (the shared one on 5432 is
never touched), copies the migrated test database there, and runs the web
tier (gunicorn, 2 sync workers) and a worker cluster (`manage.py qcluster`,
ORM broker, the side-effect runner of tests/workers/live) against it. A
client thread keeps POSTing tasks through the API while the workers advance
them. Then the server is stopped for a few seconds and started again
(`pg_ctl stop -m fast` and `start`: every connection is cut), and later
restarted once more (`pg_ctl restart -m fast`) while tasks are still moving.

What it proves:
- during the outage the API answers 503 with Retry-After, in the API's error
  shape (code database_unavailable), never a 500 traceback;
- afterwards the same gunicorn answers 2xx again (health-checked connections:
  CONN_HEALTH_CHECKS with CONN_MAX_AGE > 0) and the same cluster finishes every
  task the API accepted, each side effect made once: a step that lost the
  database re-queues itself (codex.tasks.jobs.advance_task) and the ORM broker
  redelivers what was never acknowledged. Neither process is restarted.

The unit tests below pin the 503 of the API handler and of the middleware for
other pages, on any database.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field

import psycopg
import pytest
import requests
from django.conf import settings
from django.db import OperationalError
from rest_framework.test import APIClient

from codex.core.database import DatabaseUnavailableMiddleware, unavailable_body
from tests.factories import make_token, make_user
from tests.fault.services import ROOT, Gunicorn, PrivatePostgres, wait_until
from tests.workers.live.cluster import Clusters, Files, worker_env
from tests.workers.live.helpers import assert_side_effects_once

TASK_BODY = {
    "repository": "https://github.com/acme/restart",
    "description": "Made while the database restarts.",
    "priority": "low",
    "acceptance_criteria": "- it completes",
}

SETUP_SCRIPT = """
from django.contrib.auth import get_user_model
from django_q.models import Schedule
from codex.accounts.models import ApiToken
Schedule.objects.all().delete()
user = get_user_model().objects.create_superuser("restart-op", password="x-" * 8)
print(ApiToken.issue(user, "restart test")[1])
"""


def assert_unavailable_shape(response) -> None:
    assert response.status_code == 503, response.content[:500]
    assert response["Retry-After"] == "5"
    body = json.loads(response.content)
    assert body["error"]["code"] == "database_unavailable"
    assert body["error"]["message"]
    assert body["error"]["fields"] == {}
    # The API's handler and the pages' middleware answer the very same body.
    assert body == unavailable_body()


# -- the handlers, on any database ---------------------------------------------------


@pytest.mark.django_db
def test_the_api_answers_503_in_its_error_shape_when_the_database_is_lost(
    monkeypatch, caplog
):
    user = make_user("restart-api", is_staff=True, is_superuser=True)
    _, key = make_token(user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")

    def lost(*args, **kwargs):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr("codex.tasks.api.views.Task.objects.create_from_request", lost)
    with caplog.at_level("WARNING", logger="codex.core.database"):
        response = client.post(
            "/api/tasks/", {**TASK_BODY, "title": "Lost"}, format="json"
        )
    assert_unavailable_shape(response)
    assert (
        "database unavailable during POST /api/tasks/: OperationalError: "
        "server closed the connection unexpectedly"
    ) in caplog.messages


def test_a_page_answers_503_not_500_when_the_database_is_lost(rf):
    middleware = DatabaseUnavailableMiddleware(lambda request: None)
    page = middleware.process_exception(
        rf.get("/inbox/"), OperationalError("connection refused")
    )
    assert page.status_code == 503 and page["Retry-After"] == "5"
    assert b"database is unavailable" in page.content
    api = middleware.process_exception(
        rf.get("/api/tasks/"), OperationalError("connection refused")
    )
    assert_unavailable_shape(api)
    assert middleware.process_exception(rf.get("/"), ValueError("x")) is None


class LosesTheDatabase:
    """A phase runner whose database goes away mid-phase."""

    def run(self, task):
        raise OperationalError("server closed the connection unexpectedly")


@pytest.mark.django_db
def test_a_step_that_lost_the_database_requeues_itself(settings, monkeypatch):
    from codex.tasks.jobs import advance_task
    from codex.tasks.models import Task
    from tests.factories import make_task

    settings.CODEX_PHASE_RUNNER = f"{__name__}.LosesTheDatabase"
    task = make_task(title="Lost mid-step")
    enqueued = []
    monkeypatch.setattr(
        "codex.tasks.jobs.enqueue_on_commit", lambda *args: enqueued.append(args)
    )
    monkeypatch.setattr("codex.tasks.jobs.connection_lost", lambda: True)
    monkeypatch.setattr("codex.tasks.jobs.wait_for_database", lambda timeout: True)

    assert advance_task(task.task_id) == "requeued: database unavailable"
    assert enqueued == [("codex.tasks.jobs.advance_task", task.task_id)]
    row = Task.objects.get(pk=task.pk)
    assert row.lease_holder is None, "the lease is given back for the re-run"
    assert row.status == "in_progress" and row.phase == "intake"


@pytest.mark.django_db
def test_a_database_error_on_a_working_connection_is_no_outage(settings):
    """SQLite's "no such table", a statement timeout: the connection still
    works, so the step is not re-queued in a loop; the phase blocks as any
    crashing runner does."""
    from codex.tasks.jobs import advance_task
    from codex.tasks.models import Task
    from tests.factories import make_task

    settings.CODEX_PHASE_RUNNER = f"{__name__}.LosesTheDatabase"
    task = make_task(title="Database error")
    advance_task(task.task_id)
    row = Task.objects.get(pk=task.pk)
    assert row.status == "blocked"
    assert "OperationalError" in row.blocked_reason


def test_postgresql_connections_are_kept_and_health_checked():
    database = settings.DATABASES["default"]
    assert database["CONN_HEALTH_CHECKS"] is True
    if settings.IS_POSTGRESQL:
        assert database["CONN_MAX_AGE"] > 0


# -- the live restart ------------------------------------------------------------------


@dataclass
class Load:
    """A client thread POSTing tasks; a 503 is retried with the same
    Idempotency-Key, so each accepted task is created once."""

    base_url: str
    key: str
    statuses: Counter = field(default_factory=Counter)
    bad: list[str] = field(default_factory=list)
    task_ids: list[str] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    errors: list[str] = field(default_factory=list)

    def run(self) -> None:
        session = requests.Session()
        session.headers["Authorization"] = f"Token {self.key}"
        number = 0
        while not self.stop.is_set():
            number += 1
            idempotency_key = f"restart-{number}-{uuid.uuid4().hex[:8]}"
            while not self.stop.is_set():
                try:
                    response = session.post(
                        f"{self.base_url}/api/tasks/",
                        json={**TASK_BODY, "title": f"Restart load {number}"},
                        headers={"Idempotency-Key": idempotency_key},
                        timeout=15,
                    )
                except requests.RequestException as exc:
                    self.errors.append(f"{type(exc).__name__}: {exc}")
                    time.sleep(0.2)
                    continue
                self.statuses[response.status_code] += 1
                if response.status_code in (200, 201):
                    self.task_ids.append(response.json()["task_id"])
                    break
                if response.status_code == 503:
                    check_503(response, self.bad)
                    time.sleep(0.2)  # a real client waits Retry-After
                    continue
                self.bad.append(f"{response.status_code}: {response.text[:300]}")
                break
            time.sleep(0.6)  # about 1.5 tasks a second: load, not a flood


def check_503(response: requests.Response, bad: list[str]) -> None:
    try:
        error = response.json()["error"]
        ok = (
            error["code"] == "database_unavailable"
            and response.headers.get("Retry-After") == "5"
            and "Traceback" not in response.text
        )
    except (ValueError, KeyError, TypeError):
        ok = False
    if not ok:
        bad.append(f"503 not in the error shape: {response.text[:300]}")


def completed(dsn: str, task_ids: list[str]) -> int:
    try:
        with psycopg.connect(dsn, connect_timeout=3) as connection:
            row = connection.execute(
                "SELECT count(*) FROM tasks_task "
                "WHERE task_id = ANY(%s) AND status = 'completed'",
                [task_ids],
            ).fetchone()
    except psycopg.OperationalError:
        return -1
    return row[0]


def copy_test_database_schema(pg: PrivatePostgres, name: str) -> None:
    """The migrated test database, copied onto the private server (pg_dump |
    psql, a second): much faster than migrating it again. Its rows are what
    the migrations leave (other tests' rows are rolled back or flushed)."""
    db = settings.DATABASES["default"]
    env = {**os.environ, "PGPASSWORD": db.get("PASSWORD") or ""}
    dump = subprocess.run(
        [
            str(pg.bindir / "pg_dump"),
            "--no-owner",
            "--no-privileges",
            "-h",
            db.get("HOST") or "127.0.0.1",
            "-p",
            str(db.get("PORT") or 5432),
            "-U",
            db.get("USER") or "postgres",
            db["NAME"],
        ],
        env=env,
        capture_output=True,
        check=True,
        timeout=120,
    )
    subprocess.run(
        [
            str(pg.bindir / "psql"),
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            "127.0.0.1",
            "-p",
            str(pg.port),
            "-U",
            "postgres",
            "-d",
            name,
        ],
        input=dump.stdout,
        capture_output=True,
        check=True,
        timeout=120,
    )


@pytest.fixture
def private_postgres():
    server = PrivatePostgres.create()
    try:
        server.start()
        server.create_database("codex")
        yield server
    finally:
        server.destroy()


@pytest.mark.postgresql
def test_web_and_workers_recover_from_a_postgresql_restart_under_load(
    django_db_setup, private_postgres, tmp_path
):
    started = time.monotonic()
    pg = private_postgres
    files = Files(
        side_effect_log=tmp_path / "side_effects.log", run_log=tmp_path / "runs.log"
    )
    env = worker_env(
        files,
        workers=2,
        sleep_seconds=0.5,
        sleep_phases=("implementation",),
        var_dir=tmp_path,
    )
    env.update(
        {
            "DATABASE_URL": pg.url("codex"),
            # Room for a step to wait out the outage before its job times out.
            "CODEX_JOB_TIMEOUT": "30",
            "CODEX_JOB_RETRY": "40",
            "CODEX_DB_CONN_MAX_AGE": "600",
        }
    )
    copy_test_database_schema(pg, "codex")
    key = (
        subprocess.run(
            [sys.executable, "manage.py", "shell", "--no-imports", "-c", SETUP_SCRIPT],
            cwd=ROOT,
            env=env,
            check=True,
            timeout=60,
            capture_output=True,
            text=True,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    dsn = pg.url("codex").replace("postgres://", "postgresql://")

    (tmp_path / "static").mkdir()
    web = Gunicorn.start(env, tmp_path / "gunicorn.log")
    clusters = Clusters(directory=tmp_path)
    load = Load(base_url=web.base_url, key=key)
    thread = threading.Thread(target=load.run, daemon=True)
    outage = requests.Session()
    outage.headers["Authorization"] = f"Token {key}"
    try:
        cluster = clusters.start(env)
        thread.start()
        wait_until(lambda: completed(dsn, load.task_ids) >= 2, 60, "tasks to move")

        # 1. A hard stop for a few seconds: everything that needs the
        # database answers 503, in the error shape.
        pg.stop("fast")
        for _ in range(3):
            during = outage.post(
                f"{web.base_url}/api/tasks/",
                json={**TASK_BODY, "title": "During the outage"},
                timeout=15,
            )
            bad: list[str] = []
            check_503(during, bad)
            assert during.status_code == 503 and not bad, during.text[:500]
            listing = outage.get(f"{web.base_url}/api/tasks/", timeout=15)
            assert listing.status_code == 503, listing.text[:500]
            assert outage.get(f"{web.base_url}/healthz", timeout=15).status_code == 503
            time.sleep(0.5)
        pg.start()

        # 2. The same gunicorn answers again, without a restart of its own.
        wait_until(
            lambda: (
                outage.get(f"{web.base_url}/api/tasks/", timeout=15).status_code == 200
            ),
            30,
            "the API to answer 200 after the restart",
        )
        accepted = len(load.task_ids)
        wait_until(lambda: len(load.task_ids) >= accepted + 2, 60, "new POSTs")

        # 3. A plain restart while steps run.
        pg.restart("fast")
        wait_until(lambda: len(load.task_ids) >= accepted + 4, 60, "more POSTs")
        load.stop.set()
        thread.join(timeout=30)

        task_ids = list(load.task_ids)
        assert not load.bad, load.bad
        assert set(load.statuses) <= {201, 503}, load.statuses
        assert load.statuses[201] == len(task_ids) >= 6
        wait_until(
            lambda: completed(dsn, task_ids) == len(task_ids),
            90,
            f"all {len(task_ids)} accepted tasks to complete",
        )
        assert_side_effects_once(files, task_ids)
        assert web.alive() and cluster.alive()
        assert len(clusters.started) == 1
        assert outage.get(f"{web.base_url}/healthz", timeout=15).status_code == 200
        assert "Internal Server Error" not in web.log()
    except AssertionError as exc:
        raise AssertionError(
            f"{exc}\nload: {dict(load.statuses)} {load.bad[:3]} {load.errors[:3]}"
            f"\n--- gunicorn ---\n{web.log()}\n{clusters.logs()}"
            f"\n--- postgres ---\n{pg.log()}"
        ) from None
    finally:
        load.stop.set()
        thread.join(timeout=30)
        clusters.cleanup()
        web.stop()
    assert time.monotonic() - started < 120
