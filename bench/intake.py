"""Figure 1: POST /api/tasks/ under concurrent load against GET /healthz (one
SELECT 1) on the same gunicorn server in the same run.

The load is bench.load (Locust, FastHttpUser): a closed loop of concurrent
users (16; 8 in smoke mode) with no think time, a warm-up, then the same
duration for GET /healthz (the ceiling) and then POST /api/tasks/. Each POST is
a valid new task: its own title (a per-process counter), the bench user's API
token, no Idempotency-Key (a client retrying would send one; a fresh key per
request would only add its lookup). Any answer but 201 is counted and named in
the notes, and fails the goal.

Beside it, the in-process profile of one POST (Django test client, no HTTP):
its queries, and its CPU time against GET /healthz's.
"""

from __future__ import annotations

import itertools
import os
import tempfile
import time
from pathlib import Path

from bench.common import bench_env, figure, gunicorn, not_measured
from bench.load import run_load

NAME = "intake_post_requests_per_second"
GOAL = "ratio >= 0.6 of GET /healthz requests/s on the same server"
REPOSITORY = "https://github.com/bench/intake"
# One counter per load process: every POST's title is its own.
_NUMBERS = itertools.count(1)


def intake_user(params: dict):
    """A Locust user creating tasks through POST /api/tasks/, expecting 201."""
    from locust import FastHttpUser, task

    headers = {
        "Content-Type": "application/json",
        "Authorization": f"Token {params['key']}",
    }

    class Intake(FastHttpUser):
        @task
        def send(self) -> None:
            body = {
                "repository": REPOSITORY,
                "title": f"Add login {next(_NUMBERS)}",
                "description": "As a user, I want to log in.",
                "priority": "high",
                "acceptance_criteria": "- Users can log in",
            }
            with self.client.post(
                "/api/tasks/",
                json=body,
                headers=headers,
                name="intake",
                catch_response=True,
            ) as response:
                if response.status_code != 201:
                    response.failure(f"HTTP {response.status_code}")

    return Intake


def _profile_one_post(key: str, samples: int) -> dict:
    """Queries, wall time and CPU time of one POST in-process (Django test
    client, no HTTP), and the CPU time of GET /healthz the same way.

    CPU time (time.process_time) is what bounds the requests/s of sync
    gunicorn workers on a busy machine, and is less noisy than wall time on a
    shared one. With CODEX_BENCH_PROFILE=<file>, a cProfile of `samples` POSTs
    (timed by CPU) is written there (read it with `python -m pstats <file>`).
    """
    import cProfile
    import statistics

    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(HTTP_AUTHORIZATION=f"Token {key}", HTTP_HOST="127.0.0.1")
    body = {"repository": REPOSITORY, "title": "Warm up"}

    def post() -> None:
        response = client.post("/api/tasks/", body, content_type="application/json")
        if response.status_code != 201:
            raise RuntimeError(f"POST /api/tasks/ answered {response.status_code}")

    post()
    with CaptureQueriesContext(connection) as captured:
        post()
    # Counted now: captured_queries slices connection.queries when read, and
    # the next request (request_started -> reset_queries) empties that log.
    queries = len(captured.captured_queries)
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
        "queries": queries,
        "wall_ms": statistics.median(wall) * 1000,
        "cpu_ms": statistics.median(cpu) * 1000,
        "healthz_cpu_ms": statistics.median(health_cpu) * 1000,
        "samples": samples,
    }


def run(smoke: bool) -> list[dict]:
    import importlib.util

    from django.contrib.auth import get_user_model
    from django.db import connections

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
    if importlib.util.find_spec("locust") is None:
        return [
            not_measured(
                NAME, "requests/s", GOAL, "locust is not installed (dev requirements)"
            ),
            cpu_figure,
        ]
    workers = int(os.environ.get("CODEX_BENCH_GUNICORN_WORKERS", "3"))
    users = 8 if smoke else 16
    seconds = 2 if smoke else 15
    warmup = 0.5 if smoke else 2
    connections.close_all()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="codex-bench-intake-") as tmp:
        server, base = gunicorn(bench_env(), Path(tmp) / "gunicorn.log", workers)
        try:
            loads = run_load(
                base,
                {
                    "healthz": "bench.load:healthz_user",
                    "intake": "bench.intake:intake_user",
                },
                users=users,
                seconds=seconds,
                warmup=warmup,
                params={"key": key},
            )
        finally:
            server.stop()
    busy = (
        f"1-min load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} "
        f"after, on {os.cpu_count()} CPUs"
    )
    trivial, intake = loads["healthz"], loads["intake"]
    created = intake["statuses"].get("201", 0)
    other = {k: v for k, v in intake["statuses"].items() if k != "201"}
    if not intake["requests"] or not trivial["rps"]:
        return [
            not_measured(NAME, "requests/s", GOAL, f"no requests: {loads}"),
            cpu_figure,
        ]
    ratio = intake["rps"] / trivial["rps"]
    # The Dockerfile runs the same: sync workers, GUNICORN_WORKERS (3) of them;
    # it also writes an access log line per request, which this does not.
    setup = (
        f"Locust FastHttpUser, {users} concurrent users, closed loop, {warmup:g} s "
        f"warm-up then {seconds} s each; gunicorn --workers {workers} (sync, as "
        f"the Dockerfile); ORM broker (enqueue in the same DB); {busy}"
    )
    return [
        figure(
            NAME,
            intake["rps"],
            "requests/s",
            ceiling=trivial["rps"],
            goal=GOAL,
            meets=ratio >= 0.6 and not other,
            notes=f"{setup}; {in_process}; {intake['requests']} POSTs, "
            f"{created} created (201), {sum(other.values())} other {other}; "
            f"POST p50 {_fmt(intake['p50'])} ms p99 {_fmt(intake['p99'])} ms; "
            f"ceiling GET /healthz {trivial['rps']:.0f}/s, p50 "
            f"{_fmt(trivial['p50'])} ms p99 {_fmt(trivial['p99'])} ms, "
            f"statuses {trivial['statuses']}",
        ),
        cpu_figure,
        figure(
            "intake_post_p50_ms",
            intake["p50"],
            "ms",
            goal="reported",
            meets=True,
            notes=setup,
        ),
        figure(
            "intake_post_p99_ms",
            intake["p99"],
            "ms",
            goal="reported",
            meets=True,
            notes=setup,
        ),
    ]


def _fmt(value) -> str:
    return "—" if value is None else f"{value:.1f}"
