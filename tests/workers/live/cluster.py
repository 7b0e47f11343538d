"""A harness for live django-q2 clusters: `manage.py qcluster` subprocesses.

Each cluster is started in a session of its own (start_new_session=True), so
its process group holds the cluster, its sentinel, pusher, monitor and workers:
`kill()` SIGKILLs all of them at once, as a machine losing power would, and
`stop()` asks the cluster to stop (SIGTERM to its main process) and SIGKILLs
whatever is left after a deadline. `Clusters.cleanup()` kills every cluster it
started; the `clusters` fixture calls it in its finalizer, also on failure.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

from django.conf import settings
from django.db import connections

from tests.workers.live import side_effect_runner as runner

ROOT = Path(__file__).resolve().parents[3]
RUNNER = "tests.workers.live.side_effect_runner.SideEffectRunner"

# timeout < retry (settings refuse anything else); the minimum timeout is 10 s.
JOB_TIMEOUT = 10
JOB_RETRY = 15
LEASE_SECONDS = 5
HEARTBEAT_SECONDS = 2

# Variables of the test process that must not leak into a worker's settings.
_OWN_PREFIXES = ("CODEX_", "DATABASE_URL", "REDIS_URL", "SECRET_KEY", "Q_CLUSTER")


def database_url() -> str:
    """The pytest test database (test_<name>), as a DATABASE_URL."""
    db = settings.DATABASES["default"]
    user = quote(db.get("USER") or "postgres", safe="")
    password = db.get("PASSWORD") or ""
    credentials = f"{user}:{quote(password, safe='')}" if password else user
    host = db.get("HOST") or "127.0.0.1"
    port = db.get("PORT") or 5432
    return f"postgres://{credentials}@{host}:{port}/{quote(db['NAME'], safe='')}"


@dataclass
class Files:
    """The files a test shares with its workers."""

    side_effect_log: Path
    run_log: Path

    def side_effect_lines(self) -> list[str]:
        return runner.read_lines(str(self.side_effect_log))

    def run_entries_started(self) -> list[dict]:
        """The run(task) calls that have started so far (raw log entries)."""
        return [e for e in self._run_entries() if e["event"] == "start"]

    def runs(self) -> list[dict]:
        """One dict per run(task) call: task, phase, pid, start, end (None when
        the worker died inside it)."""
        by_id: dict[str, dict] = {}
        for entry in self._run_entries():
            run = by_id.setdefault(
                entry["run"],
                {
                    "task": entry["task"],
                    "phase": entry["phase"],
                    "pid": entry["pid"],
                    "start": None,
                    "end": None,
                },
            )
            run[entry["event"]] = entry["t"]
        return sorted(by_id.values(), key=lambda run: run["start"] or 0)

    def _run_entries(self) -> list[dict]:
        return [json.loads(line) for line in runner.read_lines(str(self.run_log))]


def worker_env(
    files: Files,
    *,
    workers: int = 1,
    redis_url: str | None = None,
    sleep_seconds: float = 0,
    sleep_phases: tuple[str, ...] = ("implementation",),
    sleep_where: str = "action",
    var_dir: Path | None = None,
) -> dict[str, str]:
    """The environment of a worker: the test database, the side-effect runner,
    short timeouts and leases; the Redis broker when `redis_url` is given."""
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(_OWN_PREFIXES)
    }
    env.update(
        {
            "PYTHONPATH": str(ROOT),
            "DJANGO_SETTINGS_MODULE": "codex.settings",
            "PYTHONUNBUFFERED": "1",
            "DATABASE_URL": database_url(),
            # The same key as the test process: django-q signs its packages.
            "SECRET_KEY": settings.SECRET_KEY,
            "CODEX_TESTING": "1",
            "CODEX_PHASE_RUNNER": RUNNER,
            "CODEX_JOB_TIMEOUT": str(JOB_TIMEOUT),
            "CODEX_JOB_RETRY": str(JOB_RETRY),
            "CODEX_JOB_MAX_ATTEMPTS": "3",
            "CODEX_WORKERS": str(workers),
            "CODEX_LEASE_SECONDS": str(LEASE_SECONDS),
            # At most half the lease (settings refuse more): renewed in time.
            "CODEX_HEARTBEAT_SECONDS": str(HEARTBEAT_SECONDS),
            "CODEX_LEASE_RETRY_BACKOFF_SECONDS": "0",
            "CODEX_LOG_LEVEL": "INFO",
            runner.SIDE_EFFECT_LOG: str(files.side_effect_log),
            runner.RUN_LOG: str(files.run_log),
            runner.SLEEP_SECONDS: str(sleep_seconds),
            runner.SLEEP_PHASES: ",".join(sleep_phases),
            runner.SLEEP_WHERE: sleep_where,
        }
    )
    if var_dir is not None:
        env["CODEX_VAR_DIR"] = str(var_dir)
    if redis_url:
        env["REDIS_URL"] = redis_url
    return env


@dataclass
class Cluster:
    """One `manage.py qcluster` process group."""

    name: str
    process: subprocess.Popen
    log_path: Path
    killed: bool = False

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    def wait_running(self, timeout: float = 30, *, clusters: int = 1) -> None:
        """Until the sentinel reports the cluster running (workers forked), or
        a supervisor's `clusters` sentinels theirs."""
        wait_for(
            lambda: self.log().count(" running.") >= clusters,
            timeout,
            f"cluster {self.name} to start",
            clusters=[self],
            while_alive=[self],
        )

    def kill(self) -> None:
        """SIGKILL the whole process group at once: nobody gets to clean up.
        A supervisor's clusters (each in a session of its own) go first, or
        they would stop gracefully on their own after it."""
        self.killed = True
        for group in self.supervised_groups():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)
        self._killpg(signal.SIGKILL)
        self._reap()

    def supervised_groups(self) -> list[int]:
        """The process groups of the clusters a `manage.py codex_workers`
        supervisor runs now: its children, each leading a group of its own."""
        return [pid for pid in child_pids(self.pid) if process_group(pid) == pid]

    def stop(self, timeout: float = 20) -> None:
        """Ask the cluster to stop (SIGTERM to its main process), then SIGKILL
        the group if it is still there after `timeout` seconds."""
        if self.alive():
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.killed = True
        # Leftovers (a worker stuck in a job) go with the group.
        self._killpg(signal.SIGKILL)
        self._reap()

    def _reap(self) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout=10)

    def _killpg(self, sig: int) -> None:
        # The group id is the pid of the session leader we started.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)


