"""Figure 1: POST /api/tasks/ under concurrent load against the bare DRF
create view doing the same job (bench.bare: the same token authentication, a
serializer of the same five fields, one INSERT), on the same gunicorn server
(bench.settings: Codex's settings plus that one URL) in the same run. GET
/healthz (one SELECT 1) is still measured and reported beside them.

The load is bench.load (Locust, FastHttpUser): a closed loop of concurrent
users (16; 8 in smoke mode) with no think time, a warm-up, then GET /healthz
and alternating blocks of the bare view and of POST /api/tasks/ (alternating,
so that a neighbour's load on a shared machine falls on both). Each POST is a
valid new task: its own title (a per-process counter), the bench user's API
token, no Idempotency-Key (a client retrying would send one; a fresh key per
request would only add its lookup). Any answer but 201 is counted and named in
the notes, and fails the goal. The API throttles are off in the bench (a rate
of `off` reads and writes no cache); what they cost when on is measured below.

Beside it, in-process (Django test client, no HTTP): the queries of one POST,
and the CPU per request of the process and of its PostgreSQL backend, for
/healthz, the bare view and POST /api/tasks/; then what each of the API's
shared pieces costs a POST, each measured by turning it off and back on in
alternating blocks: the throttles at the default rates in the database cache
(the cache without Redis), the strict JSON parser against DRF's JSONParser,
and django-axes' middleware.
"""

from __future__ import annotations

import itertools
import os
import statistics
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from bench.common import bench_env, figure, gunicorn, not_measured
from bench.load import run_load

NAME = "intake_post_requests_per_second"
# The goal the many-machines work set (docs/deployment.md#measured).
INTAKE_GOAL = 0.75
GOAL = (
    f"ratio >= {INTAKE_GOAL} of the bare DRF create view's requests/s "
    "on the same server"
)
REPOSITORY = "https://github.com/bench/intake"
BARE_PATH = "/bench/bare-tasks/"
# One counter per load process: every POST's title is its own.
_NUMBERS = itertools.count(1)


def _body() -> dict:
    return {
        "repository": REPOSITORY,
        "title": f"Add login {next(_NUMBERS)}",
        "description": "As a user, I want to log in.",
        "priority": "high",
        "acceptance_criteria": "- Users can log in",
    }


def _poster(path: str, params: dict):
    """A Locust user POSTing new tasks to `path`, expecting 201."""
    from locust import FastHttpUser, task

    headers = {
        "Content-Type": "application/json",
        "Authorization": f"Token {params['key']}",
    }

    class Poster(FastHttpUser):
        @task
        def send(self) -> None:
            with self.client.post(
                path, json=_body(), headers=headers, name=path, catch_response=True
            ) as response:
                if response.status_code != 201:
                    response.failure(f"HTTP {response.status_code}")

    return Poster


def intake_user(params: dict):
    """POST /api/tasks/."""
    return _poster("/api/tasks/", params)


def bare_user(params: dict):
    """POST to the bare DRF create view (the ceiling)."""
    return _poster(BARE_PATH, params)


# -- in-process ---------------------------------------------------------------


