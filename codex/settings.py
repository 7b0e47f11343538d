"""Codex settings: one module, driven by environment variables.

Every variable is read through the typed helpers of `codex.env`, which refuse bad
values at start-up. README.md has the table of variables.
"""

from __future__ import annotations

import sys
from datetime import timedelta
from pathlib import Path

import dj_database_url
from cryptography.fernet import Fernet
from csp.constants import NONE as CSP_NONE
from csp.constants import SELF as CSP_SELF
from django.core.exceptions import ImproperlyConfigured
from django.core.management.utils import get_random_secret_key

from codex.env import (
    env_amount,
    env_bool,
    env_choice,
    env_int,
    env_list,
    env_pairs,
    env_str,
    kept_key,
)

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(env_str("CODEX_VAR_DIR", str(BASE_DIR / "var")))

DEBUG = env_bool("DEBUG", False)
TESTING = "pytest" in sys.modules or env_bool("CODEX_TESTING", False)

# --- Keys --------------------------------------------------------------------
# SECRET_KEY signs sessions; CODEX_FERNET_KEYS (comma-separated, newest first)
# encrypt stored secrets. Production (DEBUG off with a DATABASE_URL, or
# CODEX_REQUIRE_SECRET_KEY=1) must be given both: a key that silently changed
# would log everyone out and make every stored secret unreadable. A checkout's
# `make run` (DEBUG, or the embedded SQLite default) makes both under VAR_DIR on
# its first run and keeps them there. Tests use fixed keys and write nothing.
_require_keys = env_bool("CODEX_REQUIRE_SECRET_KEY", False)
PRODUCTION = not TESTING and (
    _require_keys or not (DEBUG or not env_str("DATABASE_URL", ""))
)
LOCAL_KEYS = not (TESTING or PRODUCTION)
_secret_key = env_str("SECRET_KEY", "")
_fernet_keys = env_list("CODEX_FERNET_KEYS", [])
if not _secret_key and _require_keys:
    raise ImproperlyConfigured("SECRET_KEY must be set (CODEX_REQUIRE_SECRET_KEY=1)")
if TESTING:
    _secret_key = _secret_key or "codex-insecure-development-key-" + "x" * 20
elif LOCAL_KEYS:
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    _made = []
    if not _secret_key:
        _secret_key, _new = kept_key(VAR_DIR / "secret_key", get_random_secret_key)
        _made += [f"SECRET_KEY in {VAR_DIR / 'secret_key'}"] if _new else []
    if not _fernet_keys:
        _key, _new = kept_key(
            VAR_DIR / "fernet_key", lambda: Fernet.generate_key().decode()
        )
        _fernet_keys = [_key]
        _made += [f"CODEX_FERNET_KEYS in {VAR_DIR / 'fernet_key'}"] if _new else []
    if _made:
        # Said once: the next runs find the files and say nothing.
        print(
            "Codex: made local development keys and kept them for the next runs: "
            + "; ".join(_made)
            + ". Back them up with the database: stored secrets cannot be read "
            "without the Fernet key. Production sets SECRET_KEY and "
            "CODEX_FERNET_KEYS instead (README.md, Keys).",
            file=sys.stderr,
        )
else:
    _missing = [
        name
        for name, value in (
            ("SECRET_KEY", _secret_key),
            ("CODEX_FERNET_KEYS", _fernet_keys),
        )
        if not value
    ]
    if _missing:
        raise ImproperlyConfigured(
            f"{' and '.join(_missing)} must be set in production (DEBUG off with a "
            "DATABASE_URL, or CODEX_REQUIRE_SECRET_KEY=1). Make a SECRET_KEY "
            "with: python -c 'import secrets; print(secrets.token_urlsafe(50))'; "
            "a Fernet key with: python -c "
            "'from cryptography.fernet import Fernet; "
            "print(Fernet.generate_key().decode())' (README.md, Keys)"
        )
for _position, _key in enumerate(_fernet_keys, start=1):
    try:
        Fernet(_key)
    except ValueError:
        # Never echo the key itself: it may be a real one with a typo.
        raise ImproperlyConfigured(
            f"CODEX_FERNET_KEYS entry #{_position} is not a Fernet key "
            "(32 url-safe base64-encoded bytes)"
        ) from None
SECRET_KEY = _secret_key

# The host names the console is reached at. Production must name them (the
# loopback names stay allowed for the container's health check); a checkout
# answers on loopback unless told more.
_LOOPBACK_HOSTS = ["127.0.0.1", "localhost", "[::1]"]
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", [])
if PRODUCTION and not ALLOWED_HOSTS:
    raise ImproperlyConfigured(
        "ALLOWED_HOSTS must be set in production: the host names the console is "
        "reached at, comma-separated (e.g. ALLOWED_HOSTS=codex.example.com)"
    )
