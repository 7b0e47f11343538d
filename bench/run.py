"""Run the benchmarks and write the report.

    python -m bench.run          # full, a few minutes: bench/REPORT.md, report.json
    python -m bench.run --smoke  # CI, about two minutes: var/bench/REPORT.md, ...

Each run drops and recreates a throwaway PostgreSQL database (codex_bench;
CODEX_BENCH_DB / CODEX_BENCH_PG to change it), migrates it, measures, and drops
it. Figures 3 and 4 (webhook, pipeline) start gunicorn, a Locust load generator
and live `manage.py qcluster` workers on it, with the model stub on loopback;
their jobs and schedules are dropped before a cluster starts, so nothing leaves
the machine. CODEX_BENCH_PIPELINE_PLAN ("1:6,2:8,4:16,8:32", workers:tasks)
changes the pipeline's plan. The pipeline's CPU per task is judged against the
commit its goal was set on, measured by this benchmark in a git worktree of it
in the same run (CODEX_BENCH_BASELINE: another commit, or none;
CODEX_BENCH_BASELINE_ROUNDS: how many of its runs, 3, 1 in smoke mode). The
intake figure's gunicorn runs bench.settings (Codex's settings plus the bare
ceiling view of bench/bare.py); every other process runs Codex's own settings.
The full run's figures are only as good as the machine is quiet: run it with
nothing else on it (`uptime` below 1.5).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import common  # noqa: E402

# Figures the issue asks for that no module measures yet: (name, unit, goal, why).
NOT_DONE: list[tuple[str, str, str, str]] = []


def machine() -> dict:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    mem_kb = int(
        next(
            line.split()[1]
            for line in Path("/proc/meminfo").read_text().splitlines()
            if line.startswith("MemTotal")
        )
    )
    return {
        "nproc": os.cpu_count(),
        "memory_gb": round(mem_kb / 1024 / 1024, 1),
        "cpu": cpu,
        "python_loop_cpu_s": python_loop_cpu(),
    }


def python_loop_cpu(rounds: int = 3) -> float:
    """CPU seconds of one fixed pure-Python loop (the best of `rounds`): how
    fast this machine runs Python, so that CPU figures from reports made on
    different machines can be compared (machines here have differed by 2.5x
    for the same code)."""
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        total = 0
        for i in range(5_000_000):
            total += i
        best = min(best, time.process_time() - start)
    return round(best, 3)


def versions() -> dict:
    import django
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        pg = cursor.fetchone()[0]
    return {
        "python": platform.python_version(),
        "django": django.get_version(),
        "postgresql": pg,
    }


def _cell(x) -> str:
    if x is None:
        return "—"
    return f"{x:g}" if isinstance(x, float | int) else str(x)


def markdown(report: dict) -> str:
    m, v = report["machine"], report["versions"]
    lines = [
        "# Codex benchmarks",
        "",
        f"Mode: **{report['mode']}**, {report['started_at']}, {report['seconds']} s.",
        f"Machine: {m['nproc']} CPUs ({m['cpu']}), {m['memory_gb']} GB RAM"
        + (
            f"; a fixed Python loop takes {m['python_loop_cpu_s']} CPU s here "
            "(compare CPU figures across machines by it)."
            if m.get("python_loop_cpu_s")
            else "."
        ),
        f"Versions: Python {v['python']}, Django {v['django']}, "
        f"PostgreSQL {v['postgresql']}.",
        "",
        "Each ratio is against a ceiling measured in the same run. "
        "`NO` marks a figure that falls short of its goal or was not measured.",
        "",
        "| figure | value | unit | ceiling | ratio | goal | meets |",
        "|---|---|---|---|---|---|---|",
    ]
    for f in report["figures"]:
        meets = "yes" if f["meets_goal"] else "**NO**"
        lines.append(
            f"| {f['name']} | {_cell(f['value'])} | {f['unit']} | "
            f"{_cell(f['ceiling'])} | {_cell(f['ratio'])} | {f['goal']} | {meets} |"
        )
    lines += ["", "## Notes", ""]
    for f in report["figures"]:
        if f.get("notes"):
            lines.append(f"- **{f['name']}**: {f['notes']}")
    short = [f["name"] for f in report["figures"] if not f["meets_goal"]]
    lines += ["", "## Falls short", ""]
    lines += [f"- {name}" for name in short] or ["- nothing"]
    commentary = common.ROOT / "bench" / "COMMENTARY.md"
    if report["mode"] == "full" and commentary.exists():
        # Written by people after a full run: what falls short, and why.
        lines += ["", commentary.read_text().rstrip()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--smoke", action="store_true", help="seconds-long CI mode")
    parser.add_argument(
        "--out", help="report directory (default: bench/ full, var/bench/ smoke)"
    )
    parser.add_argument("--only", help="comma-separated modules to run")
    parser.add_argument("--keep-db", action="store_true")
    args = parser.parse_args(argv)
    out = (
        Path(args.out)
        if args.out
        else (common.ROOT / "var" / "bench" if args.smoke else common.ROOT / "bench")
    )
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    started_at = datetime.now(UTC).isoformat(timespec="seconds")

    common.recreate_database()
    os.environ.update(common.bench_env())
    for key in [k for k in os.environ if k.startswith("REDIS_URL")]:
        del os.environ[key]
    os.chdir(common.ROOT)
    import django

    django.setup()
    from django.db import connection

    modules = [
        "transitions",
        "claims",
        "github_sync",
        "intake",
        "lists",
        "agent_context",
        "repo_map",
        "git_steps",
        "jail",
        "scheduled",
        "webhook",
        "pipeline",
        "recovery",
    ]
    if args.only:
        modules = [m for m in modules if m in args.only.split(",")]
    figures: list[dict] = []
    try:
        for name in modules:
            t = time.perf_counter()
            print(f"[bench] {name} ...", flush=True)
            try:
                module = __import__(f"bench.{name}", fromlist=["run"])
                results = module.run(args.smoke)
            except Exception as exc:  # noqa: BLE001 - reported, the others go on
                traceback.print_exc()
                results = [
                    common.not_measured(name, "", "see notes", f"error: {exc!r}")
                ]
            for r in results:
                print(
                    f"[bench]   {r['name']} = {r['value']} {r['unit']} "
                    f"(ratio {r['ratio']}, goal {r['goal']}, meets {r['meets_goal']})"
                )
            print(f"[bench] {name} took {time.perf_counter() - t:.1f} s", flush=True)
            figures += results
        figures += [common.not_measured(*entry) for entry in NOT_DONE]
        report = {
            "mode": "smoke" if args.smoke else "full",
            "started_at": started_at,
            "machine": machine(),
            "versions": versions(),
            "figures": figures,
        }
    finally:
        connection.close()
        if not args.keep_db:
            common.drop_database()
    report["seconds"] = round(time.perf_counter() - started, 1)
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    (out / "REPORT.md").write_text(markdown(report))
    print(f"[bench] wrote {out / 'REPORT.md'} and {out / 'report.json'}")
    failed = [
        f for f in figures if f["value"] is None and "error" in f.get("notes", "")
    ]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
