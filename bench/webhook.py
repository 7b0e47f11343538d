"""Figure 3: GitHub webhook ack latency under load, and webhook to first model
request through a live worker.

Both parts serve Codex with gunicorn (sync workers) on the bench PostgreSQL
database with GITHUB_WEBHOOK_SECRET set, and POST real `issues` payloads
(labeled.payload.json of the shared fixtures, the label renamed to the trigger
label `codex`), each with its own X-GitHub-Delivery and a valid
X-Hub-Signature-256 over its body.

Ack (`webhook_ack_p99_ms`): Locust (its Python API, FastHttpUser) drives a
closed loop of concurrent senders (8; 4 in smoke mode) with no think time, on
the same machine as the server. Every delivery needs a fresh id and an
HMAC-SHA256 of its own body; a Locust task computes both in Python per request.
It runs in a subprocess (bench.load, shared with figure 1), because Locust
monkey-patches the process with gevent. The repository of the payload is
registered, so each delivery takes the real ack path of a delivery that will
become a task: signature, headers, the INSERT of the delivery (its unique
delivery id is the dedupe), enqueue of process_delivery after that commit (an
OrmQ INSERT), 202. No worker runs during the load (workers live on other
machines in production); the queued jobs are counted, to prove the path, and
dropped. The ceiling is GET /healthz (one
SELECT 1) under the same load on the same server.

First model request (`webhook_to_first_model_request_p50_ms`): a live
`manage.py qcluster` (ORM broker, 2 workers; 1 in smoke mode) runs the real
AgentPhaseRunner against the loopback ModelStub (tests/model_stub.py) over
HTTP (ANTHROPIC_BASE_URL). Single labelled-issue webhooks are sent one at a
time for a repository on the local forge (a bare repository on disk; the
payload's repository.html_url is its file:// URL, since a github.com
repository would need GitHub's permission API). Measured: from just before the
POST to the stub receiving the first /v1/messages request of that task (both
clocks are this process's perf_counter). The path: ack, process_delivery
picked up by a worker (broker poll), the task created and its issue claimed,
advance_task picked up (broker poll), lease, mirror fetch and worktree,
prompt, SDK call. The stub answers that request with should_proceed false,
which escalates the task; the next webhook is sent once the task has settled.
"""

from __future__ import annotations

import copy
import hashlib
import hmac
import importlib.util
import itertools
import json
import logging
import re
import shutil
import sys
import tempfile
import threading
import time
import urllib.request
import uuid
from pathlib import Path

from bench.common import (
    bare_repository,
    bench_env,
    figure,
    gunicorn,
    not_measured,
    percentile,
    qcluster,
    quiet_queue,
    wait_until,
)
from bench.load import run_load

NAME = "webhook_ack_p99_ms"
GOAL = "< 50 ms (and webhook to first model request p50 < 1 s)"
FIRST = "webhook_to_first_model_request_p50_ms"
FIRST_GOAL = "< 1000 ms"
SECRET = "bench-webhook-secret-0123456789"
LABEL = "codex"
PATH = "/api/webhooks/github/"
ISSUE_SENTINEL = 987654321  # replaced per request by the load generator
PACED_RATE = 25.0  # deliveries/s of the paced run, well below saturation


def fixture_payload() -> dict:
    """The real `issues` labeled payload, labelled with the trigger label."""
    from tests.shared_folder import WEBHOOKS

    payload = json.loads((WEBHOOKS / "issues" / "labeled.payload.json").read_text())
    label = copy.deepcopy(payload["label"])
    label["name"] = LABEL
    payload["label"] = label
    payload["issue"]["labels"] = [*payload["issue"].get("labels", []), label]
    return payload


def server_env() -> dict[str, str]:
    return {
        **bench_env(),
        "GITHUB_WEBHOOK_SECRET": SECRET,
        "CODEX_TRIGGER_LABEL": LABEL,
    }


# -- the load (bench.load, in its Locust subprocess) ---------------------------

# One counter for every mode of the subprocess: no issue number repeats.
_NUMBERS = itertools.count(1000)


def webhook_user(params: dict):
    """A Locust user sending signed deliveries of params["template"], each with
    a fresh issue number, delivery id and signature, expecting 202."""
    from locust import FastHttpUser, task

    template = Path(params["template"]).read_bytes()
    sentinel = str(ISSUE_SENTINEL).encode()
    key = SECRET.encode()

    class Webhook(FastHttpUser):
        @task
        def send(self) -> None:
            body = template.replace(sentinel, str(next(_NUMBERS)).encode())
            digest = hmac.new(key, body, hashlib.sha256).hexdigest()
            headers = {
                "Content-Type": "application/json",
                "User-Agent": "GitHub-Hookshot/bench",
                "X-GitHub-Event": "issues",
                "X-GitHub-Delivery": str(uuid.uuid4()),
                "X-Hub-Signature-256": f"sha256={digest}",
            }
            with self.client.post(
                PATH, data=body, headers=headers, name="webhook", catch_response=True
            ) as response:
                if response.status_code != 202:
                    response.failure(f"HTTP {response.status_code}")

    return Webhook


