"""Scale of records: the list pages, the API and the minute's scheduled jobs
with 1,000,000 tasks and 10,000,000 events, against the same with 10,000
tasks and 100,000 events, measured in one process (goal: each at most 1.5x
the 10,000 run).

The 10,000 are bench.scheduled's: ten repositories, a tenth of the tasks
active (running runs, live claims), the rest history (completed, failed or
cancelled, with an ended run, a terminated instance, a released claim and a
sent notification each), and ten events per task. Then the history grows
to 1,000,000 tasks: the rows are made by PostgreSQL itself (INSERT ... SELECT
over generate_series, a history task's row as the template, with its task
id, fingerprint, title, repository, status and age varied; the same for each
new task's ten events, run, instance, claim and notification), which is a
bulk load without the data crossing the wire, like COPY, and much faster
than the ORM. VACUUM ANALYZE follows, as autovacuum would have done by then,
and a CHECKPOINT, so no commit measured waits on the load's writes.
The active work stays the same: an installation's history grows, its work in
flight does not.

Measured at both sizes: GET of the API's task list, the admin's change lists
of tasks, events and agent instances, the dashboard (the history's totals
cached, as for all but one request a minute), /metrics (its history's
snapshot likewise), the API's detail of an active task and of the task
page; and every
scheduled job of bench.scheduled, finding nothing due. Pages: the median of
`samples` requests after one warm-up; jobs: the fastest of `runs`. The query
count of each at both sizes is in the notes: a count that grows with the
history is a bug.
"""

from __future__ import annotations

import statistics
import tempfile
import time

from bench import scheduled
from bench.common import figure, recreate_database

GOAL = "<= 1.5x the 10,000-task run"
EVENTS_PER_TASK = 10
# History rows per INSERT: bounded statements, and progress to print.
CHUNK = 100_000


def _pages(active_task_id: str) -> dict[str, str]:
    return {
        "api_list": "/api/tasks/",
        "admin_changelist": "/admin/tasks/task/",
        "admin_events": "/admin/events/event/",
        "admin_instances": "/admin/fleet/agentinstance/",
        "dashboard": "/dashboard/",
        "metrics": "/metrics",
        "api_detail": f"/api/tasks/{active_task_id}/",
        "task_page": f"/tasks/{active_task_id}/",
    }


def _clients():
    from django.contrib.auth import get_user_model
    from django.test import Client

    from codex.accounts.models import ApiToken

    user = get_user_model().objects.create_superuser("benchscale", "s@example.com", "x")
    _, key = ApiToken.issue(user, "bench-scale")
    api = Client(HTTP_AUTHORIZATION=f"Token {key}", HTTP_HOST="127.0.0.1")
    browser = Client(HTTP_HOST="127.0.0.1")
    browser.force_login(user)
    return api, browser


