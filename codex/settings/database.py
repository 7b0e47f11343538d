"""The database and the caches."""

from __future__ import annotations

from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from codex.env import env_bool, env_int, env_str
from codex.settings.base import TESTING, VAR_DIR

# --- Database --------------------------------------------------------------
# PostgreSQL connections are kept CODEX_DB_CONN_MAX_AGE seconds (> 0: no new
# connection per request) and health-checked before a request first uses one
# (CONN_HEALTH_CHECKS): after a database restart the first request reconnects
# instead of failing on the dead connection, so web and workers recover without
# a restart of their own. A request made while the database is down answers 503
# with Retry-After (codex.core.database). tests/fault/test_database_restart.py.
_default_sqlite = f"sqlite:///{VAR_DIR / 'codex.sqlite3'}"
DATABASE_URL = env_str("DATABASE_URL", "") or _default_sqlite
try:
    _database = dj_database_url.parse(
        DATABASE_URL,
        conn_max_age=env_int("CODEX_DB_CONN_MAX_AGE", 60, minimum=0),
        conn_health_checks=True,
    )
except Exception as exc:  # dj-database-url raises several types
    raise ImproperlyConfigured(f"DATABASE_URL is not a database URL: {exc}") from exc
if _database["ENGINE"] == "django.db.backends.sqlite3":
    Path(_database["NAME"]).parent.mkdir(parents=True, exist_ok=True)
    # Web and worker share the file: wait for the other's write instead of failing.
    _database.setdefault("OPTIONS", {}).update(
        {"timeout": 20, "transaction_mode": "IMMEDIATE"}
    )
    _database["CONN_MAX_AGE"] = 0
elif _database["ENGINE"] not in ("django.db.backends.postgresql",):
    raise ImproperlyConfigured(
        "DATABASE_URL must be postgres://... or sqlite:///...; "
        f"got engine {_database['ENGINE']}"
    )
else:
    # Parameters bound by the server (psycopg's own quoting of every value into
    # the statement's text was 8 % of a worker's CPU), and a statement a
    # connection has run CODEX_DB_PREPARE_THRESHOLD times is prepared: the
    # server parses and plans it once. Behind PgBouncer in transaction mode
    # before 1.21, set CODEX_DB_PREPARE_THRESHOLD=0 (never prepare) or
    # CODEX_DB_SERVER_SIDE_BINDING=0. docs/architecture.md, "The fast path".
    _threshold = env_int("CODEX_DB_PREPARE_THRESHOLD", 5, minimum=0)
    _database.setdefault("OPTIONS", {}).update(
        {
            "server_side_binding": env_bool("CODEX_DB_SERVER_SIDE_BINDING", True),
            "prepare_threshold": _threshold or None,
        }
    )
DATABASES = {"default": _database}
IS_POSTGRESQL = _database["ENGINE"] == "django.db.backends.postgresql"

# --- Caches ------------------------------------------------------------------
REDIS_URL = env_str("REDIS_URL", "")
CACHES = {
    "default": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
        }
        if REDIS_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    ),
    # API throttle counts: shared by every web process and machine (a
    # per-process count lets each gunicorn worker grant the whole rate). The
    # database cache (codex.core.store.db_cache: a set is one upsert) has its table
    # made by migration core 0004. Tests count in memory (the schema is loaded
    # before any test database exists) except those of the shared count
    # (tests/core/api/test_throttling.py).
    "throttle": (
        {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "KEY_PREFIX": "throttle",
        }
        if REDIS_URL
        else {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": "throttle",
        }
        if TESTING
        else {
            "BACKEND": "codex.core.store.db_cache.UpsertDatabaseCache",
            "LOCATION": "codex_throttle_cache",
        }
    ),
}
