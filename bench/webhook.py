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

import hashlib
import hmac
import importlib.util
import itertools
import json
import logging
import shutil
import tempfile
import time
import uuid
from pathlib import Path

from bench.common import (
    figure,
    gunicorn,
    not_measured,
    quiet_queue,
)
from bench.load import run_load
from bench.webhook_first import first_figure, first_request
from bench.webhook_setup import (
    GOAL,
    ISSUE_SENTINEL,
    LABEL,
    NAME,
    PACED_RATE,
    PATH,
    SECRET,
    fixture_payload,
    fmt,
    server_env,
)

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
        first = first_request(base, smoke, tmp)
        print(f"[bench]   first requests took {time.perf_counter() - t:.1f} s")
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return [*_ack_figures(ack), first_figure(first)]


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
            f"{a['rps']:.0f}/s, statuses {a['statuses']}, p50 {fmt(a['p50'])} ms, "
            f"max {fmt(a['max'])} ms; {ack['stored_pending']} stored pending and "
            f"{ack['jobs_queued']} process_delivery jobs queued (warm-ups and "
            f"the paced run included; then dropped); {ack['profile']}; "
            f"ceiling GET /healthz under the same load: {c['rps']:.0f}/s, "
            f"p50 {fmt(c['p50'])} ms, p99 {fmt(c['p99'])} ms",
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
            f"p50 {fmt(paced['p50'])} ms, max {fmt(paced['max'])} ms",
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
