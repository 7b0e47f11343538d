"""The scheduled work at scale: each scheduled job's time and queries per run
with 1,000 and with 10,000 tasks in the database, a tenth of them active.

The database holds what a long-lived installation holds: ten GitHub
repositories; per task five events, an agent run and an agent instance (the
active tasks' running and beating, the others' ended and terminated), an
issue claim (the active tasks' claimed and within their time to live, the
others' released) and a notification already sent. Nothing is due: the runs
measured are the steady state, a job finding nothing to do, which is what
almost every run of a job every minute or two is. What it costs then should
depend on the work waiting, not on the history kept; the goal is the 10,000
run at most 1.5x the 1,000 run (the ratio's ceiling is the 1,000 run,
measured in the same process right before the rest is added). Between the
two, the 9,000 tasks are added as history first (the same 100 active) and
measured, then their active tenth is turned on: a job that grows with the
history tells from one that grows with the active work.

Each job runs 15 times (smoke) or 31 (full) after one unmeasured run; the
figure is the fastest run's wall time (on a shared machine the least
disturbed one: the jobs' own queries take microseconds, a neighbour's load
milliseconds), the median is in the notes, the queries are those of one run.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from datetime import timedelta

from bench.common import figure

GOAL = "<= 1.5x the 1,000-task run"
SIZES = (1_000, 10_000)
ACTIVE_STATUSES = ("pending", "in_progress", "blocked", "paused", "escalated")
DONE_STATUSES = ("completed", "completed", "completed", "failed", "cancelled")
PHASES = ("intake", "planning", "implementation", "verification", "review")


def _jobs(worktrees: str) -> dict:
    """The scheduled jobs measured: name -> a call of one run."""
    from django.test import override_settings

    from codex.children.jobs import close_expired_windows
    from codex.claims.jobs import expire_stale_claims
    from codex.fleet.heartbeats import reap_stale_work
    from codex.fleet.jobs import enforce_review_limits
    from codex.notifications.jobs import drain_outbox
    from codex.repositories.models import Forge, Repository
    from codex.tasks.ci_results import refresh_ci_results
    from codex.tasks.jobs import resume_due_tasks
    from codex.tasks.recovery import recover_stuck_tasks
    from codex.webhooks.jobs import process_deferred

    def stale_work():
        # An empty worktree folder: the orphan scan runs, finds nothing.
        with override_settings(CODEX_WORKTREE_ROOT=worktrees):
            return reap_stale_work()

    def github_sync_planning():
        # The database side of a sync round: the repositories, and in each the
        # tasks waiting for a CI result (none has a commit: no forge call).
        for repository in Repository.objects.filter(forge=Forge.GITHUB):
            refresh_ci_results(repository)

    return {
        "stuck_task_recovery": recover_stuck_tasks,
        "heartbeats_stale_work": stale_work,
        "claim_expiry": expire_stale_claims,
        "outbox": drain_outbox,
        "blocked_task_resume": resume_due_tasks,
        "child_windows": close_expired_windows,
        "review_limits": enforce_review_limits,
        "deferred_webhooks": process_deferred,
        "github_sync_planning": github_sync_planning,
    }


def _heartbeat():
    """One worker heartbeat (a running run and its instance stamped)."""
    from codex.fleet.models import AgentRun

    run = AgentRun.objects.running().select_related("instance").first()

    def beat():
        run.beat()
        if run.instance is not None:
            run.instance.beat()

    return beat


def is_active(n: int) -> bool:
    """Every tenth task is active."""
    return n % 10 == 0


def seed(start: int, stop: int, *, history: bool = False) -> None:
    """Tasks number start..stop-1 with their rows (see the module docstring);
    every tenth is active, or none with `history` (activate() turns them on
    later)."""
    from django.utils import timezone

    from codex.claims.models import IssueClaim
    from codex.events.models import Event
    from codex.fleet.models import AgentInstance, AgentRun
    from codex.notifications.models import Notification
    from codex.repositories.models import Forge, Repository
    from codex.tasks.models import Task

    now = timezone.now()
    repositories = [
        Repository.objects.get_or_create(
            url=f"https://github.com/bench/scale{i}", defaults={"forge": Forge.GITHUB}
        )[0]
        for i in range(10)
    ]
    for chunk in range(start, stop, 1000):
        numbers = range(chunk, min(chunk + 1000, stop))
        tasks = []
        for n in numbers:
            active = is_active(n) and not history
            tasks.append(
                Task(
                    task_id=f"FEAT-20260101-s{n:05d}",
                    created_by="api",
                    repository=repositories[n % 10],
                    request_fingerprint=f"{n:064x}",
                    title=f"Scale task {n}",
                    status=(ACTIVE_STATUSES if active else DONE_STATUSES)[
                        (n // 10) % 5
                    ],
                    phase=PHASES[n % 5] if active else "release",
                    phase_entered_at=now - timedelta(minutes=5 if active else 9000),
                    created_at=now - timedelta(minutes=10 if active else 10000),
                    blocked_until=now + timedelta(hours=1) if active else None,
                )
            )
        Task.objects.bulk_create(tasks)
        events, runs, instances, claims, notes = [], [], [], [], []
        for task, n in zip(tasks, numbers, strict=True):
            active = is_active(n) and not history
            events += [
                Event(task=task, kind="created", actor="bench") for _ in range(5)
            ]
            instance = AgentInstance(
                instance_id=f"work-{n}-a1",
                type="coding",
                repository=task.repository,
                task=task,
                worktree_path=f"/nowhere/{task.task_id}",
                branch_name=f"codex/{task.task_id}",
                status="started" if active else "terminated",
                heartbeat_at=now if active else now - timedelta(days=7),
                last_activity=now if active else now - timedelta(days=7),
            )
            instances.append(instance)
            runs.append(
                AgentRun(
                    session_id=f"bench:{PHASES[n % 5]}:{n}",
                    task=task,
                    instance=instance,
                    status="running" if active else "succeeded",
                    started_at=now - timedelta(minutes=1 if active else 9000),
                    heartbeat_at=now if active else None,
                    ended_at=None if active else now - timedelta(minutes=8990),
                )
            )
            claims.append(
                IssueClaim(
                    repository=task.repository,
                    number=n + 1,
                    state="claimed" if active else "released",
                    claimed_by=f"session-{n}" if active else "",
                    expires_at=now + timedelta(minutes=30) if active else None,
                )
            )
            notes.append(
                Notification(
                    notification_id=f"bench-{n}",
                    channel="log",
                    recipient="ops",
                    task=task,
                    status="sent",
                )
            )
        Event.objects.bulk_create(events)
        AgentInstance.objects.bulk_create(instances)
        AgentRun.objects.bulk_create(runs)
        IssueClaim.objects.bulk_create(claims)
        Notification.objects.bulk_create(notes)
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def activate(start: int, stop: int) -> None:
    """Turn every tenth task of start..stop-1, seeded as history, into the
    active task (and running run, started instance, live claim) seed() makes:
    the same rows, with the active tenth of them as at 10,000."""
    from django.utils import timezone

    from codex.claims.models import IssueClaim
    from codex.fleet.models import AgentInstance, AgentRun
    from codex.tasks.models import Task

    now = timezone.now()
    # Seeding, not work: the plain manager's update (the models' own refuse
    # bulk state changes that bypass versions and leases).
    numbers = [n for n in range(start, stop) if is_active(n)]
    for status, phase in {
        (ACTIVE_STATUSES[(n // 10) % 5], PHASES[n % 5]) for n in numbers
    }:
        ids = [
            f"FEAT-20260101-s{n:05d}"
            for n in numbers
            if (ACTIVE_STATUSES[(n // 10) % 5], PHASES[n % 5]) == (status, phase)
        ]
        Task._base_manager.filter(task_id__in=ids).update(
            status=status,
            phase=phase,
            phase_entered_at=now - timedelta(minutes=5),
            blocked_until=now + timedelta(hours=1),
        )
    ids = [f"FEAT-20260101-s{n:05d}" for n in numbers]
    AgentRun._base_manager.filter(task__task_id__in=ids).update(
        status="running",
        started_at=now - timedelta(minutes=1),
        heartbeat_at=now,
        ended_at=None,
    )
    AgentInstance._base_manager.filter(task__task_id__in=ids).update(
        status="started", heartbeat_at=now, last_activity=now
    )
    IssueClaim._base_manager.filter(number__in=[n + 1 for n in numbers]).update(
        state="claimed",
        claimed_by="session",
        expires_at=now + timedelta(minutes=30),
    )
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def measure(jobs: dict, runs: int) -> dict[str, dict]:
    """Fastest and median wall ms, and the queries of one run, of each job."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    out = {}
    for name, job in jobs.items():
        job()
        with CaptureQueriesContext(connection) as captured:
            job()
        queries = len(captured.captured_queries)
        samples = []
        for _ in range(runs):
            started = time.perf_counter()
            job()
            samples.append(time.perf_counter() - started)
        out[name] = {
            "ms": min(samples) * 1000,
            "median_ms": statistics.median(samples) * 1000,
            "queries": queries,
        }
    return out


