"""The console's lists of the tables that grow with the history (tasks,
events, agent runs and instances, notifications, webhook deliveries) cost
the same at a million rows as at ten: no COUNT(*) of a large list, no filter
that lists the distinct values of a column, no date hierarchy that truncates
every row's date (docs/deployment.md#measured; bench/scale.py measures the
task list at 1,000,000 tasks)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from codex.core.admin import EstimatedCountPaginator
from codex.events.models import Event, EventKind
from tests.factories import make_task

pytestmark = pytest.mark.django_db

GROWING = [
    "admin:tasks_task_changelist",
    "admin:events_event_changelist",
    "admin:fleet_agentrun_changelist",
    "admin:fleet_agentinstance_changelist",
    "admin:notifications_notification_changelist",
    "admin:webhooks_webhookdelivery_changelist",
]
# What reads a whole table whatever the page shows.
WHOLE_TABLE = ("SELECT DISTINCT", "DATE_TRUNC", "django_datetime_trunc")


@pytest.mark.parametrize("name", GROWING)
def test_a_growing_tables_list_reads_no_column_whole(console, name):
    make_task()
    url = reverse(name)
    with CaptureQueriesContext(connection) as captured:
        response = console.get(url)
    assert response.status_code == 200
    for query in captured.captured_queries:
        sql = query["sql"]
        assert not any(marker in sql for marker in WHOLE_TABLE), sql
    paginator = response.context["cl"].paginator
    assert isinstance(paginator, EstimatedCountPaginator)


class SmallThreshold(EstimatedCountPaginator):
    ESTIMATE_ABOVE = 20


def events() -> object:
    task = make_task()
    Event.objects.bulk_create(
        Event(task=task, kind=EventKind.TRANSITION, actor="test") for _ in range(400)
    )
    return Event.objects.order_by("-id")


@pytest.mark.postgresql
def test_a_large_list_is_counted_by_the_planners_estimate_on_postgresql():
    queryset = events()
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Event._meta.db_table}")
    with CaptureQueriesContext(connection) as captured:
        count = SmallThreshold(queryset, 100).count
    assert not any("COUNT(" in q["sql"] for q in captured.captured_queries)
    assert 300 <= count <= 500  # the planner's estimate of 401 rows
    # A filtered list is estimated the same way; a small one is counted.
    lease = Event.objects.filter(kind=EventKind.LEASE)
    with CaptureQueriesContext(connection) as captured:
        assert SmallThreshold(lease, 100).count == 0
    assert any("COUNT(" in q["sql"] for q in captured.captured_queries)


def test_a_list_without_an_estimate_is_counted_exactly():
    # A union has no single plan to ask; a database other than PostgreSQL
    # has no planner statistics to read. Both are counted, whatever the size.
    queryset = events()
    transitions = Event.objects.filter(kind=EventKind.TRANSITION).order_by()
    leases = Event.objects.filter(kind=EventKind.LEASE).order_by()
    union = transitions.union(leases).order_by("-id")
    assert SmallThreshold(union, 100).count == union.count() >= 400
    if connection.vendor != "postgresql":
        with CaptureQueriesContext(connection) as captured:
            count = SmallThreshold(queryset, 100).count
        assert count == queryset.count()
        assert not any("EXPLAIN" in q["sql"] for q in captured.captured_queries)
