"""Figure 5: list pages (API list, admin change list, dashboard) with many
tasks and events: query count and median time (in-process test client, so the
time is Django + database, without HTTP)."""

from __future__ import annotations

import time

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
    from codex.repositories.models import Repository
    from codex.tasks.models import Task

    start = time.perf_counter()
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
        cursor.execute(f"ANALYZE {Task._meta.db_table}")
        cursor.execute(f"ANALYZE {Event._meta.db_table}")
    return time.perf_counter() - start


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
        results.append(
            figure(
                f"list_{name}_queries",
                max(counts),
                "queries",
                goal="<= 10 queries",
                meets=max(counts) <= 10 and status == 200,
                notes=f"GET {url}",
            )
        )
