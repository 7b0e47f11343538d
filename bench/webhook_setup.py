"""What the webhook benchmarks share: the signing secret, the trigger label,
the real `issues` labeled payload and the server's environment."""

from __future__ import annotations

import copy
import json

from bench.common import (
    bench_env,
)

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


def fmt(value) -> str:
    """A figure in a note: one decimal, or a dash when there is none."""
    return "—" if value is None else f"{value:.1f}"
