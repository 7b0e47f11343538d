"""Figure 2: task transitions/s (Task.perform: lease, version check, event
write, next-step enqueue) against raw single-row UPDATEs/s on the same table."""

from __future__ import annotations

import time

from bench.common import figure


def run(smoke: bool) -> list[dict]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from codex.repositories.models import Repository
    from codex.tasks.models import Task
    from codex.tasks.models.choices import Status

    rounds = 20 if smoke else 1000  # pause+resume pairs
    repository, _ = Repository.objects.get_or_create(
        url="https://github.com/bench/transitions"
    )
    task, _ = Task.objects.create_from_request(
        repository=repository, title="bench transitions", description="x"
    )
    Task.objects.filter(pk=task.pk)._update_with_version(status=Status.IN_PROGRESS)
    task.refresh_from_db()

    # Warm up (connection, caches), then measure.
    task.perform("pause", by="bench")
    task.perform("resume", by="bench")
    with CaptureQueriesContext(connection) as queries:
        start = time.perf_counter()
        for _ in range(rounds):
            task.perform("pause", by="bench")
            task.perform("resume", by="bench")
        elapsed = time.perf_counter() - start
    transitions = 2 * rounds
    per_second = transitions / elapsed
    per_transition = len(queries.captured_queries) / transitions
    sample = [q["sql"][:160] for q in queries.captured_queries[:8]]

    # Ceiling: raw single-row UPDATEs, autocommit, on the same row.
    updates = 20 * rounds if not smoke else 200
    with connection.cursor() as cursor:
        table = Task._meta.db_table
        start = time.perf_counter()
        for i in range(updates):
            cursor.execute(
                f"UPDATE {table} SET current_agent = %s WHERE id = %s",
                [f"bench{i % 7}", task.pk],
            )
        raw_elapsed = time.perf_counter() - start
    raw_per_second = updates / raw_elapsed
    ratio = per_second / raw_per_second
    return [
        figure(
            "transitions_per_second",
            per_second,
            "transitions/s",
            ceiling=raw_per_second,
            goal="ratio >= 0.25 of raw single-row UPDATEs/s",
            meets=ratio >= 0.25,
            notes=(
                f"{transitions} transitions (pause/resume via Task.perform, one "
                f"process); ceiling: {updates} autocommit UPDATEs of one tasks_task row"
            ),
        ),
        figure(
            "queries_per_transition",
            per_transition,
            "queries",
            goal="<= 4 queries per transition",
            meets=per_transition <= 4,
            notes="CaptureQueriesContext over the same run; the resume also enqueues "
            "the next step (ORM broker)",
            first_queries=sample,
        ),
    ]
