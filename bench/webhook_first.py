"""Webhook to first model request: how long a labelled issue takes from its
delivery to the first request its agent sends to the model, by stage."""

from __future__ import annotations

import copy
import json
import re
import sys
import threading
import time
import urllib.request
from pathlib import Path

from bench.common import (
    bare_repository,
    figure,
    percentile,
    qcluster,
    quiet_queue,
    wait_until,
)
from bench.webhook_setup import (
    FIRST,
    FIRST_GOAL,
    PATH,
    SECRET,
    fixture_payload,
    fmt,
    server_env,
)

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


def stage_times(delivery_id: str, wall: float, ack: float, first: float) -> dict:
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


def first_request(base: str, smoke: bool, tmp: Path) -> dict:
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
                    stages.append(stage_times(delivery, wall, acked - start, first))
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


def first_figure(first: dict) -> dict:
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
        f"repository; min {fmt(min(samples, default=None))} ms, "
        f"p90 {fmt(percentile(samples, 90))} ms, "
        f"max {fmt(max(samples, default=None))} ms; single POST ack p50 "
        f"{fmt(percentile(first['ack_ms'], 50))} ms; POST to task escalated "
        f"p50 {fmt(percentile(first['settled_ms'], 50))} ms; p50 of each stage: "
        + ", ".join(f"{k} {fmt(v)} ms" for k, v in first["stages"].items()),
    )


if __name__ == "__main__":
    print("run through bench.run: python -m bench.run --only webhook", file=sys.stderr)
    sys.exit(2)