def paced_user(params: dict):
    """The same deliveries at a fixed total rate, below saturation."""
    from locust import constant_throughput

    class Paced(webhook_user(params)):
        wait_time = constant_throughput(params["paced_rate"] / params["users"])

    return Paced


def _load(
    base: str, users: int, seconds: float, warmup: float, template: str
) -> dict[str, dict]:
    """GET /healthz, the webhook, then the webhook paced at PACED_RATE, each
    `seconds` under `users` senders (after `warmup`), in one Locust
    subprocess. Returns a summary per mode."""
    summary = run_load(
        base,
        {
            "healthz": "bench.load:healthz_user",
            "webhook": "bench.webhook:webhook_user",
            "paced": "bench.webhook:paced_user",
        },
        users=users,
        seconds=seconds,
        warmup=warmup,
        params={"template": template, "paced_rate": PACED_RATE},
    )
    for mode, result in summary.items():
        result["ok"] = result["statuses"].get("200" if mode == "healthz" else "202", 0)
    return summary


# -- part 1: ack latency under load ------------------------------------------


def _profile_one_delivery(template: bytes) -> str:
    """Queries and in-process time of one delivery (Django test client, no
    HTTP), the enqueue included."""
    from django.db import connection
    from django.test import Client, override_settings
    from django.test.utils import CaptureQueriesContext

    from codex.webhooks.signature import sign

    client = Client(HTTP_HOST="127.0.0.1")
    times, counts = [], []
    quiet = logging.getLogger("django_q")
    level = quiet.level
    quiet.setLevel(logging.WARNING)  # one "Enqueued" line per delivery
    try:
        with override_settings(GITHUB_WEBHOOK_SECRET=SECRET, CODEX_TRIGGER_LABEL=LABEL):
            for n in range(6):
                body = template.replace(
                    str(ISSUE_SENTINEL).encode(), str(n + 1).encode()
                )
                with CaptureQueriesContext(connection) as queries:
                    start = time.perf_counter()
                    response = client.post(
                        PATH,
                        data=body,
                        content_type="application/json",
                        HTTP_X_GITHUB_EVENT="issues",
                        HTTP_X_GITHUB_DELIVERY=f"bench-profile-{n}-{time.time_ns()}",
                        HTTP_X_HUB_SIGNATURE_256=sign(body, SECRET),
                    )
                    elapsed = (time.perf_counter() - start) * 1000
                if response.status_code != 202:
                    return f"profile: HTTP {response.status_code}"
                if n:  # the first one warms up
                    times.append(elapsed)
                    counts.append(len(queries.captured_queries))
    finally:
        quiet.setLevel(level)
    return (
        f"one delivery in-process: {max(counts)} queries, "
        f"median {sorted(times)[len(times) // 2]:.1f} ms"
    )


def _ack(base: str, smoke: bool, tmp: Path) -> dict:
    from codex.repositories.models import Repository
    from codex.webhooks.models import Outcome, WebhookDelivery

    payload = fixture_payload()
    Repository.objects.get_or_create(url=payload["repository"]["html_url"])
    payload["issue"]["number"] = ISSUE_SENTINEL
    template = tmp / "labeled.template.json"
    template.write_bytes(json.dumps(payload).encode())
    profile = _profile_one_delivery(template.read_bytes())
    users = 4 if smoke else 8
    seconds = 1 if smoke else 15
    warmup = 0.3 if smoke else 2
    before = WebhookDelivery.objects.count()
    loads = _load(base, users, seconds, warmup, str(template))
    ceiling, ack, paced = loads["healthz"], loads["webhook"], loads["paced"]
    stored = WebhookDelivery.objects.filter(outcome=Outcome.PENDING).count() - before
    dropped = quiet_queue()
    return {
        "users": users,
        "seconds": seconds,
        "ack": ack,
        "ceiling": ceiling,
        "paced": paced,
        "stored_pending": stored,
        "jobs_queued": dropped["jobs"],
        "profile": profile,
    }


# -- part 2: webhook to the first model request -------------------------------

MARKER = re.compile(r"bench-webhook-(\d+)-first")