def _backend_cpu_seconds() -> float:
    """CPU seconds so far of this connection's PostgreSQL backend (the server
    is on this machine: its CPU is taken from the same cores under load)."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _cpu_per_call(call, samples: int) -> dict:
    """Median CPU ms of this process per call, and mean CPU ms of its
    PostgreSQL backend per call (its clock ticks 100 times a second: only a
    mean over many calls means anything)."""
    backend = _backend_cpu_seconds()
    cpu = []
    for _ in range(samples):
        start = time.process_time()
        call()
        cpu.append(time.process_time() - start)
    backend = _backend_cpu_seconds() - backend
    django_ms = statistics.median(cpu) * 1000
    pg_ms = backend / samples * 1000
    return {"django_ms": django_ms, "pg_ms": pg_ms, "ms": django_ms + pg_ms}


def _posting(key: str, path: str):
    """A POST of a new task to `path`, through a test client made now (the
    client loads the middleware on its first request)."""
    from django.test import Client

    client = Client(HTTP_AUTHORIZATION=f"Token {key}", HTTP_HOST="127.0.0.1")

    def post() -> None:
        response = client.post(path, _body(), content_type="application/json")
        if response.status_code != 201:
            raise RuntimeError(f"POST {path} answered {response.status_code}")

    return post


@contextmanager
def _piece(piece: str, on: bool):
    """Codex as configured, with one shared piece of the API path on or off."""
    from django.conf import settings
    from django.core.cache import caches
    from django.test import override_settings
    from rest_framework.parsers import JSONParser

    from codex.core.api.throttles import THROTTLE_CACHE
    from codex.tasks.api.views import TaskViewSet

    if piece == "throttles":
        # On: the default rates, counted in the database cache (no Redis here),
        # from an empty count (a block stays under 600 POSTs a minute).
        caches[THROTTLE_CACHE].clear()
        rates = ("600/minute", "60/minute") if on else ("off", "off")
        with override_settings(
            CODEX_API_USER_RATE=rates[0], CODEX_API_ANON_RATE=rates[1]
        ):
            yield
    elif piece == "strict_json_parser":
        # The view's parsers were read from the settings when it was defined.
        before = TaskViewSet.parser_classes
        if not on:
            TaskViewSet.parser_classes = [JSONParser]
        try:
            yield
        finally:
            TaskViewSet.parser_classes = before
    elif piece == "axes_middleware":
        kept = [m for m in settings.MIDDLEWARE if on or not m.startswith("axes.")]
        with override_settings(MIDDLEWARE=kept):
            yield
    else:
        raise ValueError(piece)


def _piece_cost(key: str, piece: str, samples: int, blocks: int) -> dict:
    """What `piece` adds to a POST's CPU (Django and PostgreSQL): with it
    minus without it, in alternating blocks (medians of the blocks)."""
    measured: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(blocks):
        for on in (False, True):
            with _piece(piece, on):
                post = _posting(key, "/api/tasks/")
                post()
                measured[on].append(_cpu_per_call(post, samples)["ms"])
    return {
        "ms": statistics.median(measured[True]) - statistics.median(measured[False])
    }


def _in_process(key: str, samples: int, blocks: int) -> dict:
    """Queries of one POST; CPU per request (process and PostgreSQL backend)
    of /healthz, the bare view and POST /api/tasks/, in alternating blocks;
    what the throttles, the parser and axes add. With CODEX_BENCH_PROFILE=
    <file>, a cProfile of `samples` POSTs (CPU clock) is written there (read it
    with `python -m pstats <file>`)."""
    import cProfile

    from django.db import connection
    from django.test import Client, override_settings
    from django.test.utils import CaptureQueriesContext

    from bench.bare import ensure_table

    ensure_table()
    health = Client(HTTP_HOST="127.0.0.1")
    intake = _posting(key, "/api/tasks/")
    bare = _posting(key, BARE_PATH)
    out: dict = {}
    with override_settings(ROOT_URLCONF="bench.urls"):
        for call in (intake, bare, intake):
            call()  # the first stamps the token's last_used_at
        with CaptureQueriesContext(connection) as captured:
            intake()
        # Counted now: the next request (request_started) empties the log.
        out["queries"] = len(captured.captured_queries)
        with CaptureQueriesContext(connection) as captured:
            bare()
        out["bare_queries"] = len(captured.captured_queries)
        runs: dict[str, list[dict]] = {"healthz": [], "bare": [], "intake": []}
        for _ in range(blocks):
            runs["healthz"].append(
                _cpu_per_call(lambda: health.get("/healthz"), samples)
            )
            runs["bare"].append(_cpu_per_call(bare, samples))
            runs["intake"].append(_cpu_per_call(intake, samples))
        for name, blocks_of in runs.items():
            out[name] = {
                k: statistics.median(b[k] for b in blocks_of)
                for k in ("django_ms", "pg_ms", "ms")
            }
        out["pieces"] = {
            piece: _piece_cost(key, piece, samples, blocks)
            for piece in ("throttles", "strict_json_parser", "axes_middleware")
        }
        if path := os.environ.get("CODEX_BENCH_PROFILE"):
            profiler = cProfile.Profile(time.process_time)
            profiler.runcall(lambda: [intake() for _ in range(samples)])
            profiler.dump_stats(path)
    out["samples"] = samples
    out["blocks"] = blocks
    return out


def _describe_in_process(p: dict) -> str:
    def cpu(name: str) -> str:
        r = p[name]
        return (
            f"{r['ms']:.2f} ms ({r['django_ms']:.2f} Django + {r['pg_ms']:.2f} "
            "PostgreSQL)"
        )

    return (
        f"in-process, CPU per request (median of {p['blocks']} alternating "
        f"blocks of {p['samples']}): POST /api/tasks/ {cpu('intake')}, "
        f"{p['queries']} queries; bare view {cpu('bare')}, "
        f"{p['bare_queries']} queries; GET /healthz {cpu('healthz')}"
    )


def _describe_pieces(p: dict) -> str:
    labels = {
        "throttles": "the throttles at their default rates (600/minute per "
        "user) in the database cache, against off",
        "strict_json_parser": "the strict JSON parser against DRF's JSONParser",
        "axes_middleware": "django-axes' middleware",
    }
    return "; ".join(
        f"{labels[name]}: {cost['ms']:+.2f} ms CPU per POST"
        for name, cost in p["pieces"].items()
    )


# -- the figure ---------------------------------------------------------------


def _sum_blocks(loads: dict, prefix: str) -> dict:
    """The load results of every block named prefix*, taken together."""
    from bench.common import percentile

    blocks = [r for name, r in loads.items() if name.startswith(prefix)]
    latencies = [x for r in blocks for x in r["latencies_ms"]]
    statuses: dict[str, int] = {}
    for r in blocks:
        for code, count in r["statuses"].items():
            statuses[code] = statuses.get(code, 0) + count
    seconds = sum(r["requests"] / r["rps"] for r in blocks if r["rps"])
    return {
        "requests": len(latencies),
        "statuses": statuses,
        "rps": len(latencies) / seconds if seconds else 0,
        "p50": percentile(latencies, 50),
        "p99": percentile(latencies, 99),
    }


def run(smoke: bool) -> list[dict]:
    import importlib.util

    from django.contrib.auth import get_user_model
    from django.db import connections

    from codex.accounts.models import ApiToken

    user = get_user_model().objects.create_user("benchintake", password="x")
    _, key = ApiToken.issue(user, "bench-intake")
    profile = _in_process(key, 50, 1) if smoke else _in_process(key, 200, 3)
    in_process = _describe_in_process(profile)
    pieces = _describe_pieces(profile)
    ceiling_ms = profile["bare"]["ms"]
    figures = [
        figure(
            "intake_post_cpu_ms_in_process",
            profile["intake"]["ms"],
            "ms",
            ceiling=ceiling_ms,
            goal="reported (CPU per POST, Django and PostgreSQL; ceiling: the "
            "bare view's)",
            meets=True,
            notes=in_process,
        ),
        *(
            figure(
                f"intake_{name}_cpu_ms_per_post",
                cost["ms"],
                "ms",
                goal="reported (what it adds to a POST's CPU)",
                meets=True,
                notes=_describe_pieces({"pieces": {name: cost}}),
            )
            for name, cost in profile["pieces"].items()
        ),
    ]
    if importlib.util.find_spec("locust") is None:
        return [
            not_measured(
                NAME,
                "requests/s",
                GOAL,
                "locust is not installed (requirements/bench.txt)",
            ),
            *figures,
        ]
    workers = int(os.environ.get("CODEX_BENCH_GUNICORN_WORKERS", "3"))
    users = 8 if smoke else 16
    seconds = 2 if smoke else 6
    blocks = 1 if smoke else 3
    warmup = 0.5 if smoke else 1
    modes = {"healthz": "bench.load:healthz_user"}
    for block in range(blocks):
        modes[f"bare{block}"] = "bench.intake:bare_user"
        modes[f"intake{block}"] = "bench.intake:intake_user"
    connections.close_all()
    load_before = os.getloadavg()[0]
    env = {**bench_env(), "DJANGO_SETTINGS_MODULE": "bench.settings"}
    with tempfile.TemporaryDirectory(prefix="codex-bench-intake-") as tmp:
        server, base = gunicorn(env, Path(tmp) / "gunicorn.log", workers)
        try:
            loads = run_load(
                base,
                modes,
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
    trivial = loads["healthz"]
    bare, intake = _sum_blocks(loads, "bare"), _sum_blocks(loads, "intake")
    created = intake["statuses"].get("201", 0)
    other = {k: v for k, v in intake["statuses"].items() if k != "201"}
    bare_other = {k: v for k, v in bare["statuses"].items() if k != "201"}
    if not intake["requests"] or not bare["rps"]:
        return [
            not_measured(NAME, "requests/s", GOAL, f"no requests: {loads}"),
            *figures,
        ]
    ratio = intake["rps"] / bare["rps"]
    # The Dockerfile runs the same: sync workers, GUNICORN_WORKERS (3) of them;
    # it also writes an access log line per request, which this does not.
    setup = (
        f"Locust FastHttpUser, {users} concurrent users, closed loop, {warmup:g} s "
        f"warm-up then {seconds} s per block: GET /healthz, then {blocks} "
        f"alternating blocks each of the bare view and POST /api/tasks/; "
        f"gunicorn --workers {workers} (sync, as the Dockerfile) with "
        f"bench.settings; ORM broker (enqueue in the same DB); throttles off; "
        f"{busy}"
    )
    return [
        figure(
            NAME,
            intake["rps"],
            "requests/s",
            ceiling=bare["rps"],
            goal=GOAL,
            meets=ratio >= INTAKE_GOAL and not other and not bare_other,
            notes=f"{setup}; {intake['requests']} POSTs, {created} created "
            f"(201), {sum(other.values())} other {other}; POST p50 "
            f"{_fmt(intake['p50'])} ms p99 {_fmt(intake['p99'])} ms; ceiling: "
            f"the bare DRF create view {bare['rps']:.0f}/s, p50 "
            f"{_fmt(bare['p50'])} ms p99 {_fmt(bare['p99'])} ms, statuses "
            f"{bare['statuses']}; {in_process}; {pieces}",
        ),
        figure(
            "intake_post_vs_healthz_requests_per_second",
            intake["rps"],
            "requests/s",
            ceiling=trivial["rps"],
            goal="reported (GET /healthz, one SELECT 1, on the same server)",
            meets=True,
            notes=f"GET /healthz {trivial['rps']:.0f}/s, p50 "
            f"{_fmt(trivial['p50'])} ms p99 {_fmt(trivial['p99'])} ms, "
            f"statuses {trivial['statuses']}; the bare view is "
            f"{bare['rps'] / trivial['rps'] if trivial['rps'] else 0:.2f} of it",
        ),
        *figures,
        figure(
            "intake_post_p50_ms",
            intake["p50"],
            "ms",
            ceiling=bare["p50"],
            goal="reported (ceiling: the bare view's p50)",
            meets=True,
            notes=setup,
        ),
        figure(
            "intake_post_p99_ms",
            intake["p99"],
            "ms",
            ceiling=bare["p99"],
            goal="reported (ceiling: the bare view's p99)",
            meets=True,
            notes=setup,
        ),
    ]


def _fmt(value) -> str:
    return "—" if value is None else f"{value:.1f}"