def run(smoke: bool) -> list[dict]:
    runs = 15 if smoke else 31
    small, large = SIZES
    with tempfile.TemporaryDirectory(prefix="codex-bench-worktrees-") as worktrees:
        jobs = _jobs(worktrees)
        seed(0, small)
        jobs["heartbeat"] = _heartbeat()
        at_small = measure(jobs, runs)
        # History first (the same 100 active tasks), then the active tenth.
        seed(small, large, history=True)
        at_history = measure(jobs, runs)
        activate(small, large)
        at_large = measure(jobs, runs)
    figures = []
    for name in at_small:
        a, h, b = at_small[name], at_history[name], at_large[name]
        ratio = b["ms"] / a["ms"] if a["ms"] else None
        figures.append(
            figure(
                f"scheduled_{name}_ms_at_10000_tasks",
                b["ms"],
                "ms",
                ceiling=a["ms"],
                goal=GOAL,
                meets=ratio is not None and ratio <= 1.5,
                notes=f"one run: {a['ms']:.2f} ms (median {a['median_ms']:.2f}) and "
                f"{a['queries']} queries with 1,000 tasks (100 active); "
                f"{h['ms']:.2f} ms and {h['queries']} queries with 10,000 of which "
                f"the same 100 active (history grown, "
                f"{h['ms'] / a['ms'] if a['ms'] else 0:.2f}x); "
                f"{b['ms']:.2f} ms (median {b['median_ms']:.2f}) and "
                f"{b['queries']} queries with 10,000 (1,000 active); fastest of "
                f"{runs} runs, nothing due",
                queries_1000=a["queries"],
                queries_10000=b["queries"],
                history_only_ms=round(h["ms"], 3),
            )
        )
    return figures