@dataclass
class Clusters:
    """Starts clusters for one test and kills them all in `cleanup()`."""

    directory: Path
    started: list[Cluster] = field(default_factory=list)

    def start(
        self, env: dict[str, str], *, wait: bool = True, supervised: int = 0
    ) -> Cluster:
        """A `manage.py qcluster`, or with `supervised` a `manage.py
        codex_workers` keeping that many clusters running (forked warm)."""
        # The workers need the database; the test must not hold a connection
        # (and certainly no lock) while they start.
        connections.close_all()
        name = f"cluster{len(self.started) + 1}"
        log_path = self.directory / f"{name}.log"
        command = ["qcluster"]
        if supervised:
            command = ["codex_workers", "--clusters", str(supervised)]
        with open(log_path, "ab") as log:
            process = subprocess.Popen(
                [sys.executable, str(ROOT / "manage.py"), *command],
                cwd=str(ROOT),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        cluster = Cluster(name=name, process=process, log_path=log_path)
        self.started.append(cluster)
        if wait:
            cluster.wait_running(clusters=supervised or 1)
        return cluster

    def logs(self) -> str:
        return "\n".join(
            f"--- {cluster.name} (pid {cluster.pid}) ---\n{cluster.log_tail()}"
            for cluster in self.started
        )

    def cleanup(self) -> None:
        """Kill every cluster: the test is over, and a graceful stop would
        spend CODEX_STOP_GRACE_SECONDS on steps that are still running."""
        for cluster in self.started:
            if cluster.alive() or not cluster.killed:
                cluster.kill()
        connections.close_all()


def process_group(pid: int) -> int | None:
    """The process group of `pid` (from /proc), None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            # After the command name in parentheses: state, ppid, pgrp, ...
            return int(handle.read().rsplit(")", 1)[1].split()[2])
    except (OSError, IndexError, ValueError):
        return None


def child_pids(parent: int) -> list[int]:
    """The processes whose parent is `parent` (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid == parent:
            found.append(int(entry))
    return found


def wait_for(
    predicate: Callable[[], object],
    timeout: float,
    what: str,
    *,
    clusters: list[Cluster] | Clusters | None = None,
    while_alive: list[Cluster] = (),
    interval: float = 0.1,
):
    """Poll `predicate` until it returns something truthy; fail after `timeout`
    seconds (or as soon as a cluster in `while_alive` dies) with the clusters'
    logs in the message."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        dead = [cluster.name for cluster in while_alive if not cluster.alive()]
        if dead or time.monotonic() > deadline:
            if isinstance(clusters, Clusters):
                logs = clusters.logs()
            else:
                logs = "\n".join(
                    f"--- {c.name} ---\n{c.log_tail()}" for c in clusters or []
                )
            reason = f"{', '.join(dead)} exited" if dead else f"{timeout:.0f} s"
            raise AssertionError(f"gave up waiting for {what} ({reason})\n{logs}")
        time.sleep(interval)
