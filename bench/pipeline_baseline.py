"""Codex's own CPU per task as measured on the code its goal was set on, in the
same run: the ceiling of `pipeline_codex_cpu_seconds_per_task`.

Absolute CPU seconds follow the machine (the same code has measured 0.31 and
0.54 CPU s per task on two machines here), so the goal, half of what Codex
spent when it was set, is judged against that code run on this machine now.
`measure` checks the commit out into a git worktree beside this one, lays this
checkout's `bench` package over the commit's own (one harness measures both:
the same warm-up, the same CPU window, up to the queue drained after the last
task), and runs `python -m bench.run --only pipeline` there with its own
throwaway database, at the workers and tasks of the current figure; the
report's `pipeline_codex_cpu_seconds_per_task` row carries the split (workers,
PostgreSQL, git). The harness drives the code through tests/live_pipeline.py,
whose interface the commit shares.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from statistics import fmean

from bench.common import BENCH_DB, PG, ROOT, figure

# The code the goal was set on (README, "Benchmarks"): Codex's CPU per task
# then is the figure to halve.
BASELINE_COMMIT = "973d989ed720aacec5bfc57f2882cd272ad4a4e2"
FIGURE = "pipeline_codex_cpu_seconds_per_task"
# Workers' and PostgreSQL's CPU seconds per task when the goal was set (the
# first full runs, on another machine): the fallback without a baseline.
ABSOLUTE_BEFORE = 0.45


class BaselineUnavailable(Exception):
    """The baseline could not be measured (its commit is not in this clone, or
    its benchmark failed); the reason is the message."""


def commit() -> str | None:
    """The baseline commit: CODEX_BENCH_BASELINE if set ("none" turns the
    baseline off), else BASELINE_COMMIT."""
    chosen = os.environ.get("CODEX_BENCH_BASELINE", BASELINE_COMMIT).strip()
    return None if chosen.lower() in ("", "none", "off") else chosen


@contextlib.contextmanager
def worktree(rev: str, path: Path) -> Iterator[Path]:
    """A detached git worktree of `rev` at `path` with this checkout's bench
    package in place of its own, sharing this checkout's virtual environment
    and with its bytecode compiled (as this checkout's is by the time its
    workers are warm), removed afterwards."""
    found = subprocess.run(
        ["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if found.returncode != 0:
        raise BaselineUnavailable(f"commit {rev} is not in this clone")
    added = subprocess.run(
        ["git", "worktree", "add", "--quiet", "--detach", str(path), rev],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if added.returncode != 0:
        raise BaselineUnavailable(f"git worktree add: {added.stderr.strip()}"[:400])
    try:
        shutil.rmtree(path / "bench")
        shutil.copytree(
            ROOT / "bench",
            path / "bench",
            ignore=shutil.ignore_patterns("__pycache__", "REPORT.md", "report.json"),
        )
        venv = ROOT / ".venv"
        if venv.exists():
            (path / ".venv").symlink_to(venv)
        subprocess.run(
            [sys.executable, "-m", "compileall", "-q", "codex", "agents"]
            + ["integrations", "bench", "manage.py"],
            cwd=path,
            check=False,
            capture_output=True,
        )
        yield path
    finally:
        subprocess.run(
            ["git", "worktree", "remove", "--force", str(path)],
            cwd=ROOT,
            check=False,
            capture_output=True,
        )
        subprocess.run(["git", "worktree", "prune"], cwd=ROOT, check=False)


def measure(rev: str, workers: int, tasks: int, root: Path) -> dict[str, float]:
    """Run `rev`'s pipeline benchmark at `workers` workers and `tasks` tasks in
    a worktree under `root`; returns its CPU seconds per task (`workers`,
    `postgresql`, `git`, and `own`: workers and PostgreSQL). Raises
    BaselineUnavailable with the reason when it cannot."""
    out = root / "baseline-report"
    log = root / "baseline.log"
    env = {
        **os.environ,
        # Its own database, beside this run's: nothing of either is shared.
        "CODEX_BENCH_DB": f"{BENCH_DB}_baseline",
        "CODEX_BENCH_PG": PG,
        "CODEX_BENCH_PIPELINE_PLAN": f"{workers}:{tasks}",
        "CODEX_BENCH_BASELINE": "none",  # it is the baseline
    }
    with worktree(rev, root / "baseline-src") as source, log.open("w") as output:
        run = subprocess.Popen(
            [sys.executable, "-m", "bench.run", "--only", "pipeline"]
            + ["--out", str(out)],
            cwd=source,
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )
        try:
            returncode = run.wait(timeout=600 + 60 * tasks)
        except subprocess.TimeoutExpired:
            # An interrupt, not a kill: its clean-up stops the cluster it
            # started (in a session of its own) and drops its database.
            run.send_signal(signal.SIGINT)
            try:
                run.wait(timeout=90)
            except subprocess.TimeoutExpired:
                run.kill()
                run.wait()
            raise BaselineUnavailable(
                f"its benchmark took over {600 + 60 * tasks} s"
            ) from None
    return read_report(out / "report.json", returncode, log)


def read_report(path: Path, returncode: int, log: Path) -> dict[str, float]:
    """The baseline's CPU split from its report.json (see measure)."""
    tail = log.read_text(errors="replace")[-400:] if log.exists() else ""
    if not path.exists():
        raise BaselineUnavailable(f"its benchmark exited {returncode}: {tail}")
    figures = json.loads(path.read_text())["figures"]
    row = next((f for f in figures if f["name"] == FIGURE), None)
    if row is None or row.get("workers") is None or row.get("postgresql") is None:
        raise BaselineUnavailable(
            f"its report has no {FIGURE} split: {row and row.get('notes')}"[:400]
        )
    return {
        "workers": row["workers"],
        "postgresql": row["postgresql"],
        "git": row.get("git") or 0.0,
        "own": row["workers"] + row["postgresql"],
    }


