"""Fixtures for the webhook tests: a secret, a fake forge, signed deliveries."""

from __future__ import annotations

import copy
import itertools
import json

import pytest

from codex.webhooks.signature import sign
from tests.shared_folder import WEBHOOKS
from tests.webhooks.fake_forge import FakeForge

SECRET = "test-webhook-secret"
URL = "/api/webhooks/github/"
FIXTURES = WEBHOOKS
HELLO_WORLD = "https://github.com/Codertocat/Hello-World"
_deliveries = itertools.count(1)


def load(event: str, name: str) -> dict:
    """A real GitHub payload from the shared fixtures (a fresh copy)."""
    return copy.deepcopy(json.loads((FIXTURES / event / name).read_text()))


@pytest.fixture(autouse=True)
def _webhook_settings(settings):
    settings.GITHUB_WEBHOOK_SECRET = SECRET
    settings.CODEX_TRIGGER_LABEL = "codex"
    settings.CODEX_BOT_LOGIN = "codex[bot]"


@pytest.fixture(autouse=True)
def forge(monkeypatch):
    """Every repository's forge is the fake one; Codertocat can write."""
    FakeForge.reset()
    FakeForge.writers = {"Codertocat"}
    monkeypatch.setattr(
        "codex.repositories.forge.FORGES",
        {"github": "tests.webhooks.fake_forge.FakeForge"},
    )
    return FakeForge


@pytest.fixture(autouse=True)
def enqueued(monkeypatch):
    """Record every django_q async_task call instead of sending it to a broker."""
    calls: list[tuple] = []

    def fake_async_task(func, *args, **kwargs):
        calls.append((func, *args))
        return "fake-id"

    monkeypatch.setattr("django_q.tasks.async_task", fake_async_task)
    return calls


@pytest.fixture
def deliver(client):
    """POST a signed delivery; returns the response."""

    def _deliver(
        event: str,
        payload: dict | bytes,
        *,
        delivery: str | None = None,
        secret: str | None = SECRET,
        signature: str | None = None,
        headers: dict | None = None,
    ):
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        extra = {
            "HTTP_X_GITHUB_EVENT": event,
            "HTTP_X_GITHUB_DELIVERY": delivery or f"delivery-{next(_deliveries)}",
        }
        if signature is not None:
            extra["HTTP_X_HUB_SIGNATURE_256"] = signature
        elif secret is not None:
            extra["HTTP_X_HUB_SIGNATURE_256"] = sign(body, secret)
        extra.update(headers or {})
        return client.post(URL, data=body, content_type="application/json", **extra)

    return _deliver


@pytest.fixture
def hello_world(db):
    """The fixtures' repository, known to Codex."""
    from tests.factories import make_repository

    return make_repository(HELLO_WORLD)


def process_all() -> list[str]:
    """Run process_delivery for every stored delivery; returns the outcomes."""
    from codex.webhooks.jobs import process_delivery
    from codex.webhooks.models import WebhookDelivery

    return [
        process_delivery(pk)
        for pk in WebhookDelivery.objects.order_by("pk").values_list("pk", flat=True)
    ]