class FirstRequests:
    """The stub's responder: notes when each task's first request arrives and
    stops the task (should_proceed false: escalated)."""

    def __init__(self) -> None:
        self.first: dict[int, float] = {}
        self.lock = threading.Lock()

    def __call__(self, body: dict):
        from tests.model_stub import submit

        now = time.perf_counter()
        match = MARKER.search(json.dumps(body))
        if match:
            with self.lock:
                self.first.setdefault(int(match.group(1)), now)
        return submit(
            {
                "should_proceed": False,
                "needs_clarification": False,
                "spec_md": "",
                "reason": "bench: stopped after the first model request",
            }
        )


STAGES = ("ack", "delivery_processed", "agent_run_started", "model_request")


def _stages(delivery_id: str, wall: float, ack: float, first: float) -> dict:
    """Where one sample's time went (ms), from the rows' timestamps: the ack;
    then until the worker had processed the delivery (broker poll, task and
    claim created); then until the task's first agent run began (broker poll
    for advance_task, lease); then until the stub saw the request (mirror,
    worktree, prompt, SDK)."""
    from codex.fleet.models import AgentRun
    from codex.webhooks.models import WebhookDelivery

    delivery = WebhookDelivery.objects.get(delivery_id=delivery_id)
    number = delivery.payload["issue"]["number"]
    run = (
        AgentRun.objects.filter(
            task__repository=delivery.repository, task__issue_number=number
        )
        .order_by("started_at")
        .first()
    )
    processed = delivery.processed_at.timestamp() - wall
    started = run.started_at.timestamp() - wall if run else processed
    return {
        "ack": ack * 1000,
        "delivery_processed": (processed - ack) * 1000,
        "agent_run_started": (started - processed) * 1000,
        "model_request": (first - started) * 1000,
    }


def _post(base: str, body: bytes, delivery: str) -> int:
    from codex.webhooks.signature import sign

    request = urllib.request.Request(
        base + PATH,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "X-GitHub-Event": "issues",
            "X-GitHub-Delivery": delivery,
            "X-Hub-Signature-256": sign(body, SECRET),
        },
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status


def _first_request(base: str, smoke: bool, tmp: Path) -> dict:
    from codex.repositories.models import Repository
    from codex.tasks.models import Status, Task
    from tests.model_stub import ModelStub

    bare = bare_repository(
        tmp, {"calc.py": "def add(a, b):\n    return a + b\n", "README.md": "# s\n"}
    )
    repository, _ = Repository.objects.get_or_create(url=f"file://{bare}")
    payload = fixture_payload()
    payload["repository"]["html_url"] = repository.url
    # Smoke: one worker (one cold import of the agent runtime, not two).
    workers, warmups, samples = (1, 1, 2) if smoke else (2, 2, 20)
    responder = FirstRequests()
    quiet_queue()
    with ModelStub(responder=responder) as stub:
        env = {
            **server_env(),
            "CODEX_WORKERS": str(workers),
            "ANTHROPIC_API_KEY": "sk-bench-stub",
            "ANTHROPIC_BASE_URL": stub.url,
            "CODEX_PHASE_RUNNER": "agents.phase_runner.AgentPhaseRunner",
            "CODEX_MODEL_MAX_RETRIES": "0",
            "CODEX_WORKTREE_ROOT": str(tmp / "worktrees"),
            "CODEX_MIRROR_ROOT": str(tmp / "mirrors"),
            "CODEX_JOB_TIMEOUT": "60",
            "CODEX_JOB_RETRY": "90",
        }
        from django.db import connections

        connections.close_all()
        cluster = qcluster(env, tmp / "qcluster.log")
        acks, firsts, settled, stages = [], [], [], []
        try:
            for n in range(1, warmups + samples + 1):
                body = copy.deepcopy(payload)
                body["issue"]["number"] = n
                body["issue"]["title"] = f"Bench issue bench-webhook-{n}-first"
                raw = json.dumps(body).encode()
                delivery = f"bench-first-{n}-{time.time_ns()}"
                wall = time.time()
                start = time.perf_counter()
                status = _post(base, raw, delivery)
                acked = time.perf_counter()
                if status != 202:
                    raise RuntimeError(f"webhook {n} answered {status}")
                wait_until(
                    lambda n=n: n in responder.first,
                    30,
                    f"the first model request of issue {n}",
                    interval=0.005,
                )
                first = responder.first[n] - start

                def done(n=n):
                    task = Task.objects.filter(
                        repository=repository, issue_number=n
                    ).first()
                    return task is not None and task.status not in (
                        Status.PENDING,
                        Status.IN_PROGRESS,
                    )

                wait_until(done, 30, f"the task of issue {n} to settle")
                if n > warmups:
                    acks.append((acked - start) * 1000)
                    firsts.append(first * 1000)
                    settled.append((time.perf_counter() - start) * 1000)
                    stages.append(_stages(delivery, wall, acked - start, first))
        finally:
            cluster.stop()
            connections.close_all()
    return {
        "workers": workers,
        "warmups": warmups,
        "samples": samples,
        "first_ms": firsts,
        "ack_ms": acks,
        "settled_ms": settled,
        "stages": {
            name: percentile([stage[name] for stage in stages], 50) for name in STAGES
        },
        "requests": len(stub.requests),
    }


