"""Django's database cache with a `set` of one statement.

The API throttles count in a cache (codex.core.api.throttles): without Redis, in
the database. Django's DatabaseCache.set counts the table's rows, then opens a
transaction to look the key up and UPDATE or INSERT it: five statements for
every API request a throttle counts, a third of a POST's CPU in the intake
benchmark. Here a set is one INSERT ... ON CONFLICT DO UPDATE (PostgreSQL and
SQLite), atomic by itself, and the row count that decides a cull is read every
CULL_CHECK_EVERY sets of a process instead of at each one. Reads, adds,
touches and deletes are Django's.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import logging
import pickle
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.db import DatabaseCache
from django.db import DatabaseError, connections, router, transaction
from django.utils.timezone import now as tz_now

CULL_CHECK_EVERY = 50
# Sets by this process, whatever cache object made them (Django makes one per
# thread, and one per request context under ASGI).
_sets = itertools.count(1)
logger = logging.getLogger(__name__)
UPSERT_VENDORS = ("postgresql", "sqlite")


class UpsertDatabaseCache(DatabaseCache):
    """DatabaseCache whose set is one upsert (see the module docstring)."""

    def set(
        self,
        key: str,
        value: Any,
        timeout: float | None = DEFAULT_TIMEOUT,
        version: int | None = None,
    ) -> None:
        db = router.db_for_write(self.cache_model_class)
        connection = connections[db]
        if connection.vendor not in UPSERT_VENDORS:
            super().set(key, value, timeout, version)
            return
        key = self.make_and_validate_key(key, version=version)
        expires = self._expiry(self.get_backend_timeout(timeout))
        # As Django stores it: the pickle as text (Django ticket 19274).
        stored = base64.b64encode(pickle.dumps(value, self.pickle_protocol))
        quote = connection.ops.quote_name
        table, key_column = quote(self._table), quote("cache_key")
        value_column, expires_column = quote("value"), quote("expires")
        upsert = (
            f"INSERT INTO {table} ({key_column}, {value_column}, {expires_column}) "
            f"VALUES (%s, %s, %s) ON CONFLICT ({key_column}) DO UPDATE SET "
            f"{value_column} = EXCLUDED.{value_column}, "
            f"{expires_column} = EXCLUDED.{expires_column}"
        )
        stamp = connection.ops.adapt_datetimefield_value(expires)
        # As Django's: a write that fails is let fail (a request is not
        # refused for a count that could not be kept), and inside a
        # transaction only a savepoint's worth of it is undone.
        contained = (
            transaction.atomic(using=db)
            if connection.in_atomic_block
            else contextlib.nullcontext()
        )
        try:
            with contained, connection.cursor() as cursor:
                cursor.execute(upsert, [key, stored.decode("latin1"), stamp])
                if next(_sets) % CULL_CHECK_EVERY == 0:
                    self._cull_when_full(db, cursor, table)
        except DatabaseError:
            logger.warning("could not write cache key %s", key, exc_info=True)

    @staticmethod
    def _expiry(timeout: float | None) -> datetime:
        if timeout is None:
            expires = datetime.max
        else:
            zone = UTC if settings.USE_TZ else None
            expires = datetime.fromtimestamp(timeout, tz=zone)
        return expires.replace(microsecond=0)

    def _cull_when_full(self, db: str, cursor: Any, table: str) -> None:
        """Django's cull (expired rows, then a share of the rest), when the
        table holds more than MAX_ENTRIES rows."""
        cursor.execute(f"SELECT COUNT(*) FROM {table}")
        rows = cursor.fetchone()[0]
        if rows > self._max_entries:
            self._cull(db, cursor, tz_now().replace(microsecond=0), rows)