def codex_cpu_figures(
    current: list[dict],
    baseline: list[dict[str, float]],
    qa: dict[str, float] | None,
    *,
    rev: str | None,
    missing: str = "",
) -> list[dict]:
    """`pipeline_codex_cpu_seconds_per_task` (workers and PostgreSQL, judged
    against the baseline's: goal at most half) and its git beside the
    baseline's, from this run's runs at the most workers (`current`, their
    `cpu_split`) and the baseline's runs alternating with them. Without a
    baseline (`missing` says why) the goal falls back to the absolute figure
    measured when it was set, on another machine."""
    seen = qa["seen"] if qa else 0.0
    splits = [r["cpu_split"] for r in current]
    own_each = [s["workers"] + s["postgresql"] for s in splits]
    own = fmean(own_each)
    workers = fmean(s["workers"] for s in splits)
    postgresql = fmean(s["postgresql"] for s in splits)
    git = fmean(max(s["git_and_pytest"] - seen, 0.0) for s in splits)
    children = fmean(s["git_and_pytest"] for s in splits)
    tests = (
        "not measured"
        if qa is None
        else f"{seen:.3f} seen through the jail ({qa['actual']:.3f} CPU s unjailed: "
        "the part of the machine's CPU that is the repository's tests)"
    )
    where = (
        f"at {current[0]['workers']} workers, {current[0]['tasks']} tasks, mean of "
        f"{len(current)} run(s) ({', '.join(f'{x:.3f}' for x in own_each)})"
    )
    split = (
        f"per task: workers {workers:.3f} + PostgreSQL {postgresql:.3f} = "
        f"{own:.3f} CPU s; git {git:.3f} (the workers' children {children:.3f} "
        f"less one QA test run: {tests}). PostgreSQL is every postgres process "
        "of the machine: on a shared machine, others' too"
    )
    if not baseline:
        return [
            figure(
                FIGURE,
                own,
                "CPU s",
                goal=f"workers and PostgreSQL <= {ABSOLUTE_BEFORE / 2:g} CPU s per "
                f"task (half of {ABSOLUTE_BEFORE:g}, measured on another machine: "
                "no baseline in this run)",
                meets=qa is not None and own <= ABSOLUTE_BEFORE / 2,
                notes=f"{where}; {split}; no baseline: {missing or 'turned off'}",
                workers=round(workers, 4),
                postgresql=round(postgresql, 4),
                git=round(git, 4),
                qa_test_run_cpu=None if qa is None else round(qa["actual"], 4),
            )
        ]
    base_own = fmean(b["own"] for b in baseline)
    against = (
        f"ceiling: the same figure of {rev[:12]} (the code the goal was set on) "
        "measured by this benchmark in a worktree in this run, alternating with "
        f"this code's runs: workers {fmean(b['workers'] for b in baseline):.3f} + "
        f"PostgreSQL {fmean(b['postgresql'] for b in baseline):.3f} = "
        f"{base_own:.3f}, mean of {len(baseline)} run(s) ("
        + ", ".join(f"{b['own']:.3f}" for b in baseline)
        + ")"
    )
    return [
        figure(
            FIGURE,
            own,
            "CPU s",
            ceiling=base_own,
            goal=f"ratio <= 0.5 of {rev[:7]}'s workers and PostgreSQL CPU per "
            "task, measured in the same run",
            meets=qa is not None and own / base_own <= 0.5,
            notes=f"{where}; {split}; {against}",
            workers=round(workers, 4),
            postgresql=round(postgresql, 4),
            git=round(git, 4),
            qa_test_run_cpu=None if qa is None else round(qa["actual"], 4),
        ),
        figure(
            "pipeline_codex_git_cpu_seconds_per_task",
            git,
            "CPU s",
            ceiling=fmean(b["git"] for b in baseline),
            goal=f"reported (git's CPU per task; ceiling: {rev[:7]}'s)",
            meets=True,
            notes=f"{where}; the baseline's git: "
            + ", ".join(f"{b['git']:.3f}" for b in baseline),
        ),
    ]
