"""Shared helpers: the figure shape, timing, the throwaway database."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

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
        CODEX_API_USER_RATE="100000000/second",
        CODEX_API_ANON_RATE="100000000/second",
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
