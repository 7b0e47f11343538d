"""On real PostgreSQL: a payload jsonb refuses, arriving past the receiver's
own checks, is still kept raw (the database's refusal is the last check)."""

from __future__ import annotations

import json

import pytest

from codex.webhooks import views
from codex.webhooks.models import Outcome, WebhookDelivery
from tests.webhooks.conftest import load

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db]


@pytest.mark.parametrize(
    ("escaped", "reason"),
    [(rb"a\ud800b", "Unicode"), (rb"a\u0000b", "Unicode")],
    ids=["unpaired-surrogate", "nul"],
)
def test_what_jsonb_refuses_is_kept_raw(deliver, monkeypatch, escaped, reason):
    # As if the receiver's checks missed it: no surrogate check, no NUL scrub.
    monkeypatch.setattr(views, "_encodable", lambda payload: True)
    monkeypatch.setattr(views, "scrub", lambda payload: payload)
    payload = load("issues", "labeled.payload.json")
    body = json.dumps(payload).encode()
    title = json.dumps(payload["issue"]["title"]).encode()
    body = body.replace(title, b'"' + escaped + b'"', 1)

    response = deliver("issues", body)

    assert response.status_code == 202, response.content
    delivery = WebhookDelivery.objects.get()
    assert delivery.outcome == Outcome.UNPROCESSABLE
    assert bytes(delivery.body) == body
    assert delivery.error.startswith("the database refused the payload: DataError")
    assert reason in delivery.error
