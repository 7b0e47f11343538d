"""Shared helpers: the figure shape, timing, the throwaway database."""

from __future__ import annotations

import contextlib
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from cryptography.fernet import Fernet

ROOT = Path(__file__).resolve().parents[1]
BENCH_DB = os.environ.get("CODEX_BENCH_DB", "codex_bench")
PG = os.environ.get("CODEX_BENCH_PG", "postgres://postgres@127.0.0.1:5432")
DATABASE_URL = f"{PG}/{BENCH_DB}"
SECRET_KEY = "bench-secret-key-not-for-production-0123456789abcdef"


def bench_env() -> dict[str, str]:
    """The environment of the bench process and its subprocesses: the bench
    database, the ORM broker (no REDIS_URL: nothing leaks into a shared Redis),
    no API throttling (we measure Codex, not the rate limit)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CODEX_", "DATABASE_URL", "REDIS_URL", "Q_CLUSTER"))
    }
    env.update(
        DATABASE_URL=DATABASE_URL,
        SECRET_KEY=SECRET_KEY,
        CODEX_API_USER_RATE="off",
        CODEX_API_ANON_RATE="off",
        # Production settings want their keys: throwaway ones for the run.
        CODEX_FERNET_KEYS=Fernet.generate_key().decode(),
        ALLOWED_HOSTS="127.0.0.1,localhost",
        CODEX_VAR_DIR=str(ROOT / "var" / "bench"),
        CODEX_STATIC_ROOT=str(ROOT / "var" / "bench" / "static"),
        DJANGO_SETTINGS_MODULE="codex.settings",
    )
    return env


def recreate_database() -> None:
    import psycopg

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{BENCH_DB}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{BENCH_DB}"')
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"],
        cwd=ROOT,
        env=bench_env(),
        check=True,
    )


def drop_database() -> None:
    import psycopg

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{BENCH_DB}" WITH (FORCE)')


def figure(
    name: str,
    value: float | None,
    unit: str,
    *,
    ceiling: float | None = None,
    goal: str,
    meets: bool | None = None,
    ratio: float | None = None,
    notes: str = "",
    **extra,
) -> dict:
    """One report entry. `ratio` defaults to value / ceiling."""
    if ratio is None and value is not None and ceiling:
        ratio = value / ceiling
    entry = {
        "name": name,
        "value": None if value is None else round(value, 4),
        "unit": unit,
        "ceiling": None if ceiling is None else round(ceiling, 4),
        "ratio": None if ratio is None else round(ratio, 4),
        "goal": goal,
        "meets_goal": bool(meets) if value is not None else False,
    }
    if notes:
        entry["notes"] = notes
    entry.update(extra)
    return entry


def not_measured(name: str, unit: str, goal: str, reason: str) -> dict:
    return figure(
        name, None, unit, goal=goal, meets=False, notes=f"not measured: {reason}"
    )


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


class Timer:
    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.start


# -- live servers: gunicorn, qcluster, a bare repository on the local forge --

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Codex bench",
    "GIT_AUTHOR_EMAIL": "bench@localhost",
    "GIT_COMMITTER_NAME": "Codex bench",
    "GIT_COMMITTER_EMAIL": "bench@localhost",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}
# Where a stray GitHub call from a live worker would go: nowhere (loopback,
# discard port), so nothing leaves the machine whatever a job tries.
NOWHERE = "https://127.0.0.1:9"


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        env={**os.environ, **GIT_ENV},
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def bare_repository(root: Path, files: dict[str, str], name: str = "sample") -> Path:
    """<root>/<name>.git, a bare repository whose main holds `files`."""
    seed = root / f"{name}-seed"
    seed.mkdir(parents=True)
    for path, content in files.items():
        (seed / path).write_text(content)
    git("init", "--quiet", "-b", "main", cwd=seed)
    git("add", "--all", cwd=seed)
    git("-c", "commit.gpgsign=false", "commit", "--quiet", "-m", "seed", cwd=seed)
    bare = root / f"{name}.git"
    git("clone", "--quiet", "--bare", str(seed), str(bare), cwd=root)
    return bare


def quiet_queue() -> dict[str, int]:
    """Before a live cluster starts on the bench database: drop the jobs other
    figures left queued (intake's POSTs enqueue steps of tasks on github.com
    URLs) and every schedule (a GitHub sync would try to reach GitHub).
    Returns what was dropped."""
    from django_q.models import OrmQ, Schedule

    jobs, _ = OrmQ.objects.all().delete()
    schedules, _ = Schedule.objects.all().delete()
    return {"jobs": jobs, "schedules": schedules}


def wait_until(predicate, timeout: float, what: str, interval: float = 0.02):
    """Poll `predicate` until truthy; raise TimeoutError naming `what`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up waiting for {what} after {timeout:.0f} s")
        time.sleep(interval)


class Server:
    """A subprocess in its own session (its process group holds its children);
    `stop()` sends it SIGTERM, and SIGKILL to the group after a deadline."""

    def __init__(self, command: list[str], env: dict[str, str], log: Path) -> None:
        self.log_path = log
        with open(log, "ab") as out:
            self.process = subprocess.Popen(
                command,
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 20) -> None:
        import signal

        # SIGTERM to the main process only: it stops its own children (a
        # qcluster whose workers got the signal too waits for them in vain).
        try:
            os.kill(self.process.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(timeout)
        # Leftovers (a worker stuck in a job) go with the group.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(10)


def gunicorn(env: dict[str, str], log: Path, workers: int = 3) -> tuple[Server, str]:
    """Codex under gunicorn (sync workers) on a free loopback port; returns the
    server and its base URL once GET /healthz answers."""
    import urllib.request

    port = free_port()
    server = Server(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "codex.wsgi",
            "--bind",
            f"127.0.0.1:{port}",
            "--workers",
            str(workers),
            "--log-level",
            "warning",
        ],
        env,
        log,
    )
    base = f"http://127.0.0.1:{port}"

    def up() -> bool:
        if not server.alive():
            raise RuntimeError("gunicorn exited:\n" + server.log()[-2000:])
        try:
            urllib.request.urlopen(f"{base}/healthz", timeout=2)
            return True
        except OSError:
            return False

    try:
        wait_until(up, 30, "gunicorn to answer", interval=0.1)
    except BaseException:
        server.stop()
        raise
    return server, base


def qcluster(env: dict[str, str], log: Path, timeout: float = 60) -> Server:
    """`manage.py qcluster` (CODEX_WORKERS workers from `env`), returned once
    its sentinel reports the cluster running. Call quiet_queue() first."""
    env = {**env, "CODEX_LOG_LEVEL": "INFO", "CODEX_Q_LOG_LEVEL": "INFO"}
    env.setdefault("GITHUB_BASE_URL", NOWHERE)
    server = Server([sys.executable, "manage.py", "qcluster"], env, log)

    def running() -> bool:
        if not server.alive():
            raise RuntimeError("qcluster exited:\n" + server.log()[-2000:])
        return " running." in server.log()

    try:
        wait_until(running, timeout, "the qcluster to start", interval=0.1)
    except BaseException:
        server.stop()
        raise
    return server


def percentile(samples: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100) of `samples`; None when empty."""
    if not samples:
        return None
    ordered = sorted(samples)
    rank = max(1, -(-len(ordered) * q // 100))  # ceil(n * q / 100)
    return ordered[int(rank) - 1]