def _measure_pages(pages: dict[str, str], api, browser, samples: int) -> dict:
    from django.conf import settings
    from django.test import override_settings

    # No collected static files in the throwaway setup: plain storage.
    storages = {
        **settings.STORAGES,
        "staticfiles": {
            "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        },
    }
    with override_settings(STORAGES=storages):
        return _measured(pages, api, browser, samples)


def _measured(pages: dict[str, str], api, browser, samples: int) -> dict:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    out = {}
    for name, url in pages.items():
        client = api if name.startswith("api_") else browser
        status = client.get(url).status_code  # warm-up
        times, queries = [], 0
        for _ in range(samples):
            with CaptureQueriesContext(connection) as captured:
                started = time.perf_counter()
                client.get(url)
                times.append(time.perf_counter() - started)
            queries = max(queries, len(captured.captured_queries))
        out[name] = {
            "ms": statistics.median(times) * 1000,
            "queries": queries,
            "status": status,
            "url": url,
        }
    return out


def _insert_select(model, source: str, values: dict[str, str], params=()) -> int:
    """INSERT INTO `model`'s table every row of `source` (SQL after FROM,
    where `tmpl` is the template row), each column from `values` or else the
    template's. Returns the rows inserted."""
    from django.db import connection

    columns = [f.column for f in model._meta.concrete_fields if not f.primary_key]
    exprs = [values.get(column, f"tmpl.{column}") for column in columns]
    table = model._meta.db_table
    sql = (
        f"INSERT INTO {table} ({', '.join(columns)}) "
        f"SELECT {', '.join(exprs)} FROM {source}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.rowcount


def _events_for(low_id: int, high_id: int, per_task: int) -> int:
    """`per_task` transition events for each task with low_id <= id <= high_id."""
    from django.db import connection

    from codex.events.models import Event
    from codex.tasks.models import Task

    sql = f"""
        INSERT INTO {Event._meta.db_table}
          (created_at, task_id, subject, kind, field, source, target, actor,
           reason, data)
        SELECT now() - ((t.id * {per_task} + e) || ' seconds')::interval,
               t.id, '', 'transition', 'status', 'pending', 'in_progress',
               'bench', 'bench event', '{{}}'::jsonb
        FROM {Task._meta.db_table} t CROSS JOIN generate_series(1, %s::int) AS e
        WHERE t.id BETWEEN %s AND %s
    """
    with connection.cursor() as cursor:
        cursor.execute(sql, [per_task, low_id, high_id])
        return cursor.rowcount


def _table(label: str) -> str:
    from django.apps import apps

    return apps.get_model(label)._meta.db_table


def grow(start: int, stop: int) -> float:
    """History tasks number start..stop-1, each with its ten events, run,
    instance, claim and notification, made by PostgreSQL; seconds taken."""
    from django.db import connection

    from codex.claims.models import IssueClaim
    from codex.events.models import Event
    from codex.fleet.models import AgentInstance, AgentRun
    from codex.notifications.models import Notification
    from codex.repositories.models import Repository
    from codex.tasks.models import Task

    started = time.perf_counter()
    template = (
        Task.objects.filter(status="completed").order_by("id").values("id").first()
    )["id"]
    run = AgentRun.objects.filter(task_id=template).values("id").first()["id"]
    instance = AgentInstance.objects.filter(task_id=template).values("id").first()
    claim = IssueClaim.objects.filter(state="released").values("id").first()["id"]
    note = Notification.objects.filter(task_id=template).values("id").first()["id"]
    repositories = list(
        Repository.objects.filter(url__startswith="https://github.com/bench/scale")
        .order_by("id")
        .values_list("id", flat=True)
    )
    tasks = Task._meta.db_table
    statuses = ", ".join(f"'{s}'" for s in scheduled.DONE_STATUSES)
    for low in range(start, stop, CHUNK):
        high = min(low + CHUNK, stop)
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT coalesce(max(id), 0) FROM {tasks}")
            before = cursor.fetchone()[0]
        _insert_select(
            Task,
            f"{tasks} tmpl CROSS JOIN generate_series(%s::bigint, %s::bigint) AS g "
            "WHERE tmpl.id = %s",
            {
                "task_id": "'FEAT-20250101-h' || lpad(g::text, 7, '0')",
                "request_fingerprint": "md5(g::text) || md5((g + 1)::text)",
                "title": "'Scale task ' || g",
                "repository_id": f"(ARRAY{repositories})[g %% 10 + 1]",
                "status": f"(ARRAY[{statuses}])[(g / 10) %% 5 + 1]",
                "created_at": "now() - ((10000 + g) || ' minutes')::interval",
                "phase_entered_at": "now() - ((9000 + g) || ' minutes')::interval",
                "idempotency_key": "NULL",
            },
            [low, high - 1, template],
        )
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT max(id) FROM {tasks}")
            after = cursor.fetchone()[0]
        new = f"{tasks} t, {{table}} tmpl WHERE t.id BETWEEN %s AND %s AND tmpl.id = %s"
        span = [before + 1, after]
        _events_for(before + 1, after, EVENTS_PER_TASK)
        instance_values = {
            "task_id": "t.id",
            "instance_id": "'work-h' || t.id || '-a1'",
            "repository_id": "t.repository_id",
        }
        if instance is not None:
            _insert_select(
                AgentInstance,
                new.replace("{table}", AgentInstance._meta.db_table),
                instance_values,
                [*span, instance["id"]],
            )
        _insert_select(
            AgentRun,
            new.replace("{table}", AgentRun._meta.db_table),
            {"task_id": "t.id", "session_id": "'bench:h:' || t.id"},
            [*span, run],
        )
        _insert_select(
            IssueClaim,
            new.replace("{table}", IssueClaim._meta.db_table),
            {"repository_id": "t.repository_id", "number": "1000000 + t.id"},
            [*span, claim],
        )
        _insert_select(
            Notification,
            new.replace("{table}", Notification._meta.db_table),
            {"task_id": "t.id", "notification_id": "'bench-h-' || t.id"},
            [*span, note],
        )
        print(f"[bench]   scale: {high:,} tasks", flush=True)
    with connection.cursor() as cursor:
        for model in (Task, Event, AgentRun, AgentInstance, IssueClaim, Notification):
            cursor.execute(f"VACUUM ANALYZE {model._meta.db_table}")
        # The load's gigabytes of WAL are flushed now, not by a checkpoint
        # that would slow every commit measured next (a heartbeat's UPDATE
        # measured 2x in one run for that alone).
        cursor.execute("CHECKPOINT")
    return time.perf_counter() - started


def run(smoke: bool) -> list[dict]:
    from django.db import connection, connections
    from django.db.models import Max, Min

    from codex.monitoring.metrics import forget_history_snapshot
    from codex.tasks.models import Task
    from codex.tasks.pages.dashboard import forget_history_totals

    small, large = (2_000, 20_000) if smoke else (10_000, 1_000_000)
    samples, runs = (3, 5) if smoke else (7, 15)
    # A database of its own: bench.scheduled's rows (the same task ids) and
    # the other figures' are gone, and nothing measured later sees a million
    # tasks.
    connections.close_all()
    recreate_database()
    with tempfile.TemporaryDirectory(prefix="codex-bench-scale-") as worktrees:
        jobs = scheduled._jobs(worktrees)
        scheduled.seed(0, small)
        jobs["heartbeat"] = scheduled._heartbeat()
        span = Task.objects.aggregate(low=Min("id"), high=Max("id"))
        # bench.scheduled seeds five events a task: five more make ten.
        _events_for(span["low"], span["high"], EVENTS_PER_TASK - 5)
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")
        active = (
            Task.objects.filter(status="in_progress")
            .order_by("id")
            .values_list("task_id", flat=True)
            .first()
        )
        pages = _pages(active)
        api, browser = _clients()
        at_small = {
            **_measure_pages(pages, api, browser, samples),
            **scheduled.measure(jobs, runs),
        }
        seconds = grow(small, large)
        # The snapshots of the small history must not serve the large one:
        # the warm-up request of each page reads the large history afresh.
        forget_history_totals()
        forget_history_snapshot()
        tasks = Task.objects.count()
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT reltuples::bigint FROM pg_class WHERE relname = %s",
                [_table("events.Event")],
            )
            events = cursor.fetchone()[0]
        at_large = {
            **_measure_pages(pages, api, browser, samples),
            **scheduled.measure(jobs, runs),
        }
    figures = []
    for name, a in at_small.items():
        b = at_large[name]
        ratio = b["ms"] / a["ms"] if a["ms"] else None
        kind = "page" if name in pages else "scheduled job"
        status = b.get("status", 200)
        figures.append(
            figure(
                f"scale_{name}_ms_at_{large}_tasks",
                b["ms"],
                "ms",
                ceiling=a["ms"],
                goal=GOAL,
                meets=ratio is not None and ratio <= 1.5 and status == 200,
                notes=f"{kind}{' GET ' + b['url'] if 'url' in b else ''}: "
                f"{a['ms']:.2f} ms and {a['queries']} queries at {small:,} tasks; "
                f"{b['ms']:.2f} ms and {b['queries']} queries at {tasks:,} tasks "
                f"and about {events:,} events (history loaded in {seconds:.0f} s); "
                + (f"median of {samples}" if kind == "page" else f"fastest of {runs}"),
            )
        )
    return figures
