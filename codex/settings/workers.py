"""Background work: the django-q2 clusters, leases and heartbeats, retries,
and the scheduled jobs."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from codex.env import env_bool, env_int, env_str
from codex.settings.base import VAR_DIR
from codex.settings.database import REDIS_URL

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
    # Successful jobs' results are kept and pruned by a scheduled job
    # (codex/core/workers/job_results.py): django-q2's own pruning reads every kept
    # result on every job's save.
    "save_limit": 0,
    "catch_up": False,
    "label": "Worker queue",
    # A cluster takes a job from the broker only to start it: one waiting in
    # its memory queue (the least django-q2 allows), one at a time. Every job
    # it took is claimed in the broker under its name until it is acknowledged
    # (codex.core.workers.brokers), so a dead cluster's jobs are handed back at once.
    "queue_limit": 1,
    "bulk": 1,
}
# How many successful jobs' results the console keeps (the newest; pruned by
# codex.core.workers.job_results.prune_job_results). Failed jobs are always kept.
CODEX_JOB_RESULTS_KEPT = env_int("CODEX_JOB_RESULTS_KEPT", 1000, minimum=0)
# Jobs whose successes keep no result: the progress comment's edits, several
# per task, would crowd the steps out of the kept results. Their failures are
# kept like any other's.
CODEX_JOB_RESULTS_UNSAVED = ("codex.tasks.progress.update_progress_comment",)
if REDIS_URL:
    Q_CLUSTER["redis"] = REDIS_URL
    Q_CLUSTER["broker_class"] = "codex.core.workers.redis_broker.ClaimingRedis"
else:
    Q_CLUSTER["orm"] = "default"
    Q_CLUSTER["broker_class"] = "codex.core.workers.brokers.ClaimingORM"
# A cluster beats every CODEX_CLUSTER_BEAT_SECONDS; one silent for
# CODEX_CLUSTER_STALE_SECONDS (or whose process is gone from its machine) is
# dead, and any other cluster hands its jobs back, checking every
# CODEX_CLUSTER_SWEEP_SECONDS. On SIGTERM a cluster hands back the jobs it has
# not started, waits CODEX_STOP_GRACE_SECONDS for the running ones, then stops
# their workers and hands those back too.
# The name leases and clusters give this machine (codex.core.machine): the
# host name unless set; it must differ between machines sharing a database.
CODEX_MACHINE_NAME = env_str("CODEX_MACHINE_NAME", "")
CODEX_CLUSTER_BEAT_SECONDS = env_int("CODEX_CLUSTER_BEAT_SECONDS", 2, minimum=1)
CODEX_CLUSTER_STALE_SECONDS = env_int("CODEX_CLUSTER_STALE_SECONDS", 20, minimum=5)
CODEX_CLUSTER_SWEEP_SECONDS = env_int("CODEX_CLUSTER_SWEEP_SECONDS", 5, minimum=1)
CODEX_STOP_GRACE_SECONDS = env_int("CODEX_STOP_GRACE_SECONDS", 10, minimum=0)
# What a cluster reports of its machine with its beat (the jail, the model key:
# codex.fleet.readiness.worker_report), at start-up and this often; the console
# warns from these reports, not from the web server's own machine.
CODEX_WORKER_HEALTH = env_str(
    "CODEX_WORKER_HEALTH", "codex.fleet.readiness.worker_report"
)
CODEX_CLUSTER_HEALTH_SECONDS = env_int("CODEX_CLUSTER_HEALTH_SECONDS", 60, minimum=5)
# A job whose worker died running it (its cluster lived on) is handed back at
# most this many times; then it is given up and its task blocked with why.
CODEX_JOB_REDELIVERIES = env_int("CODEX_JOB_REDELIVERIES", 3, minimum=0)
# On PostgreSQL an idle cluster waits for a queued job's notification and looks
# at the queue anyway this often (jobs held back until a time notify nobody);
# on SQLite it looks every Q_CLUSTER poll (0.2 s).
CODEX_QUEUE_IDLE_SECONDS = env_int("CODEX_QUEUE_IDLE_SECONDS", 1, minimum=1)
if CODEX_CLUSTER_BEAT_SECONDS * 3 > CODEX_CLUSTER_STALE_SECONDS:
    raise ImproperlyConfigured(
        f"CODEX_CLUSTER_STALE_SECONDS ({CODEX_CLUSTER_STALE_SECONDS}) must be at "
        f"least three beats (CODEX_CLUSTER_BEAT_SECONDS, "
        f"{CODEX_CLUSTER_BEAT_SECONDS}), or a slow beat looks like a dead cluster"
    )
# Tests (and the demo) may run jobs inline instead of through the broker.
CODEX_RUN_JOBS_INLINE = env_bool("CODEX_RUN_JOBS_INLINE", False)

# --- Leases, heartbeats and recovery ---------------------------------------
CODEX_LEASE_SECONDS = env_int("CODEX_LEASE_SECONDS", 60, minimum=5)
CODEX_LEASE_RETRY_ATTEMPTS = env_int("CODEX_LEASE_RETRY_ATTEMPTS", 3, minimum=1)
CODEX_LEASE_RETRY_BACKOFF_SECONDS = env_int(
    "CODEX_LEASE_RETRY_BACKOFF_SECONDS", 5, minimum=0
)
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
    "codex.core.api.idempotency.prune_idempotency_records": env_int(
        "CODEX_EVERY_IDEMPOTENCY_PRUNING_MINUTES", 60, minimum=0
    ),
    "codex.core.workers.job_results.prune_job_results": env_int(
        "CODEX_EVERY_JOB_RESULT_PRUNING_MINUTES", 5, minimum=0
    ),
    "codex.events.jobs.prune_old_events": env_int(
        "CODEX_EVERY_EVENT_PRUNING_MINUTES", 1440, minimum=0
    ),
}
