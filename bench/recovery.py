"""Recovery after a whole-cluster kill, on each broker: the seconds from a
SIGKILL of a whole `manage.py qcluster` (its process group: sentinel, pusher,
monitor and workers, holding running jobs and ones it took but had not
started) to each of those jobs starting again on the cluster started in its
place, as a supervisor restarts a crashed service. p50 and max over every
held job of every round. Default settings (timeouts, retries, leases); the
Redis broker runs on its own database (CODEX_BENCH_REDIS, default
redis://127.0.0.1:6379/13), emptied before and after. Goal: every job moving
again within 90 s. The same with the product's own supervisor
(`manage.py codex_workers`, as `make run` and the compose file run the
workers): its cluster killed with every job running, the seconds until each
starts again in the cluster it forks in the dead one's place.

And what a cluster costs to start in a dead one's place: the CPU-seconds of
its whole process group when its sentinel reports it running, a cold
`manage.py qcluster` against one forked by `manage.py codex_workers` after
the supervisor's cluster was killed (codex/core/workers/supervisor.py). Goal: a
forked start at most a quarter of a cold one."""

from __future__ import annotations

import contextlib
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench.common import (
    NOWHERE,
    Server,
    bench_env,
    figure,
    not_measured,
    qcluster,
    quiet_queue,
    wait_until,
)
from bench.cpu_accounting import group_cpu, processes

REDIS_URL = os.environ.get("CODEX_BENCH_REDIS", "redis://127.0.0.1:6379/13")
WORKERS = 2
# Two running, one in the memory queue, one in the pusher's hand.
JOBS = 4
JOB_SECONDS = 60
GOAL_SECONDS = 90
QUANTILES = ("p50", "max")


def marked_sleep(job: str, seconds: float, log: str) -> None:
    """The benchmark's job (run in the cluster's workers): note its start,
    then take `seconds`, long enough to still run when the cluster dies."""
    fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, f"{job} {time.time()}\n".encode())
    finally:
        os.close(fd)
    time.sleep(seconds)


def _starts(log: Path) -> list[tuple[str, float]]:
    try:
        lines = log.read_text().split("\n")
    except FileNotFoundError:
        return []
    return [(job, float(at)) for job, at in (line.split() for line in lines if line)]


def _redis_broker():
    import redis
    from django_q.brokers.redis_broker import Redis

    class BenchRedis(Redis):
        @staticmethod
        def get_connection(list_key: str | None = None) -> redis.Redis:
            return redis.from_url(REDIS_URL)

    return BenchRedis()


def _empty(kind: str) -> None:
    """No job, schedule or cluster row left by other figures or rounds (a
    starting cluster runs the due schedules at once)."""
    from codex.core.workers import WorkerCluster

    quiet_queue()
    WorkerCluster.objects.all().delete()
    if kind == "redis":
        import redis

        redis.from_url(REDIS_URL).flushdb()


def _hold_jobs(kind: str, log: Path) -> list[str]:
    """Queue JOBS marked sleeps on broker `kind`; returns their names."""
    from django_q.brokers.orm import ORM
    from django_q.tasks import async_task

    broker = _redis_broker() if kind == "redis" else ORM()
    jobs = [f"job{n}" for n in range(JOBS)]
    for job in jobs:
        async_task(
            "bench.recovery.marked_sleep", job, JOB_SECONDS, str(log), broker=broker
        )
    return jobs


def _seconds_to_restart(log: Path, jobs: list[str], killed_at: float) -> list[float]:
    """The seconds from the kill until each job started again."""

    def again() -> dict[str, float] | None:
        after = {}
        for job, at in _starts(log):
            if at > killed_at:
                after.setdefault(job, at)
        return after if len(after) == len(jobs) else None

    restarted = wait_until(again, GOAL_SECONDS * 2, "every job to start again")
    return [restarted[job] - killed_at for job in jobs]