ALLOWED_HOSTS = ALLOWED_HOSTS + [h for h in _LOOPBACK_HOSTS if h not in ALLOWED_HOSTS]
# Origins allowed to POST forms besides the console's own (a proxy that changes
# the scheme or port): full origins such as https://codex.example.com.
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])
for _origin in CSRF_TRUSTED_ORIGINS:
    if not _origin.startswith(("https://", "http://")):
        raise ImproperlyConfigured(
            f"CSRF_TRUSTED_ORIGINS entry {_origin!r} is not an origin: write it "
            "with its scheme, e.g. https://codex.example.com"
        )

INSTALLED_APPS = [
    # django.contrib.admin with the console's own site (codex.core.admin_site).
    "codex.core.admin_site.CodexAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_fsm",
    "django_q",
    # Sign-in lockout: attempts in the database, unlocked in the console.
    "axes",
    "csp",
    "codex.core",
    "codex.accounts",
    "codex.repositories",
    "codex.events",
    "codex.tasks",
    "codex.claims",
    "codex.fleet",
    "codex.children",
    "codex.configuration",
    "codex.notifications",
    "codex.webhooks",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Content-Security-Policy on every response (CONTENT_SECURITY_POLICY below).
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # A NUL in a path or query string is a 400 here, not a 500 in PostgreSQL.
    "codex.core.middleware.RefuseNulMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # A view that loses the database answers 503 with Retry-After, not 500.
    "codex.core.database.DatabaseUnavailableMiddleware",
    # Last, as django-axes asks: answers a locked-out sign-in with its message.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "codex.urls"
WSGI_APPLICATION = "codex.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "codex.accounts.context_processors.roles",
            ],
        },
    },
]

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
DATABASES = {"default": _database}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
IS_POSTGRESQL = _database["ENGINE"] == "django.db.backends.postgresql"

AUTH_PASSWORD_VALIDATORS = [
    {
        "NAME": "django.contrib.auth.password_validation."
        "UserAttributeSimilarityValidator"
    },
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("CODEX_STATIC_ROOT", str(VAR_DIR / "static")))
# Files served at the site's root (/favicon.ico) by WhiteNoise, without a view.
WHITENOISE_ROOT = BASE_DIR / "codex" / "core" / "root_files"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG or TESTING
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

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
    # database cache's table is made by migration core 0004. Tests count in
    # memory (the schema is loaded before any test database exists) except
    # those of the shared count (tests/api/test_throttling.py).
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
            "BACKEND": "django.core.cache.backends.db.DatabaseCache",
            "LOCATION": "codex_throttle_cache",
        }
    ),
}

# --- REST API --------------------------------------------------------------
# Reverse proxies in front of Codex: X-Forwarded-For is trusted that many hops
# deep for the client's address (throttles, sign-in lockout); 0 trusts none,
# so a client cannot pick its own address with the header.
CODEX_PROXY_COUNT = env_int("CODEX_PROXY_COUNT", 0, minimum=0)
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "codex.accounts.authentication.HashedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "codex.core.api.NewestFirstCursorPagination",
    "PAGE_SIZE": env_int("CODEX_API_PAGE_SIZE", 50, minimum=1, maximum=500),
    "EXCEPTION_HANDLER": "codex.core.api.exception_handler",
    # Writes are JSON only (415 otherwise), bounded and storable (parsers.py).
    "DEFAULT_PARSER_CLASSES": ["codex.core.parsers.StrictJSONParser"],
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
    "NUM_PROXIES": CODEX_PROXY_COUNT,
    "DEFAULT_SCHEMA_CLASS": "codex.tasks.api.base.ApiSchema",
    "UNAUTHENTICATED_USER": None,
}

