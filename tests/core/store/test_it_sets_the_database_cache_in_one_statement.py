"""The throttles' database cache (codex.core.store.db_cache) writes a key with one
statement instead of Django's five (a row count, then a transaction that looks
the key up and updates or inserts it), and behaves as Django's otherwise:
values, overwrites, expiry, a cull when the table is full, and a write that
fails let fail (the request goes on uncounted)."""

from __future__ import annotations

import pytest
from django.core.cache import caches
from django.core.management import call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

pytestmark = pytest.mark.django_db

TABLE = "codex_test_upsert_cache"


@pytest.fixture
def cache(settings):
    settings.CACHES = {
        **settings.CACHES,
        "upsert": {
            "BACKEND": "codex.core.store.db_cache.UpsertDatabaseCache",
            "LOCATION": TABLE,
            "OPTIONS": {"MAX_ENTRIES": 20, "CULL_FREQUENCY": 2},
        },
    }
    call_command("createcachetable", TABLE, verbosity=0)
    yield caches["upsert"]
    caches["upsert"].clear()


def rows() -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM {TABLE}")
        return cursor.fetchone()[0]


@pytest.mark.django_db(transaction=True)
def test_a_set_is_one_statement_and_reads_back(cache):
    """Outside a transaction, as an API request's throttle counts."""
    history = [1764000000.5 - n for n in range(600)]  # a throttle's history
    with CaptureQueriesContext(connection) as first:
        cache.set("user-1", history, 60)
    with CaptureQueriesContext(connection) as second:
        cache.set("user-1", history[:3], 60)
    assert len(first.captured_queries) == 1
    assert len(second.captured_queries) == 1
    assert "ON CONFLICT" in second.captured_queries[0]["sql"]
    assert cache.get("user-1") == history[:3]
    assert rows() == 1


def test_an_expired_key_reads_as_missing(cache):
    cache.set("gone", "value", -1)
    cache.set("kept", "value", None)
    assert cache.get("gone") is None
    assert cache.get("kept") == "value"


def test_a_full_table_is_culled(cache, monkeypatch):
    monkeypatch.setattr("codex.core.store.db_cache.CULL_CHECK_EVERY", 1)
    for n in range(60):
        cache.set(f"key-{n}", n, 60)
    assert rows() <= 21  # MAX_ENTRIES, and the set that found it full
    assert cache.get("key-59") == 59


def test_without_cull_checks_the_table_grows_past_its_limit(cache, monkeypatch):
    """The control: only the periodic check culls."""
    monkeypatch.setattr("codex.core.store.db_cache.CULL_CHECK_EVERY", 1000)
    for n in range(30):
        cache.set(f"key-{n}", n, 60)
    assert rows() == 30


def test_a_write_that_fails_is_let_fail(settings):
    settings.CACHES = {
        **settings.CACHES,
        "missing": {
            "BACKEND": "codex.core.store.db_cache.UpsertDatabaseCache",
            "LOCATION": "codex_no_such_cache_table",
        },
    }
    cache = caches["missing"]
    cache.set("key", "value", 60)  # no error
    with transaction.atomic():
        cache.set("key", "value", 60)
        # The transaction around it is still usable.
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            assert cursor.fetchone() == (1,)