def _round(kind: str, env: dict[str, str], root: Path, number: int) -> list[float]:
    """One kill: the seconds until each held job started again."""
    log = root / f"{kind}-{number}.log"
    first = qcluster(env, root / f"{kind}-{number}-first.log")
    replacement = None
    try:
        jobs = _hold_jobs(kind, log)
        wait_until(lambda: len(_starts(log)) >= WORKERS, 30, "both workers busy")
        time.sleep(0.5)  # the pusher takes the next two
        os.killpg(first.process.pid, signal.SIGKILL)
        killed_at = time.time()
        first.process.wait(10)
        replacement = qcluster(
            {**env, "CODEX_WORKERS": str(JOBS)},
            root / f"{kind}-{number}-replacement.log",
        )
        return _seconds_to_restart(log, jobs, killed_at)
    finally:
        for server in (replacement, first):
            if server is not None and server.alive():
                os.killpg(server.process.pid, signal.SIGKILL)
                server.process.wait(10)
        _empty(kind)


def _supervised_round(
    kind: str, env: dict[str, str], root: Path, number: int
) -> list[float]:
    """One kill of the cluster `codex_workers` runs, all JOBS jobs running in
    it: the seconds until each started again in the one it forks instead."""
    log = root / f"{kind}-supervised-{number}.log"
    supervisor = _supervisor(
        {**env, "CODEX_WORKERS": str(JOBS)}, root / f"{kind}-supervised-{number}.out"
    )
    try:
        wait_until(lambda: _running_count(supervisor) >= 1, 60, "the first cluster")
        jobs = _hold_jobs(kind, log)
        wait_until(lambda: len(_starts(log)) >= JOBS, 30, "every worker busy")
        os.killpg(_supervised_group(supervisor), signal.SIGKILL)
        killed_at = time.time()
        return _seconds_to_restart(log, jobs, killed_at)
    finally:
        # Its clusters hold minute-long jobs a graceful stop would wait for:
        # the supervisor goes first (it would fork another), then its cluster.
        with contextlib.suppress(RuntimeError, ProcessLookupError):
            group = _supervised_group(supervisor)
            os.kill(supervisor.process.pid, signal.SIGKILL)
            os.killpg(group, signal.SIGKILL)
        supervisor.stop()
        _empty(kind)


def _measure(kind: str, rounds: int, root: Path) -> list[dict]:
    env = {**bench_env(), "CODEX_WORKERS": str(WORKERS)}
    names = [f"recovery_after_cluster_kill_{kind}_{q}_s" for q in QUANTILES]
    names += [f"recovery_after_cluster_kill_supervised_{kind}_{q}_s" for q in QUANTILES]
    if kind == "redis":
        import redis

        try:
            redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
        except redis.RedisError as exc:
            reason = f"Redis is not reachable at {REDIS_URL}: {exc}"
            return [not_measured(name, "s", "", reason) for name in names]
        env["REDIS_URL"] = REDIS_URL
    _empty(kind)
    cold: list[float] = []
    warm: list[float] = []
    for number in range(rounds):
        cold += _round(kind, env, root, number)
        warm += _supervised_round(kind, env, root, number)
    return _quantiles(
        names[:2],
        cold,
        f"{rounds} whole-cluster SIGKILL(s), {JOBS} jobs held each ({WORKERS} "
        f"running, the rest taken but not started); a cold manage.py qcluster "
        f"started in its place, as a service manager restarts a crashed one "
        f"(its start-up, about 2 s of Django, included)",
    ) + _quantiles(
        names[2:],
        warm,
        f"{rounds} SIGKILL(s) of the whole cluster manage.py codex_workers runs, "
        f"{JOBS} jobs running in it each; the supervisor forks the replacement "
        f"from its warm memory (codex/core/workers/supervisor.py)",
    )


