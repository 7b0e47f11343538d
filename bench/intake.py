"""Figure 1: POST /api/tasks/ under concurrent load (wrk) against GET /healthz
(one SELECT 1) on the same gunicorn server in the same run."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from bench.common import ROOT, bench_env, figure, not_measured

NAME = "intake_post_requests_per_second"
GOAL = "ratio >= 0.6 of GET /healthz requests/s on the same server"
_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _latency_ms(text: str, percentile: str) -> float | None:
    match = re.search(rf"^\s*{percentile}%\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
    return float(match.group(1)) * _UNITS[match.group(2)] if match else None


def _wrk(url: str, seconds: int, connections: int, script: str | None) -> dict:
    command = ["wrk", "-t2", f"-c{connections}", f"-d{seconds}s", "--latency"]
    if script:
        command += ["-s", script]
    out = subprocess.run(
        [*command, url], capture_output=True, text=True, timeout=seconds + 60
    ).stdout
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    bad = re.search(r"Non-2xx or 3xx responses:\s+(\d+)", out)
    total = re.search(r"(\d+) requests in", out)
    return {
        "rps": float(rps.group(1)) if rps else None,
        "p50_ms": _latency_ms(out, "50"),
        "p99_ms": _latency_ms(out, "99"),
        "non_2xx": int(bad.group(1)) if bad else 0,
        "requests": int(total.group(1)) if total else 0,
        "raw": out,
    }


def _profile_one_post(key: str, samples: int) -> dict:
    """Queries, wall time and CPU time of one POST in-process (Django test
    client, no HTTP), and the CPU time of GET /healthz the same way.

    CPU time (time.process_time) is what bounds the requests/s of sync
    gunicorn workers on a busy machine, and is less noisy than wrk on a shared
    one. With CODEX_BENCH_PROFILE=<file>, a cProfile of `samples` POSTs (timed
    by CPU) is written there (read it with `python -m pstats <file>`).
    """
    import cProfile
    import statistics

    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(HTTP_AUTHORIZATION=f"Token {key}", HTTP_HOST="127.0.0.1")
    body = {"repository": "https://github.com/bench/intake", "title": "Warm up"}

    def post() -> None:
        client.post("/api/tasks/", body, content_type="application/json")

    post()
    with CaptureQueriesContext(connection) as queries:
        post()
    wall, cpu = [], []
    for _ in range(samples):
        wall_start, cpu_start = time.perf_counter(), time.process_time()
        post()
        cpu.append(time.process_time() - cpu_start)
        wall.append(time.perf_counter() - wall_start)
    health = Client(HTTP_HOST="127.0.0.1")
    health_cpu = []
    for _ in range(samples):
        cpu_start = time.process_time()
        health.get("/healthz")
        health_cpu.append(time.process_time() - cpu_start)
    if path := os.environ.get("CODEX_BENCH_PROFILE"):
        profiler = cProfile.Profile(time.process_time)
        profiler.runcall(lambda: [post() for _ in range(samples)])
        profiler.dump_stats(path)
    return {
        "queries": len(queries.captured_queries),
        "wall_ms": statistics.median(wall) * 1000,
        "cpu_ms": statistics.median(cpu) * 1000,
        "healthz_cpu_ms": statistics.median(health_cpu) * 1000,
        "samples": samples,
    }


def run(smoke: bool) -> list[dict]:
    from django.contrib.auth import get_user_model

    from codex.accounts.models import ApiToken

    user = get_user_model().objects.create_user("benchintake", password="x")
    _, key = ApiToken.issue(user, "bench-intake")
    profile = _profile_one_post(key, 20 if smoke else 200)
    in_process = (
        f"one POST in-process: {profile['queries']} queries, median "
        f"{profile['wall_ms']:.1f} ms wall, {profile['cpu_ms']:.2f} ms CPU "
        f"(GET /healthz {profile['healthz_cpu_ms']:.2f} ms CPU), "
        f"{profile['samples']} samples"
    )
    cpu_figure = figure(
        "intake_post_cpu_ms_in_process",
        profile["cpu_ms"],
        "ms",
        goal="reported (CPU per POST; lower is better)",
        meets=True,
        notes=in_process,
    )
    if not shutil.which("wrk"):
        return [
            not_measured(
                NAME, "requests/s", GOAL, "wrk is not installed (apt-get install wrk)"
            ),
            cpu_figure,
        ]
    workers = int(os.environ.get("CODEX_BENCH_GUNICORN_WORKERS", "3"))
    port = _free_port()
    server = subprocess.Popen(
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
        cwd=ROOT,
        env=bench_env(),
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    seconds = 2 if smoke else 15
    connections = 8 if smoke else 16
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=2)
                break
            except OSError:
                time.sleep(0.1)
        body = json.dumps(
            {
                "repository": "https://github.com/bench/intake",
                "title": "Add login",
                "description": "As a user, I want to log in.",
                "priority": "high",
                "acceptance_criteria": "- Users can log in",
            }
        )
        with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
            script.write(
                'wrk.method = "POST"\n'
                f"wrk.body = {json.dumps(body)}\n"
                'wrk.headers["Content-Type"] = "application/json"\n'
                f'wrk.headers["Authorization"] = "Token {key}"\n'
            )
        if not smoke:  # warm-up
            _wrk(f"{base}/healthz", 1, connections, None)
            _wrk(f"{base}/api/tasks/", 1, connections, script.name)
        trivial = _wrk(f"{base}/healthz", seconds, connections, None)
        intake = _wrk(f"{base}/api/tasks/", seconds, connections, script.name)
        os.unlink(script.name)
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
    if intake["rps"] is None or trivial["rps"] is None:
        return [
            not_measured(
                NAME, "requests/s", GOAL, "wrk output unparsed: " + intake["raw"][-300:]
            )
        ]
    ratio = intake["rps"] / trivial["rps"]
    # The Dockerfile runs the same: sync workers, GUNICORN_WORKERS (3) of them;
    # it also writes an access log line per request, which this does not.
    setup = (
        f"wrk -t2 -c{connections} -d{seconds}s; gunicorn --workers {workers} (sync, "
        "as the Dockerfile); ORM broker (enqueue in the same DB)"
    )
    return [
        figure(
            NAME,
            intake["rps"],
            "requests/s",
            ceiling=trivial["rps"],
            goal=GOAL,
            meets=ratio >= 0.6 and intake["non_2xx"] == 0,
            notes=f"{setup}; {in_process}; "
            f"{intake['requests']} POSTs, {intake['non_2xx']} non-2xx; "
            f"ceiling GET /healthz p50 {trivial['p50_ms']} ms "
            f"p99 {trivial['p99_ms']} ms",
        ),
        cpu_figure,
        figure(
            "intake_post_p50_ms",
            intake["p50_ms"],
            "ms",
            goal="reported",
            meets=True,
            notes=setup,
        ),
        figure(
            "intake_post_p99_ms",
            intake["p99_ms"],
            "ms",
            goal="reported",
            meets=True,
            notes=setup,
        ),
    ]