def _fmt(value) -> str:
    return "—" if value is None else f"{value:.1f}"


def run(smoke: bool) -> list[dict]:
    tmp = Path(tempfile.mkdtemp(prefix="codex-bench-webhook-"))
    from django.db import connections

    connections.close_all()
    server, base = gunicorn(server_env(), tmp / "gunicorn.log")
    try:
        t = time.perf_counter()
        ack = _ack(base, smoke, tmp) if importlib.util.find_spec("locust") else None
        print(f"[bench]   ack load took {time.perf_counter() - t:.1f} s", flush=True)
        t = time.perf_counter()
        first = _first_request(base, smoke, tmp)
        print(f"[bench]   first requests took {time.perf_counter() - t:.1f} s")
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return [*_ack_figures(ack), _first_figure(first)]


def _ack_figures(ack: dict | None) -> list[dict]:
    if ack is None:
        return [
            not_measured(
                NAME, "ms", GOAL, "locust is not installed (requirements/bench.txt)"
            )
        ]
    a, c, paced = ack["ack"], ack["ceiling"], ack["paced"]
    errors = a["requests"] - a["ok"]
    setup = (
        f"Locust FastHttpUser, {ack['users']} concurrent senders, closed loop, "
        f"{ack['seconds']} s; gunicorn --workers 3 (sync); ORM broker"
    )
    return [
        figure(
            NAME,
            a["p99"],
            "ms",
            ceiling=c["p99"],
            goal=GOAL,
            meets=a["p99"] is not None and a["p99"] < 50 and errors == 0,
            notes=f"{setup}; {a['requests']} signed issues.labeled deliveries, "
            f"{a['rps']:.0f}/s, statuses {a['statuses']}, p50 {_fmt(a['p50'])} ms, "
            f"max {_fmt(a['max'])} ms; {ack['stored_pending']} stored pending and "
            f"{ack['jobs_queued']} process_delivery jobs queued (warm-ups and "
            f"the paced run included; then dropped); {ack['profile']}; "
            f"ceiling GET /healthz under the same load: {c['rps']:.0f}/s, "
            f"p50 {_fmt(c['p50'])} ms, p99 {_fmt(c['p99'])} ms",
        ),
        figure(
            f"webhook_ack_p99_ms_at_{PACED_RATE:g}_per_second",
            paced["p99"],
            "ms",
            goal="reported (the same deliveries paced below saturation)",
            meets=paced["requests"] == paced["ok"],
            notes=f"Locust constant_throughput, {ack['users']} senders sharing "
            f"{PACED_RATE:g} deliveries/s, {ack['seconds']} s: {paced['requests']} "
            f"deliveries at {paced['rps']:.1f}/s, statuses {paced['statuses']}, "
            f"p50 {_fmt(paced['p50'])} ms, max {_fmt(paced['max'])} ms",
        ),
        figure(
            "webhook_ack_p50_ms",
            a["p50"],
            "ms",
            ceiling=c["p50"],
            goal="reported",
            meets=True,
            notes=setup,
        ),
        figure(
            "webhook_ack_requests_per_second",
            a["rps"],
            "requests/s",
            ceiling=c["rps"],
            goal="reported",
            meets=True,
            notes=setup,
        ),
    ]


def _first_figure(first: dict) -> dict:
    samples = first["first_ms"]
    p50 = percentile(samples, 50)
    return figure(
        FIRST,
        p50,
        "ms",
        goal=FIRST_GOAL,
        meets=p50 is not None and p50 < 1000,
        notes=f"{len(samples)} labelled-issue webhooks one at a time (after "
        f"{first['warmups']} warm-up), live qcluster (ORM broker, "
        f"{first['workers']} workers) "
        "with AgentPhaseRunner against the loopback ModelStub, local-forge "
        f"repository; min {_fmt(min(samples, default=None))} ms, "
        f"p90 {_fmt(percentile(samples, 90))} ms, "
        f"max {_fmt(max(samples, default=None))} ms; single POST ack p50 "
        f"{_fmt(percentile(first['ack_ms'], 50))} ms; POST to task escalated "
        f"p50 {_fmt(percentile(first['settled_ms'], 50))} ms; p50 of each stage: "
        + ", ".join(f"{k} {_fmt(v)} ms" for k, v in first["stages"].items()),
    )


if __name__ == "__main__":
    print("run through bench.run: python -m bench.run --only webhook", file=sys.stderr)
    sys.exit(2)
