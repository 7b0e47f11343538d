"""Figure 5: list pages (API list, admin change list, dashboard) with many
tasks and events: query count and median time (in-process test client, so the
time is Django + database, without HTTP).

The data has the shape of a system that has run for a while (see
`_realistic_mix`): mostly completed tasks with merged pull requests, some
escalations, two agent runs per task. Until 2026-11-22 every task was pending
and there were no runs, which hid the cost of the dashboard's throughput and
agent-run queries.

EXPLAIN ANALYZE of the dashboard at 100k tasks / 1M events / 200k runs
(2026-11-22, on a loaded 2-CPU machine; times are relative):
- before: tasks GROUP BY status, phase (parallel seq scan of the 165 MB heap);
  an aggregate with EXISTS(escalation) probed once per task (100k index
  probes, and a cost estimate high enough to trigger PostgreSQL's JIT, 236 ms
  of compilation on one run); throughput filtered on finished_at::date (not
  sargable: every completed task); runs joined with the whole task table for
  the merged cost, and a second pass over the runs for health.
- after: one GROUP BY status, phase, pr_merged over an index-only scan of
  task_dashboard (0.7 MB); escalated tasks counted in the escalation table;
  throughput a range on task_completed_finished; one pass over the runs with
  the merged tasks as a hashed IN over task_merged. The runs pass is what is
  left: it reads every run (all-time spend and health are what the page
  shows), so it runs at most once a minute (codex.tasks.pages.dashboard.history_totals;
  list_dashboard_run_totals_recomputed_median_ms is that request).
"""

from __future__ import annotations

import time
from datetime import datetime, timedelta

from django.utils import timezone

from bench.common import figure, median_ms

PAGES = {
    "api_list": "/api/tasks/",
    "admin_changelist": "/admin/tasks/task/",
    "dashboard": "/dashboard/",
}


def _base36(n: int) -> str:
    digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    out = ""
    while True:
        n, r = divmod(n, 36)
        out = digits[r] + out
        if n == 0:
            return out.rjust(6, "0")


def populate(tasks: int, events: int) -> float:
    from django.db import connection

    from codex.events.models import Event
    from codex.fleet.models import AgentRun
    from codex.repositories.models import Repository
    from codex.tasks.models import Escalation, Task

    start = time.perf_counter()
    now = timezone.now()
    repositories = [
        Repository.objects.get_or_create(url=f"https://github.com/bench/list{i}")[0]
        for i in range(10)
    ]
    batch = []
    for i in range(tasks):
        batch.append(
            Task(
                task_id=f"FEAT-20260101-{_base36(i)}",
                repository=repositories[i % 10],
                title=f"Bench task {i}",
                description="As a user, I want to benchmark.",
                priority=("low", "medium", "high", "critical")[i % 4],
                created_by="api",
                request_fingerprint=f"{i:064d}",
                **_state_of(i, now),
            )
        )
        if len(batch) == 5000:
            Task.objects.bulk_create(batch)
            batch = []
    if batch:
        Task.objects.bulk_create(batch)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT min(id), max(id) FROM {Task._meta.db_table}")
        low, high = cursor.fetchone()
        span = high - low + 1
        cursor.execute(
            f"""
            INSERT INTO {Event._meta.db_table}
              (created_at, task_id, subject, kind, field, source, target, actor,
               reason, data)
            SELECT now() - (g || ' seconds')::interval, %s + (g %% %s), '',
                   'transition', 'status', 'pending', 'in_progress', 'bench',
                   'bench event', '{{}}'::jsonb
            FROM generate_series(1, %s) AS g
            """,
            [low, span, events],
        )
        _realistic_mix(cursor)
        # VACUUM as autovacuum would have done by the time a table grew to this
        # size (PostgreSQL 13+ vacuums after inserts too): it sets the visibility
        # map, without which no index-only scan is possible.
        for model in (Task, Event, AgentRun, Escalation):
            cursor.execute(f"VACUUM ANALYZE {model._meta.db_table}")
    return time.perf_counter() - start


_STATES = (
    *[("completed", "release")] * 14,
    ("failed", "verification"),
    ("cancelled", "planning"),
    ("in_progress", "implementation"),
    ("pending", "intake"),
    ("blocked", "verification"),
    ("escalated", "review"),
)


def _state_of(i: int, now: datetime) -> dict:
    """Task i's state in a system that has run for a while, so the dashboard's
    queries meet the rows they meet in production: of every 20 tasks, 14
    completed (merged pull request, finished over the last 30 days), one each
    failed, cancelled, in progress, pending, blocked and escalated. Set at
    insert time (an UPDATE afterwards would double the table)."""
    status, phase = _STATES[i % 20]
    finished = status in ("completed", "failed", "cancelled")
    return {
        "status": status,
        "phase": phase,
        "finished_at": now - timedelta(days=i % 30) if finished else None,
        "pr_merged": status == "completed",
        "verification_cycles": i % 3,
        "review_cycles": i % 2,
    }


