"""The receiver: signature, size, headers, JSON, dedupe, ping, unknown events."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django_q.models import OrmQ
from django_q.signing import SignedPackage
from django_q.tasks import async_task as real_async_task

from codex.webhooks.models import Outcome, WebhookDelivery
from codex.webhooks.signature import sign
from tests.webhooks.conftest import SECRET, URL, load

pytestmark = pytest.mark.django_db


def error_code(response) -> str:
    body = response.json()
    assert set(body["error"]) == {"code", "message", "fields"}
    return body["error"]["code"]


def test_a_signed_delivery_is_stored_and_processing_enqueued_on_commit(
    deliver, enqueued, django_capture_on_commit_callbacks
):
    payload = load("issues", "labeled.payload.json")
    with django_capture_on_commit_callbacks(execute=True):
        response = deliver("issues", payload, delivery="abc-1")
    assert response.status_code == 202
    delivery = WebhookDelivery.objects.get()
    assert (delivery.delivery_id, delivery.event, delivery.action) == (
        "abc-1",
        "issues",
        "labeled",
    )
    assert delivery.payload == payload
    assert delivery.outcome == Outcome.PENDING and delivery.processed_at is None
    assert enqueued == [("codex.webhooks.jobs.process_delivery", delivery.pk)]


@pytest.mark.parametrize(
    "signature",
    [None, "", "sha256=" + "0" * 64, "sha1=abc", sign(b"other body", SECRET)],
)
def test_a_missing_or_wrong_signature_is_401_and_nothing_is_stored(deliver, signature):
    payload = load("issues", "opened.payload.json")
    if signature is None:
        response = deliver("issues", payload, secret=None)
    else:
        response = deliver("issues", payload, signature=signature)
    assert response.status_code == 401
    assert error_code(response) == "bad_signature"
    assert not WebhookDelivery.objects.exists()


def test_a_signature_with_another_secret_is_401(deliver):
    response = deliver("ping", {"zen": "hi"}, secret="not-the-secret")
    assert response.status_code == 401


def test_without_a_configured_secret_deliveries_are_refused_503(deliver, settings):
    settings.GITHUB_WEBHOOK_SECRET = ""
    response = deliver("ping", {"zen": "hi"}, secret="")
    assert response.status_code == 503
    assert error_code(response) == "webhook_secret_not_configured"
    assert "GITHUB_WEBHOOK_SECRET" in response.json()["error"]["message"]
    assert not WebhookDelivery.objects.exists()


def test_a_redelivery_is_a_200_no_op(
    deliver, enqueued, django_capture_on_commit_callbacks
):
    payload = load("issues", "labeled.payload.json")
    with django_capture_on_commit_callbacks(execute=True):
        first = deliver("issues", payload, delivery="same-id")
        again = deliver("issues", payload, delivery="same-id")
    assert (first.status_code, again.status_code) == (202, 200)
    assert again.json()["outcome"] == "duplicate"
    assert WebhookDelivery.objects.count() == 1
    assert len(enqueued) == 1


@pytest.mark.django_db(transaction=True)
def test_the_ack_is_one_insert_and_a_redelivery_one_refused_insert(deliver, enqueued):
    # Outside a transaction (as under gunicorn) the INSERT is the dedupe and
    # commits by itself: no SELECT first, no BEGIN/COMMIT around it. The job is
    # enqueued once the row is committed.
    payload = load("issues", "labeled.payload.json")
    with CaptureQueriesContext(connection) as first_queries:
        first = deliver("issues", payload, delivery="one-insert")
    with CaptureQueriesContext(connection) as again_queries:
        again = deliver("issues", payload, delivery="one-insert")
    assert (first.status_code, again.status_code) == (202, 200)
    assert again.json()["outcome"] == "duplicate"
    for queries in (first_queries, again_queries):
        assert [q["sql"].split()[:3] for q in queries] == [
            ["INSERT", "INTO", '"webhooks_webhookdelivery"']
        ]
    delivery = WebhookDelivery.objects.get()
    assert enqueued == [("codex.webhooks.jobs.process_delivery", delivery.pk)]


@pytest.mark.django_db(transaction=True)
def test_the_job_goes_to_the_orm_broker_without_closing_old_connections(
    deliver, monkeypatch
):
    # django-q's own ORM broker calls close_old_connections() on every enqueue,
    # which costs the request a health-check round trip; the ack's enqueue runs
    # right after its commit and skips it.
    monkeypatch.setattr("django_q.tasks.async_task", real_async_task)
    calls = []
    monkeypatch.setattr("django.db.close_old_connections", lambda: calls.append(1))
    response = deliver("issues", load("issues", "labeled.payload.json"))
    assert response.status_code == 202
    job = SignedPackage.loads(OrmQ.objects.get().payload)
    delivery = WebhookDelivery.objects.get()
    assert (job["func"], job["args"]) == (
        "codex.webhooks.jobs.process_delivery",
        (delivery.pk,),
    )
    assert calls == []


def test_a_nul_escape_anywhere_is_scrubbed_keys_included(deliver):
    payload = {"action": "opened", "issue": {"title\x00": ["x\x00", {"y": "\x00"}]}}
    response = deliver("issues", payload)
    assert response.status_code == 202
    assert WebhookDelivery.objects.get().payload["issue"] == {
        "title\ufffd": ["x\ufffd", {"y": "\ufffd"}]
    }


def test_an_oversize_body_is_413(deliver, settings):
    settings.CODEX_WEBHOOK_MAX_BYTES = 1000
    payload = {"action": "opened", "padding": "x" * 2000}
    response = deliver("issues", payload)
    assert response.status_code == 413
    assert error_code(response) == "payload_too_large"
    assert not WebhookDelivery.objects.exists()


def test_a_body_longer_than_its_content_length_claims_is_still_413(client, settings):
    settings.CODEX_WEBHOOK_MAX_BYTES = 1000
    body = json.dumps({"padding": "x" * 2000}).encode()
    response = client.generic(
        "POST",
        URL,
        body,
        content_type="application/json",
        CONTENT_LENGTH="10",  # lies; the stream still yields at most 10 bytes
        HTTP_X_GITHUB_EVENT="issues",
        HTTP_X_GITHUB_DELIVERY="liar",
        HTTP_X_HUB_SIGNATURE_256=sign(body, SECRET),
    )
    # Only 10 bytes are read, so the signature of the whole body cannot match.
    assert response.status_code in (401, 413)
    assert not WebhookDelivery.objects.exists()


def test_a_body_just_under_the_limit_is_accepted(deliver, settings):
    settings.CODEX_WEBHOOK_MAX_BYTES = 1000
    response = deliver("ping", {"zen": "x" * 900})
    assert response.status_code == 200


@pytest.mark.parametrize(
    "headers, field",
    [
        ({"HTTP_X_GITHUB_EVENT": ""}, "X-GitHub-Event"),
        ({"HTTP_X_GITHUB_DELIVERY": ""}, "X-GitHub-Delivery"),
        ({"HTTP_X_GITHUB_EVENT": "Issues; drop"}, "X-GitHub-Event"),
        ({"HTTP_X_GITHUB_DELIVERY": "x" * 101}, "X-GitHub-Delivery"),
    ],
)
def test_missing_or_malformed_github_headers_are_400(deliver, headers, field):
    response = deliver("issues", {"action": "opened"}, headers=headers)
    assert response.status_code == 400
    assert field in response.json()["error"]["fields"]


def test_ping_is_200(deliver):
    response = deliver("ping", load("ping", "payload.json"))
    assert response.status_code == 200
    assert WebhookDelivery.objects.get().outcome == Outcome.PROCESSED


def test_an_unknown_event_is_202_and_stored_as_ignored(deliver, enqueued):
    response = deliver("star", {"action": "created", "sender": {"login": "x"}})
    assert response.status_code == 202
    delivery = WebhookDelivery.objects.get()
    assert delivery.outcome == Outcome.IGNORED
    assert delivery.processed_at is not None
    assert enqueued == []


def test_an_action_codex_does_not_act_on_is_ignored_without_a_job(
    deliver, enqueued, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = deliver("issues", load("issues", "assigned.payload.json"))
    assert response.status_code == 202
    assert WebhookDelivery.objects.get().outcome == Outcome.IGNORED
    assert enqueued == []


def test_only_post_is_allowed(client):
    response = client.get(URL)
    assert response.status_code == 405
    assert response["Allow"] == "POST"


def test_nul_characters_are_stored_without_error(deliver):
    payload = {"action": "opened", "issue": {"title": "a\x00b"}}
    response = deliver("issues", payload)
    assert response.status_code == 202
    assert WebhookDelivery.objects.get().payload["issue"]["title"] == "a\ufffdb"


def test_no_csrf_token_or_session_is_needed(deliver, client):
    client.handler.enforce_csrf_checks = True
    response = deliver("ping", {"zen": "hi"})
    assert response.status_code == 200


def test_an_unexpected_error_is_400_never_500(deliver, monkeypatch):
    def explode(*args, **kwargs):
        raise RuntimeError("database went away")

    monkeypatch.setattr(WebhookDelivery, "save", explode)
    response = deliver("issues", load("issues", "labeled.payload.json"))
    assert response.status_code == 400
    assert error_code(response) == "delivery_not_stored"