CODEX_API_USER_RATE = env_str("CODEX_API_USER_RATE", "600/minute")
CODEX_API_ANON_RATE = env_str("CODEX_API_ANON_RATE", "60/minute")
# Requests with a wrong or revoked token, per address.
CODEX_API_FAILED_AUTH_RATE = env_str("CODEX_API_FAILED_AUTH_RATE", "20/minute")
CODEX_API_MAX_BODY_BYTES = env_int(
    "CODEX_API_MAX_BODY_BYTES", 1_000_000, minimum=10_000
)
CODEX_API_MAX_JSON_DEPTH = env_int("CODEX_API_MAX_JSON_DEPTH", 32, minimum=4)
CODEX_IDEMPOTENCY_TTL_HOURS = env_int("CODEX_IDEMPOTENCY_TTL_HOURS", 24, minimum=1)
SPECTACULAR_SETTINGS = {
    "TITLE": "Codex API",
    "DESCRIPTION": (
        "Tasks, escalations, repositories and the agents working on them. "
        "Authenticate with `Authorization: Token <key>`. Errors have one shape: "
        '`{"error": {"code", "message", "fields"}}`. POSTs accept an '
        "Idempotency-Key header."
    ),
    "VERSION": "1.0.0",
    "ENUM_NAME_OVERRIDES": {
        "TaskStatusEnum": "codex.tasks.models.choices.Status",
        "AgentInstanceStatusEnum": "codex.fleet.models.choices.InstanceStatus",
        "AgentRunStatusEnum": "codex.fleet.models.choices.RunStatus",
        "ClaimStateEnum": "codex.claims.models.claim.ClaimState",
        "BacklogStateEnum": "codex.claims.models.backlog.BacklogState",
        "RecommendationEnum": "codex.tasks.models.reports.Recommendation",
    },
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# --- Workers (django-q2) ---------------------------------------------------
# timeout < retry, or a slow step is handed to a second worker while the first
# still runs it; max_attempts is finite so a poisoned job stops being retried.
# Above the longest agent run's time budget: the heartbeat keeps a working
# step's lease, and the timeout only catches a hung worker.
Q_TIMEOUT = env_int("CODEX_JOB_TIMEOUT", 7200, minimum=10)
Q_RETRY = env_int("CODEX_JOB_RETRY", Q_TIMEOUT + 300, minimum=11)
if Q_RETRY <= Q_TIMEOUT:
    raise ImproperlyConfigured(
        f"CODEX_JOB_RETRY ({Q_RETRY}) must be greater than CODEX_JOB_TIMEOUT "
        f"({Q_TIMEOUT}), or a slow job runs twice at once"
    )
Q_CLUSTER = {
    "name": "codex",
    "workers": env_int("CODEX_WORKERS", 2, minimum=1, maximum=64),
    "timeout": Q_TIMEOUT,
    "retry": Q_RETRY,
    "max_attempts": env_int("CODEX_JOB_MAX_ATTEMPTS", 3, minimum=1, maximum=20),
    "recycle": env_int("CODEX_WORKER_RECYCLE", 200, minimum=1),
    "max_rss": env_int("CODEX_WORKER_MAX_RSS_KB", 512_000, minimum=50_000),
    "ack_failures": True,
    "save_limit": 1000,
    "catch_up": False,
    "label": "Worker queue",
    # A cluster takes a job from the broker only to start it: one waiting in
    # its memory queue (the least django-q2 allows), one at a time. Every job
    # it took is claimed in the broker under its name until it is acknowledged
    # (codex.core.brokers), so a dead cluster's jobs are handed back at once.
    "queue_limit": 1,
    "bulk": 1,
}
if REDIS_URL:
    Q_CLUSTER["redis"] = REDIS_URL
    Q_CLUSTER["broker_class"] = "codex.core.brokers.ClaimingRedis"
else:
    Q_CLUSTER["orm"] = "default"
    Q_CLUSTER["broker_class"] = "codex.core.brokers.ClaimingORM"
# A cluster beats every CODEX_CLUSTER_BEAT_SECONDS; one silent for
# CODEX_CLUSTER_STALE_SECONDS (or whose process is gone from its machine) is
# dead, and any other cluster hands its jobs back, checking every
# CODEX_CLUSTER_SWEEP_SECONDS. On SIGTERM a cluster hands back the jobs it has
# not started, waits CODEX_STOP_GRACE_SECONDS for the running ones, then stops
# their workers and hands those back too.
CODEX_CLUSTER_BEAT_SECONDS = env_int("CODEX_CLUSTER_BEAT_SECONDS", 2, minimum=1)
CODEX_CLUSTER_STALE_SECONDS = env_int("CODEX_CLUSTER_STALE_SECONDS", 30, minimum=5)
CODEX_CLUSTER_SWEEP_SECONDS = env_int("CODEX_CLUSTER_SWEEP_SECONDS", 5, minimum=1)
CODEX_STOP_GRACE_SECONDS = env_int("CODEX_STOP_GRACE_SECONDS", 10, minimum=0)
# A job whose worker died running it (its cluster lived on) is handed back at
# most this many times; then it is given up and its task blocked with why.
CODEX_JOB_REDELIVERIES = env_int("CODEX_JOB_REDELIVERIES", 3, minimum=0)
if CODEX_CLUSTER_BEAT_SECONDS * 3 > CODEX_CLUSTER_STALE_SECONDS:
    raise ImproperlyConfigured(
        f"CODEX_CLUSTER_STALE_SECONDS ({CODEX_CLUSTER_STALE_SECONDS}) must be at "
        f"least three beats (CODEX_CLUSTER_BEAT_SECONDS, "
        f"{CODEX_CLUSTER_BEAT_SECONDS}), or a slow beat looks like a dead cluster"
    )
# Tests (and the demo) may run jobs inline instead of through the broker.
CODEX_RUN_JOBS_INLINE = env_bool("CODEX_RUN_JOBS_INLINE", False)

# --- Codex ---------------------------------------------------------------
CODEX_LEASE_SECONDS = env_int("CODEX_LEASE_SECONDS", 60, minimum=5)
CODEX_LEASE_RETRY_ATTEMPTS = env_int("CODEX_LEASE_RETRY_ATTEMPTS", 3, minimum=1)
CODEX_LEASE_RETRY_BACKOFF_SECONDS = env_int(
    "CODEX_LEASE_RETRY_BACKOFF_SECONDS", 5, minimum=0
)
CODEX_VERIFICATION_MAX_CYCLES = env_int("CODEX_VERIFICATION_MAX_CYCLES", 3, minimum=0)
CODEX_REVIEW_MAX_CYCLES = env_int("CODEX_REVIEW_MAX_CYCLES", 2, minimum=0)
CODEX_MAX_RETRIES = env_int("CODEX_MAX_RETRIES", 5, minimum=0)
CODEX_INTAKE_REGISTERED_REPOSITORIES_ONLY = env_bool(
    "CODEX_INTAKE_REGISTERED_REPOSITORIES_ONLY", False
)
# Comma-separated Fernet keys, newest first (see Keys above); empty in tests.
CODEX_FERNET_KEYS = _fernet_keys
CODEX_NOTIFY_MAX_ATTEMPTS = env_int("CODEX_NOTIFY_MAX_ATTEMPTS", 5, minimum=1)
# A claim not closed within its TTL becomes claimable again
# (docs/domain/claims.md#claim-ttl).
CODEX_CLAIM_TTL_MINUTES = env_int("CODEX_CLAIM_TTL_MINUTES", 30, minimum=1)
# Workers and scheduled jobs (docs/architecture.md#step-flow, #scheduled-jobs).
# Intervals in minutes; README lists them.
CODEX_STUCK_AFTER_MINUTES = env_int("CODEX_STUCK_AFTER_MINUTES", 120, minimum=1)
CODEX_RECOVERY_ALERT_AFTER = env_int("CODEX_RECOVERY_ALERT_AFTER", 3, minimum=1)
CODEX_HEARTBEAT_SECONDS = env_int("CODEX_HEARTBEAT_SECONDS", 20, minimum=1)
if CODEX_HEARTBEAT_SECONDS * 2 > CODEX_LEASE_SECONDS:
    raise ImproperlyConfigured(
        f"CODEX_HEARTBEAT_SECONDS ({CODEX_HEARTBEAT_SECONDS}) must be at most half "
        f"of CODEX_LEASE_SECONDS ({CODEX_LEASE_SECONDS}), or a lease lapses between "
        "two heartbeats"
    )
CODEX_HEARTBEAT_STALE_SECONDS = env_int(
    "CODEX_HEARTBEAT_STALE_SECONDS", 300, minimum=10
)
CODEX_RETRY_BACKOFF_BASE_SECONDS = env_int(
    "CODEX_RETRY_BACKOFF_BASE_SECONDS", 30, minimum=1
)
CODEX_RETRY_BACKOFF_MAX_SECONDS = env_int(
    "CODEX_RETRY_BACKOFF_MAX_SECONDS", 1800, minimum=1
)
CODEX_EVENT_RETENTION_DAYS = env_int("CODEX_EVENT_RETENTION_DAYS", 0, minimum=0)
# Where agent worktrees live; the heartbeat job removes orphans under it only.
CODEX_WORKTREE_ROOT = env_str("CODEX_WORKTREE_ROOT", str(VAR_DIR / "worktrees"))
CODEX_ALERT_CHANNEL = env_str("CODEX_ALERT_CHANNEL", "operators")
CODEX_ALERT_RECIPIENT = env_str("CODEX_ALERT_RECIPIENT", "operators")
CODEX_SCHEDULES = {
    # job path: interval in minutes (0 turns the job off)
    "codex.tasks.jobs.resume_due_tasks": env_int(
        "CODEX_EVERY_RESUME_DUE_MINUTES", 1, minimum=0
    ),
    "codex.tasks.recovery.recover_stuck_tasks": env_int(
        "CODEX_EVERY_STUCK_RECOVERY_MINUTES", 10, minimum=0
    ),
    "codex.fleet.heartbeats.reap_stale_work": env_int(
        "CODEX_EVERY_HEARTBEAT_CHECK_MINUTES", 2, minimum=0
    ),
    "codex.claims.jobs.expire_stale_claims": env_int(
        "CODEX_EVERY_CLAIM_EXPIRY_MINUTES", 5, minimum=0
    ),
    "codex.children.jobs.close_expired_windows": env_int(
        "CODEX_EVERY_CHILD_TIMEOUT_MINUTES", 1, minimum=0
    ),
    "codex.notifications.jobs.drain_outbox": env_int(
        "CODEX_EVERY_OUTBOX_MINUTES", 1, minimum=0
    ),
    "codex.claims.jobs.play_backlog_rounds": env_int(
        "CODEX_EVERY_BACKLOG_ROUND_MINUTES", 5, minimum=0
    ),
    "codex.fleet.jobs.enforce_review_limits": env_int(
        "CODEX_EVERY_REVIEW_LIMITS_MINUTES", 30, minimum=0
    ),
    "codex.claims.jobs.follow_claims_on_board": env_int(
        "CODEX_EVERY_BOARD_MINUTES", 2, minimum=0
    ),
    "codex.repositories.jobs.sync_github_repositories": env_int(
        "CODEX_EVERY_GITHUB_SYNC_MINUTES", 5, minimum=0
    ),
    "codex.tasks.gate_jobs.check_merge_gates": env_int(
        "CODEX_EVERY_MERGE_GATE_CHECK_MINUTES", 5, minimum=0
    ),
    "codex.tasks.gate_jobs.check_spend_caps": env_int(
        "CODEX_EVERY_SPEND_CAP_CHECK_MINUTES", 2, minimum=0
    ),
    "codex.webhooks.jobs.process_deferred": env_int(
        "CODEX_EVERY_DEFERRED_WEBHOOKS_MINUTES", 2, minimum=0
    ),
    "codex.webhooks.jobs.prune_deliveries": env_int(
        "CODEX_EVERY_WEBHOOK_PRUNING_MINUTES", 1440, minimum=0
    ),
    "codex.core.idempotency.prune_idempotency_records": env_int(
        "CODEX_EVERY_IDEMPOTENCY_PRUNING_MINUTES", 60, minimum=0
    ),
    "codex.events.jobs.prune_old_events": env_int(
        "CODEX_EVERY_EVENT_PRUNING_MINUTES", 1440, minimum=0
    ),
}
# Empty: each notification goes through its channel's sender
# (integrations.notify.senders.CHANNEL_SENDERS); a dotted class path here
# carries every channel instead (development, tests).
CODEX_NOTIFY_SENDER = env_str("CODEX_NOTIFY_SENDER", "")
CODEX_NOTIFY_WEBHOOK_URL = env_str("CODEX_NOTIFY_WEBHOOK_URL", "") or None
CODEX_NOTIFY_WEBHOOK_TIMEOUT = env_int("CODEX_NOTIFY_WEBHOOK_TIMEOUT", 10, minimum=1)
CODEX_NOTIFY_EMAIL_FROM = env_str("CODEX_NOTIFY_EMAIL_FROM", "") or None
# GitHub (docs/architecture.md#integrations). GITHUB_TOKEN is under
# CODEX_CREDENTIALS below.
GITHUB_APP_ID = env_str("GITHUB_APP_ID", "")
GITHUB_APP_PRIVATE_KEY = env_str("GITHUB_APP_PRIVATE_KEY", "")
GITHUB_APP_INSTALLATION_ID = env_str("GITHUB_APP_INSTALLATION_ID", "")
GITHUB_BASE_URL = env_str("GITHUB_BASE_URL", "https://api.github.com")
GITHUB_WEBHOOK_SECRET = env_str("GITHUB_WEBHOOK_SECRET", "")
CODEX_WEBHOOK_MAX_BYTES = env_int("CODEX_WEBHOOK_MAX_BYTES", 5_000_000, minimum=1000)
CODEX_TRIGGER_LABEL = env_str("CODEX_TRIGGER_LABEL", "codex")
CODEX_WEBHOOK_REPLY_TO_NON_WRITERS = env_bool(
    "CODEX_WEBHOOK_REPLY_TO_NON_WRITERS", True
)
CODEX_WEBHOOK_RETENTION_DAYS = env_int("CODEX_WEBHOOK_RETENTION_DAYS", 30, minimum=1)
CODEX_BOT_LOGIN = env_str("CODEX_BOT_LOGIN", "codex[bot]")
# PyGithub's pacing between requests and writes (GitHub's abuse rules), and its
# read-retry backoff factor.
CODEX_GITHUB_SECONDS_BETWEEN_REQUESTS = 0.25
CODEX_GITHUB_SECONDS_BETWEEN_WRITES = 1.0
CODEX_GITHUB_RETRY_BACKOFF = 0.5
CODEX_GIT_TIMEOUT_SECONDS = env_int("CODEX_GIT_TIMEOUT_SECONDS", 300, minimum=5)
# A transfer over HTTP(S) moving under 1 KB/s for this long is abandoned by git
# itself: it also stops a git whose worker was killed, which no timeout of
# Codex's reaches any more.
CODEX_GIT_STALL_SECONDS = env_int("CODEX_GIT_STALL_SECONDS", 60, minimum=1)
CODEX_MIRROR_ROOT = env_str("CODEX_MIRROR_ROOT", str(VAR_DIR / "mirrors"))
CODEX_GIT_AUTHOR_NAME = env_str("CODEX_GIT_AUTHOR_NAME", "Codex")
CODEX_GIT_AUTHOR_EMAIL = env_str("CODEX_GIT_AUTHOR_EMAIL", "codex@localhost")

# Credentials of outside services; several may be given (comma-separated) so
# that a rejected one is rotated out (rotate_token,
# docs/domain/concurrency.md#error-classification).
CODEX_CREDENTIALS = {
    "github": env_list("GITHUB_TOKEN", []),
    "claude": env_list("ANTHROPIC_API_KEY", []),
}
# Claude (docs/architecture.md#integrations). ANTHROPIC_API_KEY is under
# CODEX_CREDENTIALS above.
ANTHROPIC_BASE_URL = env_str("ANTHROPIC_BASE_URL", "") or None
# Empty: each role's default model (integrations/anthropic/client.py
# ROLE_MODELS, in the README); set, one model for every role.
CODEX_MODEL = env_str("CODEX_MODEL", "") or None
# Per role: CODEX_MODEL_PRODUCT_MANAGER, _PLANNER, _DEVELOPER, _QA, _REVIEWER,
# _RELEASE; the role's thinking (CODEX_THINKING_<ROLE>: adaptive, a token
# budget, or off) and effort (CODEX_EFFORT_<ROLE>); the role's run budgets
# (CODEX_AGENT_MAX_TURNS_<ROLE>, _TOKENS_, _COST_USD_, _SECONDS_; agents/budgets.py
# ROLE_BUDGETS has the defaults). Empty: the role's default.
for _role in ("PRODUCT_MANAGER", "PLANNER", "DEVELOPER", "QA", "REVIEWER", "RELEASE"):
    for _name in (
        "MODEL",
        "THINKING",
        "EFFORT",
        "AGENT_MAX_TURNS",
        "AGENT_MAX_TOKENS",
        "AGENT_MAX_COST_USD",
        "AGENT_MAX_SECONDS",
    ):
        _key = f"CODEX_{_name}_{_role}"
        globals()[_key] = env_str(_key, "") or None
CODEX_MODEL_TIMEOUT_SECONDS = env_int("CODEX_MODEL_TIMEOUT_SECONDS", 300, minimum=5)
CODEX_MODEL_MAX_RETRIES = env_int("CODEX_MODEL_MAX_RETRIES", 0, minimum=0, maximum=1)
# A transient model error (429, 529, 5xx, lost connection) is retried inside the
# agent's conversation at most this many times per run, waiting at most this
# long each time; a longer retry-after requeues the step (agents/runtime.py).
CODEX_MODEL_INLINE_RETRIES = env_int("CODEX_MODEL_INLINE_RETRIES", 6, minimum=0)
CODEX_MODEL_INLINE_WAIT_SECONDS = env_int(
    "CODEX_MODEL_INLINE_WAIT_SECONDS", 30, minimum=1, maximum=300
)
CODEX_MODEL_PRICES: dict = {}  # {model: {"input": usd, "output": usd}} per 1M tokens
# One value for every role's run (0: each role's own default, ROLE_BUDGETS).
CODEX_AGENT_MAX_TURNS = env_int("CODEX_AGENT_MAX_TURNS", 0, minimum=0)
CODEX_AGENT_MAX_TOKENS = env_int("CODEX_AGENT_MAX_TOKENS", 0, minimum=0)
CODEX_AGENT_MAX_COST_USD = env_amount("CODEX_AGENT_MAX_COST_USD", "0")
CODEX_AGENT_MAX_SECONDS = env_int("CODEX_AGENT_MAX_SECONDS", 0, minimum=0)
# A task's budget across all its agent runs (0: no cap); a run starts with
# what is left, and a task with nothing left escalates.
CODEX_TASK_MAX_COST_USD = env_amount("CODEX_TASK_MAX_COST_USD", "50")
CODEX_TASK_MAX_TOKENS = env_int("CODEX_TASK_MAX_TOKENS", 0, minimum=0)
# How long QA's run of one check command may take, unless the repository
# says (Repository.check_timeout_seconds); agents' one-off commands keep
# CODEX_SANDBOX_COMMAND_TIMEOUT.
CODEX_CHECK_TIMEOUT_SECONDS = env_int(
    "CODEX_CHECK_TIMEOUT_SECONDS", 900, minimum=10, maximum=4 * 3600
)
# 0: each reply may use the model's whole output budget (streamed).
CODEX_AGENT_MAX_RESPONSE_TOKENS = env_int(
    "CODEX_AGENT_MAX_RESPONSE_TOKENS", 0, minimum=0
)
CODEX_AGENT_TOOL_OUTPUT_CHARS = env_int(
    "CODEX_AGENT_TOOL_OUTPUT_CHARS", 20_000, minimum=1000
)
CODEX_AGENT_CONTEXT_CHARS = env_int(
    "CODEX_AGENT_CONTEXT_CHARS", 400_000, minimum=50_000
)
# How agents run commands in a task's worktree: PATH for the sandbox (the
# test tools must be on it), the test command (per repository full_name or url
# in CODEX_TEST_COMMANDS), how pull requests merge, and whether a person must
# approve the release first.
CODEX_SANDBOX_PATH = env_str("CODEX_SANDBOX_PATH", "") or None
# The command jail every command run on a repository's behalf goes through
# (docs/jail.md): auto (bubblewrap where it works, else steps that must run a
# command escalate), bubblewrap, docker, podman, or none (unjailed: warned).
CODEX_SANDBOX = env_choice(
    "CODEX_SANDBOX", "auto", ("auto", "bubblewrap", "docker", "podman", "none")
)
# Limits of one jailed command; the wall time is also the most a tool call may ask.
CODEX_SANDBOX_COMMAND_TIMEOUT = env_int(
    "CODEX_SANDBOX_COMMAND_TIMEOUT", 120, minimum=1, maximum=3600
)
CODEX_SANDBOX_CPU_SECONDS = env_int("CODEX_SANDBOX_CPU_SECONDS", 300, minimum=1)
CODEX_SANDBOX_MEMORY_MB = env_int("CODEX_SANDBOX_MEMORY_MB", 2048, minimum=64)
CODEX_SANDBOX_MAX_PROCESSES = env_int("CODEX_SANDBOX_MAX_PROCESSES", 256, minimum=8)
CODEX_SANDBOX_MAX_FILE_MB = env_int("CODEX_SANDBOX_MAX_FILE_MB", 512, minimum=1)
# A repository's setup command (once per worktree) may take longer.
CODEX_SANDBOX_SETUP_TIMEOUT = env_int(
    "CODEX_SANDBOX_SETUP_TIMEOUT", 900, minimum=10, maximum=7200
)
# The container backends' image when a repository names none.
CODEX_SANDBOX_IMAGE = env_str("CODEX_SANDBOX_IMAGE", "python:3.11-slim-bookworm")
# Host folders bound read-only into the jail at their own path (toolchains,
# package caches an operator provides); never Codex's own folders.
CODEX_SANDBOX_READONLY_PATHS = env_list("CODEX_SANDBOX_READONLY_PATHS", [])
# Variables an operator adds to the agents' command environment (KEY=VALUE,
# comma-separated), e.g. PYTEST_DISABLE_PLUGIN_AUTOLOAD=1; nothing else is
# inherited from the worker (no secrets reach the sandbox).
CODEX_SANDBOX_ENV = env_pairs("CODEX_SANDBOX_ENV")
CODEX_TEST_COMMAND = env_str(
    "CODEX_TEST_COMMAND",
    "python -B -m pytest -q -p no:cacheprovider --junitxml={junit_xml}",
)
CODEX_TEST_COMMANDS: dict[str, str] = {}
# Lint and type check: run by QA when set (a repository's own command wins);
# whether their failure fails verification.
CODEX_LINT_COMMAND = env_str("CODEX_LINT_COMMAND", "")
CODEX_TYPE_CHECK_COMMAND = env_str("CODEX_TYPE_CHECK_COMMAND", "")
CODEX_QA_CHECKS_BLOCK = env_bool("CODEX_QA_CHECKS_BLOCK", True)
# The reviewer's comments are posted on the pull request (one review a cycle).
CODEX_REVIEW_POST_COMMENTS = env_bool("CODEX_REVIEW_POST_COMMENTS", True)
# CI of the pushed head: "pending" blocks and is checked again after this many
# seconds (at most CODEX_MAX_RETRIES times); "none" (no checks configured on
# GitHub) passes unless this is off, then a person decides.
CODEX_CI_PENDING_RETRY_SECONDS = env_int(
    "CODEX_CI_PENDING_RETRY_SECONDS", 300, minimum=10
)
CODEX_CI_NONE_PASSES = env_bool("CODEX_CI_NONE_PASSES", True)
CODEX_MERGE_METHOD = env_choice(
    "CODEX_MERGE_METHOD", "squash", ("squash", "merge", "rebase")
)
CODEX_RELEASE_REQUIRES_APPROVAL = env_bool("CODEX_RELEASE_REQUIRES_APPROVAL", False)
# Gates, steering and the progress comment (docs/gates.md).
CODEX_PLAN_LABEL = env_str("CODEX_PLAN_LABEL", "codex:plan")
CODEX_PLAN_MAX_CYCLES = env_int("CODEX_PLAN_MAX_CYCLES", 3, minimum=1)
CODEX_PROGRESS_MIN_SECONDS = env_int("CODEX_PROGRESS_MIN_SECONDS", 5, minimum=0)
# The console's address for links in comments (blank: links are paths).
CODEX_PUBLIC_URL = env_str("CODEX_PUBLIC_URL", "")
# The installation's monthly spend cap in USD (0: none); per repository: the
# console's Repository.monthly_cap_usd.
CODEX_MONTHLY_CAP_USD = env_int("CODEX_MONTHLY_CAP_USD", 0, minimum=0)
# How long a parent waits for its children's reports before the completion
# analysis runs on what arrived (docs/children.md).
CODEX_CHILDREN_WINDOW_MINUTES = env_int(
    "CODEX_CHILDREN_WINDOW_MINUTES", 10, minimum=1, maximum=7 * 24 * 60
)
CODEX_CHILDREN_ANALYSIS_TIMEOUT_MINUTES = env_int(
    "CODEX_CHILDREN_ANALYSIS_TIMEOUT_MINUTES", 8, minimum=1, maximum=24 * 60
)
# Agents by default: without ANTHROPIC_API_KEY a task blocks, saying so.
CODEX_PHASE_RUNNER = env_str(
    "CODEX_PHASE_RUNNER", "agents.phase_runner.AgentPhaseRunner"
)

# --- Security ----------------------------------------------------------------
# Sign-in throttling and lockout on /accounts/login/ and /admin/login/
# (django-axes): failures are counted per (account, address) pair in the
# database, so every gunicorn worker and machine sees the same count; a locked
# pair is refused (429, saying why) until the cool-off ends or an operator
# deletes its access attempts in the console (Axes > Access attempts).
# Content-Security-Policy (django-csp 4): scripts, styles, fonts and images
# from Codex's own origin only (the Swagger UI and the admin are served
# locally; the team pages keep their scripts in static files), nothing may
# frame a page, forms post only to Codex. /api/docs/ adds inline styles, which
# Swagger UI sets itself (codex/tasks/api/schema.py).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [CSP_SELF],
        "script-src": [CSP_SELF],
        "style-src": [CSP_SELF],
        "img-src": [CSP_SELF, "data:"],
        "font-src": [CSP_SELF],
        "connect-src": [CSP_SELF],
        "object-src": [CSP_NONE],
        "base-uri": [CSP_SELF],
        "form-action": [CSP_SELF],
        "frame-ancestors": [CSP_NONE],
    }
}
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = env_int("CODEX_LOGIN_FAILURE_LIMIT", 5, minimum=1)
_lockout_minutes = env_int("CODEX_LOGIN_LOCKOUT_MINUTES", 30, minimum=0)
# 0: locked until an operator unlocks.
AXES_COOLOFF_TIME = timedelta(minutes=_lockout_minutes) if _lockout_minutes else None
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
# No start-up banner: every manage.py command would print it on stderr.
AXES_VERBOSE = False
# The client's address as the API throttles see it (CODEX_PROXY_COUNT).
AXES_CLIENT_IP_CALLABLE = "codex.core.throttles.client_address"
AXES_COOLOFF_MESSAGE = (
    "Too many failed sign-ins for this account from your address: it is locked "
    f"for {_lockout_minutes} minutes. An operator can unlock it sooner in the "
    "console."
)
AXES_PERMALOCK_MESSAGE = (
    "Too many failed sign-ins for this account from your address: it is locked "
    "until an operator unlocks it in the console."
)
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False
X_FRAME_OPTIONS = "DENY"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
if env_bool("CODEX_BEHIND_TLS", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
    SECURE_HSTS_SECONDS = env_int("CODEX_HSTS_SECONDS", 31_536_000, minimum=0)
    SECURE_SSL_REDIRECT = env_bool("CODEX_SSL_REDIRECT", True)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("CODEX_HSTS_INCLUDE_SUBDOMAINS", True)
    # Preloading is a commitment of the whole domain: off unless asked for.
    SECURE_HSTS_PRELOAD = env_bool("CODEX_HSTS_PRELOAD", False)
    if not SECURE_HSTS_PRELOAD:
        SILENCED_SYSTEM_CHECKS = ["security.W021"]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("CODEX_LOG_LEVEL", "INFO")},
    "loggers": {
        "django_q": {"level": env_str("CODEX_Q_LOG_LEVEL", "INFO")},
        # One INFO line per model request is noise; errors still show.
        "httpx2": {"level": "WARNING"},
    },
}
