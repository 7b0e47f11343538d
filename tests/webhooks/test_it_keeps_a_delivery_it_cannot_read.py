"""A signed delivery whose body cannot be read as a JSON object, or whose JSON
a JSON column cannot hold, is kept raw (outcome unprocessable, the reason in
`error`), answered 202 so that it is not lost, and shown in the console. Runs
on SQLite and, with DATABASE_URL, on PostgreSQL (whose jsonb refuses
unpaired surrogates, NUL and Infinity)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth import get_user_model
from django.db import DataError

from codex.webhooks.jobs import reprocess
from codex.webhooks.models import Outcome, WebhookDelivery, WebhookDeliveryQuerySet
from tests.webhooks.conftest import load

pytestmark = pytest.mark.django_db

LABELED = load("issues", "labeled.payload.json")


def labeled_with_title(escaped_title: bytes) -> bytes:
    """GitHub's issues.labeled payload, its issue title given as JSON text."""
    body = json.dumps(LABELED).encode()
    title = json.dumps(LABELED["issue"]["title"]).encode()
    assert body.count(title) >= 1
    return body.replace(title, b'"' + escaped_title + b'"', 1)


UNREADABLE = [
    pytest.param(labeled_with_title(rb"a\ud800b"), "unpaired surrogate", id="ud800"),
    pytest.param(labeled_with_title(rb"\uDFFF"), "unpaired surrogate", id="low-alone"),
    pytest.param(
        labeled_with_title(rb"\ude00\ud83d"), "unpaired surrogate", id="pair-reversed"
    ),
    pytest.param(b'{"action": "opened", "\\ud800": 1}', "surrogate", id="in-a-key"),
    pytest.param(b'{"action": "opened", "n": 1e400}', "beyond", id="infinity"),
    pytest.param(b'{"action": "opened", "n": NaN}', "NaN", id="nan"),
    pytest.param(b"{not json", "not JSON", id="not-json"),
    pytest.param(b"[1, 2]", "JSON object", id="array"),
    pytest.param(b'"text"', "JSON object", id="string"),
    pytest.param(b"\xff\xfe", "not JSON", id="not-utf8"),
    pytest.param(b"", "not JSON", id="empty"),
    pytest.param(b"payload=%7B%7D", "not JSON", id="form-encoded"),
    pytest.param(b"[" * 50_000 + b"]" * 50_000, "not JSON", id="nested-50000"),
]


@pytest.fixture
def ack(deliver, django_capture_on_commit_callbacks):
    """`deliver`, then what the ack leaves for after its commit (its job)."""

    def _ack(*args, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return deliver(*args, **kwargs)

    return _ack


@pytest.mark.parametrize(("body", "reason"), UNREADABLE)
def test_it_is_kept_raw_and_answered_202(ack, enqueued, body, reason):
    response = ack("issues", body, delivery="unreadable-1")

    assert response.status_code == 202, response.content
    assert response.json()["outcome"] == "unprocessable"
    delivery = WebhookDelivery.objects.get()
    assert bytes(delivery.body) == body
    assert (delivery.delivery_id, delivery.event) == ("unreadable-1", "issues")
    assert delivery.outcome == Outcome.UNPROCESSABLE
    assert delivery.payload == {}
    assert reason in delivery.error
    assert delivery.processed_at is not None  # no job will ever take it
    assert enqueued == []


def test_a_redelivery_of_it_is_a_200_no_op(deliver):
    body = labeled_with_title(rb"\ud800")
    assert deliver("issues", body, delivery="same").status_code == 202

    again = deliver("issues", body, delivery="same")

    assert again.status_code == 200
    assert again.json()["outcome"] == "duplicate"
    assert WebhookDelivery.objects.count() == 1


def test_a_paired_surrogate_escape_is_an_ordinary_character(ack, enqueued):
    response = ack("issues", labeled_with_title(rb"ship it \ud83d\ude80"))

    assert response.status_code == 202
    delivery = WebhookDelivery.objects.get()
    assert delivery.outcome == Outcome.PENDING
    assert delivery.payload["issue"]["title"] == "ship it \U0001f680"
    assert len(enqueued) == 1


def test_nul_is_replaced_in_the_payload_and_kept_in_the_raw_body(deliver):
    body = labeled_with_title(rb"a\u0000b")

    assert deliver("issues", body).status_code == 202

    delivery = WebhookDelivery.objects.get()
    assert delivery.outcome == Outcome.PENDING
    assert delivery.payload["issue"]["title"] == "a\ufffdb"
    assert bytes(delivery.body) == body


def test_every_delivery_keeps_its_raw_signed_body(deliver):
    body = json.dumps(LABELED, indent=1).encode()
    deliver("issues", body)
    assert bytes(WebhookDelivery.objects.get().body) == body


def test_a_payload_the_database_refuses_is_kept_raw(ack, monkeypatch, enqueued):
    real = WebhookDeliveryQuerySet.receive

    def refusing(self, **fields):
        if fields["payload"]:
            raise DataError(
                "unsupported Unicode escape sequence\nLINE 1: INSERT ...\n"
                "DETAIL: \\u0000 cannot be converted to text."
            )
        return real(self, **fields)

    monkeypatch.setattr(WebhookDeliveryQuerySet, "receive", refusing)
    body = json.dumps(LABELED).encode()

    response = ack("issues", body)

    assert response.status_code == 202
    delivery = WebhookDelivery.objects.get()
    assert delivery.outcome == Outcome.UNPROCESSABLE
    assert delivery.action == "labeled"
    assert bytes(delivery.body) == body
    assert delivery.error == (
        "the database refused the payload: DataError: unsupported Unicode "
        "escape sequence DETAIL: \\u0000 cannot be converted to text."
    )
    assert enqueued == []


def test_reprocessing_leaves_it_alone(
    ack, enqueued, django_capture_on_commit_callbacks
):
    ack("issues", labeled_with_title(rb"\ud800"))

    with django_capture_on_commit_callbacks(execute=True):
        assert reprocess(WebhookDelivery.objects.all()) == 0
    assert WebhookDelivery.objects.get().outcome == Outcome.UNPROCESSABLE
    assert enqueued == []


def test_operators_see_it_with_its_reason_and_raw_body(deliver, client):
    deliver("issues", labeled_with_title(rb"evil \ud800 title"))
    delivery = WebhookDelivery.objects.get()
    client.force_login(
        get_user_model().objects.create_superuser("root", password="pw-12345!")
    )

    listed = client.get(
        "/admin/webhooks/webhookdelivery/", {"outcome__exact": "unprocessable"}
    )
    page = client.get(f"/admin/webhooks/webhookdelivery/{delivery.pk}/change/")

    assert listed.status_code == 200
    assert delivery.delivery_id in listed.content.decode()
    assert page.status_code == 200
    html = page.content.decode()
    assert "unpaired surrogate" in html
    assert r"evil \ud800 title" in html