def _realistic_mix(cursor) -> None:
    """An open escalation for each escalated task and a resolved one per 40
    tasks; two agent runs per task (one in 10 failed)."""
    from codex.fleet.models import AgentRun
    from codex.tasks.models import Escalation, Task

    task, run, escalation = (
        Task._meta.db_table,
        AgentRun._meta.db_table,
        Escalation._meta.db_table,
    )
    cursor.execute(
        f"""
        INSERT INTO {escalation}
          (task_id, created_at, phase, reason, detail, questions, resolved_at,
           resolved_by_label, resolution, answers, decision)
        SELECT id, now(), 'review', 'needs_clarification', 'bench', '[]'::jsonb,
               CASE WHEN status = 'escalated' THEN NULL ELSE now() END,
               '', '', '[]'::jsonb,
               CASE WHEN status = 'escalated' THEN '' ELSE 'resume' END
        FROM {task} WHERE status = 'escalated' OR id % 40 = 0
        """
    )
    cursor.execute(
        f"""
        INSERT INTO {run}
          (version, updated_at, session_id, status, started_at, ended_at,
           issues_worked, closed_issues, issues_closed, tool_count, files_changed,
           input_tokens, output_tokens, cache_write_tokens, cache_read_tokens,
           cost_usd, error, imported_from, task_id)
        SELECT 0, now(), 'bench-' || t.id || '-' || n,
               CASE WHEN (t.id + n) % 10 = 0 THEN 'failed' ELSE 'succeeded' END,
               now() - interval '1 hour', now(), '[]'::jsonb, '[]'::jsonb,
               n % 2, 10 + t.id % 50, t.id % 7, 1000, 100, 0, 0,
               0.05 + (t.id % 100) / 100.0, '', '', t.id
        FROM {task} t CROSS JOIN generate_series(1, 2) AS n
        """
    )


def run(
    smoke: bool, full_tasks: int = 100_000, full_events: int = 1_000_000
) -> list[dict]:
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.test import Client, override_settings

    from codex.accounts.models import ApiToken
    from codex.tasks.models import Task

    tasks, events = (500, 5000) if smoke else (full_tasks, full_events)
    seconds = populate(tasks, events)
    total_tasks = Task.objects.count()
    user = get_user_model().objects.create_superuser("benchadmin", "b@example.com", "x")
    _, key = ApiToken.issue(user, "bench")
    api = Client(HTTP_AUTHORIZATION=f"Token {key}", HTTP_HOST="127.0.0.1")
    browser = Client(HTTP_HOST="127.0.0.1")
    browser.force_login(user)
    samples = 3 if smoke else 7
    results = []
    # No collected static files in the throwaway setup: plain storage for the admin.
    storages = {
        **settings.STORAGES,
        "staticfiles": {
            "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        },
    }
    with override_settings(STORAGES=storages):
        _measure(api, browser, samples, total_tasks, events, results)
    results[0]["populate_seconds"] = round(seconds, 1)
    return results


def _measure(api, browser, samples, total_tasks, events, results):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for name, url in PAGES.items():
        client = api if name == "api_list" else browser
        response = client.get(url)  # warm-up
        status = response.status_code
        times, counts = [], []
        for _ in range(samples):
            with CaptureQueriesContext(connection) as queries:
                start = time.perf_counter()
                response = client.get(url)
                times.append(time.perf_counter() - start)
            counts.append(len(queries.captured_queries))
        if name == "dashboard":
            results.append(_dashboard_cold(client, url, samples, counts))
        ms = median_ms(times)
        results.append(
            figure(
                f"list_{name}_median_ms",
                ms,
                "ms",
                goal="< 250 ms",
                meets=ms < 250 and status == 200,
                notes=f"GET {url} (HTTP {status}), median of {samples}, "
                f"{total_tasks} tasks / {events} events in the database",
            )
        )
        # The dashboard also says what blocks every task, from the workers'
        # beats, and once a minute recomputes the history's totals (three
        # queries): two more than the other lists at most.
        most = 12 if name == "dashboard" else 10
        results.append(
            figure(
                f"list_{name}_queries",
                max(counts),
                "queries",
                goal=f"<= {most} queries",
                meets=max(counts) <= most and status == 200,
                notes=f"GET {url}",
            )
        )


def _dashboard_cold(client, url: str, samples: int, counts: list[int]) -> dict:
    """The dashboard's first request of a minute, which recomputes the
    agent-run totals (codex.tasks.pages.dashboard.history_totals) instead of reading
    them from the cache; its queries count towards the page's."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from codex.tasks.pages.dashboard import forget_history_totals

    times = []
    for _ in range(samples):
        forget_history_totals()
        with CaptureQueriesContext(connection) as queries:
            start = time.perf_counter()
            client.get(url)
            times.append(time.perf_counter() - start)
        counts.append(len(queries.captured_queries))
    return figure(
        "list_dashboard_run_totals_recomputed_median_ms",
        median_ms(times),
        "ms",
        goal="reported (once a minute: agent-run totals recomputed)",
        meets=True,
        notes=f"GET {url} right after the cached run totals are dropped, "
        f"median of {samples}",
    )