def _quantiles(names: list[str], samples: list[float], notes: str) -> list[dict]:
    samples = sorted(samples)
    p50 = samples[(len(samples) - 1) // 2]
    goal = f"<= {GOAL_SECONDS} s"
    notes += "; all samples (s): " + ", ".join(f"{s:.1f}" for s in samples)
    return [
        figure(names[0], p50, "s", goal=goal, meets=p50 <= GOAL_SECONDS, notes=notes),
        figure(
            names[1],
            samples[-1],
            "s",
            goal=goal,
            meets=samples[-1] <= GOAL_SECONDS,
        ),
    ]


FORKED_START_GOAL = 0.25  # of a cold start's CPU


def _running_count(server: Server) -> int:
    if not server.alive():
        raise RuntimeError("the workers exited:\n" + server.log()[-2000:])
    return server.log().count(" running.")


def _supervisor(env: dict[str, str], log: Path) -> Server:
    """`manage.py codex_workers` (one cluster of CODEX_WORKERS workers)."""
    env = {**env, "CODEX_LOG_LEVEL": "INFO", "CODEX_Q_LOG_LEVEL": "INFO"}
    env.setdefault("GITHUB_BASE_URL", NOWHERE)
    return Server([sys.executable, "manage.py", "codex_workers"], env, log)


def _supervised_group(supervisor: Server) -> int:
    """The process group of the one cluster `codex_workers` runs now."""
    pid = supervisor.process.pid
    found = [
        int(fields[2])
        for _, fields in processes(lambda name, fields: int(fields[1]) == pid)
    ]
    if len(found) != 1:
        raise RuntimeError(f"expected one supervised cluster, found {found}")
    return found[0]


def _start_cpu(env: dict[str, str], root: Path, number: int) -> tuple[float, float]:
    """(cold, forked): the CPU-seconds of a cluster's group when it runs."""
    _empty("orm")
    cold = qcluster(env, root / f"cold-{number}.log")
    try:
        cold_cpu = group_cpu(cold.process.pid)["own"]
    finally:
        cold.stop()
    _empty("orm")
    supervisor = _supervisor(env, root / f"supervised-{number}.log")
    try:
        wait_until(lambda: _running_count(supervisor) >= 1, 60, "the first cluster")
        os.killpg(_supervised_group(supervisor), signal.SIGKILL)
        wait_until(lambda: _running_count(supervisor) >= 2, 60, "the forked one")
        forked_cpu = group_cpu(_supervised_group(supervisor))["own"]
    finally:
        supervisor.stop()
    _empty("orm")
    return cold_cpu, forked_cpu


def _measure_start(rounds: int, root: Path) -> list[dict]:
    env = {**bench_env(), "CODEX_WORKERS": str(WORKERS)}
    samples = [_start_cpu(env, root, number) for number in range(rounds)]
    cold = statistics.median(sample[0] for sample in samples)
    forked = statistics.median(sample[1] for sample in samples)
    return [
        figure(
            "cluster_start_forked_cpu_seconds",
            forked,
            "CPU s",
            ceiling=cold,
            goal=f"<= {FORKED_START_GOAL} of a cold start",
            meets=forked <= FORKED_START_GOAL * cold,
            notes=(
                f"a cluster of {WORKERS} workers, median of {rounds}: the CPU of "
                f"its process group when it reports running; forked by "
                f"codex_workers in a killed cluster's place {forked:.2f} s, a cold "
                f"manage.py qcluster {cold:.2f} s (the ceiling); samples "
                + ", ".join(f"{c:.2f}/{f:.2f}" for c, f in samples)
            ),
        )
    ]


def run(smoke: bool) -> list[dict]:
    """Both brokers; one kill each in smoke mode, five in full. The start-up
    CPU: one sample in smoke mode, three in full."""
    rounds = 1 if smoke else 5
    with tempfile.TemporaryDirectory(prefix="bench-recovery-") as tmp:
        root = Path(tmp)
        return (
            _measure("orm", rounds, root)
            + _measure("redis", rounds, root)
            + _measure_start(1 if smoke else 3, root)
        )
